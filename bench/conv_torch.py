"""PyTorch reference for bench/conv.c: F.conv2d on the same shapes, 2 threads.

Usage: conv_torch.py N REPS C:H [C:H ...]   (3x3 kernel, padding 1, C -> C channels, no bias)
Prints one line per shape: "C H fwd_seconds fwdbwd_seconds" (medians over REPS after a
warm-up), the forward in no_grad mode, forward+backward giving dx and dw.
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(2)
n, reps = int(sys.argv[1]), int(sys.argv[2])
print("torch", torch.__version__, "threads", torch.get_num_threads(), flush=True)
for spec in sys.argv[3:]:
    c, h = (int(v) for v in spec.split(":"))
    x = torch.randn(n, c, h, h)
    w = torch.randn(c, c, 3, 3) * (2.0 / (9 * c)) ** 0.5
    dy = torch.randn(n, c, h, h)

    def fwd():
        with torch.no_grad():
            F.conv2d(x, w, padding=1)

    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()

    def fwdbwd():
        xg.grad = None
        wg.grad = None
        F.conv2d(xg, wg, padding=1).backward(dy)

    out = []
    for fn in (fwd, fwdbwd):
        fn()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        out.append(statistics.median(ts))
    print(c, h, out[0], out[1], flush=True)
