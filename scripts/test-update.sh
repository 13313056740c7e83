#!/usr/bin/env bash
# Indexes built by a released gpuidx keep answering under this tree's build,
# before and after ALTER EXTENSION gpuidx UPDATE: the pages the release wrote
# are read by this build (t/023_extension_update.pl checks the SQL objects,
# with indexes this build wrote; this checks the bytes an old build wrote).
#
# For each released version, its source is taken from git (the commit listed
# below, whose install script the version's is), built (once: the build is
# kept) and installed into a copy of this PostgreSQL's installation in a
# temporary directory; nothing else changes.  A cluster made there gets indexes of the kinds that version
# made: text with a configuration, tsvector, an expression without freqs,
# several segments, rows in the pending area, deleted rows; and their
# answers, through each index and through a sequential scan.  The same data
# directory is then started by this PostgreSQL, where this tree's build is
# installed (make install first), and every query must answer as before and
# as a sequential scan does; an index this build cannot read must refuse
# with an error whose hint is REINDEX (never a wrong answer), and answer
# after REINDEX.  Then ALTER EXTENSION gpuidx UPDATE, the queries again, the
# new version's operators on the old indexes, writes, a merge and
# gpuidx_verify of each index.
#
#   bash scripts/test-update.sh [VERSION...]    (default: every released version)
#   PG_CONFIG=...   the PostgreSQL whose installation holds this tree's build
#                   (default: pg_config on PATH)
#   GPUIDX_RELEASES=DIR   where the releases' builds are kept for the next run
#                   (default ~/.cache/gpuidx-releases; delete one to build it again)
# Run as root (the server runs as the postgres user) or as a user that can
# run PostgreSQL.  Half a minute, and the first time about four minutes more
# on 2 cores to build each release.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

# version, the commit its install script is taken from (NEWS.md), the
# PostgreSQL majors it built for
releases=(
    "0.1 76c4481df0b016722c2fec50c3968d36f599e12c 15"
)

pg_config=${PG_CONFIG:-pg_config}
bindir=$($pg_config --bindir)
pkglibdir=$($pg_config --pkglibdir)
sharedir=$($pg_config --sharedir)
major=$($pg_config --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
jobs=$(nproc 2>/dev/null || echo 2)
cache=${GPUIDX_RELEASES:-$HOME/.cache/gpuidx-releases}
die() { echo "test-update.sh: $*" >&2; exit 1; }
[ -f "$sharedir/extension/gpuidx.control" ] || die "gpuidx is not installed in $sharedir (make install first)"
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 || die "needs the git history (the releases' sources)"

wanted=("$@")
tmp=$(mktemp -d /tmp/gpuidx-update.XXXXXX)
server_pid_file=
cleanup() {
    if [ -n "$server_pid_file" ] && [ -f "$server_pid_file" ]; then
        as_pg "'$bindir/pg_ctl' -D '$tmp/data' -m immediate stop" >/dev/null 2>&1 || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi
}

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

port=$((20000 + RANDOM % 20000))
psql_cmd() { echo "'$1/psql' -X -q -v ON_ERROR_STOP=1 -At -h '$tmp/sock' -p $port -d gpuidx_update"; }
# runs SQL from stdin with the given psql; stdout, and stderr to $tmp/err
sql() {
    local bin=$1
    cat > "$tmp/q.sql"
    chmod a+r "$tmp/q.sql"
    as_pg "$(psql_cmd "$bin") -f '$tmp/q.sql'" 2> "$tmp/err"
}

seqscan="SET enable_indexscan = off; SET enable_bitmapscan = off; SET gpuidx.enable_customscan = off;"
# the queries every version answers: index, then the WHERE clause (or, for
# ranked ones, ORDER BY with the column and the query)
queries=(
    "docs_body|body @@& 'house cat'"
    "docs_body|body @@& 'pending'"
    "docs_body|body @@& 'river stone window'"
    "docs_tsv|tsv @@& 'lake river'"
    "docs_tsv|tsv @@& 'garden'"
    "docs_tsv|tsv @@& 'winter summer morning'"
    "docs_lower|lower(body) @@& 'stone window'"
    "docs_lower|lower(body) @@& 'engine'"
    "docs_tsv|rank:tsv <=> 'horse summer'::text"
    "docs_body|rank:body <=> 'music paper'::text"
)
# what 0.2 added, on the same indexes after the update
new_queries=(
    "docs_tsv|tsv @@ to_tsquery('english', 'lake & !river')"
    "docs_tsv|tsv @@ to_tsquery('english', '(horse | cat) & summer')"
    "docs_tsv|tsv @@ to_tsquery('english', 'mountain <-> letter')"
    "docs_tsv|rank:tsv <=> to_tsquery('english', 'horse & summer')"
)

# one query through its index (the plan must use it) and through a sequential
# scan: "index-answer|seqscan-answer", or "REINDEX" when the index refuses
# with an error whose hint is REINDEX; anything else fails the script
answer() {
    local bin=$1 spec=$2 index=${2%%|*} clause=${2#*|} q
    if [[ $clause == rank:* ]]; then
        clause=${clause#rank:}
        q="SELECT string_agg(s::text, ',' ORDER BY s) FROM (SELECT round(($clause)::numeric, 9) AS s FROM docs ORDER BY $clause LIMIT 20) t"
    else
        q="SELECT count(*) || ':' || coalesce(md5(string_agg(id::text, ',' ORDER BY id)), '') FROM docs WHERE $clause"
    fi
    local plan got want
    plan=$(echo "SET enable_seqscan = off; EXPLAIN (COSTS OFF) $q" | sql "$bin") || { cat "$tmp/err"; die "EXPLAIN failed: $q"; }
    if ! grep -Eq "(Bitmap Index Scan on|Index:|Index Scan using) $index\b" <<< "$plan"; then
        echo "$plan"
        die "the plan does not use $index: $q"
    fi
    if ! got=$(echo "SET enable_seqscan = off; $q" | sql "$bin"); then
        if grep -q 'HINT:.*REINDEX' "$tmp/err"; then
            sed 's/^/    /' "$tmp/err" >&2
            echo REINDEX
            return
        fi
        cat "$tmp/err" >&2
        die "$spec failed through $index without a REINDEX hint"
    fi
    want=$(echo "$seqscan $q" | sql "$bin") || { cat "$tmp/err"; die "sequential scan failed: $q"; }
    echo "$got|$want"
}

# every query's answers under a build; index answers that differ from the
# sequential scan's fail; indexes that ask for REINDEX are rebuilt and asked again
check_all() {
    local bin=$1 label=$2 out=$3 spec a shown
    shift 3
    : > "$out"
    for spec in "$@"; do
        a=$(answer "$bin" "$spec")
        if [ "$a" = REINDEX ]; then
            echo "note: $label: ${spec%%|*} refuses with a REINDEX hint: rebuilt"
            echo "REINDEX INDEX ${spec%%|*}" | sql "$bin" > /dev/null || { cat "$tmp/err"; die "REINDEX failed"; }
            a=$(answer "$bin" "$spec")
            [ "$a" != REINDEX ] || die "${spec%%|*} asks for REINDEX after REINDEX"
        fi
        if [ "${a%%|*}" = "${a#*|}" ]; then
            if [[ ${spec#*|} == rank:* ]]; then shown="best ${a%%,*}"; else shown="${a%%:*} rows"; fi
            pass "$label: ${spec#*|} (${spec%%|*}) answers as a sequential scan: $shown"
        else
            fail "$label: ${spec#*|} (${spec%%|*}): index ${a%%|*}, sequential scan ${a#*|}"
        fi
        echo "$spec => ${a#*|}" >> "$out"
    done
}

setup_sql="
CREATE EXTENSION gpuidx;
CREATE TABLE docs (id int PRIMARY KEY, body text, tsv tsvector, pl postinglist) WITH (autovacuum_enabled = off);
INSERT INTO docs (id, body)
SELECT g, (SELECT string_agg((ARRAY['house', 'cat', 'lake', 'river', 'stone', 'bread', 'garden',
        'window', 'music', 'paper', 'winter', 'summer', 'horse', 'mountain', 'letter',
        'silver', 'morning', 'island', 'forest', 'engine'])[1 + abs(hashint8(g::bigint * 100 + k) % 20)], ' ')
    FROM generate_series(1, 4 + g % 9) k)
FROM generate_series(1, 30000) g;
UPDATE docs SET tsv = to_tsvector('english', body), pl = ARRAY[id, id + 10, id * 3]::postinglist;
CREATE INDEX docs_body ON docs USING gpuidx (body) WITH (text_config = english);
CREATE INDEX docs_tsv ON docs USING gpuidx (tsv);
CREATE INDEX docs_lower ON docs USING gpuidx (lower(body)) WITH (freqs = off);
-- a second segment, deleted rows, then rows left in the pending area
INSERT INTO docs (id, body, tsv)
SELECT 30000 + g, 'pending house number ' || g || ' by the lake', to_tsvector('english', 'pending house number ' || g || ' by the lake')
FROM generate_series(1, 3000) g;
SELECT gpuidx_merge_pending(i) FROM unnest(ARRAY['docs_body', 'docs_tsv', 'docs_lower']::regclass[]) i;
DELETE FROM docs WHERE id % 97 = 0;
VACUUM docs;
INSERT INTO docs (id, body, tsv)
SELECT 40000 + g, 'pending river stone window ' || g, to_tsvector('english', 'pending river stone window ' || g)
FROM generate_series(1, 500) g;
ANALYZE docs;
"

for rel in "${releases[@]}"; do
    read -r version commit majors <<< "$rel"
    if [ ${#wanted[@]} -gt 0 ] && [[ " ${wanted[*]} " != *" $version "* ]]; then continue; fi
    if [[ " $majors " != *" $major "* ]]; then
        echo "=== $version: built for PostgreSQL $majors, not $major: skipped ==="
        continue
    fi
    echo "=== gpuidx $version (commit ${commit:0:12}) against this build, PostgreSQL $major ==="
    rm -rf "$tmp"/{stage,data,sock}
    mkdir -p "$tmp/sock"

    # the release, built (or taken from the cache) and installed into a copy
    # of this PostgreSQL
    for d in "$bindir" "$pkglibdir" "$sharedir"; do
        mkdir -p "$tmp/stage$(dirname "$d")"
        cp -a "$d" "$tmp/stage$d"
    done
    rm -f "$tmp/stage$pkglibdir"/gpuidx* "$tmp/stage$sharedir"/extension/gpuidx*
    old_bin=$tmp/stage$bindir
    [ "$("$old_bin/pg_config" --sharedir)" = "$tmp/stage$sharedir" ] ||
        die "this PostgreSQL's installation cannot be copied elsewhere (not relocatable)"
    src=$cache/$version-${commit:0:12}-pg$major
    if [ ! -f "$src/.built" ]; then
        echo "building $version into $src ..."
        rm -rf "$src"
        mkdir -p "$src"
        git -C "$top" archive "$commit" | tar -x -C "$src"
        # against this PostgreSQL's headers; no CUDA engine (the index's
        # pages are the question)
        make -s -C "$src" -j"$jobs" PG_CONFIG="$pg_config" NVCC= > "$tmp/build.log" 2>&1 ||
            { tail -n 30 "$tmp/build.log"; die "could not build $version"; }
        touch "$src/.built"
    fi
    make -s -C "$src" install PG_CONFIG="$pg_config" NVCC= DESTDIR="$tmp/stage" > "$tmp/build.log" 2>&1 ||
        { tail -n 30 "$tmp/build.log"; die "could not install $version"; }
    [ -f "$tmp/stage$sharedir/extension/gpuidx--$version.sql" ] || die "$version's install script was not installed"
    [ "$(id -u)" -eq 0 ] && chown -R postgres "$tmp"

    # a cluster of the release's build, its indexes and answers
    as_pg "'$old_bin/initdb' -D '$tmp/data' -A trust -U postgres --no-sync" > "$tmp/initdb.log" 2>&1 ||
        { cat "$tmp/initdb.log"; die "initdb failed"; }
    cat >> "$tmp/data/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$tmp/sock'
fsync = off
EOF
    server_pid_file=$tmp/data/postmaster.pid
    as_pg "'$old_bin/pg_ctl' -D '$tmp/data' -l '$tmp/server-old.log' -w start" > /dev/null
    as_pg "'$old_bin/createdb' -h '$tmp/sock' -p $port gpuidx_update"
    echo "$setup_sql" | sql "$old_bin" > /dev/null || { cat "$tmp/err"; die "setup under $version failed"; }
    [ "$(echo "SELECT extversion FROM pg_extension WHERE extname = 'gpuidx'" | sql "$old_bin")" = "$version" ] ||
        die "the release's build did not make version $version"
    echo "SELECT i, segments, docs, dead_docs, pending_entries FROM unnest(ARRAY['docs_body', 'docs_tsv', 'docs_lower']::regclass[]) i,
            gpuidx_index_stats(i)" | sql "$old_bin" | sed 's/^/  index, segments, docs, dead, pending: /'
    check_all "$old_bin" "$version's build" "$tmp/old.txt" "${queries[@]}"
    as_pg "'$old_bin/pg_ctl' -D '$tmp/data' -w stop" > /dev/null

    # the same data directory, this build
    as_pg "'$bindir/pg_ctl' -D '$tmp/data' -l '$tmp/server-new.log' -w start" > /dev/null
    check_all "$bindir" "this build, $version's objects" "$tmp/new.txt" "${queries[@]}"
    if cmp -s "$tmp/old.txt" "$tmp/new.txt"; then
        pass "this build answers every query as $version's build did"
    else
        fail "this build's answers differ from $version's build's:"
        diff "$tmp/old.txt" "$tmp/new.txt" || true
    fi

    echo "ALTER EXTENSION gpuidx UPDATE" | sql "$bindir" > /dev/null || { cat "$tmp/err"; die "ALTER EXTENSION gpuidx UPDATE failed"; }
    echo "updated to $(echo "SELECT extversion FROM pg_extension WHERE extname = 'gpuidx'" | sql "$bindir")"
    check_all "$bindir" "updated" "$tmp/updated.txt" "${queries[@]}"
    if cmp -s "$tmp/old.txt" "$tmp/updated.txt"; then
        pass "after the update every query answers as $version's build did"
    else
        fail "after the update the answers differ from $version's build's:"
        diff "$tmp/old.txt" "$tmp/updated.txt" || true
    fi
    check_all "$bindir" "updated, new operators" "$tmp/added.txt" "${new_queries[@]}"

    # writes into the old indexes, a merge, and each index sound
    cat <<'EOF' | sql "$bindir" > /dev/null || { cat "$tmp/err"; die "writes after the update failed"; }
INSERT INTO docs (id, body, tsv)
SELECT 50000 + g, 'updated house by the river ' || g, to_tsvector('english', 'updated house by the river ' || g)
FROM generate_series(1, 300) g;
DELETE FROM docs WHERE id % 89 = 0;
VACUUM docs;
EOF
    written=("docs_body|body @@& 'updated house'" "docs_tsv|tsv @@& 'updated river'"
             "docs_lower|lower(body) @@& 'updated river'" "docs_tsv|tsv @@ to_tsquery('english', 'updat:* & !lake')")
    check_all "$bindir" "written" "$tmp/written.txt" "${written[@]}"
    echo "SELECT gpuidx_merge_pending(i) FROM unnest(ARRAY['docs_body', 'docs_tsv', 'docs_lower']::regclass[]) i" |
        sql "$bindir" > /dev/null || { cat "$tmp/err"; die "gpuidx_merge_pending failed"; }
    check_all "$bindir" "merged" "$tmp/merged.txt" "${written[@]}" "${queries[@]}"
    for index in docs_body docs_tsv docs_lower; do
        v=$(echo "SELECT gpuidx_verify('$index')" | sql "$bindir") || { cat "$tmp/err"; v=; }
        if grep -q 'is sound' <<< "$v"; then pass "$index is sound"; else fail "$index: $v"; fi
    done
    as_pg "'$bindir/pg_ctl' -D '$tmp/data' -w stop" > /dev/null
    server_pid_file=
done

if [ "$failures" -gt 0 ]; then
    echo "test-update.sh: $failures failures"
    exit 1
fi
echo "test-update.sh: all passed"
