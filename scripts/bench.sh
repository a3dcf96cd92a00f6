#!/usr/bin/env bash
# make bench: runs every benchmark program in build/bench, in name order.
set -euo pipefail
BUILD=${1:-build}
shopt -s nullglob
progs=("$BUILD"/bench/*)
if [ ${#progs[@]} -eq 0 ]; then echo "no benchmarks built in $BUILD/bench"; exit 1; fi
for p in "${progs[@]}"; do
  [ -x "$p" ] || continue
  echo "== $(basename "$p") =="
  "$p"
  echo
done
