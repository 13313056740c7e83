#!/usr/bin/env bash
# Installs what gpuidx needs to build, test and demo on Debian 12 (run as root).
# Does nothing when everything is there already, so it also works offline then.
set -euo pipefail
packages=(build-essential postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
          postgresql-15-rum libipc-run-perl clang libclang-rt-14-dev python3 ca-certificates sqlsmith)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "deps.sh: run as root to install: ${missing[*]}" >&2; exit 1; }
    echo "deps.sh: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# the CUDA toolkit is not in Debian main; the build uses it when present
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
    if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then echo "deps.sh: CUDA toolkit at $d" >&2; exit 0; fi
done
command -v nvcc >/dev/null && { echo "deps.sh: CUDA toolkit: $(command -v nvcc)" >&2; exit 0; }
echo "deps.sh: no CUDA toolkit found: the CPU-only extension will be built" >&2
