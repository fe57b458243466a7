# shellcheck shell=bash
# Sourced by guest/build-image.sh for the mariadb variant: MariaDB's sql-bench
# (test-ATIS and what it needs) from Debian's `mariadb` source package. No
# binary package ships sql-bench, so it is taken with `apt-get source` (the
# host needs a deb-src entry: scripts/install-deps.sh writes one) and cached
# by the source version in cache/sqlbench-VERSION/.
# This file is part of the mariadb variant's root fs cache key.

# The files installed into the image, below /opt/sql-bench. The *.sh sources
# are Perl scripts that sql-bench/CMakeLists.txt copies without substitution
# (CONFIGURE_FILE ... COPYONLY) to their name without ".sh"; test-ATIS
# `require`s bench-init.pl and server-cfg from its working directory.
SQLBENCH_SCRIPTS=(test-ATIS bench-init.pl server-cfg)
SQLBENCH_DIR_IN_IMAGE=/opt/sql-bench

# sqlbench_source_versions: prints the versions (with epoch, e.g.
# 1:10.11.19-0+deb12u1) of the `mariadb` source packages apt knows, newest
# first. Nothing when apt knows none (no deb-src entry).
sqlbench_source_versions() {
    # dpkg's ordering, not sort's: insertion into a list sorted newest first
    apt-cache showsrc --only-source mariadb 2>/dev/null | awk '$1 == "Version:" { print $2 }' | sort -u |
        {
            local -a sorted=()
            local v i
            while read -r v; do
                for ((i = 0; i < ${#sorted[@]}; i++)); do
                    dpkg --compare-versions "$v" gt "${sorted[i]}" && break
                done
                sorted=("${sorted[@]:0:i}" "$v" "${sorted[@]:i}")
            done
            ((${#sorted[@]} == 0)) || printf '%s\n' "${sorted[@]}"
        }
}

# sqlbench_fetch VERSION DEST: downloads mariadb VERSION's source package,
# unpacks it with dpkg-source (Debian's patches applied) and fills the empty
# directory DEST with the runnable sql-bench subset: the scripts of
# SQLBENCH_SCRIPTS (mode 0755), README, Data/ATIS, limits/, SOURCE.
# Returns 1 (DEST untouched) when the download fails: some mirrors carry a
# version's binaries but not its sources (seen here: bookworm-security).
sqlbench_fetch() {
    local version=$1 dest=$2 work src name
    work=$(mktemp -d "$CACHE/tmp.sqlbench-src.XXXXXX")
    chmod 0777 "$work" # apt's _apt sandbox user downloads into it
    guest_log "fetching sql-bench: apt-get source mariadb=$version (~115 MB)..."
    if ! (cd "$work" && apt-get source -qq --download-only "mariadb=$version") >"$work/apt.log" 2>&1; then
        guest_log "warning: apt-get source mariadb=$version failed: $(grep -m1 '^E:' "$work/apt.log" || tail -n 1 "$work/apt.log")"
        rm -rf "$work"
        return 1
    fi
    # dpkg-source warns that it cannot check the .dsc signature without
    # debian-keyring; apt has verified the files' checksums against the
    # signed Sources index already.
    if ! (cd "$work" && dpkg-source -x ./*.dsc src) >"$work/dpkg-source.log" 2>&1; then
        tail -n 20 "$work/dpkg-source.log" >&2
        guest_die "dpkg-source -x of mariadb $version failed"
    fi
    src=$work/src/sql-bench
    [[ -d $src/Data/ATIS && -d $src/limits ]] || guest_die "mariadb $version has no sql-bench/Data/ATIS or limits"
    mkdir -p "$dest/Data"
    for name in "${SQLBENCH_SCRIPTS[@]}"; do
        [[ -f $src/$name.sh ]] || guest_die "mariadb $version has no sql-bench/$name.sh"
        install -m 0755 "$src/$name.sh" "$dest/$name"
    done
    install -m 0644 "$src/README" "$dest/README"
    cp -a "$src/Data/ATIS" "$dest/Data/"
    cp -a "$src/limits" "$dest/"
    echo "mariadb $version" >"$dest/SOURCE"
    rm -rf "$work"
}

# sqlbench_install SRC ROOTDIR: mmdebstrap --customize-hook of the variant:
# copies the prepared sql-bench into the image and drops the datadir that
# mariadb-server's postinst created (the root is read-only at run time; the
# agent's runner makes its own datadir on the disk under test).
sqlbench_install() {
    local src=$1 root=$2
    mkdir -p "$root$SQLBENCH_DIR_IN_IMAGE"
    cp -a "$src/." "$root$SQLBENCH_DIR_IN_IMAGE/"
    chown -R 0:0 "$root$SQLBENCH_DIR_IN_IMAGE"
    find "$root/var/lib/mysql" -mindepth 1 -delete 2>/dev/null || true
    # Every Perl module test-ATIS loads must be there (DBD::MariaDB: server-cfg
    # connects with "DBI:MariaDB:...").
    chroot "$root" perl -MDBI -MDBD::MariaDB -MBenchmark -MGetopt::Long -MCwd -e 1
}
