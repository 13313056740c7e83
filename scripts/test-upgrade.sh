#!/usr/bin/env bash
# pg_upgrade and pg_dump across PostgreSQL versions keep gpuidx's indexes
# and posting lists: a cluster of PostgreSQL 15 with gpuidx preloaded holds
# Debian's package descriptions in tables with an index of every kind (text,
# tsvector with positions, tsvector without, an expression), rows added and
# deleted after the builds, and a table of posting lists in each codec
# (test/upgrade/load.sql).  Real queries are asked of it (test/upgrade/
# answers.sql: @@& on text, @@ with AND, OR, prefixes and phrases, ranked
# top 10 by <=>, posting list functions, operators and aggregates), then:
#   15 -> 17 by pg_upgrade in copy mode, 17 -> 18 by pg_upgrade --link,
#   and a pg_dump of the 15 cluster (by 18's pg_dump, over TCP) restored
#   into a fresh 18 cluster;
# after each, every answer must be the 15 cluster's, line by line; the
# posting lists' stored bytes and gpuidx_verify's report too after
# pg_upgrade (a restore encodes the lists anew and builds the indexes
# afresh: its answers are those of indexes rebuilt on 15); each index must
# be the one used (EXPLAIN), and gpuidx_verify must find every index sound
# with its rows.  PostgreSQL 18 stems some English words differently from
# 17 ('added': 'ad', then 'add'): after pg_upgrade to 18 the indexes that
# stem text as they are built (text, expression) must be reported out of
# date by gpuidx_verify, and after REINDEX answer as a sequential scan does;
# the answers that stem nothing (stored tsvectors asked stored tsqueries)
# must still be 15's.  Prints a summary line; exits non-zero on any
# failure.  Run as root on Debian 12; 5 to 7 minutes on 2 cores.
#   bash scripts/test-upgrade.sh
#   GPUIDX_UPGRADE_ROWS=N    documents loaded (default 4000)
#   GPUIDX_UPGRADE_QUERIES=N queries asked (default 300)
#   GPUIDX_DATA, GPUIDX_CHROOTS, GPUIDX_DEB_CHROOTS as for the scripts below
#
# Each version runs in the chroot of the Debian release that carries it
# (15: bookworm, scripts/test-deb.sh's; 17: trixie and 18: sid,
# scripts/test-pg.sh's; made by them when missing), with its own libraries,
# exactly as Debian ships it.  Those chroots stay untouched: each is the
# lower layer of an overlay whose writes (gpuidx built and installed for that
# version, a user) go to a throwaway folder.  pg_upgrade runs in the newer
# version's chroot; the older one is mounted inside it, and --old-bindir is a
# folder of scripts that run each old program in the older chroot (through a
# copy of chroot(1) given CAP_SYS_CHROOT, as pg_upgrade refuses to run as
# root).  The clusters, the sockets and the logs lie in one folder mounted at
# the same path in every chroot, and every server runs as one user of the
# same id in all of them.  Unpacking the old version's packages into the
# new release instead would mix two releases' libraries (ICU, LDAP, OpenSSL
# differ) behind LD_LIBRARY_PATH, which the programs pg_upgrade starts
# inherit.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/chroot.sh
[ "$(id -u)" -eq 0 ] || { echo "test-upgrade.sh: run as root (chroot, mount)" >&2; exit 1; }
own_mount_namespace scripts/test-upgrade.sh "$@"

start=$SECONDS
step() { printf '\n=== upgrade: %s (%d s) ===\n' "$*" $((SECONDS - start)); }
die() { echo "test-upgrade.sh: $*" >&2; exit 1; }
trap 'echo "test-upgrade.sh: failed at line $LINENO" >&2' ERR

rows=${GPUIDX_UPGRADE_ROWS:-4000}
nqueries=${GPUIDX_UPGRADE_QUERIES:-300}
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}
uid=4242                           # the servers' user in every chroot
shared=/var/tmp/gpxupg             # the clusters, sockets and answers, in every chroot
declare -A port=([15]=54915 [17]=54917 [18]=54918 [restored]=54919)
indexes="docs_body docs_expr docs_tsv nopos_tsv"

step "corpus and chroots"
GPUIDX_DATA=$data bash scripts/data/fetch debian-pkgs > /dev/null ||
    die "could not fetch the debian-pkgs corpus into $data"
bash scripts/test-deb.sh --chroot-only 15 | tail -n 1
bash scripts/test-pg.sh --chroot-only 17 | tail -n 1
bash scripts/test-pg.sh --chroot-only 18 | tail -n 1
declare -A lower=(
    [15]=${GPUIDX_DEB_CHROOTS:-$HOME/.cache/gpuidx-deb-chroots}/bookworm-pg15
    [17]=${GPUIDX_CHROOTS:-$HOME/.cache/gpuidx-chroots}/trixie-pg17
    [18]=${GPUIDX_CHROOTS:-$HOME/.cache/gpuidx-chroots}/sid-pg18)

tmp=$(mktemp -d /var/tmp/gpuidx-upgrade.XXXXXX)
cleanup() {
    local pidfile
    for pidfile in "$tmp"/shared/*/postmaster.pid; do	# servers left by a failure
        [ -f "$pidfile" ] && kill -INT "$(head -n 1 "$pidfile")" 2>/dev/null && sleep 3
    done
    for v in 18 17 15; do
        [ -d "$tmp/root$v" ] && umount -R "$tmp/root$v" 2>/dev/null
    done
    rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/shared/sock" "$tmp/shared/out"
head -n "$rows" "$data/debian-pkgs/docs.tsv" > "$tmp/shared/docs.tsv"
head -n "$nqueries" "$data/debian-pkgs/queries.tsv" > "$tmp/shared/queries.tsv"
cp test/upgrade/*.sql "$tmp/shared/"
chown -R $uid:$uid "$tmp/shared"

# root V: the cached chroot under an overlay, with /proc, /dev, the shared
# folder and the servers' user
declare -A root
for v in 15 17 18; do
    r=$tmp/root$v
    root[$v]=$r
    mkdir -p "$tmp/ov$v/upper" "$tmp/ov$v/work" "$r"
    mount -t overlay overlay -o "lowerdir=${lower[$v]},upperdir=$tmp/ov$v/upper,workdir=$tmp/ov$v/work" "$r"
    chroot_mount "$r"
    echo "gpxupg:x:$uid:$uid:gpuidx upgrade test:$shared:/bin/sh" >> "$r/etc/passwd"
    echo "gpxupg:x:$uid:" >> "$r/etc/group"
    mkdir -p "$r$shared"
    mount --bind "$tmp/shared" "$r$shared"
done

# as the servers' user in root V, with V's programs first in PATH
as_user() {	# VERSION COMMAND
    chroot --userspec=$uid:$uid "${root[$1]}" env -i PATH=/usr/lib/postgresql/$1/bin:/usr/bin:/bin \
        LANG=C.UTF-8 HOME=$shared PGHOST=$shared/sock PGDATABASE=postgres bash -c "cd $shared && $2"
}

step "gpuidx built and installed for each version, in its chroot"
for v in 15 17 18; do
    copy_tree "${root[$v]}/var/tmp/gpxupg-src"
    make_args="PG_CONFIG=/usr/lib/postgresql/$v/bin/pg_config with_llvm=no"
    chroot "${root[$v]}" env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME=/root \
        bash -c "cd /var/tmp/gpxupg-src && make -s -j1 $make_args && make -s $make_args install" > "$tmp/build$v.log" 2>&1 ||
        { tail -n 30 "$tmp/build$v.log"; die "could not build gpuidx for PostgreSQL $v"; }
    echo "PostgreSQL $v: $(chroot "${root[$v]}" /usr/lib/postgresql/$v/bin/postgres --version)"
done

# the older version's chroot inside the newer one's, and --old-bindir: a
# script for each old program, which runs it there (in the same folder)
old_bindir() {	# OLD NEW: prints the folder, in root NEW
    local old=$1 new=$2 r=${root[$2]} dir=/usr/local/lib/gpxupg-old-$1/bin p
    mkdir -p "$r/mnt/pg$old" "$r$dir"
    mount --rbind "${root[$old]}" "$r/mnt/pg$old"
    cp "$r/usr/sbin/chroot" "$r/usr/local/sbin/gpxupg-chroot"
    chmod 0755 "$r/usr/local/sbin/gpxupg-chroot"
    setcap cap_sys_chroot+ep "$r/usr/local/sbin/gpxupg-chroot"
    for p in "${root[$old]}/usr/lib/postgresql/$old/bin/"*; do
        p=$(basename "$p")
        printf '#!/bin/sh\nexec /usr/local/sbin/gpxupg-chroot /mnt/pg%s /bin/sh -c %s "$PWD" %s "$@"\n' \
            "$old" "'cd \"\$0\" 2>/dev/null || cd /; exec \"\$@\"'" "/usr/lib/postgresql/$old/bin/$p" > "$r$dir/$p"
        chmod 0755 "$r$dir/$p"
    done
    echo "$dir"
}

# a cluster of version V in folder NAME, gpuidx preloaded, on its port
new_cluster() {	# VERSION NAME [INITDB OPTION...]
    local v=$1 d=$2
    shift 2
    as_user "$v" "initdb -D $shared/$d -A trust -E UTF8 --locale=C --no-sync $* > /dev/null &&
        cat >> $shared/$d/postgresql.conf <<EOF
shared_preload_libraries = 'gpuidx'
autovacuum = off
port = ${port[$d]}
listen_addresses = '127.0.0.1'
unix_socket_directories = '$shared/sock'
EOF"
}
start_cluster() {
    as_user "$1" "pg_ctl -w -s -D $shared/$2 -l $shared/$2.log start" ||
        { tail -n 20 "$tmp/shared/$2.log"; die "PostgreSQL $1 did not start on $2"; }
}
stop_cluster() { as_user "$1" "pg_ctl -w -s -D $shared/$2 stop"; }

failed=
fail() { echo "FAILED: $*" >&2; failed="$failed
  $*"; }

# the answers of the cluster on PORT, in root V, into out/NAME.answers (and
# .bytes); each kind must have answers, and the indexes must be what answers
ask() {	# VERSION PORT NAME
    local v=$1 p=$2 n=$3 kind
    as_user "$v" "PGOPTIONS='-c enable_seqscan=off' psql -XAtq -p $p -f answers.sql > out/$n.answers &&
        psql -XAtq -p $p -f bytes.sql > out/$n.bytes" || { fail "$n: the queries failed"; return 0; }
    for kind in text tsv_and tsv_or tsv_prefix tsv_phrase expr_and expr_phrase nopos_and nopos_phrase \
                rank_text rank_tsv pl_query; do
        grep -q "^$kind|[0-9]*|[^-]" "$tmp/shared/out/$n.answers" || fail "$n: no query of kind $kind has an answer"
    done
    [ "$(grep -c '^pl|' "$tmp/shared/out/$n.answers")" -gt 1000 ] || fail "$n: too few posting lists"
    # each kind of query is answered by its index
    local i q plan
    while IFS='|' read -r i q; do
        plan=$(as_user "$v" "psql -XAtq -p $p -c 'SET enable_seqscan = off' -c \"EXPLAIN (COSTS OFF) $q\"" < /dev/null) ||
            { fail "$n: EXPLAIN $q failed"; continue; }
        grep -qw "$i" <<< "$plan" || fail "$n: $q: not by $i: $(echo $plan)"
    done <<'EOF'
docs_body|SELECT id FROM docs WHERE body @@& 'audio player'
docs_body|SELECT id FROM docs ORDER BY body <=> 'audio player' LIMIT 10
docs_tsv|SELECT id FROM docs WHERE tsv @@ 'audio <-> player'::tsquery
docs_tsv|SELECT id FROM docs ORDER BY tsv <=> 'audio & player'::tsquery LIMIT 10
docs_expr|SELECT id FROM docs WHERE to_tsvector('english', body) @@ 'audio & player'::tsquery
nopos_tsv|SELECT id FROM nopos WHERE tsv @@ 'audio <-> player'::tsquery
EOF
}

# gpuidx_verify finds each index sound, with as many rows as its table;
# those named after NAME are expected out of date instead (an index whose
# lexemes came from an older stemmer), reported with REINDEX as the hint
verify() {	# VERSION PORT NAME [OUT-OF-DATE INDEX...]
    local v=$1 p=$2 n=$3 i out rows table
    shift 3
    local stale=" $* "
    : > "$tmp/shared/out/$n.verify"
    for i in $indexes; do
        table=docs
        [ "$i" = nopos_tsv ] && table=nopos
        if out=$(as_user "$v" "psql -XAtq -p $p -c \"SELECT gpuidx_verify('$i')\"" 2>&1 < /dev/null); then
            [[ "$stale" != *" $i "* ]] || { fail "$n: $i was to be out of date, but: $out"; continue; }
        else
            if [[ "$stale" == *" $i "* && "$out" == *"does not match table"*"REINDEX"* ]]; then
                echo "  $n: $i out of date, as expected: $(echo $out | cut -c1-160)"
            else
                fail "$n: gpuidx_verify('$i'): $out"
            fi
            continue
        fi
        rows=$(as_user "$v" "psql -XAtq -p $p -c 'SELECT count(*) FROM $table'" < /dev/null)
        echo "  $n: $out"
        echo "$i|$out" >> "$tmp/shared/out/$n.verify"
        [[ "$out" == *"is sound"* ]] || fail "$n: $i: $out"
        [[ "$out" =~ (^|[^0-9])$rows\ rows\ of ]] || fail "$n: $i does not count the $rows rows of $table: $out"
    done
}

# kinds of answers that tokenize rows or the query with the server's stemmer
stemmed='^(text|expr_and|expr_phrase|rank_text)\|'

# NAME's answers are those of REFERENCE (15: the 15 cluster's): every kind
# (all), or those that use no stemmer (unstemmed); with WITH_BYTES=1
# (pg_upgrade) the posting lists' bytes too, and gpuidx_verify's report of
# the indexes matching REPORTED
compare() {	# NAME all|unstemmed WITH_BYTES [REPORTED [REFERENCE]]
    local o=$tmp/shared/out n=$1 filter=cat ref=${5:-15}
    [ "$2" = all ] || filter="grep -Ev $stemmed"
    if ! diff -q <($filter "$o/$ref.answers") <($filter "$o/$n.answers") > /dev/null; then
        fail "$n: $(diff <($filter "$o/$ref.answers") <($filter "$o/$n.answers") | grep -c '^[<>]') answer lines ($2) differ from $ref's"
        diff <($filter "$o/$ref.answers") <($filter "$o/$n.answers") | head -n 20 | cut -c1-300 || true
    fi
    if [ "$3" = 1 ] && ! diff -q "$o/15.bytes" "$o/$n.bytes" > /dev/null; then
        fail "$n: posting lists' bytes differ from 15's"
        diff "$o/15.bytes" "$o/$n.bytes" | head -n 10 || true
    fi
    if [ -n "${4:-}" ] && ! diff -q <(grep -E "^($4)\|" "$o/15.verify") <(grep -E "^($4)\|" "$o/$n.verify") > /dev/null; then
        fail "$n: gpuidx_verify's report of $4 is not 15's"
        diff <(grep -E "^($4)\|" "$o/15.verify") <(grep -E "^($4)\|" "$o/$n.verify") || true
    fi
    echo "  $n: $($filter "$o/$n.answers" | wc -l) answer lines ($2) are $ref's"
}

# the indexes' answers are a sequential scan's, on the first 40 queries and
# phrases (a scan tokenizes every row for each); ranked lists aside
seq_check() {	# VERSION PORT NAME
    local v=$1 p=$2 n=$3 o=$tmp/shared/out
    local subset="CREATE TEMP TABLE queries AS SELECT * FROM public.queries WHERE qid <= 40;
        CREATE TEMP TABLE phrases AS SELECT * FROM public.phrases WHERE qid <= 1000"
    as_user "$v" "set -o pipefail; PGOPTIONS='-c enable_seqscan=off' psql -XAtq -p $p -c \"$subset\" -f answers.sql |
            grep -v '^rank_' > out/$n-index.answers &&
        PGOPTIONS='-c enable_indexscan=off -c enable_bitmapscan=off -c gpuidx.enable_customscan=off' \
        psql -XAtq -p $p -c \"$subset\" -f answers.sql | grep -v '^rank_' > out/$n-seqscan.answers" ||
        { fail "$n: the queries failed"; return 0; }
    grep -q '^text|' "$o/$n-seqscan.answers" || fail "$n: no answers of a sequential scan"
    if cmp -s "$o/$n-index.answers" "$o/$n-seqscan.answers"; then
        echo "  $n: $(wc -l < "$o/$n-index.answers") answer lines are a sequential scan's"
    else
        fail "$n: the indexes' answers are not a sequential scan's"
        diff "$o/$n-seqscan.answers" "$o/$n-index.answers" | head -n 10 | cut -c1-300 || true
    fi
}

step "PostgreSQL 15: the corpus loaded, indexed, asked"
new_cluster 15 15
start_cluster 15 15
as_user 15 "psql -XAtq -p ${port[15]} -f load.sql"
ask 15 "${port[15]}" 15
verify 15 "${port[15]}" 15
seq_check 15 "${port[15]}" 15
# what indexes built afresh from the same rows answer (a restore's): ranked
# lists differ, as deleted rows count in a segment's statistics until a merge
as_user 15 "PGOPTIONS='-c enable_seqscan=off' psql -XAtq -p ${port[15]} -c BEGIN -c 'REINDEX TABLE docs' \
    -c 'REINDEX TABLE nopos' -f answers.sql -c ROLLBACK > out/15-rebuilt.answers"
echo "  15: $(wc -l < "$tmp/shared/out/15.answers") answer lines, $(cut -d'|' -f1 "$tmp/shared/out/15.answers" | sort -u | wc -l) kinds"

step "pg_dump of the 15 cluster by PostgreSQL 18's pg_dump, over TCP"
as_user 18 "pg_dump -h 127.0.0.1 -p ${port[15]} -Fc -f $shared/15.dump postgres"
stop_cluster 15 15

upgrade() {	# OLD NEW [OPTION...]
    local old=$1 new=$2 bindir
    shift 2
    bindir=$(old_bindir "$old" "$new")
    as_user "$new" "pg_upgrade --no-sync $* -b $bindir -B /usr/lib/postgresql/$new/bin -d $shared/$old -D $shared/$new \
        -s $shared/sock -p $((port[$old] + 10)) -P $((port[$new] + 10)) > out/upgrade-$new.log" || {
        tail -n 30 "$tmp/shared/out/upgrade-$new.log"
        cat "$tmp/shared/$new/pg_upgrade_output.d"/*/log/* 2>/dev/null | tail -n 40
        die "pg_upgrade $old -> $new failed"
    }
}

step "pg_upgrade 15 -> 17 (copy)"
new_cluster 17 17
upgrade 15 17
start_cluster 17 17
verify 17 "${port[17]}" 17
ask 17 "${port[17]}" 17
compare 17 all 1 "${indexes// /|}"
stop_cluster 17 17

# PostgreSQL 18's English stemmer is not 17's ('added' is 'ad' in 17, 'add'
# in 18): the indexes that stem the rows' text (docs_body, docs_expr) hold
# 17's lexemes until REINDEX, as GIN indexes on to_tsvector do; gpuidx_verify
# must say so.  Those on stored tsvectors stay sound and answer as before.
step "pg_upgrade 17 -> 18 (--link)"
new_cluster 18 18 --no-data-checksums
upgrade 17 18 --link
start_cluster 18 18
verify 18 "${port[18]}" 18 docs_body docs_expr
ask 18 "${port[18]}" 18
compare 18 unstemmed 1 "docs_tsv|nopos_tsv"
as_user 18 "psql -XAtq -p ${port[18]} -c 'REINDEX INDEX docs_body' -c 'REINDEX INDEX docs_expr'"
verify 18 "${port[18]}" 18-reindexed
ask 18 "${port[18]}" 18-reindexed
compare 18-reindexed unstemmed 1 "docs_tsv|nopos_tsv"
seq_check 18 "${port[18]}" 18-reindexed
# the upgraded indexes take new rows (last: the aborted row stays in the
# index, counted in its ranking statistics until a vacuum)
got=$(as_user 18 "psql -XAtq -p ${port[18]}" <<'EOF'
BEGIN;
INSERT INTO docs VALUES (900001, 'zzupgraded package', to_tsvector('english', 'zzupgraded package'));
SET LOCAL enable_seqscan = off;
SELECT string_agg(id::text, ',') FROM docs WHERE body @@& 'zzupgraded';
SELECT string_agg(id::text, ',') FROM docs WHERE tsv @@ 'zzupgrad'::tsquery;
ROLLBACK;
EOF
)
[ "$got" = $'900001\n900001' ] || fail "18: a row inserted after the upgrade is not found through the indexes: $got"
stop_cluster 18 18

step "the 15 cluster's dump restored into PostgreSQL 18"
new_cluster 18 restored
start_cluster 18 restored
as_user 18 "pg_restore --exit-on-error -p ${port[restored]} -d postgres $shared/15.dump"
verify 18 "${port[restored]}" restored
ask 18 "${port[restored]}" restored
compare restored unstemmed 0 "" 15-rebuilt
seq_check 18 "${port[restored]}" restored
stop_cluster 18 restored

if [ -n "$failed" ]; then
    step "FAILED:$failed"
    exit 1
fi
step "all passed: 15 -> 17 (pg_upgrade), 17 -> 18 (pg_upgrade --link), 15 -> 18 (pg_dump); $(wc -l < "$tmp/shared/out/15.answers") answers each, the indexes sound"
