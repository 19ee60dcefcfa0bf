"""ir_text.py: reading a model's text where tests rewrite it (tests/run_e2e.sh's
optimizer and bf16 variants)."""
import re


def optimizer_at(text, start):
    """(start, end, learning rate as written or None) of the train block's optimizer, a schedule's parentheses in it."""
    m = re.compile(r"optimizer:\s*\w+").search(text, start)
    if not m:
        return None
    end, depth = m.end(), 0
    for i in range(m.end(), len(text) if text[m.end():m.end() + 1] == "(" else m.end()):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            end = i + 1
            break
    lr = re.match(r"\(.*?learning_rate:\s*(\w+\([^)]*\)|[-+0-9.eE]+)", text[m.end():end], re.S)
    return m.start(), end, lr.group(1) if lr else None
