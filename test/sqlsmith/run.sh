#!/usr/bin/env bash
# Random queries against gpuidx: for each seed, (re)creates a database with
# gpuidx indexes and postinglist values (setup.sql) on a running server, runs
# sqlsmith on it as a role that is no superuser and owns nothing, then checks
# the server: still up, no backend killed by a signal, no PANIC, no internal
# error (XX000) and no "index is corrupted" (XX002) in its log.  Prints how
# many queries reached gpuidx and the errors by SQLSTATE class; exits non-zero
# on any finding.  Needs sqlsmith (Debian package sqlsmith) and psql.
#
#   run.sh --log SERVER_LOG [--host H] [--port P] [--seeds "1 2"]
#          [--seconds N] [--queries N] [--db NAME] [--role NAME] [--out DIR]
#
# The superuser that sets the database up is libpq's default (PGUSER).
# --log: the server's log file, read from its size at the start (the role's
# errors are logged with their SQLSTATE and source location).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
host=${PGHOST:-/tmp}
port=${PGPORT:-5432}
seeds=1
seconds=60
queries=1000000
db=gpuidx_smith
role=gpuidx_smith
out=
log=
while [ $# -gt 0 ]; do
    case $1 in
        --host) host=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --seeds) seeds=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --queries) queries=$2; shift 2 ;;
        --db) db=$2; shift 2 ;;
        --role) role=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --log) log=$2; shift 2 ;;
        *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$log" ] && [ -r "$log" ] || { echo "run.sh: --log must name the server's readable log file" >&2; exit 2; }
command -v sqlsmith >/dev/null || { echo "run.sh: sqlsmith is not installed (Debian package sqlsmith)" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/gpuidx-sqlsmith.XXXXXX)
mkdir -p "$out"

psql_su() { psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" "$@"; }
status=0
log_start=$(stat -c %s "$log")
: > "$out/stats.txt"

# one seed on a new database; returns non-zero when the server stops answering
one_seed() {
    local seed=$1 rc=0 requests0
    psql_su -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" \
        -c "DROP ROLE IF EXISTS $role" -c "CREATE DATABASE $db" || return 1
    psql_su -d "$db" -v role="$role" -f "$here/setup.sql" > "$out/setup.$seed.out" || return 1
    # the worker when the server has one (nothing changes without it), every
    # list to it; call counts of gpuidx's functions
    psql_su -d "$db" -c "ALTER ROLE $role IN DATABASE $db SET gpuidx.device = worker" \
        -c "ALTER ROLE $role IN DATABASE $db SET gpuidx.gpu_min_postings = 0" \
        -c "ALTER ROLE $role IN DATABASE $db SET track_functions = 'all'" || return 1
    [ "$(psql_su -d "$db" -At -c "SELECT rolsuper OR rolcreaterole OR rolcreatedb OR EXISTS (SELECT FROM pg_class WHERE relowner = r.oid) FROM pg_roles r WHERE rolname = '$role'")" = f ] \
        || { echo "run.sh: role $role may do more than it should" >&2; exit 1; }
    requests0=$(psql_su -d "$db" -At -c "SELECT coalesce(requests, 0) FROM gpuidx_worker_stats") || return 1

    echo "run.sh: seed $seed: sqlsmith for at most $seconds s or $queries queries"
    timeout --signal=INT --kill-after=10 "$seconds" \
        sqlsmith --target="host=$host port=$port dbname=$db user=$role" --seed="$seed" \
        --exclude-catalog --max-queries="$queries" --verbose --dump-all-queries \
        > "$out/queries.$seed.sql" 2> "$out/sqlsmith.$seed.log" || rc=$?
    # 124: stopped at the time limit
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
        echo "run.sh: seed $seed: sqlsmith exited with $rc:" >&2
        tail -5 "$out/sqlsmith.$seed.log" >&2
        status=1
    fi

    # what reached gpuidx: by the queries' text, and by the server's counters
    awk -v seed="$seed" -f "$here/share.awk" "$out/queries.$seed.sql" | tee -a "$out/stats.txt"
    psql_su -d "$db" -At -F ' ' -c "
        SELECT 'seed $seed: index entries read from gpuidx indexes', coalesce(sum(s.idx_tup_read), 0)::text
        FROM pg_stat_user_indexes s JOIN pg_class c ON c.oid = s.indexrelid
        JOIN pg_am a ON a.oid = c.relam AND a.amname = 'gpuidx'
        UNION ALL
        SELECT 'seed $seed: calls of gpuidx functions', coalesce(sum(f.calls), 0) || ' (' || count(*) || ' functions)'
        FROM pg_stat_user_functions f JOIN pg_depend d ON d.classid = 'pg_proc'::regclass
            AND d.objid = f.funcid AND d.deptype = 'e'
        JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'gpuidx'
        UNION ALL
        SELECT 'seed $seed: worker requests', (coalesce(requests, 0) - $requests0)::text FROM gpuidx_worker_stats" \
        > "$out/counters.$seed.txt" || return 1
    tee -a "$out/stats.txt" < "$out/counters.$seed.txt"
}

for seed in $seeds; do
    one_seed "$seed" || { echo "run.sh: seed $seed: the server stopped answering" >&2; status=1; break; }
done

# the server: up, nothing killed, no internal error, no false corruption
if ! psql_su -d postgres -At -c 'SELECT 1' > /dev/null; then
    echo "run.sh: the server does not answer any more" >&2
    status=1
fi
tail -c +"$((log_start + 1))" "$log" > "$out/server.log"
if grep -A1 -E 'terminated by signal|server process .* was terminated|terminating any other active server processes|PANIC|TRAP:' \
    "$out/server.log" > "$out/crashes.txt"; then
    echo "run.sh: the server log shows a crash:" >&2
    head -20 "$out/crashes.txt" >&2
    status=1
fi
awk -v known_file="$here/known_xx000.txt" -f "$here/internal.awk" "$out/server.log" > "$out/internal.txt"
if [ -s "$out/internal.txt" ]; then
    echo "run.sh: internal errors (XX000) or corruption (XX002) reported:" >&2
    head -c 4000 "$out/internal.txt" >&2
    status=1
fi
echo "run.sh: errors by SQLSTATE class (server log):"
grep -oE ' ERROR:  [0-9A-Z]{5}: ' "$out/server.log" | cut -c10-11 | sort | uniq -c | sort -rn \
    | awk '{ printf "  %s %s\n", $2, $1 }' | tee "$out/classes.txt"
echo "run.sh: output in $out"
[ "$status" -eq 0 ] && echo "run.sh: no crash, no internal error"
exit "$status"
