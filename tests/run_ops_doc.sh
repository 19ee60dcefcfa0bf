#!/bin/sh
# run_ops_doc.sh SHARDC: docs/operators.md's table ("The table") says what the
# compiler's does: one row per operator of `SHARDC --list-ops --json`, in its
# order, with its inputs, precision class, what its gradient reads and
# whether it is a view. On a difference it prints the table as it should read.
# Last line: ops-doc: N passed, N failed.
shardc=${1:?usage: run_ops_doc.sh SHARDC}
"$shardc" --list-ops --json | /usr/bin/python3 -c '
import json, sys
table = json.load(sys.stdin)
def inputs(r):
    lo, hi = r["min_inputs"], r["max_inputs"]
    return "%d+" % lo if hi is None else "%d" % lo if lo == hi else "%d-%d" % (lo, hi)
want = ["| %s | %s | `%s` | `%s` | %s |" % (r["name"], inputs(r), r["precision"], r["grad_reads"],
                                           "yes" if r["view"] else "") for r in table]
doc = open("docs/operators.md").read().split("\n")
start = doc.index("## The table")
rows = []
for line in doc[start + 1:]:
    if line.startswith("## "):
        break
    if line.startswith("| ") and not line.startswith("| operator |"):
        rows.append(line.rstrip())
if rows == want:
    print("ok   docs/operators.md: %d operators, as shardc --list-ops --json has them" % len(rows))
    print("ops-doc: 1 passed, 0 failed")
    sys.exit(0)
for r in sorted(set(rows) ^ set(want)):
    print("%s %s" % ("docs:  " if r in rows else "shardc:", r))
print("FAIL docs/operators.md, The table, differs from shardc --list-ops --json; it should read:")
print("| operator | inputs | precision | gradient reads | view |\n|---|---|---|---|---|")
print("\n".join(want))
print("ops-doc: 0 passed, 1 failed")
sys.exit(1)
'
