#!/usr/bin/python3
"""strip_strategies.py MODEL.ir > OUT.ir: the model without its sharding choices.

Removes every in_strategy, out_strategy and parameter_plan entry (wherever it
is, `shard` dicts included) and every `layout` declaration, so that the model
compiles on any device count with the default strategies.  The end-to-end
tests use it where a sample's own strategies need another device count.
Comments and everything else are kept as written."""
import re
import sys

KEYS = ("in_strategy", "out_strategy", "parameter_plan")


def skip_value(text, i):
    """Index just past the value starting at i (balanced brackets, strings)."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "#":
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        i += 1
    return i


def strip(text):
    out, i = [], 0
    pattern = re.compile(r"\b(%s)\s*:" % "|".join(KEYS))
    while True:
        m = pattern.search(text, i)
        if not m:
            out.append(text[i:])
            break
        line_start = text.rfind("\n", 0, m.start()) + 1
        if "#" in text[line_start:m.start()]:   # inside a comment
            out.append(text[i:m.end()])
            i = m.end()
            continue
        end = skip_value(text, m.end())
        if end < len(text) and text[end] == ",":
            end += 1
        out.append(text[i:m.start()])
        i = end
    text = "".join(out)
    text = re.sub(r"^\s*layout\s+\w+\s*=\s*Layout\([^\n]*\n", "", text, flags=re.M)
    text = re.sub(r",(\s*)\}", r"\1}", text)          # a trailing comma left behind
    text = re.sub(r"\{\s*\}", "{}", text)
    text = re.sub(r"shard:\s*\{\}\s*,?", "", text)    # an empty shard
    text = re.sub(r"\s*\{\s*\}(?=\s*(:|\n))", "", text)  # an empty attribute dict
    return text


if __name__ == "__main__":
    sys.stdout.write(strip(open(sys.argv[1]).read()))
