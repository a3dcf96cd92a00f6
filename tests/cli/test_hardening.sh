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

# 2. A size product that overflows is refused before it allocates: out of memory, exit 1.
timeout 60 "$SYNO" run --builtin linear --bind N=2147483648,C_in=2147483648,C_out=2 >out 2>err
st=$?
if [ "$st" -eq 1 ] && grep -q "out of memory" err; then ok; else bad "run with an overflowing size: exit $st, $(head -c 300 err)"; fi

# 6. Out of memory exits promptly with its message, exit 1 (OpenBLAS's exit handler used to hang).
# (Not under AddressSanitizer, whose shadow memory alone exceeds the limit.)
ldd "$SYNO" 2>/dev/null | grep -q libasan && asan=1 || asan=0
for cmd in "run --builtin conv2d --bind N=64,C_in=64,C_out=64,H=256,W=256,k=3" \
           "train --backbone resnet --dataset digits --epochs 1 --subset 100"; do
  [ "$asan" -eq 1 ] && break
  # shellcheck disable=SC2086
  bash -c "ulimit -v 200000; exec timeout 60 '$SYNO' $cmd" >out 2>err
  st=$?
  if [ "$st" -eq 1 ] && grep -q "out of memory" err; then ok; else bad "$cmd under ulimit -v: exit $st, $(head -c 300 err)"; fi
done

# 7. A failed write of the output is an error: a full device, a closed stdout.
for cmd in "show --builtin conv2d" "sample --preset conv2d -n 3" "report --db x.db --json" \
           "export --to c --builtin linear"; do
  # shellcheck disable=SC2086
  "$SYNO" $cmd >/dev/full 2>err
  st=$?
  if [ "$st" -eq 1 ] && grep -q "No space left on device" err; then ok; else bad "$cmd > /dev/full: exit $st, $(head -c 300 err)"; fi
  # shellcheck disable=SC2086
  "$SYNO" $cmd >&- 2>err
  st=$?
  if [ "$st" -eq 1 ]; then ok; else bad "$cmd with stdout closed: exit $st, $(head -c 300 err)"; fi
done

# 3. Deep nesting is refused with a message, in a file and in a database row (no stack overflow).
python3 -c "print('in[' + 'div(' * 100000)" >deep.txt
timeout 60 "$SYNO" train --op-file deep.txt >out 2>err
st=$?
if [ "$st" -eq 2 ] && grep -q "nested deeper than 64" err; then ok; else bad "train --op-file deep.txt: exit $st, $(head -c 300 err)"; fi
cp x.db deep.db
python3 -c "
import sqlite3, sys
c = sqlite3.connect('deep.db')
c.execute('UPDATE candidates SET op_text = ? WHERE id = (SELECT MAX(id) FROM candidates)', ('in[' + 'div(' * 100000,))
c.commit()"
timeout 60 "$SYNO" report --db deep.db >out 2>err
st=$?
if [ "$st" -le 2 ]; then ok; else bad "report on a row nested 100000 deep: exit $st, $(head -c 300 err)"; fi
timeout 60 "$SYNO" train --db deep.db --id "$(python3 -c "import sqlite3; print(sqlite3.connect('deep.db').execute('SELECT MAX(id) FROM candidates').fetchone()[0])")" >out 2>err
st=$?
if [ "$st" -eq 2 ] && grep -q "nested deeper than 64" err; then ok; else bad "train --db --id on a deep row: exit $st, $(head -c 300 err)"; fi

# 4. A failed write leaves the old file as it was (written beside it, renamed when whole); a
# link's target is replaced and the link stays; a device is written, not replaced or removed.
echo old >keep.c
bash -c "trap '' XFSZ; ulimit -f 1; exec '$SYNO' export --to c --builtin conv2d -o keep.c" >out 2>err
st=$?
if [ "$st" -eq 1 ] && [ "$(cat keep.c)" = old ] && ! ls -a | grep -q syno-tmp; then ok
else bad "a failed export -o: exit $st, keep.c now $(head -c 40 keep.c), $(ls -a | grep syno-tmp) $(head -c 200 err)"; fi
ln -s keep.c link.c
if "$SYNO" export --to c --builtin linear -o link.c 2>err && [ -L link.c ] && grep -q syno_op_forward keep.c; then ok
else bad "export -o a link: $(ls -la link.c) $(head -c 200 err)"; fi
if "$SYNO" export --to c --builtin linear -o /dev/null 2>err && [ -c /dev/null ]; then ok
else bad "export -o /dev/null: $(ls -la /dev/null) $(head -c 200 err)"; fi

# 5. A FIFO or a device given as an input file is refused at once, naming it (it used to be
# read, or waited on, forever); so is a NUL byte in an operator file.
mkfifo fifo
for cmd in "sample --spec fifo" "space --spec /dev/zero" "train --op-file fifo" "train --op-file /dev/zero" \
           "train --dataset fifo --epochs 1" "train --dataset /dev/zero --epochs 1" \
           "train --backbone gpt --dataset fifo --epochs 1" "search --stand-in --db lg.db --log fifo --budget 1 --quiet"; do
  # shellcheck disable=SC2086
  timeout 20 "$SYNO" $cmd >out 2>err
  st=$?
  if { [ "$st" -eq 1 ] || [ "$st" -eq 2 ]; } && grep -q "not a regular file" err; then ok
  else bad "$cmd: exit $st, $(head -c 300 err)"; fi
done
printf 'in[i0\0, i1]' >nul.txt
"$SYNO" train --op-file nul.txt >out 2>err
st=$?
if [ "$st" -eq 2 ] && grep -q "has a NUL byte at offset 5" err; then ok; else bad "an operator file with a NUL: exit $st, $(head -c 300 err)"; fi

# 8. Garbage in a database row is named as damage, not shown as data: text or a non-finite
# number where a number belongs, operator text that does not parse.
cp x.db nan.db
python3 -c "import sqlite3; c = sqlite3.connect('nan.db'); c.execute(\"UPDATE candidates SET accuracy = 'NaN' WHERE id = 2\"); c.commit()"
for cmd in "report --db nan.db" "export --to pytorch --db nan.db --id 3" "train --db nan.db --id 3"; do
  # shellcheck disable=SC2086
  timeout 60 "$SYNO" $cmd >out 2>err
  st=$?
  if { [ "$st" -eq 1 ] || [ "$st" -eq 2 ]; } && grep -q "candidate 2 is damaged: column 'accuracy' holds text where a number belongs" err
  then ok; else bad "$cmd on a NaN accuracy: exit $st, $(head -c 300 err)"; fi
done
cp x.db garbage.db
python3 -c "import sqlite3; c = sqlite3.connect('garbage.db'); c.execute(\"UPDATE candidates SET op_text = 'in[[[[ frob(3)' WHERE id = 3\"); c.commit()"
timeout 60 "$SYNO" report --db garbage.db >out 2>err
st=$?
if { [ "$st" -eq 1 ] || [ "$st" -eq 2 ]; } && grep -q "candidate 3" err && grep -q "does not parse" err; then ok
else bad "report on garbage operator text: exit $st, $(head -c 300 err)"; fi

# 9. Spec JSON is strict.
for j in '{"preset":"linear","preset":"conv2d"}|given twice' '{"preset":"conv2d\u0000xyz"}|u0000' \
         '{"preset":"conv2d"} {"preset":"linear"}|data after the JSON object' '{"preset":"conv2d","bind":[""]}|empty binding' \
         '{"preset":"conv2d","max_expansion_repeat":-1}|must be a number >= 0' '{"preset":"conv2d","fixed":[[0,0]]}|cannot be combined'; do
  printf '%s' "${j%|*}" >s.json
  "$SYNO" space --spec s.json --depth 3 >out 2>err
  st=$?
  if [ "$st" -eq 2 ] && grep -q -- "${j#*|}" err; then ok; else bad "spec ${j%|*}: exit $st, $(head -c 300 err)"; fi
done

# 11. One writer per database: a second --resume while a search runs is refused, naming its pid.
"$SYNO" search --db lock.db --stand-in --budget 20 --confirm 0 --quiet >/dev/null 2>&1 &
first=$!
for _ in $(seq 50); do [ -s lock.db ] && break; sleep 0.1; done
sleep 0.5
"$SYNO" search --resume lock.db --quiet >out 2>err
st=$?
if [ "$st" -eq 2 ] && grep -q "lock.db is in use by another search (pid $first)" err; then ok
else bad "a second --resume while a search runs: exit $st, $(head -c 300 err)"; fi
wait "$first"
if "$SYNO" search --resume lock.db --budget 1 --quiet >out 2>err; then ok; else bad "resume after the first ended: $(head -c 300 err)"; fi

# 12. Every image backbone builds and trains at its largest --depth (VGG at 8 has 77 layers; a
# fixed array of 64 used to be overrun).
for b in vgg resnet resnet34 resnext29 densenet121 efficientnetv2s; do
  timeout 300 "$SYNO" train --backbone "$b" --depth 8 --dataset digits --epochs 1 --subset 32 --batch 16 >out 2>err
  st=$?
  if [ "$st" -eq 0 ]; then ok; else bad "train --backbone $b --depth 8: exit $st, $(tail -c 300 err)"; fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
