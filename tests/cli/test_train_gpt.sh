#!/usr/bin/env bash
# syno train --backbone gpt from the shell: a short run on the committed text (text and JSON,
# standard and synthesized linear slots), the slot listing, and bad options (exit 2 with a
# message naming the problem).
set -u
SYNO=${1:?usage: test_train_gpt.sh path/to/syno}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect_error() {
  local pattern=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne 2 ]; then bad "exit $got (wanted 2): $*"; cat "$tmp/err"; return; fi
  if [ -s "$tmp/out" ]; then bad "stdout not empty on error: $*"; fi
  if ! grep -q -- "$pattern" "$tmp/err"; then bad "error lacks '$pattern': $(cat "$tmp/err")"; else ok; fi
}

small="--backbone gpt --dataset kjv --epochs 2 --subset 256 --batch 16 --width 32 --depth 1 --context 32"
grouped='r0=sum(s^-1*C_in); in[i0, i1, split(div(i2, s^-1*C_out), share(r0, 1))] expand[share(mod(i2, s^-1*C_out), 1)] w1[mod(i2, s^-1*C_out), r0]'

"$SYNO" train --help | grep -q -- "--context" && ok || bad "train --help lists --context"

out=$("$SYNO" train $small --quiet 2>"$tmp/err")
if [ $? -ne 0 ]; then bad "gpt run failed: $(cat "$tmp/err")"; fi
line=$(echo "$out" | grep "^validation loss")
[ -n "$line" ] && ok || bad "no validation loss line: $out"
after=$(echo "$line" | sed -n 's/^validation loss \([0-9.]*\) .*/\1/p')
before=$(echo "$line" | sed -n 's/.*; \([0-9.]*\) before training.*/\1/p')
awk -v a="$after" -v b="$before" 'BEGIN { exit !(a + 0.9 < b) }' && ok || bad "val loss $before -> $after did not fall by 0.9"
echo "$out" | grep -q "tokens/s" && ok || bad "no tokens/s: $out"

json=$("$SYNO" train $small --json --quiet --preset linear-wide --op "$grouped" 2>"$tmp/err")
if [ $? -ne 0 ]; then bad "gpt --op run failed: $(cat "$tmp/err")"; fi
[ "$(echo "$json" | wc -l)" -eq 1 ] && ok || bad "json is not one line"
echo "$json" | grep -q '"perplexity":' && echo "$json" | grep -q '"val_loss":' &&
  echo "$json" | grep -q '"failure":null' && ok || bad "json: $json"

"$SYNO" train --backbone gpt --list-slots >"$tmp/slots" 2>&1
grep -q "slot 0: linear S=64 C_in=64 C_out=192" "$tmp/slots" && ok || bad "list-slots: $(cat "$tmp/slots")"
[ "$(grep -c '^slot ' "$tmp/slots")" -eq 8 ] && ok || bad "8 slots for depth 2"
"$SYNO" train --backbone gpt --list-slots --preset linear-wide --op "$grouped" |
  grep -q "slot 2: linear S=64 C_in=64 C_out=256 flops=1048576 params=4096" && ok || bad "list-slots with --op"
# the published GPT-2 preset (the default for gpt) fills the QKV projection only
qkv='r0=sum(k_1^-1*H_in); in[i0, i1, split(div(i2, k_1^-1*t*H_in), share(r0, 1))] expand[share(mod(i2, k_1^-1*t*H_in), 1)] w1[mod(i2, k_1^-1*t*H_in), r0]'
"$SYNO" train --backbone gpt --list-slots --op "$qkv" >"$tmp/slots" 2>&1
grep -q "slot 0: linear S=64 C_in=64 C_out=192 flops=786432 params=3072" "$tmp/slots" &&
  grep -q "slot 1: linear S=64 C_in=64 C_out=64 flops=524288 params=4096" "$tmp/slots" && ok ||
  bad "list-slots with a linear-preset --op: $(cat "$tmp/slots")"
expect_error "unknown variable" "$SYNO" train --backbone gpt --list-slots --op "$grouped"

expect_error "linear slot operator" "$SYNO" train --backbone gpt --op "r0=sum(C_in) r1=sum(k) r2=sum(k); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), unfold(i3, share(r2, 1))] expand[share(i1, 1)] w1[i1, r0, r1, r2]"
expect_error "heads" "$SYNO" train --backbone gpt --heads 3 --epochs 1
expect_error "optimizer lion: must be one of sgd, adamw" "$SYNO" train --backbone gpt --optimizer lion
expect_error "gpt options" "$SYNO" train --backbone resnet --context 32
expect_error "nope.txt" "$SYNO" train --backbone gpt --dataset /nonexistent/nope.txt
expect_error "context x: must be an integer in 1..4096" "$SYNO" train --backbone gpt --context x

echo "test_train_gpt.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
