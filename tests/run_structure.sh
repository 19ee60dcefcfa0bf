#!/bin/sh
# run_structure.sh [OBJECT...]: the compiler's files stay rooms of one concern.
#   - no compiler/*.c or compiler/*.h file is over 1,000 lines;
#   - no circle between compiler files: file A depends on file B when A's
#     object has an undefined symbol B's object defines (nm), and no file may
#     reach itself through others. A circle is reported with its files and, for
#     each dependency inside it, one symbol that makes it.
# The objects are the optimized build's (the Makefile passes build/opt's
# compiler objects); without arguments, every build/opt/*.o with a source in
# compiler/ except main.o (so not the generated parser.o and lexer.o).
# Last line: structure: N passed, N failed.
limit=1000
pass=0 fail=0
for f in compiler/*.c compiler/*.h; do
	n=$(wc -l <"$f")
	if [ "$n" -gt "$limit" ]; then
		echo "FAIL $f: $n lines (more than $limit)"; fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done

if [ $# -eq 0 ]; then
	for o in build/opt/*.o; do
		name=$(basename "$o" .o)
		[ "$name" != main ] && [ -f "compiler/$name.c" ] && set -- "$@" "$o"
	done
fi
if [ $# -eq 0 ]; then
	echo "FAIL no objects (make build/opt/libshardc.a first)"; fail=$((fail + 1))
else
	tmp=$(mktemp)
	trap 'rm -f "$tmp"' EXIT
	for o in "$@"; do
		[ -f "$o" ] || { echo "FAIL $o: no such object"; fail=$((fail + 1)); continue; }
		name=$(basename "$o" .o).c
		nm -P --defined-only -g "$o" | awk -v f="$name" '{ print "D", f, $1 }'
		nm -P -u "$o" | awk -v f="$name" '{ print "U", f, $1 }'
	done >"$tmp"
	# Edges from the symbols, then every file's reach (transitive closure over
	# a few dozen files), then the strongly connected groups of more than one.
	cycles=$(awk '
		$1 == "D" { def[$3] = $2; files[$2] = 1; next }
		$1 == "U" { use[++nu] = $2 " " $3; files[$2] = 1 }
		END {
			for (i = 1; i <= nu; i++) {
				split(use[i], u, " ")
				b = def[u[2]]
				if (b == "" || b == u[1]) continue
				if (!((u[1], b) in edge)) edge[u[1], b] = u[2]
				reach[u[1], b] = 1
			}
			n = 0
			for (f in files) name[++n] = f
			for (k = 1; k <= n; k++)
				for (i = 1; i <= n; i++)
					if ((name[i], name[k]) in reach)
						for (j = 1; j <= n; j++)
							if ((name[k], name[j]) in reach) reach[name[i], name[j]] = 1
			for (i = 1; i <= n; i++) {
				a = name[i]
				if (a in seen || !((a, a) in reach)) continue
				group = ""
				for (j = 1; j <= n; j++) {
					b = name[j]
					if (b == a || ((a, b) in reach && (b, a) in reach)) { seen[b] = 1; member[b] = 1; group = group " " b }
				}
				print "cycle:" group
				for (x in member)
					for (y in member)
						if ((x, y) in edge) print "    " x " -> " y " (" edge[x, y] ")"
				delete member
			}
		}' "$tmp")
	if [ -n "$cycles" ]; then
		echo "FAIL the compiler files call each other in a circle:"; echo "$cycles"; fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
fi
echo "structure: $pass passed, $fail failed"
[ $fail -eq 0 ]
