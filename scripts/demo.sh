#!/usr/bin/env bash
# Installs gpuidx and what it needs (Debian 12, as root), then runs the demo
# on a throwaway PostgreSQL 15 cluster that is dropped afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -s -j"$(nproc 2>/dev/null || echo 2)"
make -s install

# a real corpus: Debian's package descriptions (about ten seconds to fetch once)
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}
docs=$data/debian-pkgs/docs.tsv
GPUIDX_DATA=$data bash scripts/data/fetch debian-pkgs ||
    { echo "demo: could not fetch the debian-pkgs corpus into $data (see above)" >&2; exit 1; }
chmod a+r "$docs"
exec pg_virtualenv psql -X -v ON_ERROR_STOP=1 -v docs="$docs" -f scripts/demo.sql
