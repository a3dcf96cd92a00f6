#!/usr/bin/env bash
# make demo: syno's main job on its embedded default. A short operator
# search (MCTS) on the UCI digits committed in data/: every candidate the
# search proposes fills each conv slot of a small ResNet, is timed against
# the standard convolution it replaces and, when it is not slower, trained, in
# its own worker process; results go into an SQLite database, the top three
# are re-trained at a larger proxy, then `syno report` prints the best
# operators and writes the plots. A candidate whose training or timing takes
# over 30 s is stopped and recorded as a timeout, which keeps the demo to a
# few minutes.
set -euo pipefail
SYNO=${1:-build/syno}
OUT=${DEMO_DIR:-build/demo}
mkdir -p "$OUT"
DB="$OUT/demo.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
echo "== syno search: MCTS over the published conv2d space, ResNet on digits, 24 candidates, 2 workers =="
"$SYNO" search --backbone resnet --dataset digits --epochs 4 --budget 24 --workers 2 --timeout 30 --seed 1 --db "$DB"
echo
echo "== syno report =="
"$SYNO" report --db "$DB" --top 8
