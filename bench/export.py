"""Exported PyTorch operators against F.conv2d 3x3, in one run.

usage: python3 bench/export.py SYNO [--reps R] [--threads 1,2] [--batch 1,32] [--op TEXT ...] [--db DB]
                                     [--db-shapes resnet18|searched]

Exports, with `SYNO export --to pytorch --preset conv2d`, the builtin conv2d (through the
conv2d preset's text), the published-preset winner of the README, any --op texts and the
trained candidates of a conv2d-preset search's database (--db); then,
for every ResNet-18 slot shape (C -> C channels at H x H: 64/56, 128/28, 256/14, 512/7; with
--db-shapes searched, the searched network's slot shapes instead), batch
and thread count, times each module and F.conv2d(x, w, padding=1) with a 3x3 weight at the same
shape: medians of R runs after a warm-up, forward (no_grad) and forward+backward (the input's
and the weight's gradients). Prints each time, F.conv2d's time over it ("x conv", above 1:
faster), the module's FLOPs over the 3x3 convolution's, and its time over F.conv2d's scaled by
that FLOPs ratio ("/flops", 1: as fast as its FLOPs at F.conv2d's efficiency), and at the end
the median "/flops" of the --db candidates (a candidate that does not fit a shape, e.g. one
that halves an odd H, raises ValueError there and is said and skipped). A module holds no buffers: its memory is its
weights (printed as "bufs", elements of buffers, which must be 0).
"""
import argparse
import importlib.util
import json
import sqlite3
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

CONV = ("r0=sum(k_1) r1=sum(k_1) r2=sum(C_in); in[i0, share(r2, 1), unfold(i2, share(r0, 1)), "
        "unfold(i3, share(r1, 1))] expand[share(i1, 1)] w1[i1, r2, r0, r1]")
WINNER = ("r0=sum(k_1) r1=sum(s^-1*C_in); in[i0, split(div(i1, s^-1*C_out), share(r1, 1)), "
          "shift(unfold(i3, share(r0, 1))), i2] expand[share(mod(i1, s^-1*C_out), 1)] "
          "w1[mod(i1, s^-1*C_out), r1, r0]")
SHAPES = [(64, 64, 56), (128, 128, 28), (256, 256, 14), (512, 512, 7)]


def export(syno, text, path):
    r = subprocess.run([syno, "export", "--to", "pytorch", "--preset", "conv2d", text, "-o", path],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"syno export failed: {r.stderr.strip()}")
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SynoOp


def flops(syno, text, ci, co, h):
    r = subprocess.run([syno, "show", "--preset", "conv2d", text, "--bind", f"N=1,C_in={ci},C_out={co},H={h}", "--json"],
                       capture_output=True, text=True)
    return json.loads(r.stdout)["flops"] if r.returncode == 0 else float("nan")


def candidates(db):
    """The trained candidates of a search, (name, operator text), and its slots' shapes."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT id, op_text FROM candidates WHERE status = 0 AND NOT is_baseline "
                       "AND op_text IS NOT NULL ORDER BY id").fetchall()
    spec = json.loads(con.execute("SELECT value FROM meta WHERE key = 'spec'").fetchone()[0])
    con.close()
    shapes = []
    for b in spec["bind"]:
        kv = dict(p.split("=") for p in b.split(","))
        s = (int(kv["C_in"]), int(kv["C_out"]), int(kv["H"]))
        if s not in shapes:
            shapes.append(s)
    return [(f"id{i}", t) for i, t in rows], shapes


def median_time(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def timings(fwd_module, x, reps):
    """Forward (no_grad) and forward+backward medians of fwd_module(x)."""
    xg = x.clone().requires_grad_()

    def fwd():
        with torch.no_grad():
            fwd_module(x)

    def fwdbwd():
        xg.grad = None
        y = fwd_module(xg)
        y.backward(torch.ones_like(y))

    return median_time(fwd, reps), median_time(fwdbwd, reps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("syno")
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch", default="1,32")
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--db")
    ap.add_argument("--db-shapes", choices=["resnet18", "searched"], default="resnet18")
    a = ap.parse_args()
    found, searched = candidates(a.db) if a.db else ([], SHAPES)
    shapes = searched if a.db_shapes == "searched" else SHAPES
    ops = [("conv2d", CONV), ("winner", WINNER)] + [(f"op{i}", t) for i, t in enumerate(a.op)] + found
    with tempfile.TemporaryDirectory() as tmp:
        classes = [(name, text, export(a.syno, text, os.path.join(tmp, f"{name}.py"))) for name, text in ops]
    print(f"torch {torch.__version__}, oneDNN (mkldnn) {torch.backends.mkldnn.is_available()}, "
          f"medians of {a.reps} after a warm-up" + (f"; {len(found)} trained candidates of {a.db}" if a.db else ""))
    print(f"{'threads':>7} {'batch':>5} {'C_in':>4} {'out':>4} {'H':>3} {'operator':>8} {'flops':>6} {'bufs':>4} "
          f"{'fwd ms':>8} {'x conv':>7} {'/flops':>7} {'fwd+bwd ms':>10} {'x conv':>7} {'/flops':>7}")
    per_flop = {"fwd": [], "fwdbwd": []}
    for threads in map(int, a.threads.split(",")):
        torch.set_num_threads(threads)
        for n in map(int, a.batch.split(",")):
            for ci, co, h in shapes:
                torch.manual_seed(0)
                x = torch.randn(n, ci, h, h)
                w = torch.nn.Parameter(torch.randn(co, ci, 3, 3) * (2.0 / (9 * ci)) ** 0.5)
                base = timings(lambda v: F.conv2d(v, w, padding=1), x, a.reps)
                print(f"{threads:>7} {n:>5} {ci:>4} {co:>4} {h:>3} {'F.conv2d':>8} {1:>6.2f} {0:>4} {base[0] * 1e3:>8.3f} "
                      f"{1:>7.2f} {1:>7.2f} {base[1] * 1e3:>10.3f} {1:>7.2f} {1:>7.2f}", flush=True)
                ref_flops = flops(a.syno, CONV, ci, co, h)
                for name, text, cls in classes:
                    m = cls(C_in=ci, C_out=co)
                    bufs = sum(b.numel() for b in m.buffers())
                    try:
                        t = timings(m, x, a.reps)
                    except ValueError as e:
                        print(f"{threads:>7} {n:>5} {ci:>4} {co:>4} {h:>3} {name:>8} does not fit: {e}", flush=True)
                        continue
                    fr = flops(a.syno, text, ci, co, h) / ref_flops
                    pf = (t[0] / (fr * base[0]), t[1] / (fr * base[1]))
                    if name.startswith("id"):
                        per_flop["fwd"].append(pf[0])
                        per_flop["fwdbwd"].append(pf[1])
                    print(f"{threads:>7} {n:>5} {ci:>4} {co:>4} {h:>3} {name:>8} {fr:>6.2f} {bufs:>4} {t[0] * 1e3:>8.3f} "
                          f"{base[0] / t[0]:>7.2f} {pf[0]:>7.2f} {t[1] * 1e3:>10.3f} {base[1] / t[1]:>7.2f} "
                          f"{pf[1]:>7.2f}", flush=True)
    if found:
        print(f"the {len(found)} candidates of {a.db} at the {a.db_shapes} shapes: median time over (FLOPs ratio x "
              f"F.conv2d's time): forward {statistics.median(per_flop['fwd']):.2f}, "
              f"forward+backward {statistics.median(per_flop['fwdbwd']):.2f} (over {len(per_flop['fwd'])} timings: every "
              f"candidate, shape, batch and thread count it fits)")


if __name__ == "__main__":
    main()
