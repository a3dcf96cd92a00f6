#!/usr/bin/env bash
# Runs each libFuzzer target of tests/fuzz for a while (`make fuzz`, docs/fuzz.md).
#   scripts/fuzz.sh BUILD_DIR SECONDS TARGET...
# Each target starts from a scratch copy of its committed corpus and
# regressions (tests/fuzz/corpus/<t>, tests/fuzz/regress/<t>), so the
# committed corpus never grows here; what it finds stays in
# BUILD_DIR/fuzz-run/<t>/. Prints the executions each reached
# (stat::number_of_executed_units) and fails if any target crashed, leaked,
# hung (-timeout=10) or ran out of memory; the crash input is left in
# BUILD_DIR/fuzz-run/<t>/ as crash-*, leak-*, timeout-* or oom-*.
set -uo pipefail
cd "$(dirname "$0")/.."
build=$1 seconds=$2
shift 2
run=$build/fuzz-run
failed=()
for t in "$@"; do
  dir=$run/$t
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  # The harnesses' files (data sets, databases) live in memory when they can:
  # the database's fsyncs would otherwise dominate its run.
  tmp=$(mktemp -d /dev/shm/syno-fuzz-"$t".XXXXXX 2>/dev/null || mktemp -d "$dir/tmp.XXXXXX")
  cp tests/fuzz/corpus/"$t"/* "$dir/corpus/" 2>/dev/null
  cp tests/fuzz/regress/"$t"/* "$dir/corpus/" 2>/dev/null
  dict=()
  [ -f tests/fuzz/dict/"$t".dict ] && dict=(-dict=tests/fuzz/dict/"$t".dict)
  UBSAN_OPTIONS=print_stacktrace=1 TMPDIR=$tmp "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/" "${dict[@]}" "$dir/corpus" >"$dir/log" 2>&1
  rc=$?
  rm -rf "$tmp"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    echo "fuzz $t: FAILED (exit $rc) after ${execs:-?} executions; log $dir/log, input:" $(ls "$dir" | grep -E '^(crash|leak|timeout|oom|slow-unit)-')
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*fuzz check failed)' "$dir/log" | head -5
  else
    echo "fuzz $t: ${execs:-?} executions in ${seconds} s, no crash"
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: $# targets, no crash"
