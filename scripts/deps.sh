#!/usr/bin/env bash
# Installs the Debian packages syno needs, if any are missing.
# As root it runs `apt-get update` once and `apt-get install --no-install-recommends`;
# otherwise it names what is missing and how to get it, and fails.
set -euo pipefail

# One set builds, tests (PyTorch checks the exported PyTorch code), runs
# the demo and the benchmarks.
PACKAGES=(
  gcc make cmake pkg-config libc6-dev
  libcmocka-dev libcjson-dev zlib1g-dev libsqlite3-dev
  libblas-dev libopenblas0-pthread libopenblas-pthread-dev
  libdnnl-dev gnuplot-nox graphviz dataset-fashion-mnist
  python3 python3-torch python3-numpy
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "syno: missing Debian packages: ${missing[*]}" >&2
  echo "syno: run as root, or: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "syno: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y --no-install-recommends "${missing[@]}"
