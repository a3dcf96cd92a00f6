#!/usr/bin/env bash
# syno search on every CNN backbone: a real 4-candidate search on the committed digits data
# (width 0.5 or 0.25, 1 epoch, 300 training images, nothing confirmed) for resnet18, resnet34,
# densenet121, resnext29 and efficientnetv2s. Every candidate is trained (--min-speedup 0)
# and must train: the operators come from a space bound to the network's own slots, which the
# worker must not refuse under the preset's default binding (densenet121's slots all have
# C_in = 32 here, where the search finds g^-1*C_in reductions with g = 32). The search spec's
# FLOPs limits must be ratios of the slots' own standard operators (the grouped convolutions
# of resnext29, the depthwise ones of efficientnetv2s), summed over the distinct slots as the
# worker's plan lists them.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# An operator is parsed symbolically and checked by each slot under its own binding: one that
# groups C_in by g = 32 fills densenet121 at width 0.25 (every slot has C_in = 32), although
# g^-1*C_in is 1/2 under the conv2d preset's default C_in = 16, and a network whose first slot
# has C_in = 4 refuses it, naming that slot.
grouped="r0=sum(g) r1=sum(g^-1*C_in); in[i0, split(share(r0, 1), r1), i2, i3] expand[share(i1, 1)] w1[i1, r0]"
"$bin" eval --backbone densenet121 --dataset digits --width 0.25 --depth 1 --op "$grouped" --plan >/dev/null \
  2>"$tmp/g.err" || fail "densenet121 refused an operator that fits its slots: $(cat "$tmp/g.err")"
"$bin" eval --backbone resnet18 --dataset digits --width 0.25 --op "$grouped" --plan >/dev/null 2>"$tmp/g.err"
[ $? -eq 2 ] || fail "resnet18 at width 0.25 (C_in = 4) should refuse the operator"
grep -q "slot C_in=4 .*g^-1\*C_in is 1/8, not an integer" "$tmp/g.err" || fail "the refusal: $(cat "$tmp/g.err")"

for bb in resnet18 resnet34 densenet121 resnext29 efficientnetv2s; do
  # At width 0.25 the ResNets' first slots have C_in = 4, where no operator of the space fits
  # (the search ends at once: "the space has no further operators"); 0.5 has some.
  width=0.25
  case $bb in resnet*) width=0.5 ;; esac
  net=(--dataset digits --width $width --epochs 1 --subset 300 --batch 32)
  extra=() limit=()
  # the published depths, but a block per stage for the deep nets to keep the test short
  case $bb in densenet121 | resnext29 | efficientnetv2s) extra+=(--depth 1) ;; esac
  # Measured against its depthwise convolutions, every operator of the space costs more
  # than 0.9 of them (one operator fills the fused blocks' full convolutions and the
  # depthwise ones alike): the default window is empty, and at one block per stage so is
  # one of 10 times; this search allows 20 times.
  ratio=0.9
  if [ $bb = efficientnetv2s ]; then ratio=20; limit=(--max-flops $ratio); fi
  "$bin" eval --backbone $bb "${net[@]}" "${extra[@]}" --plan >"$tmp/$bb.plan" 2>"$tmp/$bb.err" ||
    fail "$bb: eval --plan failed: $(cat "$tmp/$bb.err")"
  "$bin" search --backbone $bb "${net[@]}" "${extra[@]}" "${limit[@]}" --budget 4 --min-speedup 0 --confirm 0 --seed 1 \
    --db "$tmp/$bb.db" --quiet 2>"$tmp/$bb.err" || fail "$bb: the search failed: $(cat "$tmp/$bb.err")"
  "$bin" report --db "$tmp/$bb.db" --json >"$tmp/$bb.json" || fail "$bb: report --json failed"
  "$bin" report --db "$tmp/$bb.db" >"$tmp/$bb.txt" || fail "$bb: report failed"
  grep -q "^baseline (standard operator): accuracy" "$tmp/$bb.txt" || fail "$bb: the report shows no baseline"
  grep -q "4 candidates: 4 ok, 0 failed" "$tmp/$bb.txt" || fail "$bb: the report: $(head -12 "$tmp/$bb.txt")"
  python3 - $bb "$tmp/$bb.json" "$tmp/$bb.plan" $ratio <<'PY' || fail "$bb: the records: $(cat "$tmp/$bb.json")"
import json, sys
bb, rows, plan, ratio = sys.argv[1], [json.loads(l) for l in open(sys.argv[2])], json.load(open(sys.argv[3])), float(sys.argv[4])
rows.pop()  # the summary
base = [r for r in rows if r["is_baseline"]]
cands = [r for r in rows if not r["is_baseline"]]
assert len(base) == 1 and base[0]["status"] == 0 and base[0]["accuracy"] > 0, base
assert len(cands) == 4, len(cands)
for r in cands:
    # trained for its epoch (a refused operator fails before training, "--op: ... does not divide")
    assert r["status"] == 0 and r["epochs_done"] == 1 and 0 < r["accuracy"] <= 1, r
    assert r["speedup"] > 0 and r["flops"] > 0 and r["op_text"], r
# The FLOPs window: the ratio times the slots' own standard FLOPs, each distinct slot once.
seen, own, full = set(), 0.0, 0.0
for s in plan["slots"]:
    key = (s["c_in"], s["c_out"], s["h"], s["w"], s["flops"])
    if key in seen:
        continue
    seen.add(key)
    own += s["flops"]
    full += 2 * s["c_in"] * s["c_out"] * 9 * s["h"] * s["w"]
print("%s: baseline %.2f%%, candidates %s, slot FLOPs %.0f (full convs %.0f)" % (
    bb, 100 * base[0]["accuracy"], " ".join("%.2f%%" % (100 * r["accuracy"]) for r in cands), own, full))
open(sys.argv[2] + ".want", "w").write("%.17g %.17g\n" % (ratio * own, own / full))
PY
  # The spec as recorded: max_flops is the ratio times the slots' own standard FLOPs.
  read -r want share <"$tmp/$bb.json.want"
  got=$("$bin" report --db "$tmp/$bb.db" | sed -n 's/.*"max_flops":\([^,]*\),.*/\1/p')
  python3 -c "import sys; g, w = float(sys.argv[1]), float(sys.argv[2]); assert abs(g - w) <= 1e-6 * w, (g, w)" \
    "$got" "$want" || fail "$bb: max_flops $got in the spec, want $want"
  # grouped and depthwise slots are far cheaper than the full 3x3 convs of their bindings
  case $bb in
    resnext29) python3 -c "import sys; assert abs(float(sys.argv[1]) - 1 / 8) < 1e-9" "$share" ||
      fail "resnext29: its slots' FLOPs are $share of the full convs', not 1/8 (cardinality 8)" ;;
    efficientnetv2s) python3 -c "import sys; assert float(sys.argv[1]) < 0.1" "$share" ||
      fail "efficientnetv2s: its slots' FLOPs are $share of the full convs'" ;;
  esac
done
echo "1 passed, 0 failed"
