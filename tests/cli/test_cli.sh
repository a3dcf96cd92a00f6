#!/usr/bin/env bash
# The syno command as a user runs it: help, show (text and JSON), run, the
# round trip of the text form through the shell, and bad input (exit 2, a
# one-line message on stderr, nothing on stdout).
set -u
SYNO=${1:?usage: test_cli.sh path/to/syno}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_status STATUS CMD... : runs CMD, checks the exit status.
expect_status() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then bad "exit $got (wanted $want): $*"; cat "$tmp/err"; return 1; fi
  ok
}

# expect_usage_error PATTERN CMD... : exit 2, stdout empty, one stderr line matching PATTERN.
expect_usage_error() {
  local pattern=$1; shift
  expect_status 2 "$@" || return
  if [ -s "$tmp/out" ]; then bad "stdout not empty on error: $*"; fi
  if [ "$(wc -l <"$tmp/err")" -ne 1 ]; then bad "error is not one line: $*"; cat "$tmp/err"; fi
  if ! grep -q -- "$pattern" "$tmp/err"; then bad "error lacks '$pattern': $(cat "$tmp/err")"; else ok; fi
}

expect_status 0 "$SYNO" --help && grep -q "show" "$tmp/out" && ok
expect_status 0 "$SYNO" show --help && grep -q -- "--builtin" "$tmp/out" && ok
expect_status 0 "$SYNO" run --help && grep -q -- "--seed" "$tmp/out" && ok
expect_usage_error "unknown command 'frobnicate'" "$SYNO" frobnicate

# The core issue's acceptance example.
BIND=N=2,C_in=4,C_out=8,H=9,W=9,k=3
expect_status 0 "$SYNO" show --builtin conv2d --bind $BIND --json
json=$(cat "$tmp/out")
for want in '"input":[2,4,9,9]' '"output":[2,8,9,9]' '"params":288' '"flops":93312' '"shape":[8,4,3,3]' '"op":"' '"weights":['; do
  if grep -qF -- "$want" <<<"$json"; then ok; else bad "show --json lacks $want"; fi
done
[ "$(wc -l <<<"$json")" -eq 1 ] && ok || bad "show --json is not one line"

# Every builtin shows, in text and JSON, and its text form round-trips through the shell.
for b in conv2d grouped-conv2d depthwise-conv2d strided-conv2d linear avgpool2d; do
  expect_status 0 "$SYNO" show --builtin $b || continue
  grep -q "^forward:" "$tmp/out" && grep -q "^gradient of the input" "$tmp/out" && ok || bad "$b: no loop nests"
  expect_status 0 "$SYNO" show --builtin $b --json || continue
  op=$(sed -n 's/.*"op":"\([^"]*\)".*/\1/p' "$tmp/out")
  in=$(sed -n 's/.*"input_symbolic":"\([^"]*\)".*/\1/p' "$tmp/out")
  out=$(sed -n 's/.*"output_symbolic":"\([^"]*\)".*/\1/p' "$tmp/out")
  binding=$(sed -n 's/.*"binding":"\([^"]*\)".*/\1/p' "$tmp/out" | head -1 | tr -d ' ')
  expect_status 0 "$SYNO" show "$op" --input "$in" --output "$out" --bind "$binding" --json || continue
  op2=$(sed -n 's/.*"op":"\([^"]*\)".*/\1/p' "$tmp/out")
  [ "$op" = "$op2" ] && ok || bad "$b: text form does not round-trip: '$op' vs '$op2'"
done

# run: deterministic in its seed, and the two gradient computations agree.
expect_status 0 "$SYNO" run --builtin conv2d --bind $BIND --seed 3
a=$(grep '^output' "$tmp/out")
grep -q "grad_in_1" "$tmp/out" && ok || bad "run prints no weight gradient"
expect_status 0 "$SYNO" run --builtin conv2d --bind $BIND --seed 3
[ "$a" = "$(grep '^output' "$tmp/out")" ] && ok || bad "run is not deterministic"
expect_status 0 "$SYNO" run --builtin conv2d --bind $BIND --seed 4
[ "$a" != "$(grep '^output' "$tmp/out")" ] && ok || bad "run ignores the seed"
expect_status 0 "$SYNO" run --builtin strided-conv2d --json
grep -q '"gather_vs_scatter":' "$tmp/out" && ok || bad "run --json lacks gradients"

# Bad input: exit 2, one line naming the problem, nothing on stdout.
expect_usage_error "builtin conv3d: must be one of conv2d, " "$SYNO" show --builtin conv3d
expect_usage_error "unknown variable 'Q'" "$SYNO" show --builtin conv2d --bind Q=3
expect_usage_error "not a legal size\|does not divide" "$SYNO" show --builtin strided-conv2d --bind H=9
expect_usage_error "is even" "$SYNO" show --builtin conv2d --bind k=4
expect_usage_error "larger than the unfolded dim" "$SYNO" show --builtin conv2d --bind H=3,W=3,k=5
expect_usage_error "needs --input" "$SYNO" show 'in[i0]'
expect_usage_error "expected ',' or ']' but found 'W' at column 4" "$SYNO" show 'in[i0]' --input '[H W]' --output '[H]'
expect_usage_error "found 'bogus' at column 4" "$SYNO" show 'in[bogus(i0)]' --input '[H]' --output '[H]' --bind H=4
expect_usage_error "is never produced" "$SYNO" show 'in[i0]' --input '[H]' --output '[H, W]' --bind H=4,W=4
expect_usage_error "unknown option '--frob'" "$SYNO" show --builtin conv2d --frob
expect_usage_error "needs a value" "$SYNO" show --builtin conv2d --bind
expect_usage_error "seed x: must be a non-negative integer" "$SYNO" run --builtin conv2d --seed x
expect_usage_error "does not exist (the operator has 1)" "$SYNO" run --builtin conv2d --binding 3
expect_usage_error "no value for variable 'H'" "$SYNO" show 'in[i0]' --input '[H]' --output '[H]'
expect_usage_error "either --builtin or an operator text" "$SYNO" show --builtin conv2d 'in[i0]'

# sample: operators that show accepts back, reproducible in the seed.
SMALL="--preset conv2d-wide --bind N=2,C_in=4,C_out=8,H=8,W=8 --depth 5"
expect_status 0 "$SYNO" sample $SMALL -n 40 --seed 1 --json
cp "$tmp/out" "$tmp/s1"
[ "$(grep -c '^{"op":' "$tmp/s1")" -eq 40 ] && ok || bad "sample did not print 40 operators"
tail -1 "$tmp/s1" | grep -q '"summary":' && ok || bad "sample printed no summary"
tail -1 "$tmp/s1" | grep -q '"distinct":40' && ok || bad "sampled operators are not distinct"
while read -r line; do
  op=$(sed -n 's/^{"op":"\([^"]*\)".*/\1/p' <<<"$line")
  [ -z "$op" ] && continue
  "$SYNO" show "$op" --preset conv2d-wide --bind N=2,C_in=4,C_out=8,H=8,W=8 >/dev/null 2>"$tmp/err" && ok || bad "show rejects sampled '$op': $(cat "$tmp/err")"
done <"$tmp/s1"
expect_status 0 "$SYNO" sample $SMALL -n 40 --seed 1 --json
cmp -s <(grep '^{"op"' "$tmp/s1") <(grep '^{"op"' "$tmp/out") && ok || bad "sample is not reproducible"
expect_status 0 "$SYNO" sample $SMALL -n 40 --seed 2 --json
cmp -s <(grep '^{"op"' "$tmp/s1") <(grep '^{"op"' "$tmp/out") && bad "sample ignores the seed" || ok
expect_status 0 "$SYNO" sample $SMALL -n 20 --seed 1 --threads 2
grep -q "20 operators" "$tmp/out" && ok || bad "threaded sample"

# space: exact counts and missed duplicates.
expect_status 0 "$SYNO" space --preset conv2d-wide --depth 4 --exhaustive --duplicates
grep -q "^duplicates missed by canonicalization: " "$tmp/out" && ok || bad "space --duplicates prints no count"
grep -q "^duplicates up to a permutation of the input's unordered axes and a relayout of the weights: 0 " "$tmp/out" && ok || bad "space --duplicates: U5 left a renumbering of C_in: $(grep "^duplicates up" "$tmp/out")"
expect_status 0 "$SYNO" space --preset conv2d-wide --depth 4 --exhaustive --json
grep -q '"operators":156' "$tmp/out" && ok || bad "space --exhaustive --json: $(cut -c1-200 "$tmp/out")"

echo '{"preset": "conv2d", "min_flops": 5e6, "max_flops": 1e6}' >"$tmp/bad.json"
expect_usage_error "min_flops 5e+06 is above max_flops" "$SYNO" sample --spec "$tmp/bad.json"
echo '{"input": "[N, C", "output": "[N]"}' >"$tmp/bad.json"
expect_usage_error "input shape" "$SYNO" space --spec "$tmp/bad.json"
expect_usage_error "unknown variable 'Q'" "$SYNO" sample --preset conv2d-wide --bind Q=1
expect_usage_error "spec /nonexistent.json: no such file" "$SYNO" sample --spec /nonexistent.json
expect_usage_error "needs --exhaustive" "$SYNO" space --preset conv2d-wide --duplicates

# --max-count: the caps hold in every operator, fewer than without, and bad caps are usage errors.
expect_status 0 "$SYNO" space --preset conv2d-wide --depth 4 --exhaustive --json --max-count merge=0,split=0
capped=$(sed -n 's/.*"operators":\([0-9]*\).*/\1/p' "$tmp/out")
[ -n "$capped" ] && [ "$capped" -gt 0 ] && [ "$capped" -lt 156 ] && ok || bad "space --max-count: '$capped' operators"
expect_status 0 "$SYNO" sample $SMALL -n 30 --seed 1 --json --max-count merge=0,split=0
grep -q '^{"op"' "$tmp/out" && ok || bad "sample --max-count printed no operator"
grep '^{"op"' "$tmp/out" | grep -q 'split(\|div(\|mod(' && bad "sample --max-count merge=0,split=0 printed a split or merge" || ok
expect_usage_error "'merg' is not a primitive" "$SYNO" sample --preset conv2d-wide --max-count merg=1
expect_usage_error "the cap of split, 'x', is not -1..100" "$SYNO" space --preset conv2d-wide --max-count split=x
expect_usage_error "max_count of share is 1" "$SYNO" sample --preset conv2d-wide --max-count share=1

# A layer with fewer output than input channels has operators, and walks find them (the
# numel bound used to call its root unreachable before the reduction over C_in was made).
"$SYNO" sample --preset conv2d --bind N=8,C_in=32,C_out=16,H=28 --depth 4 -n 3 --seed 1 >"$tmp/out" 2>&1
grep -q "^3 operators from" "$tmp/out" && ok || bad "sample on a channel-reducing conv2d binding: $(tail -1 "$tmp/out")"
"$SYNO" sample --preset linear-wide --bind N=8,S=64,C_in=256,C_out=128 --depth 6 -n 3 --seed 1 >"$tmp/out" 2>&1
grep -q "^3 operators from" "$tmp/out" && ok || bad "sample on a channel-reducing linear-wide binding: $(tail -1 "$tmp/out")"
# A sample that finds nothing says so, names the binding and the limit, and fails.
expect_status 1 "$SYNO" sample --preset conv2d --bind N=8,C_in=32,C_out=16,H=28 --depth 2 -n 3 --seed 1
grep -q "no operator found in .* walks at depth 2, binding C_in=32, C_out=16, H=28, N=8" "$tmp/err" && ok ||
  bad "empty sample: no message naming the binding: $(cat "$tmp/err")"
grep -q "the limit that removed the most: shape distance beyond the depth (--depth 2)" "$tmp/err" && ok ||
  bad "empty sample: the limit is not named"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
