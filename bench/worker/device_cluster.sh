# Sourced by the device scripts (device_defaults.sh, bench/tsquery/device.sh,
# bench/index/device.sh),
# from the tree's top, with $pack (holding pg.tar.xz), $w (a working folder,
# made anew) and $out (logs) set: the bundled PostgreSQL in /opt/pgb, gpuidx
# built and installed into it, bench/ copied to $w/bench, and a cluster with
# the GPU worker in $w/pg, run by the user gpuidx (as_user), serving.  $P is
# psql on it.  On any exit the cluster stops, its log goes to $out and the
# last line printed is "== END (exit N) TIME".
trap 'echo "== END (exit $?) $(date +%T)"' EXIT
log() { echo "== $* ($(date +%T))"; }

export PGB=/opt/pgb
mkdir -p $PGB && tar xJf "$pack/pg.tar.xz" -C $PGB && . $PGB/env.sh || exit 1
export PATH=/usr/local/cuda/bin:$PATH
log "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/machine.txt"
lscpu | grep -E 'Model name|^CPU\(s\)' | tee -a "$out/machine.txt"

log "build"
make -s -j"$(nproc)" with_llvm=no PG_CONFIG="$PGB/usr/lib/postgresql/15/bin/pg_config" all install 2>&1 | grep -vE "^$" | tail -5
ls "$(pg_config --pkglibdir)"/gpuidx*.so || exit 1

rm -rf "$w" && mkdir -p "$w"
cp -a bench "$w/bench"
id gpuidx >/dev/null 2>&1 || useradd -m gpuidx
chown -R gpuidx "$w"
as_user() { runuser -u gpuidx -- env PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "$@"; }

log "cluster with the GPU worker"
as_user initdb -D "$w/pg" -A trust > /dev/null || exit 1
cat >> "$w/pg/postgresql.conf" <<CONF
shared_preload_libraries = 'gpuidx'
gpuidx.device = worker
port = 5432
unix_socket_directories = '$w'
max_connections = 120
shared_buffers = ${SHARED_BUFFERS:-4GB}
fsync = off
max_wal_size = 8GB
logging_collector = off
CONF
as_user pg_ctl -D "$w/pg" -l "$w/pg/log" start > /dev/null || { cat "$w/pg/log"; exit 1; }
trap 'rc=$?; as_user pg_ctl -D "$w/pg" -m fast stop > /dev/null; cp "$w/pg/log" "$out/server.log"; echo "== END (exit $rc) $(date +%T)"' EXIT
P="psql -h $w -d postgres -X -q -v ON_ERROR_STOP=1"
as_user $P -c 'CREATE EXTENSION gpuidx'
for i in $(seq 30); do [ "$(as_user $P -Atc 'SELECT serving FROM gpuidx_worker_stats')" = t ] && break; sleep 1; done
as_user $P -xc 'SELECT serving, engine, device, engine_note FROM gpuidx_worker_stats'
