# Debian chroots for the tests that need another release than this machine's
# (scripts/test-pg.sh, scripts/test-deb.sh): made with mmdebstrap from the
# archive this machine's apt uses, kept for the next run, entered with chroot.
# Sourced, not run; the caller defines die().

# the Debian release that carries PostgreSQL VERSION: debian_release_of VERSION
debian_release_of() {
    case "$1" in
        15) echo bookworm ;;
        17) echo trixie ;;
        18) echo sid ;;
        *) return 1 ;;
    esac
}

# own_mount_namespace SCRIPT ARG...: the script again, in a mount namespace of
# its own (unless it runs in one), so the chroot's mounts vanish with it
# whatever way it exits
own_mount_namespace() {
    [ -z "${GPUIDX_MOUNT_NS:-}" ] || return 0
    GPUIDX_MOUNT_NS=1 exec unshare --mount --propagation private bash "$@"
}

# the Debian archive apt uses here (not its security archive)
debian_mirror() {
    local m
    m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
        2>/dev/null | grep -v '^[[:space:]]*#' |
        grep -Eo '(https?|file)://[^[:space:]]*/debian/?([[:space:]]|$)' | head -n 1 | tr -d '[:space:]') || true
    echo "${m:-http://deb.debian.org/debian}"
}

# chroot_make ROOT RELEASE PACKAGE...: ROOT made as Debian RELEASE with the
# packages, unless it was made so before (its stamp says with what)
chroot_make() {
    local root=$1 release=$2
    shift 2
    local stamp="$release $*" mirror
    if [ "$(cat "$root/.gpuidx-chroot" 2>/dev/null)" = "$stamp" ]; then
        echo "reusing $root"
        return 0
    fi
    if ! command -v mmdebstrap >/dev/null; then
        echo "installing mmdebstrap" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null ||
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null; }
    fi
    mirror=${GPUIDX_DEBIAN_MIRROR:-$(debian_mirror)}
    echo "making $root from $mirror (once; later runs reuse it)"
    rm -rf "$root" "$root.new"
    mkdir -p "$(dirname "$root")"
    # an archive snapshot's Release file may be past its Valid-Until
    mmdebstrap --variant=minbase --aptopt='Acquire::Check-Valid-Until "false"' \
        --include="$(IFS=,; echo "$*")" "$release" "$root.new" "$mirror" ||
        die "could not make the Debian $release chroot from $mirror"
    echo "$stamp" > "$root.new/.gpuidx-chroot"
    mv "$root.new" "$root"
}

# chroot_mount ROOT: /proc, /dev (with ptys, for apt's log) and the shared
# memory PostgreSQL needs; in the caller's own mount namespace
chroot_mount() {
    mount -t proc proc "$1/proc"
    mount --bind /dev "$1/dev"
    mount --bind /dev/pts "$1/dev/pts"
    mount -t tmpfs -o mode=1777 shm "$1/dev/shm"
}

# copy_tree DIR: the tree as git sees it into DIR, made afresh: tracked and
# new files, no build outputs
copy_tree() {
    rm -rf "$1"
    mkdir -p "$1"
    git ls-files -z --cached --others --exclude-standard |
        tar --null -T - --ignore-failed-read -c | tar -x -C "$1"
}
