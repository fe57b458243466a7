#!/bin/bash
# Boots the guest image built by guest/build-image.sh under QEMU (no libvirt)
# once per data-disk bus and checks that the initramfs reached switch_root and
# that the agent in the initramfs said hello on org.disksweep.agent.0 (or,
# GUEST_TEST_REQUIRE=qga, that the Proxmox guest's qemu-ga answers).
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
#                       does not speak the protocol);
#                       "qga": boot as a clone of the PVE template does
#                       (disksweep.guest=qga, the agent port qemu-server
#                       attaches: chardev qga0 + virtserialport
#                       org.qemu.guest_agent.0, the root disk on its own
#                       virtio-scsi controller): qemu-ga must answer
#                       guest-sync and guest-ping, and guest-exec of
#                       /usr/local/bin/disksweep-agent --version must exit 0
#                       (needs python3)
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

# qga_check SOCKET TIMEOUT: talks QGA to the guest behind SOCKET and prints
# "qga ok: VERSION" once qemu-ga answered guest-sync and guest-ping and ran
# the agent through guest-exec; the reason (last line) on failure.
qga_check() {
    python3 - "$1" "$2" <<'QGA_EOF'
import base64, json, socket, sys, time
path, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
buf = b""
def send(sock, command, **arguments):
    sock.sendall(json.dumps({"execute": command, "arguments": arguments}).encode() + b"\n")
def replies(sock):
    global buf
    try:
        buf += sock.recv(65536)
    except socket.timeout:
        return []
    *lines, buf = buf.split(b"\n")
    return [json.loads(line) for line in lines if line.strip(b" \xff")]
def answer(sock, command, **arguments):
    send(sock, command, **arguments)
    while time.monotonic() < deadline:
        for reply in replies(sock):
            if "return" in reply or "error" in reply:
                return reply
    sys.exit(f"no answer to {command}")
sock = socket.socket(socket.AF_UNIX)
while True:
    try:
        sock.connect(path)
        break
    except OSError:
        if time.monotonic() > deadline: sys.exit("no QGA socket")
        time.sleep(0.1)
sock.settimeout(0.5)
# Until qemu-ga runs, requests wait in the port; skip answers to old ones.
synced, ident = False, 0
while not synced and time.monotonic() < deadline:
    ident += 1
    send(sock, "guest-sync", id=ident)
    end = time.monotonic() + 1
    while not synced and time.monotonic() < end:
        synced = any(reply.get("return") == ident for reply in replies(sock))
if not synced: sys.exit("no answer to guest-sync")
if answer(sock, "guest-ping") != {"return": {}}: sys.exit("guest-ping failed")
started = answer(sock, "guest-exec", path="/usr/local/bin/disksweep-agent", arg=["--version"],
                 **{"capture-output": True})
pid = started.get("return", {}).get("pid")
if pid is None: sys.exit(f"guest-exec failed: {started}")
while time.monotonic() < deadline:
    status = answer(sock, "guest-exec-status", pid=pid).get("return", {})
    if status.get("exited"):
        out = base64.b64decode(status.get("out-data", "")).decode(errors="replace").strip()
        if status.get("exitcode") != 0: sys.exit(f"agent --version exited {status.get('exitcode')}: {out}")
        print(f"qga ok: {out}")
        sys.exit(0)
    time.sleep(0.2)
sys.exit("guest-exec did not finish")
QGA_EOF
}

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
    local t0 t_now append="console=ttyS0 panic=-1 no_timer_check"
    local -a root_disk channel_port
    # shellcheck disable=SC2054 # commas are QEMU option syntax
    if [[ $require == qga ]]; then
        # As qemu-server starts a clone of the template that
        # scripts/pve-make-template.sh --from-image makes.
        append+=" disksweep.guest=qga"
        root_disk=(-device virtio-scsi-pci,id=virtioscsi0 -device scsi-hd,bus=virtioscsi0.0,drive=root,serial=disksweep-root)
        channel_port=(-chardev "socket,path=$work/qga-$bus.sock,server=on,wait=off,id=qga0"
            -device virtio-serial,id=qga0 -device virtserialport,chardev=qga0,name=org.qemu.guest_agent.0)
    else
        root_disk=(-device virtio-blk-pci,drive=root,serial=disksweep-root)
        channel_port=(-device virtio-serial-pci
            -chardev "file,id=ch0,path=$channel" -device virtserialport,chardev=ch0,name=org.disksweep.agent.0)
    fi
    t0=$(date +%s.%N)
    qemu-system-x86_64 -machine "q35,accel=$accel" -m 1024 -smp 1 \
        -nodefaults -no-user-config -display none -no-reboot \
        -chardev "file,id=con,path=$console" -serial chardev:con \
        -kernel "$img/$kernel" -initrd "$img/initrd.img" -append "$append" \
        -drive "file=$img/root.img,format=raw,if=none,id=root,readonly=on" "${root_disk[@]}" \
        "${channel_port[@]}" \
        -drive "file=$work/data.raw,format=raw,if=none,id=data" "${data[@]}" \
        >"$work/qemu-$bus.log" 2>&1 &
    qemu_pid=$!
    local checker_pid=
    if [[ $require == qga ]]; then
        qga_check "$work/qga-$bus.sock" "$timeout" >"$channel" 2>&1 &
        checker_pid=$!
    fi

    result=failed detail="timed out after ${timeout} s"
    local deadline=$((SECONDS + timeout)) done=0
    while ((SECONDS < deadline)); do
        if grep -q 'FATAL' "$console"; then
            detail=$(grep -m1 'FATAL' "$console" | tr -d '\r')
            break
        fi
        if [[ $require == switch_root ]] && grep -q '\[disksweep-init\] switch_root' "$console"; then done=1; fi
        if [[ $require == hello ]] && grep -q '"type":"hello"' "$channel"; then done=1; fi
        if [[ $require == qga ]] && grep -q '^qga ok' "$channel"; then done=1; fi
        if [[ -n $checker_pid ]] && ! kill -0 "$checker_pid" 2>/dev/null && ! grep -q '^qga ok' "$channel"; then
            detail="qga: $(tail -n 1 "$channel")"
            break
        fi
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
    if [[ -n $checker_pid ]]; then kill "$checker_pid" 2>/dev/null || true; wait "$checker_pid" 2>/dev/null || true; fi
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
