#!/usr/bin/env bash
# examples/resnet18_torchvision.py as a user runs it: torchvision's ResNet-18 with its 3x3
# stride-1 convolutions replaced by operators exported with `syno export --to pytorch`, a
# forward and a backward pass and an SGD step (the script fails on a missing or non-finite
# gradient). Exits 77 (skipped) without Debian's torchvision.
set -u
bin=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 has no torch or torchvision (apt-get install python3-torch python3-torchvision)"
  exit 77
fi
/usr/bin/python3 "$src/examples/resnet18_torchvision.py" "$bin" || { echo "FAIL: the example failed"; exit 1; }
echo "1 passed, 0 failed"
