#!/usr/bin/env bash
# What device_check.sh needs on the GPU machine, into bench/build/worker (carry it):
# the bundled PostgreSQL 15 (../shared/device/pg-bundle.sh) and the corpora (scripts/data/fetch).
#   bash bench/worker/pack.sh          GCIDE, for the checks
#   bash bench/worker/pack.sh bench    all of debian-paths and GCIDE, for MODE=bench
#   bash bench/worker/pack.sh defaults debian-paths' first 2M rows into bench/build/defaults,
#                                      for device_defaults.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}
# gcide (device_check); bench: all of debian-paths and gcide (MODE=bench)
which=${1:-gcide}
mkdir -p bench/build/worker
pack() {
	local name=$1 corpus=$2
	[ -r "$data/$corpus/docs.tsv" ] || scripts/data/fetch "$corpus"
	# packed once: xz -9 of debian-paths takes minutes
	if [ ! -r bench/build/worker/$name-docs.tsv.xz ] || [ "$data/$corpus/docs.tsv" -nt bench/build/worker/$name-docs.tsv.xz ]; then
		xz -T0 -9 -c "$data/$corpus/docs.tsv" > bench/build/worker/$name-docs.tsv.xz.tmp
		mv bench/build/worker/$name-docs.tsv.xz.tmp bench/build/worker/$name-docs.tsv.xz
	fi
	cp "$data/$corpus/queries.tsv" bench/build/worker/$name-queries.tsv
}
case $which in
	defaults)
		[ -r "$data/debian-paths/docs.tsv" ] || scripts/data/fetch debian-paths
		mkdir -p bench/build/defaults
		head -n 2000000 "$data/debian-paths/docs.tsv" | xz -T0 -9 > bench/build/defaults/dpaths2m-docs.tsv.xz
		cp "$data/debian-paths/queries.tsv" bench/build/defaults/dpaths-queries.tsv
		[ -r bench/build/defaults/pg.tar.xz ] || bash ../shared/device/pg-bundle.sh bench/build/defaults/pg.tar.xz
		du -sh bench/build/defaults
		exit 0 ;;
	gcide) rm -f bench/build/worker/dpaths-*; pack gcide gcide ;;
	bench) pack dpaths debian-paths; pack gcide gcide ;;
	*) echo "pack.sh: gcide or bench" >&2; exit 2 ;;
esac
[ -r bench/build/worker/pg.tar.xz ] || bash ../shared/device/pg-bundle.sh bench/build/worker/pg.tar.xz
ls -la bench/build/worker
du -sh bench/build/worker     # a device call carries 64 MiB in all
