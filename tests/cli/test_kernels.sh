#!/usr/bin/env bash
# syno eval --kernels as a user runs it: with halide, a small VGG's slots and the standard
# network run as Halide kernels compiled into a private cache (no autoscheduler, to keep it
# quick), both latencies and their kernels are printed and the JSON record names each slot's
# kernel; a second run compiles nothing; a bad choice is a usage error. Exits 77 (skipped)
# without libHalide or a C++ compiler.
set -u
SYNO=${1:?usage: test_kernels.sh path/to/syno}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$SYNO" eval --kernels bogus >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q -- "--kernels bogus: must be one of exec, halide, best" "$tmp/err"
then ok; else bad "--kernels bogus -> exit $st, stderr: $(cat "$tmp/err")"; fi

# syno search stores the choice with its settings (and passes it to every worker).
if "$SYNO" search --backbone resnet --dataset digits --budget 2 --confirm 0 --stand-in --kernels best \
     --db "$tmp/s.db" --quiet >/dev/null 2>"$tmp/err" &&
   python3 -c "import sqlite3, sys; v = dict(sqlite3.connect(sys.argv[1]).execute('select key, value from meta'));
assert '\"kernels\":\"best\"' in v['driver'], v['driver']" "$tmp/s.db" 2>>"$tmp/err"; then ok
else bad "search --kernels best not stored: $(cat "$tmp/err")"; fi

if [ ! -f /usr/include/halide14/Halide.h ] || [ ! -f /usr/src/halide14/GenGen.cpp ] || ! command -v c++ >/dev/null; then
  echo "SKIP: no libhalide14-0-dev or c++ (apt-get install libhalide14-0-dev g++)"
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ] && exit 77
  exit 1
fi

export SYNO_KERNEL_CACHE="$tmp/cache" SYNO_HALIDE_SCHEDULER=none
op='r0=sum(k_1) r1=sum(C_in); in[i0, share(r1, 1), i2, unfold(i3, share(r0, 1))] expand[share(i1, 1)] w1[r1, i1, r0]'
args=(eval --backbone vgg --depth 1 --dataset digits --pad 2 --repeats 5 --min-speedup 1000 --op "$op")
if "$SYNO" "${args[@]}" --kernels halide >"$tmp/out" 2>"$tmp/err"; then ok; else bad "eval --kernels halide failed: $(cat "$tmp/err")"; fi
if grep -q '^latency (--kernels halide): this network [0-9.]* ms (slots on halide); standard network [0-9.]* ms' "$tmp/err" &&
   grep -q 'as kernels (halide) [0-9.]* ms' "$tmp/err"; then ok
else bad "no latency line naming the kernels: $(cat "$tmp/err")"; fi
if [ "$(grep -c '^  slot .*: this operator [0-9.]* ms (halide); standard' "$tmp/err")" -eq 2 ]; then ok
else bad "expected 2 slot lines (the distinct slots of vgg at depth 1): $(cat "$tmp/err")"; fi
if grep -q '\\"kernel\\":\\"halide\\"' "$tmp/out" && grep -q '\\"kernels_impl\\":\\"halide\\"' "$tmp/out" &&
   grep -q '"reason":"slower than the baseline' "$tmp/out"; then ok
else bad "the record does not name the kernels: $(cat "$tmp/out")"; fi
n=$(ls "$SYNO_KERNEL_CACHE"/*.so | wc -l)
if [ "$n" -eq 4 ]; then ok; else bad "expected 4 kernels in the cache (2 slots x operator, standard), found $n"; fi
if ! ls -d "$SYNO_KERNEL_CACHE"/tmp-* >/dev/null 2>&1; then ok; else bad "temporary build directories left behind"; fi
# The second run loads every kernel from the cache: nothing new appears.
touch "$tmp/stamp"
if "$SYNO" "${args[@]}" --kernels halide >"$tmp/out2" 2>"$tmp/err2" &&
   [ -z "$(find "$SYNO_KERNEL_CACHE" -newer "$tmp/stamp" -name '*.so')" ]; then ok
else bad "second run recompiled or failed: $(cat "$tmp/err2")"; fi
# best: each slot says what ran it.
if "$SYNO" "${args[@]}" --kernels best >"$tmp/out3" 2>"$tmp/err3" &&
   grep -q '^latency (--kernels best): this network [0-9.]* ms (slots on \(halide\|exec\|mixed\))' "$tmp/err3"; then ok
else bad "eval --kernels best: $(cat "$tmp/err3")"; fi
# Without Halide, --kernels halide is a recorded failure naming what is missing, not a crash.
if SYNO_HALIDE_INCLUDE=/nonexistent SYNO_KERNEL_CACHE="$tmp/cache2" "$SYNO" "${args[@]}" --kernels halide \
     >"$tmp/out4" 2>"$tmp/err4" && grep -q '"status":1,"reason":"latency: slot 0: halide kernels: /nonexistent/Halide.h is missing' "$tmp/out4"
then ok; else bad "without Halide: $(cat "$tmp/out4" "$tmp/err4")"; fi

# The cache holds code that is loaded: it must be the user's and private. A cache directory of
# ours that others may write is made private; a kernel others may write is not loaded; a cache
# of another user (as root: chown nobody) is refused.
chmod 0777 "$SYNO_KERNEL_CACHE"
if "$SYNO" "${args[@]}" --kernels halide >"$tmp/out5" 2>"$tmp/err5" &&
   [ "$(stat -c %a "$SYNO_KERNEL_CACHE")" = 700 ]; then ok
else bad "a group-writable cache of ours was not made private: $(stat -c %a "$SYNO_KERNEL_CACHE") $(cat "$tmp/err5")"; fi
so=$(ls "$SYNO_KERNEL_CACHE"/*.so | head -1)
chmod 0666 "$so"
"$SYNO" "${args[@]}" --kernels halide >"$tmp/out6" 2>"$tmp/err6"
if grep -q "is not a file of yours that only you can write: it is not loaded" "$tmp/out6" "$tmp/err6"; then ok
else bad "a world-writable kernel was loaded: $(cat "$tmp/out6" "$tmp/err6")"; fi
chmod 0755 "$so"
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
  cp -a "$SYNO_KERNEL_CACHE" "$tmp/theirs" && chown -R nobody "$tmp/theirs"
  SYNO_KERNEL_CACHE="$tmp/theirs" "$SYNO" "${args[@]}" --kernels halide >"$tmp/out7" 2>"$tmp/err7"
  if grep -q "belongs to uid [0-9]*, not to you: code in it is not loaded" "$tmp/out7" "$tmp/err7"; then ok
  else bad "another user's kernel cache was used: $(cat "$tmp/out7" "$tmp/err7")"; fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
