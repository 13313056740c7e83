#!/usr/bin/env bash
# Installs what gpuidx needs to build, test and demo on Debian 12 (run as root).
# Does nothing when everything is there already, so it also works offline then.
# Otherwise it says first which packages it installs and which installed ones
# apt upgrades on the way (a new package needing a newer library), then does
# it; it never upgrades anything else.
set -euo pipefail
packages=(build-essential postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
          postgresql-15-rum libipc-run-perl clang libclang-rt-14-dev python3 ca-certificates sqlsmith)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "deps.sh: run as root to install: ${missing[*]}" >&2; exit 1; }
    export DEBIAN_FRONTEND=noninteractive
    echo "deps.sh: missing: ${missing[*]}; refreshing the package lists (apt-get update)" >&2
    apt-get update -qq
    # what apt will do, said before it is done (apt-get -s simulates)
    apt-get -s install --no-upgrade "${missing[@]}" | awk '
        /^Inst / && $3 ~ /^\[/ { up = up sprintf("\n    %s %s -> %s", $2, substr($3, 2, length($3) - 2), substr($4, 2)) ; next }
        /^Inst / { n++; new = new " " $2 }
        END {
            printf "deps.sh: installing %d packages:%s\n", n, new
            if (up != "") printf "deps.sh: and upgrading, as those need:%s\n", up
            else print "deps.sh: upgrading nothing already installed"
        }' >&2
    apt-get install -y -qq --no-upgrade "${missing[@]}" >/dev/null
else
    echo "deps.sh: every package is installed already: nothing installed or upgraded" >&2
fi
# the CUDA toolkit is not in Debian main; the build uses it when present
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
    if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then echo "deps.sh: CUDA toolkit at $d" >&2; exit 0; fi
done
command -v nvcc >/dev/null && { echo "deps.sh: CUDA toolkit: $(command -v nvcc)" >&2; exit 0; }
echo "deps.sh: no CUDA toolkit found: the CPU-only extension will be built" >&2
