#!/usr/bin/env bash
# syno export and its alias show --emit as a user runs them: the C output
# compiles with cc -O2 -std=c11 -Wall -Werror and no syno header and defines
# the forward and backward functions, the PyTorch and TVM outputs are valid
# Python, -o writes the file, --png draws through Graphviz when it is there,
# and bad choices are usage errors (exit 2, message, empty stdout, no file).
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

for b in conv2d grouped-conv2d depthwise-conv2d strided-conv2d linear avgpool2d; do
  if "$SYNO" export --to c --builtin "$b" -o "$tmp/x$b.c" >"$tmp/out" 2>"$tmp/err" && [ ! -s "$tmp/out" ] &&
     cc -std=c11 -O2 -Wall -Werror -c -o "$tmp/x$b.o" "$tmp/x$b.c" 2>>"$tmp/err" &&
     nm "$tmp/x$b.o" | grep -q ' T syno_op_forward' && nm "$tmp/x$b.o" | grep -q ' T syno_op_backward'; then ok
  else bad "export --to c $b"; cat "$tmp/err"; fi
  if "$SYNO" export --to tvm --builtin "$b" >"$tmp/$b.tvm.py" 2>"$tmp/err" &&
     grep -q 'y1 = te.compute((' "$tmp/$b.tvm.py" &&
     /usr/bin/env python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read())" "$tmp/$b.tvm.py"; then ok
  else bad "export --to tvm $b"; cat "$tmp/err"; fi
  # show --emit is an alias: the same text.
  "$SYNO" export --to pytorch --builtin "$b" >"$tmp/e.py"
  if cmp -s "$tmp/e.py" "$tmp/$b.py"; then ok; else bad "show --emit pytorch differs from export --to pytorch ($b)"; fi
done
if "$SYNO" export --to dot --builtin conv2d | grep -q '^digraph'; then ok; else bad "export --to dot"; fi

# Halide: every builtin registers a generator; show --emit halide is the same text; with
# libHalide installed, the conv2d generator builds with GenGen alone and emits an object.
for b in conv2d grouped-conv2d depthwise-conv2d strided-conv2d linear avgpool2d; do
  if "$SYNO" export --to halide --builtin "$b" -o "$tmp/$b.cpp" 2>"$tmp/err" &&
     grep -q '^HALIDE_REGISTER_GENERATOR(Gen_syno_op_[0-9a-f]*, syno_op_[0-9a-f]*)$' "$tmp/$b.cpp"; then ok
  else bad "export --to halide $b"; cat "$tmp/err"; fi
  "$SYNO" show --builtin "$b" --emit halide >"$tmp/e.cpp"
  if cmp -s "$tmp/e.cpp" "$tmp/$b.cpp"; then ok; else bad "show --emit halide differs from export --to halide ($b)"; fi
done
gengen=/usr/src/halide14/GenGen.cpp
if [ -f "$gengen" ] && [ -f /usr/include/halide14/Halide.h ] && command -v c++ >/dev/null; then
  name=$(sed -n 's/^HALIDE_REGISTER_GENERATOR(Gen_[0-9a-z_]*, \(syno_op_[0-9a-f]*\))$/\1/p' "$tmp/conv2d.cpp")
  if c++ -std=c++17 -fno-rtti -I/usr/include/halide14 "$tmp/conv2d.cpp" "$gengen" -o "$tmp/gen" -lHalide14 -ldl \
       -lpthread 2>"$tmp/err" &&
     "$tmp/gen" -g "$name" -f conv -o "$tmp" -e object,c_header target=host 2>>"$tmp/err" &&
     nm "$tmp/conv.o" | grep -q ' T conv$'; then ok
  else bad "the exported Halide generator does not build"; head -20 "$tmp/err"; fi
else
  echo "SKIP: building the Halide export (no libhalide14-0-dev or c++)"
fi
if command -v dot >/dev/null; then
  if "$SYNO" export --to dot --png --builtin conv2d -o "$tmp/c.png" && head -c 4 "$tmp/c.png" | grep -q PNG; then ok
  else bad "export --to dot --png"; fi
else
  echo "SKIP: export --png (no Graphviz dot on PATH)"
fi

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
expect_usage "--emit tvm: must be one of pytorch, c, halide" show --builtin linear --emit tvm
expect_usage "--binding 3 does not exist" show --builtin linear --emit c --binding 3
expect_usage "--binding x: must be an integer in 0\.\." show --builtin linear --emit c --binding x

expect_usage "give --to LANG" export --builtin linear
expect_usage "--to bogus: must be one of pytorch, tvm, c, halide, dot" export --to bogus --builtin linear
expect_usage "--png applies to --to dot only" export --to tvm --png --builtin linear
expect_usage "-o $tmp/no/x.c: its directory $tmp/no does not exist" export --to c --builtin linear -o "$tmp/no/x.c"
expect_usage "-o $tmp: is a directory" export --to c --builtin linear -o "$tmp"
expect_usage "--binding 2 does not exist" export --to c --builtin linear --binding 2 -o "$tmp/b2.c"
if [ ! -e "$tmp/b2.c" ]; then ok; else bad "a refused export left $tmp/b2.c behind"; fi
expect_usage "expected ',' but found 'i2' at column 67" export --to pytorch --preset linear \
  'r0=sum(H_in); in[i0, i1, share(r0, 1)] expand[share(i2, 1)] w1[r0 i2]'
expect_usage "found 'Q' at column 8" export --to c --preset conv2d 'in[i0, Q]'
PATH=/nonexistent "$SYNO" export --to dot --png --builtin linear -o "$tmp/n.png" >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 2 ] && grep -q "needs Graphviz's 'dot' on PATH" "$tmp/err" && [ ! -e "$tmp/n.png" ]; then ok
else bad "--png without dot -> exit $st, stderr: $(cat "$tmp/err")"; fi

# From a search to a module: --db with --id or --best (the candidate syno report names).
src=$(cd "$(dirname "$0")/../.." && pwd)
if "$SYNO" search --db "$tmp/s.db" --stand-in --budget 3 --confirm 0 --quiet >/dev/null 2>&1 &&
   "$SYNO" export --to pytorch --db "$tmp/s.db" --id 2 -o "$tmp/db2.py" 2>"$tmp/err" &&
   grep -q "^# From candidate 2 of $tmp/s.db: backbone resnet, data set digits, preset conv2d" "$tmp/db2.py" &&
   /usr/bin/env python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read())" "$tmp/db2.py"; then ok
else bad "export --db --id: $(cat "$tmp/err")"; fi
if "$SYNO" export --to c --db "$tmp/s.db" --id 2 -o "$tmp/db2.c" 2>"$tmp/err" &&
   cc -std=c11 -O2 -Wall -Werror -c -o "$tmp/db2.o" "$tmp/db2.c" 2>>"$tmp/err"; then ok
else bad "export --to c --db --id: $(cat "$tmp/err")"; fi
if "$SYNO" export --to pytorch --db "$src/results/r34-1h.db" --best -o "$tmp/best.py" 2>"$tmp/err" &&
   grep -q "^# From candidate 6 of .*r34-1h.db (the fastest within 1 point of the baseline)" "$tmp/best.py" &&
   grep -q "^#   r0=sum(k_1) r1=sum(C_in); in\[i0, share(r1, 1), unfold(i2, share(r0, 1)), i3\]" "$tmp/best.py"; then ok
else bad "export --db --best: $(cat "$tmp/err")"; fi
expect_usage "candidate 1 of $tmp/s.db is the standard operator" export --to pytorch --db "$tmp/s.db" --id 1
expect_usage "has no candidate 99" export --to pytorch --db "$tmp/s.db" --id 99
expect_usage "no finished candidate within 1 point" export --to pytorch --db "$tmp/s.db" --best
expect_usage "give either --id N or --best" export --to pytorch --db "$tmp/s.db"
expect_usage "--id and --best choose a candidate of --db DB" export --to pytorch --id 2
expect_usage "drop the operator options" export --to pytorch --db "$tmp/s.db" --id 2 --builtin conv2d

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
