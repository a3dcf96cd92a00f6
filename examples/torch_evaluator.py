#!/usr/bin/python3
"""An external evaluator for `syno search --evaluator` (docs/evaluator.md): trains torchvision's
ResNet-18, narrowed for a CPU, with every 3x3 stride-1 convolution replaced by the candidate
operator syno exported, and answers with the test accuracy as one JSON line.

syno runs it once per candidate as `CMD REQUEST.json`. The request names the exported module
(`module`, class `SynoOp`, whose constructor takes the layer's channels; null for the standard
network, the baseline), the data set and where it is (`data`), and the training budget
(`epochs`, `batch`, `lr`, `seed`, `subset`, `pad`, `augment`, `threads`, `time_limit`). This
script reads the committed digits set (`data/digits.csv.gz`: 64 pixels and a label per line), the
CIFAR binary format (`examples/to_cifar_binary.py` writes it) and a user's image set
(`--dataset images`: the IDX files of docs/train.md, which `examples/to_idx.py` writes).

usage: examples/torch_evaluator.py [--width F] [--latency] REQUEST.json
  --width    the fraction of ResNet-18's channels (default 0.125: 8, 16, 32, 64)
  --latency  also time inference (batch 1, median of 30) of this network and of the standard
             one, and report both: syno then uses these instead of its own speed gate's
"""
import argparse
import gzip
import importlib.util
import json
import math
import os
import sys
import time

import torch
import torchvision


def reply(**fields):
    print(json.dumps(fields), flush=True)


def fail(message):
    reply(status=1, message=message)
    sys.exit(0)


def load_digits(path):
    rows = [list(map(int, line.split(","))) for line in gzip.open(path, "rt") if line.strip()]
    x = torch.tensor([r[:64] for r in rows], dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    y = torch.tensor([r[64] for r in rows], dtype=torch.long)
    return x, y


def load_cifar(path, dataset):
    """The CIFAR binary format: CIFAR-10 (label byte + 3072 pixel bytes) or CIFAR-100 (coarse
    and fine label bytes + 3072); train and test files as the archives unpack."""
    if dataset == "cifar10":
        label_bytes, which = 1, 0
        train = [f"data_batch_{i}.bin" for i in range(1, 6)]
        test = ["test_batch.bin"]
    else:
        label_bytes, which = 2, (0 if dataset == "cifar100-coarse" else 1)
        train, test = ["train.bin"], ["test.bin"]

    def read(names):
        xs, ys = [], []
        for n in names:
            p = os.path.join(path, n)
            if not os.path.exists(p) and os.path.exists(p + ".gz"):
                raw = gzip.open(p + ".gz", "rb").read()
            else:
                raw = open(p, "rb").read()
            t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).reshape(-1, label_bytes + 3072)
            ys.append(t[:, which].long())
            xs.append(t[:, label_bytes:].float().reshape(-1, 3, 32, 32) / 255.0)
        return torch.cat(xs), torch.cat(ys)

    return read(train), read(test)


def load_idx(path):
    """A user's image set: {train,test}-{images,labels}.idx[.gz] (docs/train.md): big-endian
    IDX of unsigned bytes, images N x C x H x W (or N x H x W), labels N."""
    def read(name):
        p = os.path.join(path, name)
        raw = gzip.open(p + ".gz", "rb").read() if os.path.exists(p + ".gz") else open(p, "rb").read()
        ndim = raw[3]
        dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
        t = torch.frombuffer(bytearray(raw[4 + 4 * ndim:]), dtype=torch.uint8)
        return t.reshape(dims)

    def split(which):
        x = read(f"{which}-images.idx").float() / 255.0
        return (x.unsqueeze(1) if x.dim() == 3 else x), read(f"{which}-labels.idx").long()

    return split("train"), split("test")


def load(req):
    name, path = req["dataset"], req["data"]
    if name == "digits":
        x, y = load_digits(path)
        g = torch.Generator().manual_seed(12345)
        perm = torch.randperm(len(y), generator=g)
        n_test = len(y) // 5
        test, train = perm[:n_test], perm[n_test:]
        return (x[train], y[train]), (x[test], y[test])
    if name.startswith("cifar"):
        return load_cifar(path, name)
    if name == "images":
        return load_idx(path)
    fail(f"this example reads digits, the CIFAR binary format and IDX image sets, not '{name}'")


def narrow(model, f, in_channels):
    """ResNet-18's layout at a fraction f of its channels, for small images: a 3x3 stride-1 stem
    without max pooling (as CIFAR ResNets do)."""
    def c(n):
        return max(1, int(round(n * f)))

    for name, m in list(model.named_modules()):
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        if isinstance(m, torch.nn.Conv2d):
            if name == "conv1":
                new = torch.nn.Conv2d(in_channels, c(64), 3, 1, 1, bias=False)
            else:
                new = torch.nn.Conv2d(c(m.in_channels), c(m.out_channels), m.kernel_size, m.stride, m.padding,
                                      bias=False)
            setattr(parent, attr, new)
        elif isinstance(m, torch.nn.BatchNorm2d):
            setattr(parent, attr, torch.nn.BatchNorm2d(c(m.num_features)))
        elif isinstance(m, torch.nn.Linear):
            setattr(parent, attr, torch.nn.Linear(c(m.in_features), m.out_features))
    model.maxpool = torch.nn.Identity()
    return model


def build(req, width, in_shape, classes):
    """The network, and the operator in every 3x3 stride-1 convolution where it fits: the class
    serves any channels, but an operator may need sizes a layer does not have (a window that
    halves H needs an even H); such a layer keeps its convolution, and the message says so."""
    model = narrow(torchvision.models.resnet18(num_classes=classes), width, in_shape[0])
    replaced, kept = 0, []
    if not req["module"]:
        return model, replaced, kept
    spec = importlib.util.spec_from_file_location("syno_op", req["module"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    SynoOp = getattr(mod, req["class"])
    # Each convolution's input shape, from one forward pass of the standard network.
    shapes, hooks = {}, []
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.Conv2d):
            hooks.append(m.register_forward_hook(lambda m, x, y, name=name: shapes.__setitem__(name, x[0].shape)))
    model.eval()
    with torch.no_grad():
        model(torch.zeros((1,) + tuple(in_shape)))
    for h in hooks:
        h.remove()
    for name, m in list(model.named_modules()):
        if not (isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3) and m.stride == (1, 1) and name != "conv1"):
            continue
        try:
            op = SynoOp(C_in=m.in_channels, C_out=m.out_channels)
            with torch.no_grad():
                op(torch.zeros(shapes[name]))
        except ValueError as e:
            kept.append(f"{name} {tuple(shapes[name][1:])}: {e}")
            continue
        parent_name, _, attr = name.rpartition(".")
        setattr(model.get_submodule(parent_name), attr, op)
        replaced += 1
    return model, replaced, kept


def accuracy(model, x, y, batch):
    model.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            right += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return right / len(y)


def latency(model, shape, repeats=30):
    model.eval()
    x = torch.randn(*shape)
    times = []
    with torch.no_grad():
        for _ in range(3):
            model(x)
        for _ in range(repeats):
            t = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("request")
    ap.add_argument("--width", type=float, default=0.125)
    ap.add_argument("--latency", action="store_true")
    a = ap.parse_args()
    req = json.load(open(a.request))
    if req.get("protocol") != 1:
        fail(f"request protocol {req.get('protocol')}: this script speaks protocol 1")
    if req["kind"] != "images":
        fail("this example trains image classifiers only")
    if req["threads"] > 0:
        torch.set_num_threads(req["threads"])
    torch.manual_seed(req["seed"])
    (xtr, ytr), (xte, yte) = load(req)
    # Per-channel normalisation from the training images, then the request's zero padding.
    mean, std = xtr.mean((0, 2, 3), keepdim=True), xtr.std((0, 2, 3), keepdim=True) + 1e-6
    xtr, xte = (xtr - mean) / std, (xte - mean) / std
    if req["pad"] > 0:
        p = req["pad"]
        xtr, xte = torch.nn.functional.pad(xtr, (p, p, p, p)), torch.nn.functional.pad(xte, (p, p, p, p))
    if req["subset"] > 0:
        keep = torch.randperm(len(ytr))[:req["subset"]]
        xtr, ytr = xtr[keep], ytr[keep]
    classes = int(max(ytr.max(), yte.max()).item()) + 1
    model, replaced, kept = build(req, a.width, xtr.shape[1:], classes)
    if req["module"] and replaced == 0:
        fail("the operator fits no 3x3 stride-1 convolution of the network: " + "; ".join(kept[:2]))

    opt = torch.optim.SGD(model.parameters(), lr=req["lr"], momentum=0.9, weight_decay=5e-4)
    epochs, batch = req["epochs"], req["batch"]
    steps = epochs * math.ceil(len(ytr) / batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=req["lr"], total_steps=steps)
    t0, best, final, loss_v, done = time.time(), 0.0, 0.0, float("nan"), 0
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(ytr))
        total, n = 0.0, 0
        for i in range(0, len(ytr), batch):
            idx = perm[i:i + batch]
            x = xtr[idx]
            if req["augment"]:
                if torch.rand(1).item() < 0.5:
                    x = x.flip(3)
                dy, dx = torch.randint(-4, 5, (2,)).tolist()
                x = torch.roll(x, (dy, dx), (2, 3))
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), ytr[idx])
            if not torch.isfinite(loss):
                fail(f"the loss is {loss.item()} at epoch {epoch + 1}")
            loss.backward()
            opt.step()
            sched.step()
            total, n = total + loss.item() * len(idx), n + len(idx)
            if req["time_limit"] > 0 and time.time() - t0 > req["time_limit"]:
                fail(f"training took longer than the time limit, {req['time_limit']:g} s")
        loss_v = total / n
        final = accuracy(model, xte, yte, 256)
        best, done = max(best, final), epoch + 1
        print(f"epoch {done}/{epochs}: train loss {loss_v:.4f}, test accuracy {final:.4f}", file=sys.stderr)
    out = dict(accuracy=best, final_accuracy=final, train_loss=loss_v, epochs_done=done,
               train_seconds=time.time() - t0,
               message=f"torchvision {torchvision.__version__} resnet18 at width {a.width:g}, "
                       f"input {tuple(xtr.shape[1:])}: {replaced} 3x3 convolutions replaced" +
                       (f", {len(kept)} kept where the operator does not fit ({kept[0]}...)" if kept else ""))
    if a.latency:
        shape = (1,) + tuple(xtr.shape[1:])
        out["latency_s"] = latency(model, shape)
        standard, _, _ = build(dict(req, module=None), a.width, xtr.shape[1:], classes)
        out["base_latency_s"] = latency(standard, shape)
    reply(**out)


if __name__ == "__main__":
    main()
