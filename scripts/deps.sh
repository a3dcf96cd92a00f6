#!/usr/bin/env bash
# Installs the Debian packages one task of syno needs, if any are missing.
#   scripts/deps.sh [build|test|demo|bench|valgrind|fuzz]   (default: build)
# build: the compiler and the libraries the library links, MPICH included
#        (syno search --mpi; no PyTorch);
# test:  build + cmocka, Python with PyTorch and torchvision (to check the
#        exported PyTorch code, and examples/), gnuplot, Graphviz and
#        Fashion-MNIST (tests skip, with a printed reason, what they cannot
#        run, but `make test` installs it);
# demo:  build + gnuplot and Graphviz (the report's plots);
# bench: test's set (the benchmarks compare against PyTorch);
# valgrind: build + valgrind (scripts/valgrind.sh).
# fuzz:  build + clang 14 with libFuzzer and its OpenMP (the libraries are
#        rebuilt with clang for `make fuzz`).
# As root it runs `apt-get update` once and `apt-get install
# --no-install-recommends`; otherwise it names what is missing and fails.
set -euo pipefail

BUILD=(
  gcc make cmake pkg-config libc6-dev
  libcjson-dev zlib1g-dev libsqlite3-dev
  libblas-dev libopenblas0-pthread libopenblas-pthread-dev libdnnl-dev
  mpich libmpich-dev
)
PLOTS=(gnuplot-nox graphviz)
FUZZ=(clang-14 libfuzzer-14-dev libclang-rt-14-dev libomp-14-dev)
# g++ and libhalide14-0-dev: the Halide kernels (docs/halide.md), their tests and bench/kernels.
TEST=(libcmocka-dev python3 python3-torch python3-torchvision python3-numpy dataset-fashion-mnist g++ libhalide14-0-dev
      "${PLOTS[@]}")

case "${1:-build}" in
  build) PACKAGES=("${BUILD[@]}") ;;
  test | bench) PACKAGES=("${BUILD[@]}" "${TEST[@]}") ;;
  demo) PACKAGES=("${BUILD[@]}" "${PLOTS[@]}") ;;
  valgrind) PACKAGES=("${BUILD[@]}" valgrind) ;;
  fuzz) PACKAGES=("${BUILD[@]}" "${FUZZ[@]}") ;;
  *)
    echo "syno: scripts/deps.sh: unknown task '$1' (build, test, demo, bench, valgrind or fuzz)" >&2
    exit 2
    ;;
esac

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
