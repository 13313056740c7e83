#!/usr/bin/env bash
# What device_check.sh needs on the GPU machine, into bench/build/worker (carry it):
# the bundled PostgreSQL 15 (../shared/device/pg-bundle.sh) and the corpora (scripts/data/fetch).
#   bash bench/worker/pack.sh          GCIDE, for the checks
#   bash bench/worker/pack.sh bench    all of debian-paths and GCIDE, for MODE=bench
#   bash bench/worker/pack.sh defaults debian-paths' first 2M rows into bench/build/defaults,
#                                      for device_defaults.sh
#   bash bench/worker/pack.sh tsquery  all of debian-paths (its paths: a line's id is its number)
#                                      and of GCIDE into bench/build/tsquery, for
#                                      bench/tsquery/device.sh
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
# debian-paths' first 2M rows, its queries and the bundle, into $1
dpaths2m() {
	[ -r "$data/debian-paths/docs.tsv" ] || scripts/data/fetch debian-paths
	mkdir -p "$1"
	head -n 2000000 "$data/debian-paths/docs.tsv" | xz -T0 -9 > "$1/dpaths2m-docs.tsv.xz"
	cp "$data/debian-paths/queries.tsv" "$1/dpaths-queries.tsv"
	[ -r "$1/pg.tar.xz" ] || bash ../shared/device/pg-bundle.sh "$1/pg.tar.xz"
}
case $which in
	defaults)
		dpaths2m bench/build/defaults
		du -sh bench/build/defaults
		exit 0 ;;
	tsquery)
		# 7.3M paths without their ids (1, 2, ... by line) are 13% smaller: the call's 64 MiB
		[ -r "$data/debian-paths/docs.tsv" ] || scripts/data/fetch debian-paths
		awk -F'\t' '$1 != NR { exit 1 }' "$data/debian-paths/docs.tsv" ||
			{ echo "pack.sh: debian-paths' ids are not its line numbers" >&2; exit 1; }
		if [ ! -r bench/build/worker/dpaths-paths.xz ] || [ "$data/debian-paths/docs.tsv" -nt bench/build/worker/dpaths-paths.xz ]; then
			cut -f2 "$data/debian-paths/docs.tsv" | xz -T0 -9 > bench/build/worker/dpaths-paths.xz.tmp
			mv bench/build/worker/dpaths-paths.xz.tmp bench/build/worker/dpaths-paths.xz
		fi
		mkdir -p bench/build/tsquery
		rm -f bench/build/tsquery/dpaths2m-docs.tsv.xz
		cp "$data/debian-paths/queries.tsv" bench/build/tsquery/dpaths-queries.tsv
		[ -r bench/build/tsquery/pg.tar.xz ] || bash ../shared/device/pg-bundle.sh bench/build/tsquery/pg.tar.xz
		pack gcide gcide
		ln -f bench/build/worker/dpaths-paths.xz bench/build/worker/gcide-docs.tsv.xz \
			bench/build/worker/gcide-queries.tsv bench/build/tsquery/
		du -sh bench/build/tsquery     # a device call carries 64 MiB in all
		exit 0 ;;
	gcide) rm -f bench/build/worker/dpaths-*; pack gcide gcide ;;
	bench) pack dpaths debian-paths; pack gcide gcide ;;
	*) echo "pack.sh: gcide, bench, defaults or tsquery" >&2; exit 2 ;;
esac
[ -r bench/build/worker/pg.tar.xz ] || bash ../shared/device/pg-bundle.sh bench/build/worker/pg.tar.xz
ls -la bench/build/worker
du -sh bench/build/worker     # a device call carries 64 MiB in all
