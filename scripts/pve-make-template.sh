#!/usr/bin/env bash
# Makes the Proxmox VE guest template disksweep clones for its runs
# (docs/proxmox.md, "Guest template"). Run it as root on a PVE 8 node.
#
#   scripts/pve-make-template.sh --image debian-12-genericcloud-amd64.qcow2 \
#       --agent build/guestagent/disksweep-agent [--vmid 9000] [--storage local-lvm] \
#       [--bridge vmbr0] [--name disksweep-template] [--dry-run]
#
# What it does, in order:
#  1. customises a copy of a Debian 12 cloud image (virt-customize, from
#     libguestfs-tools): installs qemu-guest-agent, fio, the filesystem tools,
#     MariaDB + sysbench + sql-bench's Perl modules (the workload kinds'
#     programs), copies disksweep-agent to /usr/local/bin, enables
#     qemu-guest-agent and leaves MariaDB disabled (the agent starts its own
#     server on the data disk);
#  2. exports it as qcow2 (qemu-img convert);
#  3. qm create: the VM with the QEMU guest agent enabled, a
#     virtio-scsi-single controller, a serial console, cloud-init off;
#  4. qm importdisk + qm set: the image becomes scsi0, the boot disk;
#  5. qm template.
# --dry-run prints each command instead of running it (and checks nothing
# on this machine): tests/proxmox/template_script_test.sh reads that output.
#
# Then: give disksweepd a `host = proxmox:NAME,...,template_vmid=VMID` line
# and an API token (docs/proxmox.md, "The API token").
set -euo pipefail

vmid=9000
storage=local-lvm
bridge=vmbr0
name=disksweep-template
image=""
agent=""
dry_run=0

usage() {
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
        --vmid) vmid=$2; shift 2 ;;
        --storage) storage=$2; shift 2 ;;
        --bridge) bridge=$2; shift 2 ;;
        --name) name=$2; shift 2 ;;
        --image) image=$2; shift 2 ;;
        --agent) agent=$2; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h|--help) usage ;;
        *) echo "pve-make-template: unknown argument '$1'" >&2; usage ;;
    esac
done
[ -n "$image" ] || { echo "pve-make-template: --image is required" >&2; usage; }
[ -n "$agent" ] || { echo "pve-make-template: --agent is required" >&2; usage; }
[[ $vmid =~ ^[1-9][0-9]{2,8}$ ]] || { echo "pve-make-template: --vmid must be 100..999999999" >&2; exit 2; }

run() {
    if [ "$dry_run" = 1 ]; then
        printf '%q ' "$@"
        printf '\n'
    else
        "$@"
    fi
}

if [ "$dry_run" = 0 ]; then
    for tool in qm virt-customize qemu-img; do
        command -v "$tool" >/dev/null || {
            echo "pve-make-template: $tool is missing (qm: run on a PVE node; virt-customize: apt install libguestfs-tools)" >&2
            exit 1
        }
    done
    [ -f "$image" ] || { echo "pve-make-template: no image at $image" >&2; exit 1; }
    [ -x "$agent" ] || { echo "pve-make-template: $agent is not an executable" >&2; exit 1; }
fi

if [ "$dry_run" = 1 ]; then
    work=/var/tmp/disksweep-template.XXXXXX
else
    work=$(mktemp -d /var/tmp/disksweep-template.XXXXXX)
    trap 'rm -rf "$work"' EXIT
fi
customised="$work/disksweep-guest.qcow2"

# 1-2. The guest's programs, in a copy of the image, exported as qcow2.
packages=qemu-guest-agent,fio,e2fsprogs,xfsprogs,btrfs-progs,util-linux,mariadb-server,mariadb-client,sysbench,libdbi-perl,libdbd-mariadb-perl
run qemu-img convert -O qcow2 "$image" "$customised"
run virt-customize -a "$customised" \
    --install "$packages" \
    --copy-in "$agent:/usr/local/bin" \
    --run-command 'chmod 0755 /usr/local/bin/disksweep-agent' \
    --run-command 'systemctl enable qemu-guest-agent' \
    --run-command 'systemctl disable mariadb' \
    --truncate /etc/machine-id

# 3. The VM: the guest agent on (agent/exec needs it), the controller the
# data disks of scsi-single sweeps share with nothing, a serial console.
run qm create "$vmid" --name "$name" --ostype l26 --memory 1024 --cores 1 \
    --net0 "virtio,bridge=$bridge" --scsihw virtio-scsi-single \
    --agent enabled=1 --serial0 socket --vga serial0

# 4. The image becomes the boot disk.
run qm importdisk "$vmid" "$customised" "$storage" --format raw
run qm set "$vmid" --scsi0 "$storage:vm-$vmid-disk-0" --boot order=scsi0

# 5. A template: runs get linked clones of it.
run qm template "$vmid"
[ "$dry_run" = 1 ] || echo "pve-make-template: template $vmid ($name) on $storage is ready" >&2
