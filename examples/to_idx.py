"""Writes a labelled image set as the IDX files that `syno train/search --dataset images` reads
(docs/train.md, "Data sets"), so that syno searches and trains on your own images.

usage: /usr/bin/python3 examples/to_idx.py SRC OUT_DIR [--size S | --size HxW] [--channels 1|3]

SRC is an image folder as torchvision.datasets.ImageFolder reads it (SRC/train/<class>/*.png,
*.jpg, ... and SRC/test/<class>/*; the classes are the sub-folder names in sorted order, labels
0..K-1) or a torchvision data set already on disk, NAME:ROOT (e.g. CIFAR10:ROOT,
FashionMNIST:ROOT: any whose class takes train=; nothing is downloaded).

Images become --channels 3 (RGB, the default) or 1 (grey) and are resized to --size (S x S, or
H x W); without --size they keep their own size, which must then be the same for all. OUT_DIR
receives train-images.idx.gz, train-labels.idx.gz, test-images.idx.gz and test-labels.idx.gz:
images magic 0x00000804 then N, C, H, W (big-endian uint32) and the pixels, row-major; labels
magic 0x00000801 then N and one byte per image. Point SYNO_IMAGES_DIR at OUT_DIR.
"""
import argparse
import gzip
import os
import struct
import sys

import torchvision
from torchvision import transforms


def open_split(src, train, size, channels):
    tf = [transforms.Lambda(lambda im: im.convert("RGB" if channels == 3 else "L"))]
    if size:
        tf.append(transforms.Resize(size))
    tf = transforms.Compose(tf + [transforms.PILToTensor()])
    name, _, root = src.partition(":")
    if root and hasattr(torchvision.datasets, name):
        return getattr(torchvision.datasets, name)(root, train=train, download=False, transform=tf)
    return torchvision.datasets.ImageFolder(os.path.join(src, "train" if train else "test"), transform=tf)


def write_split(ds, out, split, shape):
    """Streams ds's images into OUT/<split>-images.idx.gz (each of `shape`, or the first one's)."""
    labels, path = [], os.path.join(out, f"{split}-images.idx.gz")

    def fail(msg):
        os.remove(path)  # no half-written set
        sys.exit(msg)

    with gzip.open(path, "wb") as f:
        for i, (image, label) in enumerate(ds):
            if shape is None:
                shape = tuple(image.shape)
            if tuple(image.shape) != shape:
                where = ds.samples[i][0] if hasattr(ds, "samples") else f"{split} image {i}"
                fail(f"{where}: {image.shape[1]}x{image.shape[2]}, but the first image is {shape[1]}x{shape[2]}; "
                     "give --size")
            if i == 0:
                f.write(struct.pack(">5I", 0x804, len(ds), *shape))
            f.write(image.contiguous().numpy().tobytes())
            labels.append(label)
    if not labels or max(labels) > 255:
        fail(f"{split}: {len(labels)} images, labels up to {max(labels, default=0)}; expected images, labels < 256")
    with gzip.open(os.path.join(out, f"{split}-labels.idx.gz"), "wb") as f:
        f.write(struct.pack(">2I", 0x801, len(labels)) + bytes(labels))
    for stale in (f"{split}-images.idx", f"{split}-labels.idx"):  # the loader refuses both forms of a file
        if os.path.exists(os.path.join(out, stale)):
            os.remove(os.path.join(out, stale))
    return shape, len(labels), max(labels)


def size_arg(text):
    try:
        hw = [int(v) for v in text.lower().split("x")]
    except ValueError:
        hw = []
    if len(hw) not in (1, 2) or not all(0 < v <= 4096 for v in hw):
        raise argparse.ArgumentTypeError(f"'{text}': expected S or HxW, sides 1..4096")
    return (hw[0], hw[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--size", type=size_arg, help="S (S x S) or HxW; default: the images' own size")
    p.add_argument("--channels", type=int, choices=(1, 3), default=3)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    shape, n_train, top = write_split(open_split(a.src, True, a.size, a.channels), a.out, "train", None)
    _, n_test, top_test = write_split(open_split(a.src, False, a.size, a.channels), a.out, "test", shape)
    print(f"{n_train} training and {n_test} test images of {max(top, top_test) + 1} classes, "
          f"{shape[0]}x{shape[1]}x{shape[2]} (C x H x W), written to {a.out}; "
          f"use SYNO_IMAGES_DIR={a.out} and --dataset images")


if __name__ == "__main__":
    main()
