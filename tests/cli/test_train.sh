#!/usr/bin/env bash
# syno train from the shell: a short digits run (text and JSON), the slot listing, and bad
# options (exit 2 with a message naming the problem).
set -u
SYNO=${1:?usage: test_train.sh path/to/syno}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect_error() {
  local pattern=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne 2 ]; then bad "exit $got (wanted 2): $*"; cat "$tmp/err"; return; fi
  if [ -s "$tmp/out" ]; then bad "stdout not empty on error: $*"; fi
  if ! grep -q -- "$pattern" "$tmp/err"; then bad "error lacks '$pattern': $(cat "$tmp/err")"; else ok; fi
}

"$SYNO" train --help | grep -q -- "--backbone" && ok || bad "train --help"
"$SYNO" --help | grep -q "train" && ok || bad "syno --help lists train"

out=$("$SYNO" train --dataset digits --backbone resnet --epochs 2 --width 0.5 --depth 1 --quiet 2>"$tmp/err")
if [ $? -ne 0 ]; then bad "digits run failed: $(cat "$tmp/err")"; fi
echo "$out" | grep -q "test accuracy" && ok || bad "no accuracy line: $out"
acc=$(echo "$out" | sed -n 's/^test accuracy \([0-9.]*\)%.*/\1/p')
awk -v a="$acc" 'BEGIN { exit !(a > 60) }' && ok || bad "digits accuracy $acc% not above 60%"

json=$("$SYNO" train --dataset digits --backbone vgg --epochs 1 --width 0.5 --depth 1 --json 2>/dev/null)
echo "$json" | grep -q '"test_acc":' && echo "$json" | grep -q '"flops":' && ok || bad "json: $json"
[ "$(echo "$json" | wc -l)" -eq 1 ] && ok || bad "json is not one line"

"$SYNO" train --list-slots --dataset digits | grep -q "slot 0: C_in=16 C_out=16 H=8 W=8" && ok || bad "list-slots"

# Colour images: CIFAR-10 in its binary format, written here (five training batches of 40
# records and a test batch of 40; each class a different mean colour, so it can be learned),
# found through SYNO_CIFAR10_DIR; the network takes 3 x 32 x 32 inputs and 10 classes.
mkdir "$tmp/cifar"
python3 - "$tmp/cifar" <<'PY'
import random, sys
random.seed(1)
def batch(path, n):
    with open(path, "wb") as f:
        for i in range(n):
            label = i % 10
            f.write(bytes([label]))
            for c in range(3):
                base = (label * 25 + c * 80) % 256
                f.write(bytes((base + random.randrange(32)) % 256 for _ in range(1024)))
for b in range(1, 6):
    batch(f"{sys.argv[1]}/data_batch_{b}.bin", 40)
batch(f"{sys.argv[1]}/test_batch.bin", 40)
PY
out=$(SYNO_CIFAR10_DIR="$tmp/cifar" "$SYNO" train --dataset cifar10 --backbone resnet --epochs 2 --width 0.25 \
  --depth 1 --pad 0 --quiet 2>"$tmp/err")
[ $? -eq 0 ] && echo "$out" | grep -q "test accuracy" && ok || bad "a CIFAR-10 run failed: $(cat "$tmp/err") $out"
out=$(SYNO_CIFAR10_DIR="$tmp/cifar" "$SYNO" train --dataset cifar10 --backbone resnet --epochs 1 --width 0.25 \
  --depth 1 --pad 0 --augment --quiet 2>"$tmp/err")
[ $? -eq 0 ] && echo "$out" | grep -q "test accuracy" && ok || bad "a CIFAR-10 run with --augment failed: $(cat "$tmp/err")"
expect_error "--augment transforms images" "$SYNO" train --backbone gpt --augment
SYNO_CIFAR10_DIR="$tmp/cifar" "$SYNO" train --dataset cifar10 --list-slots | grep -q "slot 0: C_in=16 C_out=16 H=32 W=32" &&
  ok || bad "CIFAR-10's slots are not at 32x32"
SYNO_CIFAR10_DIR="$tmp/nowhere" "$SYNO" train --dataset cifar10 --epochs 1 >/dev/null 2>"$tmp/err"
[ $? -ne 0 ] && grep -q "nowhere/data_batch_1.bin: cannot read" "$tmp/err" && ok ||
  bad "a missing CIFAR-10 directory: $(cat "$tmp/err")"

# Your own images: examples/to_cifar_binary.py turns an image folder (3 classes, odd sizes)
# into the CIFAR-10 layout; the first record holds the first training image, resized, as
# its red, green and blue planes; syno trains on it.
src=$(cd "$(dirname "$0")/../.." && pwd)
/usr/bin/python3 - "$tmp/imf" <<'PY'
import os, sys
from PIL import Image
for split, n in (("train", 10), ("test", 3)):
    for k, cls in enumerate(["cat", "dog", "ship"]):
        os.makedirs(f"{sys.argv[1]}/{split}/{cls}")
        for i in range(n):
            Image.new("RGB", (40 + i, 30), ((k * 90 + i) % 256, 40 * k, 200 - 50 * k)).save(
                f"{sys.argv[1]}/{split}/{cls}/{i:02d}.png")
PY
/usr/bin/python3 "$src/examples/to_cifar_binary.py" "$tmp/imf" "$tmp/imo" >"$tmp/conv.out" 2>&1 &&
  grep -q "30 training and 9 test images of 3 classes" "$tmp/conv.out" && ok || bad "to_cifar_binary.py: $(cat "$tmp/conv.out")"
/usr/bin/python3 - "$tmp/imo/data_batch_1.bin" <<'PY' && ok || bad "to_cifar_binary.py wrote the wrong first record"
import sys
r = open(sys.argv[1], "rb").read(1 + 3072)
assert r[0] == 0 and r[1:1025] == bytes([0]) * 1024 and r[1025:2049] == bytes([0]) * 1024, r[:4]
assert r[2049:3073] == bytes([200]) * 1024, r[2049:2053]
PY
SYNO_CIFAR10_DIR="$tmp/imo" "$SYNO" train --dataset cifar10 --backbone resnet --epochs 1 --width 0.25 --depth 1 --pad 0 \
  --quiet >"$tmp/out" 2>&1 && grep -q "test accuracy" "$tmp/out" && ok || bad "training on converted images: $(cat "$tmp/out")"

# Your own images of any shape: an image set in IDX files (docs/train.md), written here with
# struct and gzip: 2-channel 6x10 images of 3 classes (each class its own mean, so it can be
# learned), the training images gzipped, found through SYNO_IMAGES_DIR. The network takes
# 2 x 6 x 10 inputs; a search on them needs the non-square preset conv2d-wide, and conv2d is
# refused naming the size before a database is written.
/usr/bin/python3 - "$tmp/idx" <<'PY'
import gzip, os, random, struct, sys
random.seed(1)
os.makedirs(sys.argv[1])
for split, n in (("train", 60), ("test", 30)):
    labels = [i % 3 for i in range(n)]
    px = bytes(lab * 80 + ch * 20 + random.randrange(40) for lab in labels for ch in range(2) for _ in range(60))
    name = f"{sys.argv[1]}/{split}-images.idx" + (".gz" if split == "train" else "")
    (gzip.open if name.endswith(".gz") else open)(name, "wb").write(struct.pack(">5I", 0x804, n, 2, 6, 10) + px)
    open(f"{sys.argv[1]}/{split}-labels.idx", "wb").write(struct.pack(">2I", 0x801, n) + bytes(labels))
PY
export SYNO_IMAGES_DIR="$tmp/idx"
out=$("$SYNO" train --dataset images --backbone resnet --epochs 1 --width 0.25 --depth 1 --pad 0 --quiet 2>"$tmp/err")
[ $? -eq 0 ] && echo "$out" | grep -q "test accuracy" && ok || bad "a run on an IDX image set failed: $(cat "$tmp/err") $out"
out=$("$SYNO" train --dataset images --backbone vgg --epochs 1 --width 0.25 --depth 1 --pad 1 --augment --quiet 2>"$tmp/err")
[ $? -eq 0 ] && echo "$out" | grep -q "test accuracy" && ok || bad "an IDX image set with --augment, --pad: $(cat "$tmp/err")"
"$SYNO" train --dataset images --width 0.25 --pad 0 --list-slots | grep -q "slot 0: C_in=4 C_out=4 H=6 W=10" &&
  ok || bad "the IDX image set's slots are not at 6x10"
expect_error "cannot fill a 6x10 slot (--preset conv2d-wide takes them)" "$SYNO" search --dataset images \
  --db "$tmp/sq.db" --budget 1
[ ! -e "$tmp/sq.db" ] && ok || bad "a refused search on non-square images wrote its database"
"$SYNO" search --backbone resnet --dataset images --preset conv2d-wide --pad 0 --db "$tmp/idx.db" --budget 1 \
  --epochs 1 --depth 1 --width 0.25 --confirm 0 --min-speedup 0 --quiet 2>"$tmp/err" &&
  [ "$("$SYNO" report --db "$tmp/idx.db" --json | grep -c '"op_text"')" -eq 2 ] &&
  "$SYNO" report --db "$tmp/idx.db" | grep -q '"dataset":"images"' && ok ||
  bad "a search on an IDX image set: $(cat "$tmp/err")"
mv "$tmp/idx/test-labels.idx" "$tmp/idx/test-labels.keep"
expect_error "idx/test-labels.idx: no such file, nor" "$SYNO" train --dataset images --epochs 1
/usr/bin/python3 -c 'import struct, sys; open(sys.argv[1], "wb").write(struct.pack(">2I", 0x801, 29) + bytes(29))' \
  "$tmp/idx/test-labels.idx"
expect_error "test-labels.idx: holds 29 labels, but .*test-images.idx holds 30 images" "$SYNO" train --dataset images
SYNO_IMAGES_DIR="$tmp/nowhere" expect_error "nowhere/train-images.idx: no such file" "$SYNO" eval --dataset images --plan
unset SYNO_IMAGES_DIR

# examples/to_idx.py (torchvision) writes an image folder in that format: resized to 8x12, or
# kept at its own size, which must then agree; the first training image's first pixels are
# its red value; syno trains on the result.
if /usr/bin/python3 -c 'import torchvision' 2>/dev/null; then
  /usr/bin/python3 "$src/examples/to_idx.py" "$tmp/imf" "$tmp/idxo" --size 8x12 >"$tmp/conv.out" 2>&1 &&
    grep -q "30 training and 9 test images of 3 classes, 3x8x12 (C x H x W)" "$tmp/conv.out" && ok ||
    bad "to_idx.py: $(cat "$tmp/conv.out")"
  /usr/bin/python3 - "$tmp/idxo/train-images.idx.gz" <<'PY' && ok || bad "to_idx.py wrote the wrong first image"
import gzip, struct, sys
d = gzip.open(sys.argv[1]).read()
assert struct.unpack(">5I", d[:20]) == (0x804, 30, 3, 8, 12), d[:20]
assert d[20:20 + 96] == bytes(96) and d[20 + 192:20 + 288] == bytes([200]) * 96, d[20:24]
PY
  SYNO_IMAGES_DIR="$tmp/idxo" "$SYNO" train --dataset images --backbone resnet --epochs 1 --width 0.25 --depth 1 \
    --quiet >"$tmp/out" 2>&1 && grep -q "test accuracy" "$tmp/out" && ok || bad "training on to_idx.py's images: $(cat "$tmp/out")"
  /usr/bin/python3 "$src/examples/to_idx.py" "$tmp/imf" "$tmp/idxk" >"$tmp/conv.out" 2>&1
  [ $? -ne 0 ] && grep -q "train/cat/01.png: 30x41, but the first image is 30x40; give --size" "$tmp/conv.out" &&
    [ ! -e "$tmp/idxk/train-images.idx.gz" ] && ok || bad "to_idx.py on images of different sizes: $(cat "$tmp/conv.out")"
else
  echo "SKIP: examples/to_idx.py (no torchvision for /usr/bin/python3)"
fi

# the published backbones: their slots as published, resnet the same network as resnet18
for nb in resnet18:16 resnet34:32 resnext29:9 densenet121:58 efficientnetv2s:40; do
  n=$("$SYNO" train --backbone "${nb%%:*}" --list-slots --width 0.25 | grep -c '^slot ')
  [ "$n" = "${nb##*:}" ] && ok || bad "${nb%%:*} lists $n slots, not ${nb##*:}"
done
diff <("$SYNO" train --backbone resnet --list-slots) <("$SYNO" train --backbone resnet18 --list-slots) >/dev/null &&
  ok || bad "resnet is not resnet18"
"$SYNO" train --backbone resnext29 --list-slots --width 0.25 | grep -q "slot 0: C_in=32 C_out=32 H=8 W=8 groups=8" &&
  ok || bad "resnext29's grouped slot"
# a synthesized operator (the 1x1 conv) in the grouped slots, one short epoch
op='r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[r0, i1]'
out=$("$SYNO" train --backbone resnext29 --width 0.25 --depth 1 --subset 256 --batch 32 --op "$op" --json 2>"$tmp/err")
if [ $? -ne 0 ]; then bad "resnext29 with an operator: $(cat "$tmp/err")"; fi
echo "$out" | grep -q '"test_acc":' && ok || bad "resnext29 json: $out"
# what a search asks a worker for: the plan of the new backbones
for b in resnet34 resnext29 densenet121 efficientnetv2s; do
  "$SYNO" eval --backbone "$b" --dataset digits --width 0.25 --depth 1 --plan | grep -q '"slots":\[{"c_in"' &&
    ok || bad "eval --plan --backbone $b"
done
expect_error "width" "$SYNO" train --backbone densenet121 --width 17
expect_error "backbone lenet: must be one of resnet18, resnet, resnet34, resnext29, densenet121, efficientnetv2s, vgg, gpt" "$SYNO" train --backbone lenet
expect_error "nope.csv" "$SYNO" train --dataset /nonexistent/nope.csv
expect_error "epochs x: must be an integer in 1..10000" "$SYNO" train --epochs x
expect_error "operator" "$SYNO" train --op "r0=sum(C_in); in[i0, share(r0, 1)"
expect_error "operator" "$SYNO" train --op "r0=sum(C_in); in[i0, share(r0, 1)] expand[share(i1, 1)] w1[i1, r0]"
expect_error "op-file /nonexistent/op.txt: no such file" "$SYNO" train --op-file /nonexistent/op.txt
expect_error "unknown option '--frobnicate'" "$SYNO" train --frobnicate

echo "test_train.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
