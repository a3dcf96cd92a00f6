#!/usr/bin/env bash
# The external evaluator (docs/evaluator.md): what syno hands a command and reads back, every
# way an evaluator can fail recorded as a failure with its reason, and the README's recipe: a
# short search with examples/torch_evaluator.py (torchvision's ResNet-18 on the committed
# digits), resumed with its evaluator, its winner exported with --db --id and loaded in torch.
# The recipe part exits 77 (skipped) without Debian's torch and torchvision.
set -u
bin=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
py=/usr/bin/python3
W='r0=sum(k_1) r1=sum(s^-1*C_in); in[i0, split(div(i1, s^-1*C_out), share(r1, 1)), shift(unfold(i3, share(r0, 1))), i2] expand[share(mod(i1, s^-1*C_out), 1)] w1[mod(i1, s^-1*C_out), r1, r0]'
ev=(eval --backbone resnet --dataset digits --width 0.5 --depth 1 --epochs 1 --repeats 3 --min-speedup 0)

# One evaluation: the record's field (a JSON reply line on stdout).
field() { $py -c 'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(r[sys.argv[1]])' "$1"; }

# The request: a stand-in evaluator checks its fields and answers with what it was given.
cat > "$tmp/check.py" <<'EOF'
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["protocol"] == 1 and r["backbone"] == "resnet" and r["dataset"] == "digits", r
assert r["kind"] == "images" and r["measure"] == "accuracy" and r["epochs"] == 1, r
assert os.path.exists(r["data"]), r["data"]
assert r["slots"] and all(k in r["slots"][0] for k in ("c_in", "c_out", "h", "w")), r["slots"]
if r["op"]:
    assert r["class"] == "SynoOp" and "class SynoOp" in open(r["module"]).read()
    assert r["speed_gate"]["latency_s"] > 0
else:
    assert r["module"] is None
print("some chatter before the reply")
print(json.dumps({"accuracy": 0.5, "train_loss": 1.25, "message": "checked"}))
EOF
out=$("$bin" "${ev[@]}" --op "$W" --evaluator "$py $tmp/check.py" 2>"$tmp/err") || fail "eval with an evaluator: $(cat "$tmp/err")"
[ "$(echo "$out" | field status)" = 0 ] || fail "the checking evaluator failed: $out"
[ "$(echo "$out" | field accuracy)" = 0.5 ] || fail "the evaluator's accuracy was not recorded: $out"
[ "$(echo "$out" | field train_loss)" = 1.25 ] || fail "the evaluator's loss was not recorded: $out"
[ "$(echo "$out" | field base_impl)" != evaluator ] || fail "the speed gate's latency was replaced without latency"
grep -q "evaluator: checked" "$tmp/err" || fail "the evaluator's message was not passed on: $(cat "$tmp/err")"
out=$("$bin" "${ev[@]}" --evaluator "$py $tmp/check.py" 2>"$tmp/err") || fail "the standard operator: $(cat "$tmp/err")"
[ "$(echo "$out" | field status)" = 0 ] || fail "the baseline's request: $out"
# The request file and the module are written under $TMPDIR and removed after the evaluation.
mkdir -p "$tmp/t"
TMPDIR=$tmp/t "$bin" "${ev[@]}" --op "$W" --evaluator "$py $tmp/check.py" >/dev/null 2>&1
[ -z "$(ls "$tmp/t")" ] || fail "the evaluator's directory was left behind: $(ls "$tmp/t")"

# Its own latency, both sides, replaces the speed gate's.
out=$("$bin" "${ev[@]}" --op "$W" --evaluator "echo '{\"accuracy\": 0.7, \"latency_s\": 0.001, \"base_latency_s\": 0.003}'; true" 2>/dev/null)
[ "$(echo "$out" | field base_impl)" = evaluator ] || fail "the evaluator's latency was not used: $out"
$py -c "import sys; assert abs(float(sys.argv[1]) - 3) < 1e-9" "$(echo "$out" | field speedup)" ||
  fail "the speed-up is not the evaluator's ratio: $out"

# Every way to fail: a failure with the reason, exit status 0 (the worker's protocol).
check_fail() { # CMD EXPECTED-REASON-PART [extra options]
  local cmd=$1 want=$2
  shift 2
  out=$("$bin" "${ev[@]}" --op "$W" --evaluator "$cmd" "$@" 2>/dev/null) || fail "eval exited non-zero for '$cmd'"
  [ "$(echo "$out" | field status)" = 1 ] || fail "'$cmd' was not a failure: $out"
  echo "$out" | field reason | grep -qF -- "$want" || fail "'$cmd': the reason does not say '$want': $(echo "$out" | field reason)"
}
check_fail "echo boom >&2; exit 3" "exit status 3: boom"
check_fail "kill -SEGV \$\$; true" "killed by signal 11"
check_fail "sleep 20; true" "timeout after 1 s" --evaluator-timeout 1
check_fail "echo not json; true" "wrote no reply line"
check_fail "echo '{\"accuracy\": \"high\"}'; true" "\"accuracy\" is not a finite number"
check_fail "echo '{\"accuracy\": 1.5}'; true" "accuracy 1.5 is not in 0..1"
check_fail "echo '{\"loss\": 0.3}'; true" "has no \"accuracy\""
check_fail "echo '{\"status\": 1, \"message\": \"out of GPU memory\"}'; true" "it failed: out of GPU memory"
check_fail "no-such-evaluator-command" "exit status 127"
echo "evaluator protocol: request fields, reply fields, latency, 9 failure kinds"

# A search with a failing evaluator records the failures and goes on; the baseline's own failure
# stops it with the reason.
"$bin" search --db "$tmp/f.db" --backbone resnet --dataset digits --epochs 1 --depth 1 --width 0.5 --budget 1 \
  --confirm 0 --quiet --evaluator "exit 4" 2>"$tmp/f.err" && fail "a search whose baseline cannot train succeeded"
grep -q "exit status 4" "$tmp/f.err" || fail "the baseline's failure is not said: $(cat "$tmp/f.err")"

# The README's recipe, with torch.
if ! $py -c "import torch, torchvision" 2>/dev/null; then
  echo "SKIP: $py has no torch or torchvision (apt-get install python3-torch python3-torchvision)"
  exit 77
fi
cd "$src"
"$bin" search --backbone resnet --dataset digits --width 0.5 --depth 1 --epochs 2 --budget 2 --confirm 0 \
  --min-speedup 0 --space-depth 6 --seed 3 --quiet --db "$tmp/t.db" \
  --evaluator "$py examples/torch_evaluator.py" 2>"$tmp/t.err" || fail "search --evaluator: $(cat "$tmp/t.err")"
"$bin" search --resume "$tmp/t.db" --budget 3 --quiet 2>"$tmp/t.err" || fail "resume: $(cat "$tmp/t.err")"
"$bin" report --db "$tmp/t.db" --json > "$tmp/t.json" || fail "report"
rows='import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; c=[x for x in r if x.get("status")==0 and not x["is_baseline"]]'
n_ok=$($py -c "$rows; print(len(c))" "$tmp/t.json")
[ "${n_ok:-0}" -ge 2 ] || fail "fewer than 2 evaluations succeeded: $(grep -o '"reason":"[^"]*"' "$tmp/t.json" | head -3)"
id=$($py -c "$rows; print(c[0]['id'])" "$tmp/t.json")
"$bin" export --to pytorch --db "$tmp/t.db" --id "$id" -o "$tmp/op.py" || fail "export --db --id $id"
$py - "$tmp/op.py" <<'EOF' || fail "the exported winner does not run in torch"
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("op", sys.argv[1]); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
y = m.SynoOp(C_in=32, C_out=32)(torch.randn(2, 32, 8, 8))
assert y.shape == (2, 32, 8, 8) and torch.isfinite(y).all()
EOF
echo "search --evaluator examples/torch_evaluator.py: $n_ok candidates trained in torch, resumed, candidate $id exported"

# The example on a user's image set (--dataset images: 3 x 8 x 8 IDX files, docs/train.md).
$py - "$tmp/idx" <<'PY'
import gzip, os, random, struct, sys
random.seed(2)
os.makedirs(sys.argv[1])
for split, n in (("train", 48), ("test", 24)):
    labels = [i % 3 for i in range(n)]
    px = bytes(lab * 70 + ch * 10 + random.randrange(40) for lab in labels for ch in range(3) for _ in range(64))
    open(f"{sys.argv[1]}/{split}-images.idx", "wb").write(struct.pack(">5I", 0x804, n, 3, 8, 8) + px)
    with gzip.open(f"{sys.argv[1]}/{split}-labels.idx.gz", "wb") as f:
        f.write(struct.pack(">2I", 0x801, n) + bytes(labels))
PY
out=$(SYNO_IMAGES_DIR="$tmp/idx" "$bin" eval --backbone resnet --dataset images --width 0.5 --depth 1 --epochs 1 \
  --repeats 3 --min-speedup 0 --op "$W" --evaluator "$py examples/torch_evaluator.py" 2>"$tmp/i.err") ||
  fail "eval on an image set: $(cat "$tmp/i.err")"
[ "$(echo "$out" | field status)" = 0 ] || fail "the example on an IDX image set: $(echo "$out" | field reason)"
grep -q "input (3, 8, 8): 13 3x3 convolutions replaced" "$tmp/i.err" || fail "the example's message: $(cat "$tmp/i.err")"
echo "the example on a 3-channel IDX image set: trained"
echo "1 passed, 0 failed"
