#!/usr/bin/env bash
# What device_check.sh needs on the GPU machine, into bench/build/worker (carry it):
# the bundled PostgreSQL 15 (../shared/device/pg-bundle.sh) and GCIDE (scripts/data/fetch gcide).
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}
[ -r "$data/gcide/docs.tsv" ] || scripts/data/fetch gcide
mkdir -p bench/build/worker
xz -T0 -6 -c "$data/gcide/docs.tsv" > bench/build/worker/gcide-docs.tsv.xz
cp "$data/gcide/queries.tsv" bench/build/worker/gcide-queries.tsv
bash ../shared/device/pg-bundle.sh bench/build/worker/pg.tar.xz
ls -la bench/build/worker
