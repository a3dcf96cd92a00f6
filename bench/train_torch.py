#!/usr/bin/env python3
"""The PyTorch side of bench/train.c: the same backbone as src/model/backbone.c builds, with
the standard operator in every slot, layer for layer (no conv bias but the classifier's and
SE's linears, BN, AvgPool2d(2) where the published nets stride), SGD momentum 0.9, on
synthetic 1xSxS inputs.
    train_torch.py NAME WIDTH DEPTH BATCH REPS SIDE THREADS
DEPTH 0 is the backbone's default (resnet/resnet18: 2 blocks per stage, the others as
published); THREADS goes to torch.set_num_threads. Prints one line: "train_ips X infer_ips Y
params P maxrss_mb M" (medians of REPS; M the process's peak resident memory in MiB)."""
import resource, sys, time
import torch
import torch.nn as nn

BLOCKS = {"resnet18": [2, 2, 2, 2], "resnet": [2, 2, 2, 2], "resnet34": [3, 4, 6, 3],
          "resnext29": [3, 3, 3], "densenet121": [6, 12, 24, 16],
          "efficientnetv2s": [2, 4, 4, 6, 9, 15]}


def scaled(base, width):
    return max(1, int(base * width + 0.5))


def stage_blocks(published, depth):
    return depth if 0 < depth < published else published


def conv(ci, co, k, groups=1):
    return nn.Conv2d(ci, co, k, padding=k // 2, groups=groups, bias=False)


class Residual(nn.Module):
    """body(x) + shortcut(x) (identity when shortcut is None), then ReLU when asked."""

    def __init__(self, body, sc=None, relu=True):
        super().__init__()
        self.body, self.sc, self.relu = body, sc, relu

    def forward(self, x):
        y = self.body(x) + (self.sc(x) if self.sc is not None else x)
        return torch.relu(y) if self.relu else y


class Dense(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


class Gate(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return x * self.body(x).view(x.shape[0], -1, 1, 1)


def shortcut(ci, co, down):
    if not down and ci == co:
        return None
    return nn.Sequential(*(([nn.AvgPool2d(2)] if down else []) + [conv(ci, co, 1), nn.BatchNorm2d(co)]))


def basic_block(ci, co, down):
    body = ([nn.AvgPool2d(2)] if down else []) + [
        conv(ci, co, 3), nn.BatchNorm2d(co), nn.ReLU(), conv(co, co, 3), nn.BatchNorm2d(co)]
    return Residual(nn.Sequential(*body), shortcut(ci, co, down))


def bottleneck_block(ci, inner, co, groups, down):
    body = [conv(ci, inner, 1), nn.BatchNorm2d(inner), nn.ReLU()] + ([nn.AvgPool2d(2)] if down else []) + [
        conv(inner, inner, 3, groups), nn.BatchNorm2d(inner), nn.ReLU(), conv(inner, co, 1), nn.BatchNorm2d(co)]
    return Residual(nn.Sequential(*body), shortcut(ci, co, down))


def mbconv_block(fused, ci, co, e, down):
    mid = e * ci
    body = []
    if fused:
        out = mid if e > 1 else co
        body += ([nn.AvgPool2d(2)] if down else []) + [conv(ci, out, 3), nn.BatchNorm2d(out), nn.SiLU()]
    else:
        se = max(1, ci // 4)
        body += [conv(ci, mid, 1), nn.BatchNorm2d(mid), nn.SiLU()] + ([nn.AvgPool2d(2)] if down else []) + [
            conv(mid, mid, 3, mid), nn.BatchNorm2d(mid), nn.SiLU(),
            Gate(nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(mid, se), nn.SiLU(),
                               nn.Linear(se, mid), nn.Sigmoid()))]
    if not fused or e > 1:
        body += [conv(mid, co, 1), nn.BatchNorm2d(co)]
    body = nn.Sequential(*body)
    return body if down or ci != co else Residual(body, None, relu=False)


def build(name, width, depth, side, classes=10):
    h = side
    layers = []
    if name in ("resnet18", "resnet", "resnet34"):
        c = scaled(16, width)
        layers += [conv(1, c, 3), nn.BatchNorm2d(c), nn.ReLU()]
        for st in range(4):
            co = scaled(16 << st, width)
            nb = stage_blocks(BLOCKS[name][st], depth) if name == "resnet34" else (depth or 2)
            for k in range(nb):
                down = st > 0 and k == 0 and h // 2 >= 2
                layers.append(basic_block(c, co, down))
                h //= 2 if down else 1
                c = co
    elif name == "resnext29":
        card = 8
        c = scaled(16, width)
        layers += [conv(1, c, 3), nn.BatchNorm2d(c), nn.ReLU()]
        for st in range(3):
            co = scaled(64 << st, width)
            inner = max(card, (scaled(128 << st, width) + card // 2) // card * card)
            for k in range(stage_blocks(BLOCKS[name][st], depth)):
                down = st > 0 and k == 0 and h // 2 >= 2
                layers.append(bottleneck_block(c, inner, co, card, down))
                h //= 2 if down else 1
                c = co
    elif name == "densenet121":
        g = scaled(32, width)
        c = 2 * g
        layers += [conv(1, c, 3), nn.BatchNorm2d(c), nn.ReLU()]
        for st in range(4):
            for _ in range(stage_blocks(BLOCKS[name][st], depth)):
                layers.append(Dense(nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), conv(c, 4 * g, 1),
                                                  nn.BatchNorm2d(4 * g), nn.ReLU(), conv(4 * g, g, 3))))
                c += g
            if st < 3:
                layers += [nn.BatchNorm2d(c), nn.ReLU(), conv(c, c // 2, 1)]
                if h // 2 >= 2:
                    layers.append(nn.AvgPool2d(2))
                    h //= 2
                c //= 2
        layers += [nn.BatchNorm2d(c), nn.ReLU()]
    elif name == "efficientnetv2s":
        plan = [(1, 1, 0, 24), (1, 4, 1, 48), (1, 4, 1, 64), (0, 4, 1, 128), (0, 6, 0, 160), (0, 6, 1, 256)]
        c = scaled(24, width)
        layers += [conv(1, c, 3), nn.BatchNorm2d(c), nn.SiLU()]
        for st, (fused, e, sdown, cbase) in enumerate(plan):
            co = scaled(cbase, width)
            for k in range(stage_blocks(BLOCKS[name][st], depth)):
                down = sdown and k == 0 and h // 2 >= 2
                layers.append(mbconv_block(fused, c, co, e, down))
                h //= 2 if down else 1
                c = co
        head = scaled(1280, width)
        layers += [conv(c, head, 1), nn.BatchNorm2d(head), nn.SiLU()]
        c = head
    else:
        raise SystemExit("train_torch.py: no PyTorch twin of backbone '%s'" % name)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
    return nn.Sequential(*layers)


def main():
    name, width, depth = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    batch, reps, side, threads = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net = build(name, width, depth, side)
    x = torch.randn(batch, 1, side, side)
    y = torch.randint(0, 10, (batch,))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    lossf = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        lossf(net(x), y).backward()
        opt.step()

    net.train()
    step()
    tt = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        tt.append(time.perf_counter() - t0)
    net.eval()
    ti = []
    with torch.no_grad():
        net(x)
        for _ in range(reps):
            t0 = time.perf_counter()
            net(x)
            ti.append(time.perf_counter() - t0)
    tt.sort()
    ti.sort()
    params = sum(p.numel() for p in net.parameters())
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("train_ips %.3f infer_ips %.3f params %d maxrss_mb %.1f"
          % (batch / tt[len(tt) // 2], batch / ti[len(ti) // 2], params, maxrss_mb))


if __name__ == "__main__":
    main()
