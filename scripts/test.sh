#!/usr/bin/env bash
# Runs every test of gpuidx on this machine: C unit tests (plain and under
# AddressSanitizer + UndefinedBehaviorSanitizer), the fuzz targets' past
# findings and a short run of each (make fuzz runs them long), the GPU list
# logic on the host, the engine checks, then, against a throwaway
# PostgreSQL 15 cluster, pg_regress, the isolation specs (specs/) and
# pgTAP, pg_regress again with gpuidx preloaded, then the TAP tests (their own clusters; the index's equivalence
# proof needs the GCIDE corpus, fetched here by scripts/data/fetch when
# missing); indexes written by each released version's own build, read by
# this one before and after ALTER EXTENSION gpuidx UPDATE (scripts/test-update.sh,
# the releases built once into ~/.cache/gpuidx-releases); then the server tests again against PostgreSQL 17 and 18, each in
# a chroot of the Debian release that carries it (scripts/test-pg.sh); then
# the Debian package for PostgreSQL 15 built, installed and used in a chroot
# of Debian 12 (scripts/test-deb.sh).
# Exits non-zero on the first failure, a corpus that cannot be fetched
# included.  Run as root on Debian 12.
#   GPUIDX_SKIP_CORPUS=1   fetch nothing and skip the equivalence proof
#   GPUIDX_PG_VERSIONS="17 18"   the other versions tested (empty: none)
#   GPUIDX_DEB_VERSIONS=15   the versions whose package is built and tested
#                          (17 and 18 take 3 more minutes each; empty: none)
#   GPUIDX_TAP_JOBS=2      TAP test files run at once
#   GPUIDX_UPGRADE_TEST=1  also pg_upgrade 15 -> 17 -> 18 and pg_dump 15 -> 18
#                          (scripts/test-upgrade.sh: 5 to 7 more minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)

step() { printf '\n=== %s (%d s) ===\n' "$*" $SECONDS; }

step "dependencies"
bash scripts/deps.sh

# the other versions' chroots are made (downloaded, mostly) while this
# machine builds and runs the tests below; one after the other, since each
# installs packages
versions=${GPUIDX_PG_VERSIONS-17 18}
deb_versions=${GPUIDX_DEB_VERSIONS-15}
chroot_log=$(mktemp /tmp/gpuidx-chroots.XXXXXX)
work=
trap 'rm -rf "$chroot_log" $work' EXIT
chroots_pid=
if [ -n "$versions$deb_versions" ]; then
    ( for v in $versions; do bash scripts/test-pg.sh --chroot-only "$v" || exit 1; done
      for v in $deb_versions; do bash scripts/test-deb.sh --chroot-only "$v" || exit 1; done ) > "$chroot_log" 2>&1 &
    chroots_pid=$!
fi

step "build and install"
make -s -j"$jobs" WERROR=1
make -s install
# an engine whose device starts only when told, for the worker's retries (t/019)
make -s install-test-engine WERROR=1

step "test corpus"
data=${GPUIDX_DATA:-$HOME/.cache/gpuidx-data}
skip_corpus=${GPUIDX_SKIP_CORPUS:-0}
if [ "$skip_corpus" = 1 ]; then
    echo "NOTICE: GPUIDX_SKIP_CORPUS=1: the index equivalence proof (t/005) will NOT run" >&2
else
    GPUIDX_DATA=$data bash scripts/data/fetch gcide || {
        echo "test.sh: could not fetch the gcide corpus into $data, which the index equivalence" >&2
        echo "test.sh: proof needs (GPUIDX_SKIP_CORPUS=1 runs the other tests without it)" >&2
        exit 1
    }
    echo "gcide: $(wc -l < "$data/gcide/docs.tsv") documents"
fi

step "C unit tests"
make -s -j"$jobs" unit
step "C unit tests under ASan + UBSan"
make -s -j"$jobs" unit-asan

step "fuzz targets: past findings replayed, then ${FUZZ_CI_SECONDS:-20} s each (libFuzzer, ASan + UBSan)"
make -s -j"$jobs" fuzz-repro
FUZZ_JOBS="$jobs" make -s fuzz-ci GPUIDX_DATA="$data"

step "GPU kernels' list logic, on the host (no GPU needed)"
make -s cuda-host-test

step "engines against a reference: CPU engine vs sorted arrays; CUDA engine without a GPU must refuse cleanly"
make -s engine-check

if [ -f cuda/build/gpuidx_hostemu.so ] && [ "$skip_corpus" != 1 ]; then
    step "ranked top-k of real queries on one GCIDE segment: the GPU engine over its host emulation against the CPU engine"
    make -s -C bench/gpu ../../bench/build/gpu/rank_bench
    bench/build/gpu/rank_bench --engine cuda/build/gpuidx_hostemu.so --docs "$data/gcide/docs.tsv" \
        --queries "$data/gcide/queries.tsv" --nqueries 300 --batches "1 7" --reps 1 --k 20 | tail -n 4
fi

# PostgreSQL refuses to run as root, so the server-side tests run as the
# postgres user, in a copy of the tree it owns.
work=$(mktemp -d /tmp/gpuidx-test.XXXXXX)
cp -a "$top/." "$work/"
# the corpus, where the postgres user can read it
if [ "$skip_corpus" != 1 ]; then
    mkdir -p "$work/data/gcide"
    cp "$data/gcide/docs.tsv" "$data/gcide/queries.tsv" "$work/data/gcide/"
fi
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        chown -R postgres "$work"
        su postgres -s /bin/bash -c "cd '$work' && $*"
    else
        (cd "$work" && bash -c "$*")
    fi
}

step "pg_regress, isolation specs and pgTAP on a throwaway cluster"
as_pg "pg_virtualenv sh -c 'make -s installcheck || { cat regression.diffs output_iso/regression.diffs 2>/dev/null; exit 1; }; make -s prove'"

step "pg_regress again, with gpuidx preloaded (the GPU worker serving with the CPU engine)"
as_pg "pg_virtualenv -o shared_preload_libraries=gpuidx sh -c 'make -s installcheck ISOLATION= || { cat regression.diffs 2>/dev/null; exit 1; }'"

step "TAP tests (PostgreSQL::Test::Cluster)"
# without the opt-out, a missing corpus fails t/005 instead of skipping it
require=1
[ "$skip_corpus" = 1 ] && require=0
# two at a time (each test's clusters take ports of their own), the long
# proofs first so that the short ones fill in beside them; then, alone, the
# tests that time the server against the clock (a cancel's delay, an engine
# process's stall timeout)
long="t/005_index_equivalence.pl t/020_tsquery_equivalence.pl t/012_rank_equivalence.pl t/021_shards.pl
    t/010_worker.pl t/015_concurrent_vacuum.pl t/018_sqlsmith.pl"
timed="t/008_cancel.pl t/019_worker_processes.pl"
tap_order=$(for f in $long; do [ -f "$f" ] && echo "$f"; done
            ls t/*.pl | grep -vxF -f <(echo "$long $timed" | tr ' ' '\n' | grep .))
as_pg "GPUIDX_DATA='$work/data' GPUIDX_REQUIRE_CORPUS=$require make -s prove-tap \
    PROVE_FLAGS='-j${GPUIDX_TAP_JOBS:-2} --timer' PROVE_TESTS='$(echo $tap_order)'"
as_pg "GPUIDX_DATA='$work/data' GPUIDX_REQUIRE_CORPUS=$require make -s prove-tap \
    PROVE_FLAGS='--timer' PROVE_TESTS='$timed'"

step "indexes written by the released builds, read by this one (scripts/test-update.sh)"
if git rev-parse --git-dir > /dev/null 2>&1; then
    bash scripts/test-update.sh
else
    echo "NOTICE: no git history: the released builds cannot be made, scripts/test-update.sh NOT run" >&2
fi

if [ -n "$chroots_pid" ]; then
    step "chroots of PostgreSQL $versions, and of the packages' releases ($deb_versions)"
    wait "$chroots_pid" || { cat "$chroot_log"; echo "test.sh: could not make the chroots" >&2; exit 1; }
    grep '===' "$chroot_log"
fi
for v in $versions; do
    step "PostgreSQL $v: the server tests in a chroot of its Debian release"
    GPUIDX_DATA=$data bash scripts/test-pg.sh "$v"
done
for v in $deb_versions; do
    step "PostgreSQL $v: the Debian package built, installed and used in a chroot"
    bash scripts/test-deb.sh "$v"
done

if [ "${GPUIDX_UPGRADE_TEST:-0}" = 1 ]; then
    step "pg_upgrade and pg_dump across PostgreSQL 15, 17 and 18 (scripts/test-upgrade.sh)"
    GPUIDX_DATA=$data bash scripts/test-upgrade.sh
fi

if [ "$skip_corpus" = 1 ]; then
    step "all tests passed, but NOT the index equivalence proof (GPUIDX_SKIP_CORPUS=1)"
else
    step "all tests passed"
fi
