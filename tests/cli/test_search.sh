#!/usr/bin/env bash
# syno search end to end on the committed digits data: bad input, a search
# killed with SIGKILL in the middle, and --resume losing no finished
# evaluation and evaluating none twice; --min-speedup (a candidate too slow is
# not trained, the baseline always is) and --confirm (the top candidates
# re-trained, recorded and ranked first by the report).
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

"$bin" search --db "$tmp/x.db" --min-speedup -1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--min-speedup -1 should exit 2"
"$bin" search --db "$tmp/x.db" --confirm -1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--confirm -1 should exit 2"

# A search that is killed with SIGKILL once some candidates are recorded.
# Full width and 4 epochs: each evaluation must take long enough (about a second
# here) for the kill below to land in the middle of the search; at 1 epoch the
# whole search took 2-3 s, and a poll could miss it. Every candidate trains
# (--min-speedup 0), and nothing is confirmed.
common=(--backbone resnet --dataset digits --epochs 1 --subset 300 --batch 32 --depth 1
        --space-depth 6 --seed 3 --quiet)
"$bin" search --db "$tmp/k.db" --budget 5 --log "$tmp/log1" --min-speedup 0 --confirm 0 "${common[@]}" --epochs 4 \
  2>"$tmp/err1" &
pid=$!
rows() { "$bin" report --db "$tmp/k.db" --json 2>/dev/null | grep -c '"op_text"'; }
for _ in $(seq 3000); do
  sleep 0.1
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

# A FLOPs window with no operator in it: the search says why, names the binding and the
# limit, and exits 1 (with --quiet too).
loud=(); for a in "${common[@]}"; do [ "$a" = --quiet ] || loud+=("$a"); done
"$bin" search --db "$tmp/e.db" --budget 0 --min-flops 0.97 --max-flops 0.98 "${loud[@]}" 2>"$tmp/e.err"; st=$?
[ "$st" -eq 1 ] || fail "a search over an empty window exited $st: $(cat "$tmp/e.err")"
grep -q "the space has no further operators" "$tmp/e.err" || fail "the empty window was not reported: $(tail -2 "$tmp/e.err")"
grep -q "no candidate yet" "$tmp/e.err" || fail "the progress line without candidates: $(tail -2 "$tmp/e.err")"
grep -q "syno search: no operator found at depth 6, binding C_in=16, C_out=16, H=8" "$tmp/e.err" &&
  grep -q "the limit that removed the most: a size, FLOPs, parameter or pooling limit" "$tmp/e.err" ||
  fail "an empty search did not name its binding and limit: $(cat "$tmp/e.err")"
"$bin" search --db "$tmp/e2.db" --budget 0 --min-flops 0.97 --max-flops 0.98 "${common[@]}" 2>"$tmp/e.err"; st=$?
[ "$st" -eq 1 ] && grep -q "no operator found" "$tmp/e.err" || fail "an empty --quiet search: status $st, $(cat "$tmp/e.err")"

# --spec: the user's space (a preset with options) bound to the backbone's slots, recorded
# with the database and resumed with it; the spec's own FLOPs ratio replaces the default.
printf '{"preset": "conv2d", "max_tensors": 3, "depth": 6, "max_flops_ratio": 0.5}\n' >"$tmp/space.json"
nodepth=(); for a in "${common[@]}"; do [ "$a" = --space-depth ] || [ "$a" = 6 ] || nodepth+=("$a"); done
"$bin" search --db "$tmp/sp.db" --spec "$tmp/space.json" --budget 1 --confirm 0 --min-speedup 0 "${nodepth[@]}" \
  2>"$tmp/sp.err" || fail "search --spec failed: $(cat "$tmp/sp.err")"
"$bin" report --db "$tmp/sp.db" | sed -n 's/^  spec  *//p' >"$tmp/sp.json"
python3 - "$tmp/sp.json" <<'PY' || fail "the recorded spec is not the user's, bound to the slots: $(cat "$tmp/sp.json")"
import json, sys
spec = json.loads(open(sys.argv[1]).read())
assert spec["preset"] == "conv2d" and spec["max_tensors"] == 3 and spec["depth"] == 6, spec
assert len(spec["bind"]) >= 4 and abs(spec["max_flops"] / spec["min_flops"] - 0.5 / 0.15) < 1e-6, spec
PY
"$bin" search --resume "$tmp/sp.db" --budget 2 --quiet 2>"$tmp/sp.err" || fail "resuming a --spec search: $(cat "$tmp/sp.err")"
printf '{"preset": "conv2d", "bind": "N=1,C_in=4,C_out=4,H=8"}\n' >"$tmp/bound.json"
printf '{"input": "[N, C]", "output": "[N, C]", "bind": "N=2,C=4"}\n' >"$tmp/own.json"
for c in "--spec $tmp/space.json --preset conv2d-wide:give one of --preset and --spec" \
         "--spec $tmp/bound.json:drop \"bind\": the bindings are the backbone's slots" \
         "--spec $tmp/own.json:a spec of its own shapes cannot fill a backbone's slots"; do
  "$bin" search --db "$tmp/sp2.db" ${c%%:*} "${common[@]}" 2>"$tmp/sp.err"; st=$?
  [ "$st" -eq 2 ] && grep -qF "${c#*:}" "$tmp/sp.err" || fail "search ${c%%:*}: status $st, $(cat "$tmp/sp.err")"
done
# syno eval --spec: the operator read in the spec's preset (a conv2d-wide text needs W).
printf '{"preset": "conv2d-wide"}\n' >"$tmp/wide.json"
wide='r0=sum(k) r1=sum(C_in); in[i0, share(r1, 1), i2, unfold(i3, share(r0, 1))] expand[share(i1, 1)] w1[r1, i1, r0]'
"$bin" eval --backbone resnet --dataset digits --spec "$tmp/wide.json" --op "$wide" --stand-in >"$tmp/ev.out" \
  2>"$tmp/sp.err" && grep -q '"status":0' "$tmp/ev.out" || fail "eval --spec: $(cat "$tmp/sp.err")"
"$bin" eval --backbone resnet --dataset digits --spec "$tmp/wide.json" --preset conv2d --op "$wide" --stand-in \
  >/dev/null 2>"$tmp/sp.err"; st=$?
[ "$st" -eq 2 ] || fail "eval --spec with --preset: status $st"
echo "search --spec: the user's space recorded, resumed; a spec with bind or its own shapes refused; eval --spec"

# A search on colour images in the CIFAR-10 binary layout (generated here, found through
# SYNO_CIFAR10_DIR, which the workers inherit), with --augment: the README's recipe on small data.
mkdir "$tmp/cifar"
python3 - "$tmp/cifar" <<'PY'
import random, sys
random.seed(1)
for name, n in [(f"data_batch_{b}.bin", 30) for b in range(1, 6)] + [("test_batch.bin", 30)]:
    with open(f"{sys.argv[1]}/{name}", "wb") as f:
        for i in range(n):
            f.write(bytes([i % 10]) + bytes(((i % 10) * 25 + c * 80 + random.randrange(32)) % 256
                                            for c in range(3) for _ in range(1024)))
PY
SYNO_CIFAR10_DIR="$tmp/cifar" "$bin" search --backbone resnet --dataset cifar10 --pad 0 --augment --db "$tmp/cifar.db" \
  --budget 2 --epochs 1 --depth 1 --width 0.25 --confirm 0 --min-speedup 0 --quiet 2>"$tmp/c.err" ||
  fail "a search on CIFAR-10 files failed: $(cat "$tmp/c.err")"
"$bin" report --db "$tmp/cifar.db" | grep -q '"dataset":"cifar10".*"augment":1' || fail "the CIFAR search's settings"
[ "$("$bin" report --db "$tmp/cifar.db" --json | grep -c '"op_text"')" -eq 3 ] || fail "the CIFAR search did not record 2 candidates"
echo "search on CIFAR-10 files with --augment: 2 candidates"

# --min-speedup: every candidate is timed before it trains, and one not 1000x
# faster than the standard network is recorded as a failure with reward 0,
# its latency measured and not trained (epochs_done and train_seconds 0). The
# baseline trains all the same. A resumed search keeps the setting.
json_check() { python3 -c "$1" "$2" || fail "$3"; }
"$bin" search --db "$tmp/s.db" --budget 3 --min-speedup 1000 --confirm 0 "${common[@]}" 2>"$tmp/s.err" ||
  fail "search --min-speedup 1000 failed: $(cat "$tmp/s.err")"
"$bin" search --resume "$tmp/s.db" --budget 4 --quiet 2>"$tmp/s.err" ||
  fail "resume of s.db failed: $(cat "$tmp/s.err")"
"$bin" report --db "$tmp/s.db" --json > "$tmp/s.json" || fail "report of s.db failed"
json_check '
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
summary = rows.pop()
base = [r for r in rows if r["is_baseline"]]
cands = [r for r in rows if not r["is_baseline"]]
assert len(base) == 1 and base[0]["status"] == 0 and base[0]["epochs_done"] == 1 and base[0]["train_seconds"] > 0, base
assert len(cands) == 4, len(cands)
for r in cands:
    assert r["status"] == 1, r
    assert re.fullmatch(r"slower than the baseline \([0-9.]+x, the minimum is 1000x\)", r["reason"]), r
    assert r["epochs_done"] == 0 and r["train_seconds"] == 0 and r["accuracy"] == 0 and r["reward"] == 0, r
    assert r["latency_s"] > 0 and r["base_latency_s"] > 0 and r["speedup"] > 0, r
assert summary["too_slow"] == 4 and summary["failed"] == 4, summary
' "$tmp/s.json" "--min-speedup 1000: $(cat "$tmp/s.json")"
"$bin" report --db "$tmp/s.db" | grep -q "4 of them slower than the baseline, not trained" ||
  fail "the report does not count the candidates too slow to train"
echo "search --min-speedup: 4 candidates too slow and not trained, the baseline trained"

# --confirm: the top 2 candidates by reward are re-trained at the end and their
# accuracy recorded; the report ranks them first, by confirmed accuracy. A
# resumed search with --confirm 3 confirms only the third.
"$bin" search --db "$tmp/c.db" --budget 4 --min-speedup 0 --confirm 2 --log "$tmp/c.log" "${loud[@]}" 2>"$tmp/c.err" ||
  fail "search --confirm 2 failed: $(cat "$tmp/c.err")"
grep -q "confirming the top 2 candidate(s) by reward: 2 epochs, 600 training images, seed 4" "$tmp/c.err" ||
  fail "no confirmation phase: $(tail -5 "$tmp/c.err")"
[ "$(grep -c "^\[search\] confirmation [12]/2: id [0-9]* accuracy" "$tmp/c.err")" -eq 2 ] ||
  fail "two confirmations were not reported: $(tail -5 "$tmp/c.err")"
"$bin" report --db "$tmp/c.db" --json > "$tmp/c.json" || fail "report of c.db failed"
confirm_check='
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
summary = rows.pop()
ok = sorted((r for r in rows if not r["is_baseline"] and r["status"] == 0), key=lambda r: (-r["reward"], r["id"]))
want = min(int(sys.argv[2]), len(ok))
conf = [r for r in rows if r["confirmed"] == 1]
assert len(conf) == want and {r["id"] for r in conf} == {r["id"] for r in ok[:want]}, (want, conf)
assert all(r["confirmed_accuracy"] > 0 and r["confirm_seconds"] > 0 for r in conf), conf
rank = [r["id"] for r in sorted(conf, key=lambda r: (-r["confirmed_accuracy"], -r["reward"], r["id"]))]
assert summary["ranked_ids"][:want] == rank and summary["confirmed"] == want, (summary, rank)
assert summary["best_confirmed_accuracy"] == max(r["confirmed_accuracy"] for r in conf), summary
'
python3 -c "$confirm_check" "$tmp/c.json" 2 || fail "--confirm 2: $(cat "$tmp/c.json")"
"$bin" report --db "$tmp/c.db" | grep -q "ranked by confirmed accuracy (2 confirmed: re-trained at 2 epochs" ||
  fail "the report does not say it ranks by confirmed accuracy"
"$bin" search --resume "$tmp/c.db" --confirm 3 --log "$tmp/c.log2" --quiet 2>"$tmp/c.err" ||
  fail "resume --confirm 3 failed: $(cat "$tmp/c.err")"
"$bin" report --db "$tmp/c.db" --json > "$tmp/c.json"
python3 -c "$confirm_check" "$tmp/c.json" 3 || fail "resume --confirm 3: $(cat "$tmp/c.json")"
[ "$(grep -c '^confirm ' "$tmp/c.log2")" -le 1 ] ||
  fail "a resumed search confirmed a candidate again: $(cat "$tmp/c.log2")"
echo "search --confirm: 2 confirmed and ranked first, a resume confirmed the third only"

# --ordered: two searches with two workers and one seed are the same, candidate for candidate,
# although the stand-in evaluations (0.05-0.5 s each) end out of order.
ordered=(--stand-in --ordered --workers 2 --budget 10 --seed 4 --confirm 0 --quiet)
"$bin" search --db "$tmp/o1.db" "${ordered[@]}" 2>"$tmp/o.err" || fail "--ordered: $(cat "$tmp/o.err")"
"$bin" search --db "$tmp/o2.db" "${ordered[@]}" 2>"$tmp/o.err" || fail "--ordered: $(cat "$tmp/o.err")"
rows_of() {
  python3 -c 'import sqlite3, sys; [print(r) for r in sqlite3.connect(sys.argv[1]).execute("select id, op_text, status, reward, worker from candidates order by id")]' "$1"
}
rows_of "$tmp/o1.db" >"$tmp/o1.txt"
rows_of "$tmp/o2.db" >"$tmp/o2.txt"
[ "$(wc -l <"$tmp/o1.txt")" -eq 11 ] || fail "--ordered recorded $(wc -l <"$tmp/o1.txt") rows, not 11"
cmp -s "$tmp/o1.txt" "$tmp/o2.txt" || fail "two --ordered searches differ: $(diff "$tmp/o1.txt" "$tmp/o2.txt")"
echo "search --ordered: two runs with 2 workers, the same 10 candidates in the same order"

# The results table over several searches: one row each, the fastest within 1 pp, the geometric mean.
"$bin" report --table "$tmp/o1.db" --table "$tmp/o2.db" --json --out "$tmp" >"$tmp/table.json" ||
  fail "report --table failed"
python3 - "$tmp/table.json" "$tmp/o1.db" <<'PY' || fail "report --table: $(cat "$tmp/table.json")"
import json, math, sqlite3, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
summary = rows.pop()
assert len(rows) == 2 and rows[0] == dict(rows[1], db="o1.db"), rows
db = sqlite3.connect(sys.argv[2])
base = db.execute("select accuracy from candidates where is_baseline = 1").fetchone()[0]
near = db.execute("select id, speedup from candidates where is_baseline = 0 and status = 0 and accuracy >= ? "
                  "order by speedup desc, id limit 1", (base - 0.01,)).fetchone()
want = near[1] if near else 1.0
assert (rows[0].get("best_id") == (near[0] if near else None)), (rows[0], near)
assert abs(summary["geomean_speedup"] - want) < 1e-6 * want, (summary, want)
PY
"$bin" report --table "$tmp/o1.db" --db "$tmp/o1.db" >/dev/null 2>&1; [ $? -eq 2 ] || fail "--table with --db should exit 2"
echo "report --table: one row per search, the fastest within 1 pp, their geometric mean"

# A damaged settings record (a number no search writes) is refused on resume, the file untouched.
cp "$tmp/o1.db" "$tmp/bad.db"
python3 - "$tmp/bad.db" <<'PY'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
s = json.loads(c.execute("select value from meta where key = 'driver'").fetchone()[0])
s["epochs"] = 1e300
c.execute("update meta set value = ? where key = 'driver'", (json.dumps(s),))
c.commit()
PY
cp "$tmp/bad.db" "$tmp/bad.orig"
"$bin" search --resume "$tmp/bad.db" --quiet 2>"$tmp/bad.err" && fail "damaged settings were accepted"
grep -q "search settings have epochs 1e+300, outside the integers 1..10000" "$tmp/bad.err" ||
  fail "the message does not name the setting: $(cat "$tmp/bad.err")"
cmp -s "$tmp/bad.db" "$tmp/bad.orig" || fail "a refused resume changed the database"
echo "search --resume: damaged settings refused, naming the value, file unchanged"

# Retraining a recorded candidate takes its operator and the search's settings.
"$bin" train --db "$tmp/k.db" --id 2 --epochs 1 --subset 100 --json > "$tmp/re" 2>"$tmp/re.err" ||
  fail "train --db --id failed: $(cat "$tmp/re.err")"
grep -q '"dataset":"digits"' "$tmp/re" || fail "train --db did not take the search's data set: $(cat "$tmp/re")"
grep -q 'a synthesized operator' "$tmp/re.err" || fail "train --db --id 2 did not retrain the candidate"
"$bin" train --db "$tmp/k.db" --id 999 2>"$tmp/re.err"; st=$?
[ "$st" -eq 2 ] && grep -q "no candidate 999" "$tmp/re.err" || fail "train --id 999: status $st, $(cat "$tmp/re.err")"

# Re-timing a recorded candidate: its row gets the new figures beside the search's own, which
# stay as they were; the report then shows the re-timed speed-up, marked.
q() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$tmp/k.db" "$1"; }
before=$(q "select speedup || ' ' || latency_s from candidates where id = 2")
"$bin" eval --db "$tmp/k.db" --id 2 --retime --repeats 3 > "$tmp/rt" 2>"$tmp/rt.err" ||
  fail "eval --retime failed: $(cat "$tmp/rt.err")"
grep -q '"id":2,' "$tmp/rt" || fail "eval --retime printed no record of candidate 2: $(cat "$tmp/rt")"
grep -q "^candidate 2: .* faster than the standard network .* recorded in" "$tmp/rt.err" ||
  fail "eval --retime did not say what it measured: $(cat "$tmp/rt.err")"
python3 - "$tmp/rt" "$tmp/k.db" <<'PY' || fail "the re-timing was not recorded as printed"
import json, sqlite3, sys
r = json.loads(open(sys.argv[1]).read())
row = sqlite3.connect(sys.argv[2]).execute(
    "select retimed, retime_speedup, retime_latency_s, retime_base_impl, retime_repeats from candidates where id = 2").fetchone()
close = lambda a, b: abs(a - b) <= 1e-12 * abs(b)  # the JSON keeps 15 digits
assert row[0] == 1 and row[3:] == (r["base_impl"], 3), (row, r)
assert close(row[1], r["speedup"]) and close(row[2], r["latency_s"]), (row, r)
assert r["speedup"] > 0 and abs(r["speedup"] - r["base_latency_s"] / r["latency_s"]) < 1e-9 * r["speedup"], r
PY
[ "$(q "select speedup || ' ' || latency_s from candidates where id = 2")" = "$before" ] ||
  fail "eval --retime changed the search's own timing"
"$bin" report --db "$tmp/k.db" > "$tmp/rep" || fail "report after a re-timing failed"
grep -q "^\* re-timed after the search" "$tmp/rep" && grep -q "x\* " "$tmp/rep" ||
  fail "the report does not mark the re-timed speed-up: $(cat "$tmp/rep")"
base_id=$(q "select id from candidates where is_baseline = 1")
"$bin" eval --db "$tmp/k.db" --id "$base_id" --retime 2>"$tmp/rt.err"; st=$?
[ "$st" -eq 2 ] && grep -q "is the baseline" "$tmp/rt.err" || fail "retime of the baseline: status $st, $(cat "$tmp/rt.err")"
"$bin" eval --db "$tmp/k.db" --id 2 --retime --backbone vgg 2>"$tmp/rt.err"; st=$?
[ "$st" -eq 2 ] && grep -q "drop --backbone" "$tmp/rt.err" || fail "retime with --backbone: status $st, $(cat "$tmp/rt.err")"
"$bin" eval --db "$tmp/k.db" --id 2 2>"$tmp/rt.err"; st=$?
[ "$st" -eq 2 ] && grep -q "go together" "$tmp/rt.err" || fail "--db --id without --retime: status $st, $(cat "$tmp/rt.err")"
echo "eval --retime: a candidate timed again, recorded beside the search's timing, marked in the report"
echo "1 passed, 0 failed"
