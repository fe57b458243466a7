#!/bin/bash
# Runs lvm_thin_guest_test inside a TCG guest of the base image: the
# lvm-thin backend's own code against a real dm-thin pool (the host kernel
# here has no device-mapper). Plain QEMU, no libvirt.
#
#   tests/backend/lvm/run-lvm-guest-test.sh IMAGE_DIR BINARY
#
# IMAGE_DIR   the base image's directory (guest/build-image.sh IMAGE_DIR
#             AGENT: lvm2 and thin-provisioning-tools are in its
#             packages.txt); "" means $DISKSWEEP_TEST_IMAGE_DIR
# BINARY      the built lvm_thin_guest_test (static C++ runtime)
#
# The program goes into the guest without rebuilding the image: a small cpio
# holding it as /disksweep-agent is appended to the image's initrd.img. The
# kernel unpacks concatenated archives in order, so this file replaces the
# agent, and the image's unchanged /init starts it as PID 1 after
# switch_root. A blank 1 GiB virtio disk with serial disksweep-lvm-pv (the
# serial the program looks for) becomes the VG's physical volume.
#
# Prints the program's PASS/FAIL lines and its summary. Exit status: 0 when
# every check passed, 77 (skipped) when qemu-system-x86_64 or cpio is
# missing or the image is not built, 1 otherwise, 2 on bad usage.
#
# Environment:
#   LVM_GUEST_TEST_TIMEOUT  seconds for the whole guest run (default 600)
#   LVM_GUEST_TEST_ACCEL    QEMU accelerator (default tcg)
#   LVM_GUEST_TEST_KEEP     directory to keep the console log in
set -euo pipefail

readonly SKIP=77
readonly PV_SERIAL=disksweep-lvm-pv
skip() { echo "SKIPPED: $*"; exit "$SKIP"; }
fail() { echo "run-lvm-guest-test: FAILED: $*" >&2; exit 1; }

[[ $# == 2 ]] || { echo "usage: $0 IMAGE_DIR BINARY" >&2; exit 2; }
image=$1
binary=$2
if [[ -z $image ]]; then
    [[ -n ${DISKSWEEP_TEST_IMAGE_DIR:-} ]] ||
        skip "DISKSWEEP_TEST_IMAGE_DIR is not set (the base guest image is looked for there)"
    image=$DISKSWEEP_TEST_IMAGE_DIR
fi
timeout=${LVM_GUEST_TEST_TIMEOUT:-600}
accel=${LVM_GUEST_TEST_ACCEL:-tcg}

[[ -x $binary ]] || fail "test program not found or not executable: $binary"
for tool in qemu-system-x86_64 cpio; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
done
[[ -f $image/manifest.json ]] ||
    skip "no guest image in $image (build it: guest/build-image.sh $image AGENT)"
# What the program needs from the image: its manifest lists the version of
# each (guest/build-image.sh writes "" for a package not installed).
for package in lvm2 thin-provisioning-tools; do
    grep -Eq "\"$package\": \"[^\"]+\"" "$image/manifest.json" ||
        fail "the image in $image has no $package (see its manifest.json)"
done
kernel=$image/vmlinux
[[ -f $kernel ]] || kernel=$image/vmlinuz
for f in "$kernel" "$image/initrd.img" "$image/root.img"; do
    [[ -f $f ]] || fail "the image in $image is incomplete: $f is missing"
done

work=$(mktemp -d /tmp/lvm-guest-test.XXXXXX)
qemu_pid=
cleanup() {
    if [[ -n $qemu_pid ]]; then kill "$qemu_pid" 2>/dev/null || true; wait "$qemu_pid" 2>/dev/null || true; fi
    if [[ -n ${LVM_GUEST_TEST_KEEP:-} ]] && mkdir -p "$LVM_GUEST_TEST_KEEP"; then
        cp "$work"/*.log "$LVM_GUEST_TEST_KEEP"/ 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# initrd = the image's archive, zero padding to a 4-byte boundary (the
# kernel looks for an uncompressed cpio header only there), our archive.
mkdir "$work/overlay"
install -m 0755 "$binary" "$work/overlay/disksweep-agent"
(cd "$work/overlay" && echo disksweep-agent | cpio --quiet -o -H newc -R 0:0) >"$work/overlay.cpio"
cp "$image/initrd.img" "$work/initrd.img"
padding=$(((4 - $(stat -c %s "$work/initrd.img") % 4) % 4))
head -c "$padding" /dev/zero >>"$work/initrd.img"
cat "$work/overlay.cpio" >>"$work/initrd.img"

truncate -s 1G "$work/pv.raw"
console=$work/console.log
: >"$console"
started=$SECONDS
# shellcheck disable=SC2054 # commas are QEMU option syntax
qemu-system-x86_64 -machine "q35,accel=$accel" -m 1024 -smp 1 \
    -nodefaults -no-user-config -display none -no-reboot \
    -chardev "file,id=con,path=$console" -serial chardev:con \
    -kernel "$kernel" -initrd "$work/initrd.img" -append "console=ttyS0 panic=-1 quiet no_timer_check" \
    -drive "file=$image/root.img,format=raw,if=none,id=root,readonly=on" \
    -device virtio-blk-pci,drive=root,serial=disksweep-root \
    -drive "file=$work/pv.raw,format=raw,if=none,id=pv,discard=unmap" \
    -device "virtio-blk-pci,drive=pv,serial=$PV_SERIAL" \
    >"$work/qemu.log" 2>&1 &
qemu_pid=$!

# The guest powers off when the program ends (QEMU exits); the initramfs
# powers off too after a FATAL line.
outcome=
while kill -0 "$qemu_pid" 2>/dev/null; do
    if ((SECONDS - started >= timeout)); then
        outcome="timed out after ${timeout} s"
        break
    fi
    sleep 1
done
if [[ -z $outcome ]]; then
    wait "$qemu_pid" || outcome="QEMU failed: $(tail -n 3 "$work/qemu.log" | tr '\n' ' ')"
    qemu_pid=
fi
elapsed=$((SECONDS - started))

tr -d '\r' <"$console" | grep -E '^(PASS|FAIL) ' || true
summary=$(tr -d '\r' <"$console" | grep -E '^lvm_thin_guest_test: [0-9]+ passed, [0-9]+ failed$' | tail -n 1 || true)
passes=$(tr -d '\r' <"$console" | grep -c '^PASS ' || true)
fails=$(tr -d '\r' <"$console" | grep -c '^FAIL ' || true)
if [[ -z $outcome ]]; then
    if [[ -z $summary ]]; then
        outcome="the guest stopped without the program's summary line"
    elif [[ $summary != "lvm_thin_guest_test: $passes passed, 0 failed" || $fails != 0 || $passes == 0 ]]; then
        outcome="$summary"
    fi
fi
if [[ -n $outcome ]]; then
    echo "---- console, last lines:"
    tr -d '\r' <"$console" | tail -n 40
    fail "$outcome (${elapsed} s)"
fi
echo "$summary (guest run ${elapsed} s, accel $accel)"
