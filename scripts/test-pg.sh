#!/usr/bin/env bash
# Runs gpuidx's server tests against another PostgreSQL major version, in a
# chroot of the Debian release that carries it (17: trixie, 18: sid), made
# with mmdebstrap from the archive this machine's apt uses and kept for the
# next run.  In the chroot it builds gpuidx (WERROR=1) and installs it, then,
# on throwaway clusters of that version: pg_regress, the isolation specs and
# pgTAP; pg_regress again with gpuidx preloaded; the TAP tests.  Prints the
# server's version() and a summary line; exits non-zero on any failure.
# The host's own PostgreSQL 15 is scripts/test.sh's; that script runs this
# one for 17 and 18 after its own tests.  Run as root on Debian 12.
#   bash scripts/test-pg.sh 17|18
#   bash scripts/test-pg.sh --chroot-only 17|18   only make (or check) the chroot
#
# The TAP tests run but for the long ones, which CI's time (45 minutes for
# 15, 17 and 18 on 2 cores) cannot hold three times; each is a proof at length
# over code that is the same on every version, and runs on 15:
#   t/005, t/012, t/020, t/021 (3-10 min each): answers, rankings and tsqueries
#     of real and generated queries against references (the short proofs of
#     the same are pg_regress's);
#   t/010 (2.5 min), t/015 (2 min): the worker under load, vacuum beside
#     scans and a standby (the worker's start, shared memory and processes are
#     t/017, t/019 and the preloaded pg_regress here; WAL replay t/003, t/004);
#   t/008 (2 min): cancels timed against the machine's speed;
#   t/018: sqlsmith, not installed in the chroot.
# What runs here is about 3 minutes: corruption found (t/001, t/002, t/016:
# without the server's page checksums, initdb's default from 18), crash
# recovery and a standby, build progress, merges, pg_dump and pg_upgrade,
# the custom scans, the worker's DDL and processes, parallel builds.
#   GPUIDX_TAP_TESTS="t/005_... ..."  TAP tests to run ("all": every t/*.pl; "none")
#   GPUIDX_CHROOTS=DIR       where the chroots are kept (default ~/.cache/gpuidx-chroots);
#                            delete one to make it again
#   GPUIDX_DEBIAN_MIRROR=URL the Debian archive (default: the one apt's sources name)
#   GPUIDX_DATA, GPUIDX_SKIP_CORPUS=1   as for scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/chroot.sh
args=("$@")
chroot_only=0
if [ "${1:-}" = --chroot-only ]; then chroot_only=1; shift; fi
version=${1:-}
case "$version" in
    17|18) release=$(debian_release_of "$version") ;;
    *) echo "usage: $0 [--chroot-only] 17|18   (15 is the host's: scripts/test.sh)" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "test-pg.sh: run as root (mmdebstrap, chroot)" >&2; exit 1; }
own_mount_namespace scripts/test-pg.sh "${args[@]}"

start=$SECONDS
step() { printf '\n=== PostgreSQL %s: %s (%d s) ===\n' "$version" "$*" $((SECONDS - start)); }
die() { echo "test-pg.sh: $*" >&2; exit 1; }
trap 'echo "test-pg.sh: failed at line $LINENO" >&2' ERR

bin=/usr/lib/postgresql/$version/bin
packages=(postgresql-$version postgresql-server-dev-$version postgresql-$version-pgtap
          libtap-parser-sourcehandler-pgtap-perl libipc-run-perl make gcc libc6-dev)
default_tap=$(ls t/*.pl | grep -v -e '^t/00[58]_' -e '^t/01[0258]_' -e '^t/02[01]_' | tr '\n' ' ')
tap=${GPUIDX_TAP_TESTS:-$default_tap}
[ "$tap" = all ] && tap=$(ls t/*.pl | tr '\n' ' ')
[ "$tap" = none ] && tap=

step "chroot of Debian $release"
cache=${GPUIDX_CHROOTS:-$HOME/.cache/gpuidx-chroots}
root=$cache/$release-pg$version
chroot_make "$root" "$release" "${packages[@]}"
[ "$chroot_only" = 0 ] || { step "chroot ready: $root"; exit 0; }
chroot_mount "$root"

# commands in the chroot: as root, or as the postgres user (PostgreSQL
# refuses root) in the copy of the tree it owns
in_root() {
    chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 HOME=/root \
        bash -c "cd /var/tmp/gpuidx && $*"
}
as_pg() {
    chroot --userspec=postgres:postgres "$root" env -i PATH=$bin:/usr/local/bin:/usr/bin:/bin \
        LANG=C.UTF-8 HOME=/var/lib/postgresql GPUIDX_DATA=/var/tmp/gpuidx/data \
        GPUIDX_REQUIRE_CORPUS="$require" bash -c "cd /var/tmp/gpuidx && $*"
}

# the GCIDE corpus, for the TAP tests that read it
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}
require=0
if [ -n "$tap" ] && grep -q -e GPUIDX_DATA -e corpus_files $tap; then
    step "test corpus"
    if [ "${GPUIDX_SKIP_CORPUS:-0}" = 1 ]; then
        echo "NOTICE: GPUIDX_SKIP_CORPUS=1: the tests on the corpus are skipped" >&2
    else
        require=1
        GPUIDX_DATA=$data bash scripts/data/fetch gcide ||
            die "could not fetch the gcide corpus into $data (GPUIDX_SKIP_CORPUS=1 runs the rest)"
    fi
fi

step "build and install"
copy_tree "$root/var/tmp/gpuidx"
if [ "$require" = 1 ]; then
    mkdir -p "$root/var/tmp/gpuidx/data/gcide"
    cp "$data/gcide/docs.tsv" "$data/gcide/queries.tsv" "$root/var/tmp/gpuidx/data/gcide/"
fi
make_args="PG_CONFIG=$bin/pg_config with_llvm=no"
in_root "make -s -j$(nproc) $make_args WERROR=1 && make -s $make_args install &&
    make -s $make_args install-test-engine WERROR=1"
chroot "$root" chown -R postgres:postgres /var/tmp/gpuidx
# the servers' socket directory (/run is empty in the chroot)
chroot "$root" install -d -o postgres -g postgres /run/postgresql

failed=
step "pg_regress, isolation specs and pgTAP"
as_pg "pg_virtualenv -v $version sh -c 'psql -XAtc \"SELECT version()\" &&
    { make -s $make_args installcheck || { cat regression.diffs output_iso/regression.diffs 2>/dev/null; exit 1; }; } &&
    make -s $make_args prove'" || failed="$failed pg_regress/isolation/pgTAP"

step "pg_regress again, with gpuidx preloaded"
as_pg "pg_virtualenv -v $version -o shared_preload_libraries=gpuidx sh -c '
    make -s $make_args installcheck ISOLATION= || { cat regression.diffs 2>/dev/null; exit 1; }'" ||
    failed="$failed preloaded"

# two at a time, then alone those that time the server against the clock
timed=" t/008_cancel.pl t/019_worker_processes.pl "
tap_together= tap_alone=
for f in $tap; do
    if [[ "$timed" == *" $f "* ]]; then tap_alone="$tap_alone $f"; else tap_together="$tap_together $f"; fi
done
tap_run() {	# prove's flags, the files
    [ -n "$2" ] || return 0
    as_pg "make -s $make_args prove-tap PROVE_FLAGS='$1' PROVE_TESTS='$2'" || {
        failed="$failed TAP"
        for log in $(grep -l '^not ok' "$root"/var/tmp/gpuidx/tmp_check/log/regress_log_* 2>/dev/null); do
            echo "--- the end of $log:"; tail -n 40 "$log"
        done
    }
}
if [ -n "$tap" ]; then
    step "TAP tests: $tap"
    tap_run "-j2 --timer" "$tap_together"
    tap_run "--timer" "$tap_alone"
fi

server=$(chroot "$root" "$bin/postgres" --version)
if [ -n "$failed" ]; then
    step "FAILED on $server:$failed"
    exit 1
fi
step "all passed on $server: build, pg_regress, isolation, pgTAP, preloaded pg_regress, TAP ($(echo $tap | wc -w) files)"
