#!/usr/bin/env bash
# syno show --emit as a user runs it: the C output compiles with cc -O2 -c
# and no syno header, the PyTorch output is valid Python (and, with torch,
# runs), and bad choices are usage errors (exit 2, message, empty stdout).
set -u
SYNO=${1:?usage: test_codegen.sh path/to/syno}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for b in conv2d grouped-conv2d depthwise-conv2d strided-conv2d linear avgpool2d; do
  if "$SYNO" show --builtin "$b" --emit c >"$tmp/$b.c" 2>"$tmp/err" &&
     cc -std=c99 -O2 -Wall -Werror -c -o "$tmp/$b.o" "$tmp/$b.c" 2>>"$tmp/err" &&
     nm "$tmp/$b.o" | grep -q ' T syno_op_forward'; then ok; else bad "emit c $b"; cat "$tmp/err"; fi
  if "$SYNO" show --builtin "$b" --emit pytorch >"$tmp/$b.py" 2>"$tmp/err" &&
     grep -q '^class SynoOp(torch.nn.Module):' "$tmp/$b.py" &&
     /usr/bin/env python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read())" "$tmp/$b.py"; then ok
  else bad "emit pytorch $b"; cat "$tmp/err"; fi
done

# The second binding's sizes end up in the code.
"$SYNO" show --builtin linear --bind N=2,C_in=5,C_out=3 --bind N=4,C_in=9,C_out=6 --binding 1 --emit pytorch >"$tmp/l.py"
if grep -q 'in_shape = (4, 9, )' "$tmp/l.py"; then ok; else bad "--binding 1 not used"; fi

expect_usage() {
  local want=$1; shift
  "$SYNO" "$@" >"$tmp/out" 2>"$tmp/err"
  local st=$?
  if [ "$st" -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q -- "$want" "$tmp/err"; then ok
  else bad "$* -> exit $st, stderr: $(cat "$tmp/err")"; fi
}
expect_usage "--emit tvm: must be one of pytorch, c" show --builtin linear --emit tvm
expect_usage "--binding 3 does not exist" show --builtin linear --emit c --binding 3
expect_usage "--binding x: must be an integer in 0\.\." show --builtin linear --emit c --binding x

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
