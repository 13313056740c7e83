#!/usr/bin/env bash
# What device_check.sh needs on the GPU machine, into bench/build/worker (carry it):
# the bundled PostgreSQL 15 (../shared/device/pg-bundle.sh) and a corpus (scripts/data/fetch).
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}
which=${1:-gcide}                      # gcide (device_check) or dpaths (MODE=bench: all of debian-paths)
corpus=$which; [ "$which" = dpaths ] && corpus=debian-paths
[ -r "$data/$corpus/docs.tsv" ] || scripts/data/fetch "$corpus"
mkdir -p bench/build/worker
rm -f bench/build/worker/*-docs.tsv.xz   # one corpus at a time: a call carries 64 MiB
xz -T0 -9 -c "$data/$corpus/docs.tsv" > bench/build/worker/$which-docs.tsv.xz
cp "$data/$corpus/queries.tsv" bench/build/worker/$which-queries.tsv
[ -r bench/build/worker/pg.tar.xz ] || bash ../shared/device/pg-bundle.sh bench/build/worker/pg.tar.xz
ls -la bench/build/worker
