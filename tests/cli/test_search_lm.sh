#!/usr/bin/env bash
# syno search on the language model: the gpt backbone on the committed kjv text, operators of
# the linear preset in its fused QKV projections, rewarded by validation perplexity; the
# report shows perplexities. Small settings (one epoch on 300 windows) keep it short.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" search --backbone gpt --budget 4 --epochs 1 --subset 300 --seed 2 --db "$tmp/lm.db" --quiet 2>"$tmp/err" ||
  fail "the gpt search failed: $(cat "$tmp/err")"
"$bin" report --db "$tmp/lm.db" --json >"$tmp/lm.json" || fail "report --json failed"
python3 - "$tmp/lm.json" <<'PY' || fail "the records: $(cat "$tmp/lm.json")"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
summary = rows.pop()
base = [r for r in rows if r["is_baseline"]][0]
cands = [r for r in rows if not r["is_baseline"]]
assert len(cands) == 4, len(cands)
assert summary["quality"] == "perplexity" and summary["baseline_perplexity"] == base["perplexity"], summary
assert 1 < base["perplexity"] < 200 and base["base_impl"] == "sgemm", base
for r in cands:
    if r["status"] == 0:
        assert r["perplexity"] > 1, r
        # The reward is the perplexity's: 1 at the baseline's, 0 at 1.3 times it, power 4.
        a = (max(-r["perplexity"], -1.3 * base["perplexity"]) + 1.3 * base["perplexity"]) / (0.3 * base["perplexity"])
        assert abs(r["reward"] - a ** 4) < 1e-9, (r["reward"], a ** 4)
    else:
        assert r["reward"] in (0, -1), r
print("lm search: baseline perplexity %.3f, %d of 4 candidates trained" % (base["perplexity"], sum(r["status"] == 0 for r in cands)))
PY
"$bin" report --db "$tmp/lm.db" >"$tmp/lm.txt" || fail "report failed"
grep -q "baseline (standard linear layers): perplexity" "$tmp/lm.txt" || fail "the report shows no baseline perplexity"
grep -q "fastest within 1 point of the baseline's perplexity" "$tmp/lm.txt" || fail "the report's tolerance is not perplexity's"
grep -q "Pareto front (perplexity against speed-up)" "$tmp/lm.txt" || fail "the Pareto front is not perplexity's"
echo "1 passed, 0 failed"
