#!/usr/bin/env bash
# Installs the Debian packages disksweep needs, on Debian 12 (bookworm) or
# Debian 13 (trixie): the release is the host's (/etc/os-release
# VERSION_CODENAME), any other is refused. Idempotent; run as root.
# Usage: scripts/install-deps.sh [--for quickstart|all] [--print]
#   all (the default): build, test and run everything (scripts/test.sh, CI);
#   quickstart: only what scripts/quickstart.sh runs: build the daemon,
#   hostctl and the agent, build the base guest image, run fio sweeps on the
#   embedded libvirt QEMU driver with file storage.
#   --print: print the packages' names on this release, one a line, and
#   change nothing.
set -euo pipefail

# Each package is listed once, in the first purpose that needs it, by its
# Debian 12 name; `all` installs both lists. What another release calls
# differently is in release_names below.
quickstart_packages=(
  # build (catch2 and zlib1g-dev too: cmake configures the tests with the rest)
  build-essential cmake ninja-build pkg-config ccache
  libvirt-dev libxml2-dev libboost-program-options-dev libboost-math-dev libsqlitecpp-dev libsqlite3-dev
  libaio-dev liburing-dev catch2 libtomlplusplus-dev nlohmann-json3-dev libssl-dev zlib1g-dev
  libcurl4-openssl-dev  # the Proxmox backend's REST client is part of disksweepd
  # run: libvirt's embedded QEMU driver, QEMU, qemu-img
  libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils
  # a subreaper for disksweepd and the tests where PID 1 reaps late (scripts/lib/reaper.sh)
  tini
  # the base guest image: Debian root fs (mmdebstrap over the host's apt
  # sources), kernel modules, initramfs (debugfs, cpio, zstd)
  mmdebstrap busybox-static cpio zstd kmod e2fsprogs ca-certificates
)
test_packages=(
  clang-format  # style checks of the sources
  # dpkg-dev for `apt-get source mariadb` (sql-bench for the mariadb variant)
  dpkg-dev
  # tests and tools: host-side mkfs/mount on loop devices, fio, curl over the socket
  xfsprogs btrfs-progs fio util-linux curl sqlite3
  systemd  # systemd-analyze: the unit's hardening score (tests/packaging)
  file  # cpack's dpkg-shlibdeps step needs it (tests/packaging)
  clang-14 libclang-rt-14-dev  # fuzz/: libFuzzer and the ASan/UBSan runtimes (release_names)
  lld  # links the test binaries in a quarter of GNU ld's time (CMakeLists.txt)
  # the MariaDB workload runners' integration test: a real server, sql-bench's
  # Perl DBI driver, sysbench (the same packages as guest/packages-mariadb.txt)
  mariadb-server mariadb-client libdbi-perl libdbd-mariadb-perl sysbench
  # the pgbench runner's integration test: Debian's PostgreSQL (as in
  # guest/packages-mariadb.txt), its server, psql and pgbench
  postgresql
  # the rbd storage backend (rbd/ceph tools) and its real test: a throwaway
  # single-node Ceph (tests/support/ceph/), QEMU's rbd driver; iptables sends
  # its traffic through netdelay.py when it emulates a network delay
  ceph-mon ceph-osd ceph-common qemu-block-extra iptables
  # the report tier: headless Chromium renders the HTML report (fonts for its
  # text: the report names only generic families)
  chromium fonts-dejavu-core
  # the Proxmox backend's contract tests: the fake PVE API (python3) over
  # HTTPS with test certificates made by the openssl CLI
  python3 openssl
)

# The releases this script installs for, and each one's names that differ
# from the lists above: "RELEASE NAME_IN_THE_LISTS NAME_THERE", one per
# line; a release with no line installs the lists' names. Every other name
# was checked against each release's package index (apt-cache policy in a
# fresh root of it). Same names with other contents: catch2 is Catch2 3.x on
# trixie (tests/support/catch2_v3/ maps it to the v2 header the tests use);
# the libraries that became t64 on trixie are pulled in by their -dev names.
supported_releases=(bookworm trixie)
release_names=(
  "trixie clang-14 clang-19"                      # trixie has no clang 14; 19 is its default
  "trixie libclang-rt-14-dev libclang-rt-19-dev"
)

# host_release: the host's Debian release codename, from /etc/os-release
# (DISKSWEEP_OS_RELEASE names another file, for tests of this check).
host_release() {
  local file=${DISKSWEEP_OS_RELEASE:-/etc/os-release}
  [ -r "$file" ] || { echo "install-deps.sh: cannot read $file: not a Debian host?" >&2; return 1; }
  # shellcheck source=/dev/null
  (. "$file" && echo "${VERSION_CODENAME:-}")
}

# release_name RELEASE PACKAGE: the package's name on RELEASE.
release_name() {
  local row fields
  for row in "${release_names[@]}"; do
    read -r -a fields <<<"$row"
    [[ ${fields[0]} == "$1" && ${fields[1]} == "$2" ]] && { echo "${fields[2]}"; return; }
  done
  echo "$2"
}

release=$(host_release)
if [[ " ${supported_releases[*]} " != *" $release "* ]]; then
  echo "install-deps.sh: this host runs Debian release '${release:-unknown}' (VERSION_CODENAME in" \
    "${DISKSWEEP_OS_RELEASE:-/etc/os-release}); disksweep supports ${supported_releases[*]} (Debian 12 and 13)." \
    "Run it on one of those, or in a root of one: mmdebstrap trixie ROOT (bench/platforms/run.sh trixie does that)" >&2
  exit 2
fi

purpose=all print=0
while [ $# -gt 0 ]; do
  case $1 in
    --for)
      purpose=${2:-}
      [[ $purpose == quickstart || $purpose == all ]] \
        || { echo "install-deps.sh: --for takes quickstart or all, not '$purpose'" >&2; exit 2; }
      shift 2
      ;;
    --print) print=1; shift ;;
    *) echo "usage: scripts/install-deps.sh [--for quickstart|all] [--print]" >&2; exit 2 ;;
  esac
done
listed=("${quickstart_packages[@]}")
[[ $purpose == quickstart ]] || listed+=("${test_packages[@]}")
packages=()
for package in "${listed[@]}"; do packages+=("$(release_name "$release" "$package")"); done
if [ "$print" = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

# deb-src entries mirroring the host's enabled deb entries of its release, so that
# guest/build-image.sh --variant mariadb can `apt-get source mariadb` (no
# binary package ships sql-bench). Written only when it differs; returns 0
# when the file changed (the caller then runs apt-get update).
src_list=/etc/apt/sources.list.d/disksweep-src.sources
write_deb_src() {
  local tmp
  tmp=$(mktemp)
  # shellcheck source=../guest/lib/rootfs.sh
  if ! (source "$(dirname "$0")/../guest/lib/rootfs.sh" && guest_apt_sources "$release" "$tmp.deb"); then
    rm -f "$tmp" "$tmp.deb"
    echo "[deps] warning: no $release deb entries in the apt sources: no deb-src entry written" >&2
    return 1
  fi
  # one-line entries become deb822 stanzas; deb822 stanzas get Types: deb-src
  awk '
    /^deb[[:space:]]/ {
      m = split($0, F, /[[:space:]]+/); opts = ""; k = 2
      if (F[2] ~ /^\[/) { while (k < m && F[k] !~ /\]$/) { opts = opts " " F[k]; k++ } opts = opts " " F[k]; k++ }
      comps = ""; for (j = k + 2; j <= m; j++) comps = comps (comps == "" ? "" : " ") F[j]
      printf "\nTypes: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n", F[k], F[k + 1], comps
      if (match(opts, /signed-by=[^] ]+/)) printf "Signed-By: %s\n", substr(opts, RSTART + 10, RLENGTH - 10)
      print ""
      next
    }
    /^Types:/ { print "Types: deb-src"; next }
    { print }
  ' "$tmp.deb" | awk 'NF || prev { print } { prev = NF }' | sed -e '$ { /^$/d }' >"$tmp"
  rm -f "$tmp.deb"
  if [ -f "$src_list" ] && cmp -s "$tmp" "$src_list"; then
    rm -f "$tmp"
    return 1
  fi
  install -m 0644 "$tmp" "$src_list"
  rm -f "$tmp"
  echo "[deps] wrote $src_list"
  return 0
}

# libvirt's QEMU driver, run as root, looks up its default 'libvirt-qemu'
# user before reading qemu.conf (libvirt-daemon-system would create it; we
# do not need that package's system services).
ensure_libvirt_user() {
  getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
  getent passwd libvirt-qemu >/dev/null \
    || useradd --system --gid libvirt-qemu --no-create-home --shell /usr/sbin/nologin libvirt-qemu
}

# The API's group: root and its members may use disksweepd's socket
# (0660 root:disksweep). The .deb creates it through sysusers.d.
ensure_api_group() {
  getent group disksweep >/dev/null || groupadd --system disksweep
}

# Only the mariadb image variant (scripts/build-guest-image.sh's default,
# not the quick start's) reads the deb-src entry.
sources_changed=0
[[ $purpose == quickstart ]] || { write_deb_src && sources_changed=1; }

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "[deps] all ${#packages[@]} packages for $purpose on $release present"
  [ "$sources_changed" -eq 0 ] || apt-get update -qq
  ensure_libvirt_user
  ensure_api_group
  exit 0
fi
echo "[deps] installing ($release): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
ensure_libvirt_user
ensure_api_group
echo "[deps] done"
