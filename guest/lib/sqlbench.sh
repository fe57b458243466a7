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

# Options that point apt-cache/apt-get at where sql-bench's sources come
# from: none = the host's apt (its deb-src entries); sqlbench_use_private_apt
# sets them for a suite the host's apt does not carry.
SQLBENCH_APT=()
# mmdebstrap's default mirror (URI, suites; SUITE replaced), where the root fs
# of a suite the host's apt lacks comes from: its sources come from there too.
SQLBENCH_DEFAULT_SOURCES=(
    "http://deb.debian.org/debian SUITE SUITE-updates"
    "http://deb.debian.org/debian-security SUITE-security"
)

# sqlbench_use_private_apt SUITE DIR: an apt state of its own in DIR (kept
# between builds) with deb-src entries for SUITE on the default mirror, its
# index updated now, and SQLBENCH_APT pointing at it. /etc/apt is not read
# (but for apt.conf) nor written. A failed update leaves the last index (or
# none), logged in DIR/update.log.
sqlbench_use_private_apt() {
    local suite=$1 dir=$2 line uri suites
    mkdir -p "$dir/sources.list.d" "$dir/lists/partial" "$dir/cache/archives/partial"
    for line in "${SQLBENCH_DEFAULT_SOURCES[@]}"; do
        read -r uri suites <<<"${line//SUITE/$suite}"
        printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n' "$uri" "$suites"
    done >"$dir/sources.list.d/$suite.sources"
    : >"$dir/status"
    SQLBENCH_APT=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$dir/sources.list.d"
        -o "Dir::State::Lists=$dir/lists" -o "Dir::State::status=$dir/status" -o "Dir::Cache=$dir/cache")
    guest_log "sql-bench: updating the $suite deb-src index in ${dir#"$OUTDIR"/} (private apt state)..."
    apt-get "${SQLBENCH_APT[@]}" update -q >"$dir/update.log" 2>&1 ||
        guest_log "warning: apt-get update of the $suite deb-src index failed (log: $dir/update.log)"
}

# sqlbench_source_versions: prints the versions (with epoch, e.g.
# 1:10.11.19-0+deb12u1) of the `mariadb` source packages apt knows, newest
# first. Nothing when apt knows none (no deb-src entry).
sqlbench_source_versions() {
    # dpkg's ordering, not sort's: insertion into a list sorted newest first
    apt-cache "${SQLBENCH_APT[@]}" showsrc --only-source mariadb 2>/dev/null | awk '$1 == "Version:" { print $2 }' | sort -u |
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
    if ! (cd "$work" && apt-get "${SQLBENCH_APT[@]}" source -qq --download-only "mariadb=$version") >"$work/apt.log" 2>&1; then
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

# sqlbench_reuse_fallback DIR: when no source version of this suite could be
# had, takes the most recently used prepared sql-bench of this image's own
# cache (an earlier fetch, or an earlier fallback), else of DIR (another
# image's cache dir, e.g. bookworm's IMAGE_DIR/mariadb/cache, copied into
# this cache), and sets SQLBENCH_VERSION and SQLBENCH_CACHE; the manifest's
# sql_bench.version then names it. Nothing set when neither has one.
sqlbench_reuse_fallback() {
    local dir=$1 newest='' d version
    for d in "$CACHE" "$dir"; do
        # shellcheck disable=SC2012 # names are sqlbench-VERSION, no newlines
        newest=$(ls -1dt "$d"/sqlbench-*/SOURCE 2>/dev/null | head -n 1)
        [[ -z $newest ]] || break
    done
    [[ -n $newest ]] || return 0
    newest=${newest%/SOURCE}
    version=$(awk '{ print $2 }' "$newest/SOURCE")
    SQLBENCH_CACHE=$CACHE/sqlbench-${version//:/_}
    if [[ ! -f $SQLBENCH_CACHE/SOURCE ]]; then
        STAGE=$CACHE/tmp.sqlbench.$$
        cp -a "$newest" "$STAGE"
        mv -T "$STAGE" "$SQLBENCH_CACHE"
        STAGE=
    fi
    # shellcheck disable=SC2034 # the caller's
    SQLBENCH_VERSION=$version
    guest_log "WARNING: no 'mariadb' source of $SUITE could be fetched: sql-bench $version (from $newest) goes into this image; the manifest's sql_bench.version says so"
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
