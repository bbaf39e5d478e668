#!/usr/bin/env bash
# scripts/pg_chroot.sh MAJOR CMD...: run CMD, as root, inside a Debian chroot
# that holds PostgreSQL MAJOR (FW_CHROOT_SUITES: 17 in trixie, 18 in sid),
# with this tree copied to /fw/fixed_window and owned by the chroot's
# postgres account.  As root only.
#
# The chroot is made once with mmdebstrap (--variant=apt: postgresql-MAJOR,
# its server headers, make, gcc, perl, libipc-run-perl, python3, what
# building and testing the Debian package takes (debhelper, postgresql-all,
# autopkgtest), and postgresql-MAJOR-plproxy when the suite has it; no
# cluster is made) and
# kept as a zstd tarball in FW_CHROOT_CACHE, named by suite and package
# list, so that a change of either makes it again.  Each run unpacks it into
# a private directory, removed afterwards.  The chroot runs in a mount and
# PID namespace of its own (unshare) with /proc and a tmpfs of mode 1777 on
# /dev/shm (without it initdb silently picks System V shared memory).
#
# FW_CHROOT_ROOT, when set, names the directory to unpack into (it must not
# exist), so that the caller can reach into the running chroot (make
# bench-versions connects to a server's socket there).
#
# Sourced (by scripts/test.sh, check_version.sh, bench/versions.sh), it
# defines FW_CHROOT_SUITES and the functions below only: each of those runs
# this script to enter a chroot.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FW_CHROOT_CACHE=${FW_CHROOT_CACHE:-/var/cache/fixed_window/chroots}
FW_DEBIAN_MIRROR=${FW_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The PostgreSQL majors tested in chroots, each with the Debian suite that
# packages it: make test has a layer pgNN for each, and the README names them.
FW_CHROOT_SUITES="17:trixie 18:sid"

# fw_chroot_majors: the majors of FW_CHROOT_SUITES, one a line.
fw_chroot_majors() { printf '%s\n' $FW_CHROOT_SUITES | cut -d: -f1; }

# fw_chroot_suite MAJOR: the Debian suite that packages PostgreSQL MAJOR.
fw_chroot_suite() {
    local suite
    suite=$(printf '%s\n' $FW_CHROOT_SUITES | sed -n "s/^$1://p")
    [ -n "$suite" ] || { echo "no chroot for PostgreSQL $1 (FW_CHROOT_SUITES: $FW_CHROOT_SUITES)" >&2; return 1; }
    echo "$suite"
}

# fw_chroot_packages MAJOR: what the chroot installs (plproxy only if packaged).
fw_chroot_packages() {
    echo "postgresql-$1 postgresql-server-dev-$1 make gcc perl libipc-run-perl python3" \
        "build-essential dpkg-dev fakeroot debhelper postgresql-server-dev-all postgresql-all autopkgtest"
}

# fw_chroot_cached MAJOR: the tarball's path in the cache, made or not: named
# by the suite and a hash of the package list and mirror.
fw_chroot_cached() {
    local major=$1 suite key
    suite=$(fw_chroot_suite "$major") || return 1
    key=$(printf '%s\n' "$suite" "$(fw_chroot_packages "$major")" postgresql-common \
        "postgresql-$major-plproxy" "$FW_DEBIAN_MIRROR" | sha256sum | cut -c1-12)
    echo "$FW_CHROOT_CACHE/$suite-pg$major-$key.tar.zst"
}

# fw_chroot_tarball MAJOR: make the cached tarball unless it is there; print its path.
fw_chroot_tarball() {
    local major=$1 suite pkgs tarball tmp
    suite=$(fw_chroot_suite "$major") || return 1
    pkgs=$(fw_chroot_packages "$major")
    tarball=$(fw_chroot_cached "$major")
    if [ ! -s "$tarball" ]; then
        fw_log "making the PostgreSQL $major chroot ($suite) into $tarball"
        mkdir -p "$FW_CHROOT_CACHE"
        tmp=$(mktemp "$FW_CHROOT_CACHE/.making.XXXXXX")
        # postgresql-common first, told to make no cluster, then the server:
        # its postinst would otherwise create and start "main".
        # sid's Release file on the archive reached here may be expired.
        if ! mmdebstrap --variant=apt --format=tar --quiet \
            --aptopt='Acquire::Check-Valid-Until "false"' \
            --aptopt='APT::Install-Recommends "false"' \
            --include="postgresql-common,${pkgs// /,}" \
            --setup-hook='mkdir -p "$1/etc/postgresql-common/createcluster.d"' \
            --setup-hook='echo "create_main_cluster = false" > "$1/etc/postgresql-common/createcluster.d/fixed_window.conf"' \
            --customize-hook='if chroot "$1" apt-cache show '"postgresql-$major-plproxy"' >/dev/null 2>&1; then chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends '"postgresql-$major-plproxy"' >/dev/null; fi' \
            --customize-hook='if ls "$1"/var/lib/postgresql/*/main >/dev/null 2>&1; then echo "a cluster was made in the chroot" >&2; exit 1; fi' \
            --customize-hook='chroot "$1" apt-get clean' \
            "$suite" - "$FW_DEBIAN_MIRROR" | zstd -q -T0 -3 -o "$tmp" -f; then
            rm -f "$tmp"; return 1
        fi
        mv "$tmp" "$tarball"
    fi
    # Each use renews the tarball's date: those unused for 14 days go (made
    # for another package list, or by another working tree), and what a
    # killed run left half-made.
    touch "$tarball"
    find "$FW_CHROOT_CACHE" -maxdepth 1 \( -name '*.tar.zst' -mtime +14 -o -name '.making.*' -mmin +120 \) -delete
    echo "$tarball"
}

# fw_chroot_run MAJOR CMD...: CMD as root in a fresh copy of the chroot,
# the tree in /fw/fixed_window owned by its postgres.  Reports the set-up
# time.  The copy is fw_chroot_root, which the script's exit removes.
fw_chroot_root=
fw_chroot_run() {
    local major=$1 start tarball root rc=0 how=unpacked
    shift
    [ "$(id -u)" -eq 0 ] || { echo "pg_chroot.sh runs as root only" >&2; return 1; }
    fw_packages mmdebstrap zstd util-linux
    start=$(date +%s)
    [ -s "$(fw_chroot_cached "$major")" ] || how=made
    tarball=$(fw_chroot_tarball "$major") || return 1
    if [ -n "${FW_CHROOT_ROOT:-}" ]; then
        root=$FW_CHROOT_ROOT; mkdir -m 711 "$root" || return 1
    else
        root=$(mktemp -d "${TMPDIR:-/tmp}/fixed_window-pg$major.XXXXXX")
    fi
    fw_chroot_root=$root
    tar -C "$root" --zstd -xpf "$tarball"
    mkdir -p "$root/fw/fixed_window"
    tar -C "$FW_ROOT" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
        --exclude='tmp_check*' -cf - . | tar -C "$root/fw/fixed_window" -xf -
    FW_CHROOT_SETUP="$(( $(date +%s) - start )) s ($how)"
    fw_log "PostgreSQL $major chroot ready in $FW_CHROOT_SETUP"
    # The namespaces end with CMD, and their mounts with them.
    unshare --mount --pid --fork --propagation private -- \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 HOME=/root TERM=dumb FW_CHROOT=$major FW_PG_MAJOR=$major \
        FW_CHROOT_SETUP="$FW_CHROOT_SETUP" COPT="${COPT:-}" \
        bash -c 'root=$1; shift
            mount -t proc proc "$root/proc"
            mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
            exec chroot "$root" bash -c "chown -R postgres /fw && cd /fw/fixed_window && exec \"\$@\"" sh "$@"' \
        sh "$root" "$@" || rc=$?
    return $rc
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    [ $# -ge 2 ] || { echo "usage: scripts/pg_chroot.sh MAJOR CMD..." >&2; exit 2; }
    # The copy goes however the script ends: CMD's status, an error, a signal.
    trap '[ -z "$fw_chroot_root" ] || rm -rf --one-file-system "$fw_chroot_root"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    fw_chroot_run "$@"
fi
