#!/usr/bin/env bash
# Ranked top-10 search on real corpora, in one run: gpuidx's BM25
# (ORDER BY body <=> q, alone and under body @@& q) against GIN with ts_rank
# and RUM's <=>, each on the same table of a throwaway cluster: index builds,
# latency at 1 client (p50, p99) and throughput at 1/8/32/64 clients under
# pgbench over the corpus's real queries.  Writes the Markdown summary to
# $OUT (default bench/results/rank.md) with the command, the machine and the
# settings.  See bench/rank/README.md.
#   bench/rank/run.sh [--quick] [--baseline-only] [CORPUS...]   (default: debian-paths gcide)
#   --quick          gcide's first 20,000 documents, 50 queries, 2 s a cell, 1 and 8 clients
#   --baseline-only  GIN and RUM only (no gpuidx index or operator needed)
#   GPU=on           shared_preload_libraries = 'gpuidx': gpuidx measured through the GPU
#                    worker (gpuidx.device = auto) and on the CPU (gpuidx.device = cpu)
#   NQ, SECONDS_PER_CELL, CLIENTS, LIMIT_DOCS, SHARED_BUFFERS, OUT: see the README
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cmdline="bench/rank/run.sh $*"
quick=0
baseline_only=0
corpora=()
for a in "$@"; do
	case $a in
		--quick) quick=1 ;;
		--baseline-only) baseline_only=1 ;;
		-*) echo "run.sh: unknown option $a" >&2; exit 2 ;;
		*) corpora+=("$a") ;;
	esac
done
if [ "$quick" = 1 ]; then
	: "${NQ:=50}" "${SECONDS_PER_CELL:=2}" "${CLIENTS:=1 8}" "${LIMIT_DOCS:=20000}" "${SHARED_BUFFERS:=512MB}"
	: "${OUT:=$top/bench/build/rank/quick.md}"
	[ ${#corpora[@]} -eq 0 ] && corpora=(gcide)
fi
export NQ=${NQ:-1000} SECONDS_PER_CELL=${SECONDS_PER_CELL:-10} CLIENTS=${CLIENTS:-1 8 32 64}
export LIMIT_DOCS=${LIMIT_DOCS:-0} SHARED_BUFFERS=${SHARED_BUFFERS:-4GB} GPU=${GPU:-off}
export BASELINE_ONLY=$baseline_only
# METHODS: which of GIN + ts_rank, RUM and gpuidx run (all three by default);
# BUILD_WORKERS: max_parallel_maintenance_workers for the gpuidx build (0: serial)
export METHODS=${METHODS:-gin_rank rum gpuidx} BUILD_WORKERS=${BUILD_WORKERS:-0}
OUT=${OUT:-$top/bench/results/rank.md}
[ ${#corpora[@]} -eq 0 ] && corpora=(debian-paths gcide)
case $GPU in on|off) ;; *) echo "run.sh: GPU is on or off, not '$GPU'" >&2; exit 2 ;; esac
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}

# the corpora, where the cluster's owner can read them
work=$(mktemp -d /tmp/gpuidx-rank.XXXXXX)
trap 'rm -rf "$work"' EXIT
present=()
for c in "${corpora[@]}"; do
	if [ ! -s "$data/$c/docs.tsv" ] || [ ! -s "$data/$c/queries.tsv" ]; then
		echo "NOTICE: corpus $c not found under $data (scripts/data/fetch $c): skipped" >&2
		continue
	fi
	if [ "$LIMIT_DOCS" -gt 0 ]; then
		head -n "$LIMIT_DOCS" "$data/$c/docs.tsv" > "$work/$c-docs.tsv"
	else
		cp "$data/$c/docs.tsv" "$work/$c-docs.tsv"
	fi
	cp "$data/$c/queries.tsv" "$work/$c-queries.tsv"
	present+=("$c")
done
[ ${#present[@]} -gt 0 ] || { echo "run.sh: no corpus to run" >&2; exit 1; }
export CORPORA="${present[*]}"
cp "$here/session.sh" "$work/"
{
	echo "command: $cmdline"
	echo "settings: NQ=$NQ SECONDS_PER_CELL=$SECONDS_PER_CELL CLIENTS=\"$CLIENTS\" LIMIT_DOCS=$LIMIT_DOCS GPU=$GPU GPU_NOLIMIT=${GPU_NOLIMIT:-0} GPU_BACKLOGS=\"${GPU_BACKLOGS:-}\" GPU_MIN_POSTINGS=\"${GPU_MIN_POSTINGS:-}\" GPU_SPLITS=\"${GPU_SPLITS:-}\" FLOOR=${FLOOR:-0} RANK_CACHE_OFF=${RANK_CACHE_OFF:-0} PER_QUERY=${PER_QUERY:-0} BASELINE_ONLY=$baseline_only METHODS=\"$METHODS\" BUILD_WORKERS=$BUILD_WORKERS"
	echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "commit: $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "machine: $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1)), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) RAM"
	if command -v nvidia-smi > /dev/null; then
		echo "gpu: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)"
	fi
} > "$work/info.txt"

# PostgreSQL refuses root: the cluster belongs to BENCH_USER (default postgres) then
if [ "$(id -u)" -eq 0 ]; then
	owner=${BENCH_USER:-postgres}
	chown -R "$owner" "$work"
	su "$owner" -s /bin/bash -c "cd '$work' && PATH='$PATH' LD_LIBRARY_PATH='${LD_LIBRARY_PATH:-}' NQ=$NQ \
		SECONDS_PER_CELL=$SECONDS_PER_CELL CLIENTS='$CLIENTS' SHARED_BUFFERS=$SHARED_BUFFERS GPU=$GPU GPU_NOLIMIT=${GPU_NOLIMIT:-0} \
		GPU_BACKLOGS='${GPU_BACKLOGS:-}' GPU_MIN_POSTINGS='${GPU_MIN_POSTINGS:-}' GPU_SPLITS='${GPU_SPLITS:-}' FLOOR=${FLOOR:-0} RANK_CACHE_OFF=${RANK_CACHE_OFF:-0} PER_QUERY=${PER_QUERY:-0} BASELINE_ONLY=$BASELINE_ONLY METHODS='$METHODS' BUILD_WORKERS=$BUILD_WORKERS CORPORA='$CORPORA' bash session.sh '$work'"
else
	bash "$work/session.sh" "$work"
fi
mkdir -p "$(dirname "$OUT")"
python3 "$here/report.py" "$work" > "$OUT"
mkdir -p "$top/bench/build/rank"
cp "$work/results.csv" "$work/builds.csv" "$work/worker.csv" "$work/explain.txt" "$top/bench/build/rank/"
[ -f "$work/checks.txt" ] && cp "$work/checks.txt" "$top/bench/build/rank/"
cp "$work"/perquery-*.csv "$top/bench/build/rank/" 2>/dev/null
echo "wrote $OUT (raw: bench/build/rank/results.csv, builds.csv, explain.txt)"
