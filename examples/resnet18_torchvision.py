#!/usr/bin/python3
"""A found operator in a real PyTorch stack: torchvision's ResNet-18 with every 3x3 stride-1
convolution replaced by an operator syno exported (`syno export --to pytorch`), then one
forward and one backward pass and an SGD step.

syno's exports are for one concrete binding (batch and sizes included), so the script first
records the input shape of every 3x3 convolution with a forward hook, exports the operator
once per distinct (C_in, C_out, H) and puts a fresh module of the right export into each slot.
The operator must come from the conv2d preset ([N, C_in, H, H] -> [N, C_out, H, H]; k_1=3,
k_2=7, s=2, g=32), e.g. a search's winner from `syno report`.

usage: examples/resnet18_torchvision.py SYNO [--op TEXT] [--batch N] [--size S]
  SYNO     the syno binary (build/syno)
  --op     the operator text (default: the winner of the Fashion-MNIST search on the published
           preset in the README: a 1x3 convolution in 2 channel groups over a shifted window)
  --batch  images per batch (default 2); --size: their side (default 128: the last stage at 4x4)
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


def export(syno, op, n, c_in, c_out, h, out_dir):
    """The exported module class for one binding."""
    path = os.path.join(out_dir, f"op_{c_in}_{c_out}_{h}.py")
    bind = f"N={n},C_in={c_in},C_out={c_out},H={h}"
    r = subprocess.run([syno, "export", "--to", "pytorch", "--preset", "conv2d", op, "--bind", bind, "-o", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"syno export failed for {bind}: {r.stderr.strip()}")
    spec = importlib.util.spec_from_file_location(f"syno_op_{c_in}_{c_out}_{h}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SynoOp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("syno")
    ap.add_argument("--op", default=WINNER)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--size", type=int, default=128)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    x = torch.randn(a.batch, 3, a.size, a.size)

    # The input shape of every 3x3 stride-1 convolution.
    shapes, hooks = {}, []
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3) and m.stride == (1, 1) and m.groups == 1:
            hooks.append(m.register_forward_hook(lambda m, i, o, name=name: shapes.__setitem__(name, tuple(i[0].shape))))
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()

    classes, replaced = {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (n, c_in, h, w) in shapes.items():
            conv = model.get_submodule(name)
            key = (c_in, conv.out_channels, h)
            if key not in classes:
                classes[key] = export(a.syno, a.op, n, c_in, conv.out_channels, h, tmp)
            parent_name, _, attr = name.rpartition(".")
            setattr(model.get_submodule(parent_name) if parent_name else model, attr, classes[key]())
            replaced += 1
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        y = torch.randint(0, 10, (a.batch,))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        syno_params = [p for m in model.modules() if type(m).__name__ == "SynoOp" for p in m.parameters()]
        missing = sum(p.grad is None or not torch.isfinite(p.grad).all() for p in syno_params)
        opt.step()
        loss2 = torch.nn.functional.cross_entropy(model(x), y)
    print(f"ResNet-18 (torchvision {torchvision.__version__}, torch {torch.__version__}): {replaced} 3x3 convolutions "
          f"replaced by {len(classes)} exported modules; {sum(p.numel() for p in syno_params)} operator weights")
    print(f"forward {tuple(x.shape)} -> {tuple(model(x).shape)}, loss {loss.item():.4f}, after one SGD step "
          f"{loss2.item():.4f}; operator weights without a finite gradient: {missing}")
    if replaced == 0 or missing or not torch.isfinite(loss2):
        sys.exit("FAILED")


if __name__ == "__main__":
    main()
