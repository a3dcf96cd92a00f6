"""Writes a labelled image set in the CIFAR binary format that `syno train/search --dataset
cifar10` (or cifar100) reads, so that syno can search on your own images.

usage: /usr/bin/python3 examples/to_cifar_binary.py SRC OUT_DIR [--side 32]

SRC is either an image folder (one sub-folder per class, as torchvision.datasets.ImageFolder
reads it: SRC/train/<class>/*.png and SRC/test/<class>/*.png) or the name of a torchvision
data set already on disk, "CIFAR10:ROOT" or "CIFAR100:ROOT" (torchvision's pickled version
under ROOT, as torchvision.datasets.CIFAR10(ROOT) finds it; nothing is downloaded).

Images are converted to RGB and resized to SIDE x SIDE (32: what the CIFAR readers take).
With at most 10 classes it writes the CIFAR-10 layout (data_batch_1..5.bin with the
training images split in five, test_batch.bin): point SYNO_CIFAR10_DIR at OUT_DIR and use
--dataset cifar10. With 11 to 100 classes it writes the CIFAR-100 layout (train.bin,
test.bin; the coarse label byte is the class index divided by 5, CIFAR-100's own grouping
being unknown for other data): SYNO_CIFAR100_DIR and --dataset cifar100. A record is the
label byte(s) and the red, green and blue planes, each SIDE x SIDE bytes, row-major.
"""
import argparse
import os
import sys

import torch
import torchvision
from torchvision import transforms


def open_split(src, train, side):
    tf = transforms.Compose([transforms.Lambda(lambda im: im.convert("RGB")), transforms.Resize((side, side))])
    if ":" in src and src.split(":", 1)[0] in ("CIFAR10", "CIFAR100"):
        name, root = src.split(":", 1)
        cls = getattr(torchvision.datasets, name)
        return cls(root, train=train, download=False, transform=tf)
    return torchvision.datasets.ImageFolder(os.path.join(src, "train" if train else "test"), transform=tf)


def records(ds, c100):
    for image, label in ds:
        planes = torch.as_tensor(bytearray(image.tobytes()), dtype=torch.uint8).view(image.height, image.width, 3)
        head = bytes([label // 5, label]) if c100 else bytes([label])
        yield head + planes.permute(2, 0, 1).contiguous().numpy().tobytes()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--side", type=int, default=32)
    a = p.parse_args()
    train, test = open_split(a.src, True, a.side), open_split(a.src, False, a.side)
    nclasses = len(train.classes)
    if nclasses > 100:
        sys.exit(f"{a.src}: {nclasses} classes; the CIFAR formats hold at most 100")
    c100 = nclasses > 10
    os.makedirs(a.out, exist_ok=True)
    if c100:
        with open(os.path.join(a.out, "train.bin"), "wb") as f:
            f.writelines(records(train, True))
        with open(os.path.join(a.out, "test.bin"), "wb") as f:
            f.writelines(records(test, True))
    else:
        recs = list(records(train, False))
        per = (len(recs) + 4) // 5
        for b in range(5):
            with open(os.path.join(a.out, f"data_batch_{b + 1}.bin"), "wb") as f:
                f.writelines(recs[b * per:(b + 1) * per])
        with open(os.path.join(a.out, "test_batch.bin"), "wb") as f:
            f.writelines(records(test, False))
    print(f"{len(train)} training and {len(test)} test images of {nclasses} classes, {a.side}x{a.side} RGB, "
          f"written to {a.out} in the CIFAR-{100 if c100 else 10} binary layout; use "
          f"SYNO_CIFAR{100 if c100 else 10}_DIR={a.out} and --dataset cifar{100 if c100 else 10}")


if __name__ == "__main__":
    main()
