#!/usr/bin/env bash
# Builds gpuidx's Debian package for one PostgreSQL major version and tests it,
# in a chroot of the Debian release that carries that version (15: bookworm,
# 17: trixie, 18: sid), made with mmdebstrap and kept for the next run
# (scripts/chroot.sh).  In the chroot: dpkg-buildpackage -us -uc -b (with the
# CUDA engine when this machine has the toolkit: /usr/local/cuda or CUDA_HOME,
# mounted read-only; with an older g++ when the release's is too new for it),
# the package's files checked, lintian (errors fail),
# the package installed with apt; then on a throwaway cluster with gpuidx
# preloaded: CREATE EXTENSION, gpuidx indexes on a small table, queries
# through them with their rows checked, gpuidx_verify, the GPU worker's
# engine process started from the package, an update from 0.1; last the
# package purged.  Prints a summary line; exits non-zero on any failure.
# Run as root on Debian 12; nothing is installed on this machine.
#   bash scripts/test-deb.sh 15|17|18
#   bash scripts/test-deb.sh --chroot-only 15|17|18   only make (or check) the chroot
#   GPUIDX_DEB_CHROOTS=DIR   where the chroots are kept (default ~/.cache/gpuidx-deb-chroots)
#   GPUIDX_DEB_CUDA=0        build without the CUDA engine (profile pkg.gpuidx.nocuda)
#   GPUIDX_DEB_OUT=DIR       copy the built packages there
#   GPUIDX_DEBIAN_MIRROR=URL the Debian archive (default: the one apt's sources name)
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/chroot.sh
args=("$@")
chroot_only=0
if [ "${1:-}" = --chroot-only ]; then chroot_only=1; shift; fi
version=${1:-}
release=$(debian_release_of "$version") || { echo "usage: $0 [--chroot-only] 15|17|18" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "test-deb.sh: run as root (mmdebstrap, chroot)" >&2; exit 1; }
own_mount_namespace scripts/test-deb.sh "${args[@]}"

start=$SECONDS
step() { printf '\n=== postgresql-%s-gpuidx: %s (%d s) ===\n' "$version" "$*" $((SECONDS - start)); }
die() { echo "test-deb.sh: $*" >&2; exit 1; }
trap 'echo "test-deb.sh: failed at line $LINENO" >&2' ERR

package=postgresql-$version-gpuidx
ext_version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" gpuidx.control)
# what the build needs (debian/control's Build-Depends), the server the
# package goes into, lintian
packages=(build-essential debhelper postgresql-server-dev-all postgresql-$version lintian)

step "chroot of Debian $release"
root=${GPUIDX_DEB_CHROOTS:-$HOME/.cache/gpuidx-deb-chroots}/$release-pg$version
chroot_make "$root" "$release" "${packages[@]}"
[ "$chroot_only" = 0 ] || { step "chroot ready: $root"; exit 0; }
chroot_mount "$root"
# the server's socket directory (/run is empty in the chroot)
chroot "$root" install -d -o postgres -g postgres /run/postgresql

work=/var/tmp/gpuidx-deb
in_chroot() {	# as root, in DIR: in_chroot DIR COMMAND
    chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 HOME=/root \
        DEBIAN_FRONTEND=noninteractive ${ccbin:+NVCC_CCBIN=$ccbin} bash -c "cd $1 && $2"
}
in_root() { in_chroot "$work/gpuidx" "$*"; }
as_pg() {
    chroot --userspec=postgres:postgres "$root" env -i PATH=/usr/lib/postgresql/$version/bin:/usr/bin:/bin \
        LANG=C.UTF-8 HOME=/var/lib/postgresql bash -c "cd $work && $*"
}

# The CUDA toolkit, read-only.  One older than the release's compiler refuses
# it (crt/host_config.h): nvcc then compiles with the newest g++ it takes
# (NVCC_CCBIN), from the archive.  One that still cannot compile for this
# release (its headers against a newer glibc) leaves the GPU engine out and
# says why.
cuda=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}" 2>/dev/null || true)
with_cuda=0 profiles= ccbin= cuda_said="no (no CUDA toolkit on this machine)"
if [ -n "$cuda" ] && [ -x "$cuda/bin/nvcc" ]; then
    step "CUDA toolkit: $cuda"
    mkdir -p "$root/usr/local/cuda"
    mount --bind "$cuda" "$root/usr/local/cuda"
    mount -o remount,bind,ro "$root/usr/local/cuda"
    with_cuda=1 cuda_said="yes, CUDA $("$cuda/bin/nvcc" --version | grep -Eo "release [0-9.]+" | cut -d" " -f2)"
    cuda_gcc=$(grep -Eoh -m1 '__GNUC__ > [0-9]+' "$cuda"/targets/*/include/crt/host_config.h | grep -Eo '[0-9]+$' || true)
    if [ "${GPUIDX_DEB_CUDA:-1}" = 0 ]; then
        with_cuda=0 profiles=pkg.gpuidx.nocuda cuda_said="no (GPUIDX_DEB_CUDA=0)"
    elif [ -n "$cuda_gcc" ] && [ "$(chroot "$root" gcc -dumpversion | cut -d. -f1)" -gt "$cuda_gcc" ]; then
        in_chroot /tmp "dpkg -s g++-$cuda_gcc >/dev/null 2>&1 ||
            { apt-get update -qq && apt-get install -y -qq g++-$cuda_gcc >/dev/null; }"
        ccbin=g++-$cuda_gcc
        echo "nvcc takes gcc $cuda_gcc at most: NVCC_CCBIN=$ccbin"
    fi
    if [ "$with_cuda" = 1 ]; then
        printf '#include <cmath>\n__global__ void probe(float *x) { *x = sqrtf(*x); }\n' > "$root/tmp/gpuidx-probe.cu"
        if ! why=$(in_chroot /tmp "/usr/local/cuda/bin/nvcc -std=c++17 -c -o gpuidx-probe.o gpuidx-probe.cu 2>&1"); then
            grep -m1 error <<< "$why" || echo "$why"
            with_cuda=0 profiles=pkg.gpuidx.nocuda cuda_said="no: nvcc cannot compile for Debian $release (above)"
            echo "NOTICE: CUDA engine: $cuda_said" >&2
        fi
        rm -f "$root"/tmp/gpuidx-probe.*
    fi
fi

step "build: dpkg-buildpackage -us -uc -b (CUDA engine: $cuda_said)"
rm -rf "${root:?}$work"
copy_tree "$root$work/gpuidx"
# a package from an earlier run leaves, so what is tested is this build's
in_root "dpkg --purge $package >/dev/null 2>&1 || true"
# debian/control for the versions this release supports, as pg_buildext
# makes it on every release but the one it is committed for
in_root "pg_buildext updatecontrol && grep -qx 'Package: $package' debian/control" ||
    die "$release's PostgreSQL versions do not give $package (debian/pgversions)"
in_root "dpkg-checkbuilddeps || { apt-get update -qq && apt-get build-dep -y -qq . >/dev/null; }"
in_root "DEB_BUILD_OPTIONS=parallel=$(nproc) dpkg-buildpackage -us -uc -b ${profiles:+-P$profiles}"
deb=$(cd "$root$work" && ls "$package"_"$ext_version"_*.deb)
if [ -n "${GPUIDX_DEB_OUT:-}" ]; then mkdir -p "$GPUIDX_DEB_OUT" && cp "$root$work"/*.deb "$GPUIDX_DEB_OUT/"; fi

step "the package's files: $deb"
files=$(dpkg-deb -c "$root$work/$deb" | awk '{ print $6 }' | sed 's|^\./|/|')
echo "$files" | grep -v '/$'
lib=/usr/lib/postgresql/$version/lib share=/usr/share/postgresql/$version/extension
want=("$lib/gpuidx.so" "$lib/gpuidx_engine" "$share/gpuidx.control")
for f in sql/gpuidx--*.sql; do want+=("$share/${f#sql/}"); done
if [ "$with_cuda" = 1 ]; then want+=("$lib/gpuidx_cuda.so"); fi
for f in "${want[@]}"; do
    grep -qx "$f" <<< "$files" || die "$deb lacks $f"
done
# the engines that only the tests use never ship; the GPU one only when built
for f in gpuidx_hostemu.so gpuidx_flaky_engine.so $([ "$with_cuda" = 1 ] || echo gpuidx_cuda.so); do
    if grep -qx "$lib/$f" <<< "$files"; then die "$deb carries $lib/$f"; fi
done

step "lintian"
as_pg "lintian --fail-on error *.changes" || die "lintian found errors"

step "install: apt-get install ./$deb"
in_root "cd .. && apt-get install -y -qq --no-install-recommends ./$deb >/dev/null"
in_root "dpkg-query -W -f='\${Package} \${Version} \${Status}\n' $package"

step "CREATE EXTENSION and queries through gpuidx indexes, gpuidx preloaded"
cat > "$root$work/check.sql" <<'SQL'
\set ON_ERROR_STOP on
CREATE EXTENSION gpuidx;
SELECT 'version ' || extversion FROM pg_extension WHERE extname = 'gpuidx';
CREATE TABLE t (id int PRIMARY KEY, body text);
INSERT INTO t VALUES
  (1, 'A GPU inverted index answers full-text queries in PostgreSQL'),
  (2, 'PostgreSQL index access methods: btree, GIN and gpuidx'),
  (3, 'Katzen und Hunde spielen im Garten'),
  (4, 'the inverted lists of an index, intersected on a GPU');
INSERT INTO t SELECT g, 'filler row ' || g || CASE WHEN g % 250 = 0 THEN ' with a rare marker' ELSE '' END
FROM generate_series(100, 3099) g;
CREATE INDEX t_tsv_idx ON t USING gpuidx (to_tsvector('english', body));
CREATE INDEX t_body_idx ON t USING gpuidx (body);
VACUUM ANALYZE t;
SET enable_seqscan = off;
-- whether a query's plan goes through the index
CREATE FUNCTION pg_temp.uses(query text, index text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line LIKE '%' || index || '%' THEN RETURN 'through ' || index; END IF;
	END LOOP;
	RETURN 'not through ' || index;
END $$;
SELECT pg_temp.uses($$SELECT id FROM t WHERE to_tsvector('english', body) @@ to_tsquery('english', 'inverted & index')$$, 't_tsv_idx');
SELECT '@@ ' || string_agg(id::text, ',' ORDER BY id) FROM t
WHERE to_tsvector('english', body) @@ to_tsquery('english', 'inverted & index');
SELECT '@@ rare ' || string_agg(id::text, ',' ORDER BY id) FROM t
WHERE to_tsvector('english', body) @@ to_tsquery('english', 'rare & marker');
SELECT pg_temp.uses($$SELECT id FROM t WHERE body @@& 'gpu inverted index'$$, 't_body_idx');
SELECT '@@& ' || string_agg(id::text, ',' ORDER BY id) FROM t WHERE body @@& 'gpu inverted index';
SELECT '@@& count ' || count(*) FROM t WHERE body @@& 'filler row';
SELECT 'verify ' || (gpuidx_verify('t_tsv_idx') LIKE 'index "t_tsv_idx" is sound:%')
    || ' ' || (gpuidx_verify('t_body_idx') LIKE 'index "t_body_idx" is sound:%');
-- the worker's engine process, exec'd from the package's files; no GPU driver
-- in the chroot, so the CPU engine serves and says why
DO $$ BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN (SELECT serving AND engine IS NOT NULL FROM gpuidx_worker_stats);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT 'worker ' || (serving AND engine_pid IS NOT NULL) FROM gpuidx_worker_stats;
SELECT 'engine ' || engine || ': ' || coalesce(engine_note, '') FROM gpuidx_worker_stats;
-- the update scripts are packaged: 0.1 made, then updated
CREATE DATABASE upd;
\c upd
CREATE EXTENSION gpuidx VERSION '0.1';
ALTER EXTENSION gpuidx UPDATE;
SELECT 'updated to ' || extversion FROM pg_extension WHERE extname = 'gpuidx';
SQL
chroot "$root" chown -R postgres:postgres "$work"
as_pg "pg_virtualenv -v $version -o shared_preload_libraries=gpuidx \
    psql -XAtq -v ON_ERROR_STOP=1 -f check.sql -o check.out" || die "the SQL checks failed"
out=$(cat "$root$work/check.out")
echo "$out"
expected="version $ext_version
through t_tsv_idx
@@ 1,4
@@ rare 250,500,750,1000,1250,1500,1750,2000,2250,2500,2750,3000
through t_body_idx
@@& 1,4
@@& count 3000
verify true true
worker true"
diff <(echo "$expected") <(echo "$out" | grep -v -e '^engine ' -e '^updated to ') ||
    die "the answers differ from those expected (diff: expected, got)"
engine=$(echo "$out" | sed -n 's/^engine //p')
# with the CUDA engine packaged, it loads and finds no driver; without, there is none to load
if [ "$with_cuda" = 1 ]; then note='^cpu: .*no CUDA driver'; else note='^cpu: could not load engine'; fi
[[ "$engine" =~ $note ]] || die "the worker's engine says \"$engine\", not /$note/"
grep -qx "updated to $ext_version" <<< "$out" || die "ALTER EXTENSION gpuidx UPDATE did not reach $ext_version"

step "purge"
in_root "apt-get purge -y -qq $package >/dev/null"
[ ! -e "$root$lib/gpuidx.so" ] && [ ! -e "$root$share/gpuidx.control" ] || die "purging $package left its files"

server=$(chroot "$root" "/usr/lib/postgresql/$version/bin/postgres" --version)
step "all passed: $deb (CUDA engine: ${cuda_said%% (*}) on PostgreSQL ${server#postgres (PostgreSQL) }, \
Debian $release: build, files, lintian, install, queries, gpuidx_verify, worker, update, purge"
