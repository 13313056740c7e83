# Sourced by benchmark scripts (bench/index/curve.sh, parallel_build.sh,
# bench/shards/run.sh).

# -h HOST -p PORT -d DB (defaults: PGHOST or /tmp, PGPORT or 5432,
# PGDATABASE or postgres) into $host, $port and $db; the caller then shifts
# $conn_shift arguments.
parse_conn() {
	host=${PGHOST:-/tmp}; port=${PGPORT:-5432}; db=${PGDATABASE:-postgres}
	local OPTIND=1 o
	while getopts h:p:d: o; do
		case $o in h) host=$OPTARG ;; p) port=$OPTARG ;; d) db=$OPTARG ;; *) exit 2 ;; esac
	done
	conn_shift=$((OPTIND - 1))
}

# One pgbench cell: pgbench_cell WORK SCRIPT CLIENTS SECONDS CONNECTION...
# runs SCRIPT under pgbench -M prepared (the same seed every time, a thread
# per client up to the cores) in the folder WORK, and prints "tps p50_ms
# p99_ms transactions failed", the latencies from pgbench's per-transaction
# log.  failed: pgbench's failed transactions and the clients it aborted (a
# statement that errs, one cancelled by statement_timeout say, ends its
# client; the cell goes on with the others).  CONNECTION: pgbench's
# connection arguments (-h, -p, -U, the database).
pgbench_cell() {
	local work=$1 script=$2 c=$3 secs=$4 r rc=0 tps fail aborted
	shift 4
	rm -f "$work"/log.*
	r=$(cd "$work" && pgbench -n -M prepared -c "$c" -j "$(( c < $(nproc) ? c : $(nproc) ))" -T "$secs" \
		--random-seed=1 --log --log-prefix=log -f "$script" "$@" 2>&1) || rc=$?
	if [ $rc -ne 0 ] && ! grep -q '^tps = ' <<< "$r"; then echo "$r" >&2; echo "- - - 0 -"; return; fi
	tps=$(echo "$r" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	fail=$(echo "$r" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
	aborted=$(grep -c 'aborted in command' <<< "$r" || true)
	fail=$(( ${fail:-0} + aborted ))
	# column 3 of pgbench's log: the transaction's latency in microseconds.
	# PGBENCH_FAILED_MS: each failed transaction (a statement that timed out)
	# counts at that latency, a lower bound, as it would have taken at least
	# that; PGBENCH_P99_MIN: fewer transactions than that give no p99 ("-":
	# the 99th percentile of a few is their maximum)
	{ cat "$work"/log.* | awk '{ print $3 }'
	  [ -z "${PGBENCH_FAILED_MS:-}" ] || for ((i = 0; i < ${fail:-0}; i++)); do echo $(( PGBENCH_FAILED_MS * 1000 )); done
	} | sort -n | awk -v tps="${tps:-0}" -v fail="${fail:-0}" -v failed_in="${PGBENCH_FAILED_MS:+1}" -v p99min="${PGBENCH_P99_MIN:-0}" '
		{ v[NR] = $1 }
		END { n = NR - (failed_in ? fail : 0)
		      if (NR == 0) { print tps, "-", "-", 0, fail; exit }
		      printf (tps < 100 ? "%.1f" : "%.0f"), tps
		      printf " %.3f", v[int(0.50 * (NR - 1)) + 1] / 1000
		      if (NR < p99min) printf " -"; else printf " %.3f", v[int(0.99 * (NR - 1)) + 1] / 1000
		      printf " %d %s\n", n, fail }'
}

# The first ROWS lines of DATA/docs.tsv, or DATA scaled to ROWS documents by
# scripts/data/scale when the corpus has fewer, into TABLE (id, body) with
# psql's arguments P...: load_docs DATA ROWS TABLE P...
load_docs() {
	local data=$1 rows=$2 table=$3 have
	shift 3
	have=$(wc -l < "$data/docs.tsv")
	if [ "$rows" -le "$have" ]; then
		head -n "$rows" "$data/docs.tsv"
	else
		GPUIDX_DATA=$(dirname "$data") bash "$(dirname "${BASH_SOURCE[0]}")/../scripts/data/scale" "$(basename "$data")" "$rows"
	fi | "$@" -c "\\copy $table FROM pstdin WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01')"
}
