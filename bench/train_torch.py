#!/usr/bin/env python3
"""The PyTorch side of bench/train.c: the same ResNet backbone (stem 3x3 conv, 4 stages of
BasicBlocks, widths 16/32/64/128 x width, stride-2 convs as AvgPool2d(2) + 3x3 conv, 1x1
shortcuts after AvgPool2d(2), BN, global average pooling, linear), SGD momentum 0.9, on
synthetic 1x28x28 inputs. Prints one line: "train_ips X infer_ips Y" (medians)."""
import sys, time
import torch
import torch.nn as nn

def block(ci, co, down):
    body = ([nn.AvgPool2d(2)] if down else []) + [
        nn.Conv2d(ci, co, 3, padding=1, bias=False), nn.BatchNorm2d(co), nn.ReLU(),
        nn.Conv2d(co, co, 3, padding=1, bias=False), nn.BatchNorm2d(co)]
    sc = None
    if down or ci != co:
        sc = nn.Sequential(*(([nn.AvgPool2d(2)] if down else []) +
                             [nn.Conv2d(ci, co, 1, bias=False), nn.BatchNorm2d(co)]))
    return Block(nn.Sequential(*body), sc)

class Block(nn.Module):
    def __init__(self, body, sc):
        super().__init__()
        self.body, self.sc = body, sc
    def forward(self, x):
        return torch.relu(self.body(x) + (self.sc(x) if self.sc is not None else x))

def resnet(width, depth, side):
    c = max(1, int(16 * width + 0.5))
    layers = [nn.Conv2d(1, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU()]
    h = side
    for st in range(4):
        co = max(1, int((16 << st) * width + 0.5))
        for k in range(depth):
            down = st > 0 and k == 0 and h // 2 >= 2
            layers.append(block(c, co, down))
            if down:
                h //= 2
            c = co
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10)]
    return nn.Sequential(*layers)

def main():
    width, depth, batch, reps = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(2)
    torch.manual_seed(0)
    net = resnet(width, depth, 28)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    lossf = nn.CrossEntropyLoss()
    def step():
        opt.zero_grad()
        lossf(net(x), y).backward()
        opt.step()
    net.train(); step()
    tt = []
    for _ in range(reps):
        t0 = time.perf_counter(); step(); tt.append(time.perf_counter() - t0)
    net.eval()
    ti = []
    with torch.no_grad():
        net(x)
        for _ in range(reps):
            t0 = time.perf_counter(); net(x); ti.append(time.perf_counter() - t0)
    tt.sort(); ti.sort()
    print("train_ips %.3f infer_ips %.3f" % (batch / tt[len(tt) // 2], batch / ti[len(ti) // 2]))

if __name__ == "__main__":
    main()
