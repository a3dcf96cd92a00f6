#!/usr/bin/python3
"""A found operator in a real PyTorch stack: torchvision's ResNet-18 with every 3x3 stride-1
convolution replaced by an operator syno exported (`syno export --to pytorch`), a forward pass
at two input sizes, and a few SGD steps.

One export serves every layer: the generated class takes the channels as constructor
arguments (C_in, C_out) and reads the batch and the image side from its input, so the script
exports the operator once and instantiates the class per layer with that layer's channels.
The operator must come from the conv2d preset ([N, C_in, H, H] -> [N, C_out, H, H]; k_1=3,
k_2=7, s=2, g=32), e.g. a search's winner (`syno export --db DB --best`).

usage: examples/resnet18_torchvision.py SYNO [--op TEXT | --module FILE] [--batch N] [--size S]
  SYNO      the syno binary (build/syno)
  --op      the operator text (default: the winner of the Fashion-MNIST search on the published
            preset in the README: a 1x3 convolution in 2 channel groups over a shifted window)
  --module  a module syno already exported (instead of --op)
  --batch   images per batch (default 2); --size: their side (default 64), also run at 3/4 of it
  --steps   SGD steps (default 3)
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

import torch
import torchvision

WINNER = ("r0=sum(k_1) r1=sum(s^-1*C_in); in[i0, split(div(i1, s^-1*C_out), share(r1, 1)), "
          "shift(unfold(i3, share(r0, 1))), i2] expand[share(mod(i1, s^-1*C_out), 1)] "
          "w1[mod(i1, s^-1*C_out), r1, r0]")


def load(path):
    spec = importlib.util.spec_from_file_location("syno_op", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SynoOp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("syno")
    ap.add_argument("--op", default=WINNER)
    ap.add_argument("--module")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = a.module
        if not path:
            path = os.path.join(tmp, "op.py")
            r = subprocess.run([a.syno, "export", "--to", "pytorch", "--preset", "conv2d", a.op, "-o", path],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"syno export failed: {r.stderr.strip()}")
        SynoOp = load(path)

    model = torchvision.models.resnet18(num_classes=10)
    replaced = 0
    for name, m in list(model.named_modules()):
        if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3) and m.stride == (1, 1) and m.groups == 1:
            parent_name, _, attr = name.rpartition(".")
            setattr(model.get_submodule(parent_name) if parent_name else model, attr,
                    SynoOp(C_in=m.in_channels, C_out=m.out_channels))
            replaced += 1
    syno_params = [p for m in model.modules() if isinstance(m, SynoOp) for p in m.parameters()]

    sizes = [a.size, a.size * 3 // 4]
    model.eval()
    with torch.no_grad():
        for s in sizes:
            out = model(torch.randn(a.batch + 1, 3, s, s))
            print(f"forward {(a.batch + 1, 3, s, s)} -> {tuple(out.shape)}")
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(a.batch, 3, a.size, a.size)
    y = torch.randint(0, 10, (a.batch,))
    losses, missing = [], 0
    for _ in range(a.steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        missing += sum(p.grad is None or not torch.isfinite(p.grad).all() for p in syno_params)
        opt.step()
        losses.append(loss.item())
    print(f"ResNet-18 (torchvision {torchvision.__version__}, torch {torch.__version__}): {replaced} 3x3 convolutions "
          f"replaced by one exported class; {sum(p.numel() for p in syno_params)} operator weights")
    print(f"training at {tuple(x.shape)}: loss " + ", ".join(f"{l:.4f}" for l in losses) +
          f"; operator weights without a finite gradient: {missing}")
    if replaced == 0 or missing or not all(map(lambda l: l == l and abs(l) != float("inf"), losses)):
        sys.exit("FAILED")


if __name__ == "__main__":
    main()
