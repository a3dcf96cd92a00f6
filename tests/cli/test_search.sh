#!/usr/bin/env bash
# syno search end to end on the committed digits data: bad input, a search
# killed with SIGKILL in the middle, and --resume losing no finished
# evaluation and evaluating none twice.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Bad input: a usage error is status 2; a corrupt or foreign database is
# refused and left as it was.
"$bin" search >/dev/null 2>&1; [ $? -eq 2 ] || fail "search without --db should exit 2"
"$bin" search --db "$tmp/x.db" --workers 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--workers 0 should exit 2"
head -c 4096 /dev/urandom > "$tmp/junk.db"; cp "$tmp/junk.db" "$tmp/junk.orig"
msg=$("$bin" search --resume "$tmp/junk.db" 2>&1); [ $? -ne 0 ] || fail "a corrupt database was accepted"
cmp -s "$tmp/junk.db" "$tmp/junk.orig" || fail "a corrupt database was modified"
echo "$msg" | grep -q "junk.db" || fail "the message does not name the file: $msg"

# A search that is killed with SIGKILL once some candidates are recorded.
# Full width: each evaluation must take long enough for the kill below to land
# in the middle of the search (at --width 0.25 the whole search takes 1 s).
common=(--backbone resnet --dataset digits --epochs 1 --subset 300 --batch 32 --depth 1
        --space-depth 6 --seed 3 --quiet)
"$bin" search --db "$tmp/k.db" --budget 5 --log "$tmp/log1" "${common[@]}" 2>"$tmp/err1" &
pid=$!
rows() { "$bin" report --db "$tmp/k.db" --json 2>/dev/null | grep -c '"op_text"'; }
for _ in $(seq 600); do
  sleep 0.5
  kill -0 $pid 2>/dev/null || break
  [ "$(rows)" -ge 3 ] && break   # the baseline + 2 candidates
done
kill -9 $pid 2>/dev/null || fail "the search ended before it could be killed: $(cat "$tmp/err1")"
wait $pid 2>/dev/null
"$bin" report --db "$tmp/k.db" --json | grep '"op_text"' | sort > "$tmp/before"
n_before=$(wc -l < "$tmp/before")
[ "$n_before" -ge 3 ] || fail "expected at least 3 rows before the kill, got $n_before"

"$bin" search --resume "$tmp/k.db" --log "$tmp/log2" --quiet 2>"$tmp/err2" || fail "resume failed: $(cat "$tmp/err2")"
"$bin" report --db "$tmp/k.db" --json | grep '"op_text"' | sort > "$tmp/after"
# Every finished evaluation is still there, unchanged.
missing=$(comm -23 "$tmp/before" "$tmp/after" | wc -l)
[ "$missing" -eq 0 ] || fail "$missing recorded evaluations changed or vanished after --resume"
# The recorded budget is met: 5 candidates plus the baseline.
[ "$(wc -l < "$tmp/after")" -eq 6 ] || fail "expected 6 rows after resume, got $(wc -l < "$tmp/after")"
# Nothing recorded before was evaluated again.
sed -n 's/^evaluate //p' "$tmp/log2" | sort > "$tmp/again"
grep -o '"op_text":"[^"]*"' "$tmp/before" | sed 's/"op_text":"//; s/"$//' | sort > "$tmp/old"
twice=$(comm -12 "$tmp/old" "$tmp/again" | wc -l)
[ "$twice" -eq 0 ] || fail "$twice recorded candidates were evaluated again"
echo "search kill/resume: $n_before rows before the kill, 6 after, none evaluated twice"

# The search spec: an Unfold of 3 fits the smallest slot side (2 here), and
# --max-params bounds the first slot's parameters (9 * 16 * 16 standard).
"$bin" report --db "$tmp/k.db" | grep -q '"min_unfold_ratio":0.666' ||
  fail "the spec does not relax min_unfold_ratio to the smallest slot: $("$bin" report --db "$tmp/k.db" | grep spec)"
"$bin" search --db "$tmp/p.db" --max-params -1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--max-params -1 should exit 2"
"$bin" search --db "$tmp/p.db" --budget 1 --time 0.01 --max-params 0.5 "${common[@]}" 2>/dev/null ||
  fail "search --max-params failed"
"$bin" report --db "$tmp/p.db" | grep -q '"max_params":1152' || fail "--max-params 0.5 is not max_params 1152 in the spec"

# A FLOPs window with no operator in it: the search ends cleanly and says why.
loud=(); for a in "${common[@]}"; do [ "$a" = --quiet ] || loud+=("$a"); done
"$bin" search --db "$tmp/e.db" --budget 0 --min-flops 0.97 --max-flops 0.98 "${loud[@]}" 2>"$tmp/e.err" ||
  fail "a search over an empty window failed: $(cat "$tmp/e.err")"
grep -q "the space has no further operators" "$tmp/e.err" || fail "the empty window was not reported: $(tail -2 "$tmp/e.err")"
grep -q "no candidate yet" "$tmp/e.err" || fail "the progress line without candidates: $(tail -2 "$tmp/e.err")"

# Retraining a recorded candidate takes its operator and the search's settings.
"$bin" train --db "$tmp/k.db" --id 2 --epochs 1 --subset 100 --json > "$tmp/re" 2>"$tmp/re.err" ||
  fail "train --db --id failed: $(cat "$tmp/re.err")"
grep -q '"dataset":"digits"' "$tmp/re" || fail "train --db did not take the search's data set: $(cat "$tmp/re")"
grep -q 'a synthesized operator' "$tmp/re.err" || fail "train --db --id 2 did not retrain the candidate"
"$bin" train --db "$tmp/k.db" --id 999 2>"$tmp/re.err"; st=$?
[ "$st" -eq 2 ] && grep -q "no candidate 999" "$tmp/re.err" || fail "train --id 999: status $st, $(cat "$tmp/re.err")"
echo "1 passed, 0 failed"
