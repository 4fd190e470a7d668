#!/usr/bin/env bash
# Installs what kernel-workbook needs on Debian 12 / Ubuntu 24.04 (run as root or with sudo):
#   cmake (>= 3.25), ninja, g++, GoogleTest/GoogleMock, Google Benchmark, nlohmann-json (JSON),
#   CLI11 (command lines), fmt (tables), jq, python3-matplotlib for the plots, mkdocs +
#   mkdocs-material for the book (scripts/docs.sh), chromium + chromium-driver +
#   python3-selenium to check the built book in a browser (scripts/check-book.sh), and
#   clang-format, black and flake8 for the one layout (scripts/format.sh). Ubuntu 22.04's
#   CMake and g++ are too old: see the README.
# The CUDA toolkit (nvcc >= 12, with cuBLAS; cuDNN for the later chapters) is not in the
# distributions' main archives in a recent enough version: the script checks for it and,
# when it is missing, says how to install it. Packages already present are left alone.
set -euo pipefail

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in cmake ninja-build g++ libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev \
           libfmt-dev jq python3-matplotlib mkdocs mkdocs-material chromium chromium-driver python3-selenium \
           clang-format black flake8 ccache bubblewrap; do
  have_pkg "$pkg" || need+=("$pkg")
done

if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: missing ${need[*]}, and this is not a Debian/Ubuntu system (no apt-get)." >&2
    echo "              Install them with your package manager, then run the README commands." >&2
    exit 1
  fi
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "install-deps: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# CMake presets with workflows need 3.25.
cmake_version=$(cmake --version | sed -n 's/cmake version \([0-9.]*\).*/\1/p')
if [ "$(printf '%s\n3.25\n' "$cmake_version" | sort -V | head -1)" != "3.25" ]; then
  echo "install-deps: CMake $cmake_version is too old; the presets need 3.25 or newer." >&2
  echo "              On Ubuntu 22.04, add Kitware's apt repository (apt.kitware.com) and install cmake from it;" >&2
  echo "              or e.g. python3 -m pip install --user 'cmake>=3.25'" >&2
  exit 1
fi

# The CUDA toolkit.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: nvcc is in /usr/local/cuda/bin but not on PATH; add it:  export PATH=/usr/local/cuda/bin:\$PATH"
  export PATH=/usr/local/cuda/bin:$PATH
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "install-deps: the CUDA toolkit (nvcc) is missing. Install CUDA 12.x or 13.x with cuBLAS from NVIDIA's" >&2
  echo "              package repository for your distribution (see NVIDIA's CUDA installation guide for Linux)," >&2
  echo "              then put /usr/local/cuda/bin on PATH and run this script again." >&2
  exit 1
fi
nvcc_version=$(nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
if [ "${nvcc_version%%.*}" -lt 12 ]; then
  echo "install-deps: nvcc $nvcc_version is too old; kernel-workbook needs CUDA 12 or newer." >&2
  exit 1
fi
echo "install-deps: ready (cmake $cmake_version, nvcc $nvcc_version$(command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && echo ', GPU present' || echo ', no GPU: GPU tests will be skipped'))"
