#!/usr/bin/env bash
# syno search --mpi with 3 ranks (a master and two worker ranks), on the
# deterministic stand-in evaluator (--stand-in: no training, 0.05-0.5 s per
# evaluation, results from a hash of the operator):
#  1. with --ordered, the MPI run equals a local run with two workers and the
#     same seed, candidate for candidate;
#  2. a worker's evaluation killed with SIGKILL costs that candidate only: it
#     is recorded as failed and the search finishes its budget;
#  3. a worker rank killed with SIGKILL ends the whole job (MPICH), and
#     --resume on the same database finishes the budget with every candidate
#     recorded once and no recorded candidate evaluated again.
# Exits 77 (skipped) when mpiexec or this build's MPI is missing.
set -u
bin=$1
tmp=$(mktemp -d)
cleanup() {
  pkill -9 -f "syno search --mpi .*$tmp" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

if ! command -v mpiexec >/dev/null; then
  echo "SKIP: mpiexec not found (apt-get install --no-install-recommends mpich libmpich-dev)"
  exit 77
fi
msg=$("$bin" search --mpi --db "$tmp/none.db" 2>&1)
if echo "$msg" | grep -q "built without MPI"; then
  echo "SKIP: $msg"
  exit 77
fi
echo "$msg" | grep -q "at least 2 ranks" || fail "--mpi outside mpiexec: $msg"
[ -e "$tmp/none.db" ] && fail "a refused --mpi search created its database"
"$bin" search --mpi --workers 2 --db "$tmp/x.db" >/dev/null 2>&1; [ $? -eq 2 ] || fail "--mpi with --workers should exit 2"

mpi=(mpiexec -n 3 "$bin" search --mpi)
# The records that must agree: what was proposed, in which order, and what it got.
dump() {
  python3 - "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("select id, op_text, status, reason, reward, accuracy, speedup, worker, confirmed, "
                    "confirmed_accuracy from candidates order by id"):
    print(r)
EOF
}
count() { dump "$1" | grep -vc "standard operator"; }
ops() { python3 -c 'import sqlite3, sys; [print(r[0]) for r in sqlite3.connect(sys.argv[1]).execute("select op_text from candidates where is_baseline = 0")]' "$1"; }

# 1. MPI = local, candidate for candidate.
common=(--stand-in --ordered --budget 12 --seed 3 --quiet)
"$bin" search --workers 2 --db "$tmp/local.db" "${common[@]}" 2>"$tmp/err" || fail "local run: $(cat "$tmp/err")"
"${mpi[@]}" --db "$tmp/mpi.db" "${common[@]}" 2>"$tmp/err" || fail "MPI run: $(cat "$tmp/err")"
dump "$tmp/local.db" >"$tmp/local.txt"
dump "$tmp/mpi.db" >"$tmp/mpi.txt"
[ "$(count "$tmp/mpi.db")" -eq 12 ] || fail "the MPI run recorded $(count "$tmp/mpi.db") candidates, not 12"
diff "$tmp/local.txt" "$tmp/mpi.txt" >"$tmp/diff" || fail "the MPI run differs from the local one: $(cat "$tmp/diff")"
echo "ok: 3 ranks and 2 local workers, seed 3: the same 12 candidates, rewards and confirmations"

# 2. One evaluation killed in a worker rank.
seed=918273
"${mpi[@]}" --db "$tmp/kill.db" --stand-in --budget 12 --seed $seed --confirm 0 --quiet 2>"$tmp/err" &
pid=$!
# A stand-in evaluation lasts 0.05-0.5 s: one seen may end before the kill lands (a loaded
# host), so the next one running is taken until a kill succeeds.
killed=""
for _ in $(seq 400); do
  victim=$(pgrep -f -- "eval .*--seed $seed .*--op .*--stand-in" | head -1)
  [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null && { killed=$victim; break; }
  sleep 0.02
done
[ -n "$killed" ] || fail "no evaluation of the MPI search was seen running"
wait $pid || fail "the search did not survive a killed evaluation: $(cat "$tmp/err")"
[ "$(count "$tmp/kill.db")" -eq 12 ] || fail "after a killed evaluation $(count "$tmp/kill.db") candidates, not 12"
[ "$(dump "$tmp/kill.db" | grep -c "killed by signal 9")" -eq 1 ] || fail "the killed evaluation is not recorded as such"
echo "ok: an evaluation killed with SIGKILL is recorded as failed and the search finished its 12"

# 3. A worker rank killed: the job ends; --resume finishes it. The budget is large enough
# that the rank is killed long before the end even when the machine is loaded and the
# polling below is slow (with 16 the stand-in search once finished first).
budget=64
"${mpi[@]}" --db "$tmp/rank.db" --stand-in --budget $budget --seed 5 --confirm 0 --log "$tmp/log1" --quiet \
  2>"$tmp/err1" &
pid=$!
rank1=""
for _ in $(seq 600); do
  sleep 0.05
  [ -s "$tmp/rank.db" ] && [ "$(count "$tmp/rank.db" 2>/dev/null)" -ge 4 ] && break
done
for p in $(pgrep -f -- "syno search --mpi --db $tmp/rank.db"); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "PMI_RANK=1" && rank1=$p
done
[ -n "$rank1" ] || fail "worker rank 1 not found"
before=$(count "$tmp/rank.db")
[ "$before" -lt $budget ] || fail "the search finished before its rank could be killed"
kill -9 "$rank1"
t0=$(date +%s.%N)
wait $pid && fail "the job went on after a rank was killed"
t1=$(date +%s.%N)
echo "ok: rank 1 killed with SIGKILL after $before candidates; the job ended $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s later"
ops "$tmp/rank.db" >"$tmp/recorded"
"${mpi[@]}" --resume "$tmp/rank.db" --log "$tmp/log2" --quiet 2>"$tmp/err2" || fail "resume: $(cat "$tmp/err2")"
[ "$(count "$tmp/rank.db")" -eq $budget ] || fail "the resumed search has $(count "$tmp/rank.db") candidates, not $budget"
dup=$(ops "$tmp/rank.db" | sort | uniq -d | head -1)
[ -z "$dup" ] || fail "a candidate is recorded twice: $dup"
while read -r line; do
  op=${line#evaluate }
  grep -qxF "$op" "$tmp/recorded" && fail "the resumed search evaluated a recorded candidate again: $op"
done < <(grep '^evaluate ' "$tmp/log2")
echo "ok: --resume finished the budget: $budget candidates, none twice, none recorded before evaluated again"
echo "3 passed, 0 failed"
