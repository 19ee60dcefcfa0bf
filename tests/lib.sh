# lib.sh, sourced by the test scripts that build and run generated programs:
# a temporary folder $tmp removed at exit, the pass and fail counts that ok
# and bad keep (each prints its line), and the flags every generated program
# must compile cleanly with.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
export CFLAGS="-O0 -std=c11 -Wall -Wextra -Werror"
