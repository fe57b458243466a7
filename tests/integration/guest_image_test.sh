#!/bin/bash
# Boots the guest image built by guest/build-image.sh under QEMU (no libvirt)
# once per data-disk bus and checks that the initramfs reached switch_root and
# that the agent in the initramfs said hello on org.disksweep.agent.0.
#
#   tests/integration/guest_image_test.sh IMAGE_DIR
#
# Environment:
#   GUEST_TEST_BUSES    data disk buses to boot with (default "scsi";
#                       any of: virtio-blk scsi sata)
#   GUEST_TEST_REQUIRE  "hello" (default): the agent must send
#                       {"v":2,"type":"hello"} on the channel;
#                       "switch_root": only the initramfs must hand over to
#                       the agent (for images built with a stand-in that
#                       does not speak the protocol)
#   GUEST_TEST_KERNEL   vmlinux (default when present: PVH ELF, boots faster)
#                       or vmlinuz (the bzImage)
#   GUEST_TEST_ACCEL    QEMU accelerator (default tcg: /dev/kvm here does not
#                       run guests)
#   GUEST_TEST_TIMEOUT  seconds per boot (default 120)
#   GUEST_TEST_KEEP     directory to keep console and channel logs in
# Exit status 0 when every boot passed. Needs qemu-system-x86_64, no root.
set -euo pipefail

[[ $# == 1 ]] || { echo "usage: $0 IMAGE_DIR" >&2; exit 2; }
img=$(cd "$1" && pwd)
buses=${GUEST_TEST_BUSES:-scsi}
require=${GUEST_TEST_REQUIRE:-hello}
accel=${GUEST_TEST_ACCEL:-tcg}
timeout=${GUEST_TEST_TIMEOUT:-120}
kernel=${GUEST_TEST_KERNEL:-}
if [[ -z $kernel ]]; then if [[ -f $1/vmlinux ]]; then kernel=vmlinux; else kernel=vmlinuz; fi; fi

for f in "$kernel" initrd.img root.img manifest.json; do
    [[ -f $img/$f ]] || { echo "guest_image_test: missing $img/$f (run guest/build-image.sh)" >&2; exit 1; }
done
command -v qemu-system-x86_64 >/dev/null || { echo "guest_image_test: qemu-system-x86_64 not installed" >&2; exit 1; }

work=$(mktemp -d /tmp/guest-image-test.XXXXXX)
qemu_pid=
cleanup() {
    if [[ -n $qemu_pid ]]; then kill "$qemu_pid" 2>/dev/null || true; wait "$qemu_pid" 2>/dev/null || true; fi
    if [[ -n ${GUEST_TEST_KEEP:-} ]]; then mkdir -p "$GUEST_TEST_KEEP" && cp "$work"/*.log "$GUEST_TEST_KEEP"/ 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

truncate -s 1G "$work/data.raw"

# boot BUS: one guest; sets $result and $detail.
boot() {
    local bus=$1 console=$work/console-$1.log channel=$work/channel-$1.log
    local -a data
    # shellcheck disable=SC2054 # commas are QEMU option syntax
    case $bus in
    virtio-blk) data=(-device virtio-blk-pci,drive=data,serial=disksweep-data) ;;
    scsi) data=(-device virtio-scsi-pci,id=scsi0 -device scsi-hd,bus=scsi0.0,drive=data,serial=disksweep-data,rotation_rate=1) ;;
    sata) data=(-device ide-hd,bus=ide.1,drive=data,serial=disksweep-data,rotation_rate=1) ;;
    *) result=failed detail="unknown bus $bus"; return ;;
    esac
    : >"$console"
    : >"$channel"
    local t0 t_now
    t0=$(date +%s.%N)
    qemu-system-x86_64 -machine "q35,accel=$accel" -m 1024 -smp 1 \
        -nodefaults -no-user-config -display none -no-reboot \
        -chardev "file,id=con,path=$console" -serial chardev:con \
        -kernel "$img/$kernel" -initrd "$img/initrd.img" -append "console=ttyS0 panic=-1" \
        -drive "file=$img/root.img,format=raw,if=none,id=root,readonly=on" \
        -device virtio-blk-pci,drive=root,serial=disksweep-root \
        -device virtio-serial-pci \
        -chardev "file,id=ch0,path=$channel" -device virtserialport,chardev=ch0,name=org.disksweep.agent.0 \
        -drive "file=$work/data.raw,format=raw,if=none,id=data" "${data[@]}" \
        >"$work/qemu-$bus.log" 2>&1 &
    qemu_pid=$!

    result=failed detail="timed out after ${timeout} s"
    local deadline=$((SECONDS + timeout)) done=0
    while ((SECONDS < deadline)); do
        if grep -q 'FATAL' "$console"; then
            detail=$(grep -m1 'FATAL' "$console" | tr -d '\r')
            break
        fi
        if [[ $require == switch_root ]] && grep -q '\[disksweep-init\] switch_root' "$console"; then done=1; fi
        if [[ $require == hello ]] && grep -q '"type":"hello"' "$channel"; then done=1; fi
        if ((done)); then
            t_now=$(date +%s.%N)
            result=passed
            detail=$(awk -v a="$t0" -v b="$t_now" -v r="$require" 'BEGIN { printf "%s after %.1f s wall", r, b - a }')
            detail+=" ($(grep -o 'switch_root at [0-9.]* s' "$console" | head -1) guest uptime)"
            break
        fi
        if ! kill -0 "$qemu_pid" 2>/dev/null; then
            detail="guest stopped before $require ($(tail -n 3 "$work/qemu-$bus.log" | tr '\n' ' '))"
            break
        fi
        sleep 0.2
    done
    kill "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
    qemu_pid=
    if [[ $result != passed ]]; then
        echo "---- console ($bus), last lines:"
        tail -n 25 "$console" | tr -d '\r'
    fi
}

passed=0 failed=0
for bus in $buses; do
    boot "$bus"
    echo "guest_image_test: $bus ($kernel, $accel): $result: $detail"
    if [[ $result == passed ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "guest_image_test: $passed passed, $failed failed"
((failed == 0))
