#!/usr/bin/env bash
# valgrind memcheck on a short search: the search driver itself (MCTS, the
# worker pool, the results database; its `syno eval` workers run natively),
# then one `syno eval` (the backbone, the executor, training and the latency
# measurement) at a tiny proxy. Fails on any memory error or definite leak.
#   scripts/valgrind.sh BUILD_DIR
set -euo pipefail
syno="${1:-build}/syno"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vg=(valgrind --error-exitcode=3 --leak-check=full --errors-for-leak-kinds=definite --quiet)
op='r0=sum(k_1) r1=sum(C_in); in[i0, share(r1, 1), i2, unfold(i3, share(r0, 1))] expand[share(i1, 1)] w1[r1, i1, r0]'

# Width 0.5: at 0.25 (4 channels) the space holds no operator, and a search that finds none
# fails (exit 1, naming the limit).
echo "valgrind: syno search (budget 3, one confirmation)"
"${vg[@]}" "$syno" search --backbone resnet --dataset digits --budget 3 --epochs 1 --subset 200 --width 0.5 \
  --confirm 1 --seed 1 --db "$tmp/v.db" --quiet
"$syno" report --db "$tmp/v.db" | grep -q "candidates"
echo "valgrind: syno eval (1 epoch on 128 images)"
"${vg[@]}" "$syno" eval --backbone resnet --dataset digits --op "$op" --epochs 1 --subset 128 --width 0.25 \
  --min-speedup 0 --repeats 3 > "$tmp/eval.json"
grep -q '"status":0' "$tmp/eval.json"
echo "valgrind: clean"
