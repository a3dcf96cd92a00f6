#!/usr/bin/env bash
# make demo: what syno does today, on its embedded defaults. It prints the
# standard operators written in syno's primitives, with their shapes, FLOPs
# and parameters, then runs each through the reference interpreter and checks
# its gradients two independent ways; then samples the conv2d search space
# and counts it exactly at depth 4, with the duplicates canonicalization missed.
set -euo pipefail
SYNO=${1:-build/syno}
echo "== the standard operators, written in syno's dimension-level primitives =="
for b in conv2d grouped-conv2d depthwise-conv2d strided-conv2d linear avgpool2d; do
  echo
  "$SYNO" show --builtin "$b" | sed -n '1,/^primitives/p'
done
echo
echo "== the conv2d loop nests (forward and both gradients) =="
"$SYNO" show --builtin conv2d --bind N=2,C_in=4,C_out=8,H=9,W=9,k=3 | sed -n '/^forward:/,$p'
echo
echo "== the reference interpreter on seeded data =="
for b in conv2d grouped-conv2d depthwise-conv2d strided-conv2d linear avgpool2d; do
  echo
  "$SYNO" run --builtin "$b" --seed 1 --bind "$(case $b in
    linear) echo N=4,C_in=16,C_out=8 ;;
    avgpool2d) echo N=2,C_in=4,H=8,W=8 ;;
    depthwise-conv2d) echo N=2,C_in=4,H=8,W=8 ;;
    *) echo N=2,C_in=4,C_out=4,H=8,W=8 ;;
  esac)"
done
echo
echo "== the search space: random operators, then the exact space at depth 4 =="
"$SYNO" sample --preset conv2d --bind N=2,C_in=4,C_out=8,H=8,W=8 --depth 5 -n 8 --seed 1
echo
"$SYNO" space --preset conv2d --depth 4 --exhaustive --duplicates
