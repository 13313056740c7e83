#!/usr/bin/env bash
# Installs gpuidx and what it needs (Debian 12, as root), then runs the demo
# on a throwaway PostgreSQL 15 cluster that is dropped afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -s -j"$(nproc 2>/dev/null || echo 2)"
make -s install

# a real corpus: Debian's package descriptions (about a minute to fetch once)
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}
docs=$data/debian-pkgs/docs.tsv
if [ ! -s "$docs" ] && [ -x ../shared/data/fetch ]; then
    GPUIDX_DATA=$data ../shared/data/fetch debian-pkgs || true
fi
if [ ! -s "$docs" ]; then
    echo "demo: corpus not available; using generated documents instead" >&2
    docs=$(mktemp /tmp/gpuidx-demo.XXXXXX.tsv)
    python3 - "$docs" <<'PY'
import random, sys
rng = random.Random(1)
words = ["gpu", "index", "database", "posting", "list", "query", "engine", "text", "search", "fast",
         "compressed", "kernel", "batch", "cache", "worker", "planner", "vacuum", "replica"]
with open(sys.argv[1], "w") as f:
    for i in range(1, 50001):
        f.write(f"{i}\t{' '.join(rng.choices(words, weights=range(len(words), 0, -1), k=12))}\n")
PY
fi
chmod a+r "$docs"
exec pg_virtualenv psql -X -v ON_ERROR_STOP=1 -v docs="$docs" -f scripts/demo.sql
