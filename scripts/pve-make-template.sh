#!/usr/bin/env bash
# Makes the Proxmox VE guest template disksweep clones for its runs
# (docs/proxmox.md, "Guest template"). Run it as root on a PVE 8 node.
#
#   scripts/pve-make-template.sh --from-image IMAGE_DIR [--boot-dir DIR] [common options]
#   scripts/pve-make-template.sh --image debian-12-genericcloud-amd64.qcow2 \
#       --agent build/guestagent/disksweep-agent [--bridge vmbr0] [common options]
#   common options: [--vmid 9000] [--storage local-lvm] [--name disksweep-template] [--dry-run]
#
# --from-image IMAGE_DIR: the project's own guest image (scripts/build-guest-image.sh;
# nothing is downloaded, so it works on an air-gapped cluster):
#  1. copies IMAGE_DIR's kernel (vmlinux, else vmlinuz) and initrd.img to
#     --boot-dir (default /var/lib/vz/snippets), named after the image's
#     input hash so a newer image never changes an older template's boot;
#  2. qm create: QEMU guest agent on, virtio-scsi-single, a serial console,
#     no network, and `args` = direct kernel boot of those files with
#     disksweep.guest=qga (the initramfs runs qemu-ga instead of the agent);
#  3. qm importdisk of root.img (raw) + qm set: scsi0 with serial
#     disksweep-root, the disk the initramfs mounts read-only as the root;
#  4. qm template.
#  The agent is in the image's initramfs; --agent is refused here.
#
# --image CLOUD_IMAGE --agent AGENT: a Debian 12 cloud image instead:
#  1. customises a copy (virt-customize, from libguestfs-tools): installs
#     qemu-guest-agent, fio, the filesystem tools, MariaDB + sysbench +
#     sql-bench's Perl modules (the workload kinds' programs), copies
#     disksweep-agent to /usr/local/bin, enables qemu-guest-agent and leaves
#     MariaDB disabled (the agent starts its own server on the data disk);
#  2. exports it as qcow2 (qemu-img convert);
#  3. qm create: the VM with the QEMU guest agent enabled, a
#     virtio-scsi-single controller, a serial console, net0 on --bridge;
#  4. qm importdisk + qm set: the image becomes scsi0, the boot disk;
#  5. qm template.
#
# --dry-run prints each command instead of running it and checks nothing on
# the node (--from-image still reads IMAGE_DIR/manifest.json):
# tests/proxmox/template_script_test.py reads that output.
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
from_image=""
boot_dir=/var/lib/vz/snippets
dry_run=0

die() { echo "pve-make-template: $*" >&2; exit 1; }

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
        --from-image) from_image=$2; shift 2 ;;
        --boot-dir) boot_dir=$2; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h|--help) usage ;;
        *) echo "pve-make-template: unknown argument '$1'" >&2; usage ;;
    esac
done
if [ -n "$from_image" ]; then
    [ -z "$image" ] || { echo "pve-make-template: --from-image and --image exclude each other" >&2; usage; }
    [ -z "$agent" ] || { echo "pve-make-template: --from-image takes no --agent: the image's initramfs carries it (rebuild the image to change it)" >&2; usage; }
else
    [ -n "$image" ] || { echo "pve-make-template: --from-image or --image is required" >&2; usage; }
    [ -n "$agent" ] || { echo "pve-make-template: --agent is required with --image" >&2; usage; }
fi
[[ $vmid =~ ^[1-9][0-9]{2,8}$ ]] || { echo "pve-make-template: --vmid must be 100..999999999" >&2; exit 2; }
# The boot files' paths go into `args`, which qemu-server splits like a
# shell (pve-common src/PVE/Tools.pm, split_args: shellwords): keep them
# free of anything that would need quoting.
[[ $boot_dir =~ ^/[A-Za-z0-9._/-]*$ ]] || { echo "pve-make-template: --boot-dir must be an absolute path of [A-Za-z0-9._/-]" >&2; exit 2; }

run() {
    if [ "$dry_run" = 1 ]; then
        printf '%q ' "$@"
        printf '\n'
    else
        "$@"
    fi
}

# require_tools TOOL...: on a real run, every TOOL must be installed.
require_tools() {
    [ "$dry_run" = 0 ] || return 0
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null ||
            die "$tool is missing (qm: run on a PVE node; virt-customize: apt install libguestfs-tools)"
    done
}

# imported_volume: the volume `qm importdisk` just added as unused0. Its
# name depends on the storage type (vm-VMID-disk-0 on LVM/ZFS/RBD,
# VMID/vm-VMID-disk-0.raw on a directory storage), so a real run reads it
# back from the config; a dry run prints the LVM-style name.
imported_volume() {
    if [ "$dry_run" = 1 ]; then
        echo "$storage:vm-$vmid-disk-0"
        return
    fi
    local volume
    volume=$(qm config "$vmid" | sed -n 's/^unused0: //p')
    [ -n "$volume" ] || die "qm importdisk left no unused0 in VM $vmid's config"
    echo "$volume"
}

# json_field FILE KEY: the string value of "KEY": "..." in our manifest
# (written by guest/build-image.sh: one key per line, no escapes in these).
json_field() {
    sed -n "s/.*\"$2\": \"\\([^\"]*\\)\".*/\\1/p" "$1" | head -n 1
}

make_from_cloud_image() {
    require_tools qm virt-customize qemu-img
    if [ "$dry_run" = 0 ]; then
        [ -f "$image" ] || die "no image at $image"
        [ -x "$agent" ] || die "$agent is not an executable"
    fi
    # work is global: the EXIT trap runs after this function has returned.
    local customised
    if [ "$dry_run" = 1 ]; then
        work=/var/tmp/disksweep-template.XXXXXX
    else
        work=$(mktemp -d /var/tmp/disksweep-template.XXXXXX)
        trap 'rm -rf "$work"' EXIT
    fi
    customised="$work/disksweep-guest.qcow2"

    # 1-2. The guest's programs, in a copy of the image, exported as qcow2.
    local packages=qemu-guest-agent,fio,e2fsprogs,xfsprogs,btrfs-progs,util-linux,mariadb-server,mariadb-client,sysbench,libdbi-perl,libdbd-mariadb-perl
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
    local volume
    volume=$(imported_volume)
    run qm set "$vmid" --scsi0 "$volume" --boot order=scsi0
}

make_from_project_image() {
    require_tools qm install
    local dir=${from_image%/}
    local manifest=$dir/manifest.json kernel initrd=$dir/initrd.img hash qga
    # manifest.json is written last by guest/build-image.sh: when it is
    # there, the other files belong together.
    [ -f "$manifest" ] || die "no $manifest: build the image with scripts/build-guest-image.sh"
    qga=$(json_field "$manifest" qemu-guest-agent)
    [ -n "$qga" ] || die "the image in $dir has no qemu-guest-agent (built before it was added to guest/packages.txt): rebuild it"
    hash=$(json_field "$manifest" input_hash)
    [[ $hash =~ ^[0-9a-f]{64}$ ]] || die "$manifest has no input_hash"
    # vmlinux (PVH ELF) skips the bzImage setup and decompression (about
    # 10 s under TCG, guest/README.md); vmlinuz when it could not be made.
    kernel=$dir/vmlinux
    [ -f "$kernel" ] || kernel=$dir/vmlinuz
    for f in "$kernel" "$initrd" "$dir/root.img"; do
        [ -f "$f" ] || die "missing $f: rebuild the image"
    done

    # 1. Where every node's QEMU reads them: args paths are node-local, so
    # a clone started on another node needs the same files at the same path
    # there (copy them, or give --boot-dir on shared storage).
    local tag=disksweep-${hash:0:16} boot_kernel boot_initrd
    boot_kernel=$boot_dir/$tag-${kernel##*/}
    boot_initrd=$boot_dir/$tag-initrd.img
    run install -D -m 0644 "$kernel" "$boot_kernel"
    run install -D -m 0644 "$initrd" "$boot_initrd"

    # 2. Direct kernel boot through `args`. Only root@pam may set `args`
    # (qemu-server PVE/API2/Qemu.pm, $check_vm_modify_config_perm: returns
    # early for root@pam, otherwise "only root can set 'args' config"): this
    # script runs as root on the node. The daemon's API token never sets it:
    # clone_vm copies every option that is not a disk, net or snapshot key
    # as it is ("copy everything else", no per-option permission check), and
    # its config POST names only the options it changes.
    # console=ttyS0 is serial0 (qm terminal); panic=-1 resets on a kernel
    # panic, which PVE shows as a VM that keeps running without an agent:
    # the daemon's agent wait times out and it stops the VM. no_timer_check:
    # no boot-time IO-APIC timer test, which panics a TCG guest on a busy host
    # (daemon/backends/hypervisor/libvirt/domain_xml.cpp, kernel_cmdline).
    local append="console=ttyS0 panic=-1 quiet no_timer_check disksweep.guest=qga"
    run qm create "$vmid" --name "$name" --ostype l26 --memory 1024 --cores 1 \
        --scsihw virtio-scsi-single --agent enabled=1 --serial0 socket --vga serial0 \
        --args "-kernel $boot_kernel -initrd $boot_initrd -append '$append'"

    # 3. The root disk: the initramfs finds it by its serial (qemu-server
    # PVE/QemuServer/Drive.pm: scsi drives take serial=, up to 20 bytes).
    run qm importdisk "$vmid" "$dir/root.img" "$storage" --format raw
    local volume
    volume=$(imported_volume)
    run qm set "$vmid" --scsi0 "$volume,serial=disksweep-root" --boot order=scsi0
}

if [ -n "$from_image" ]; then
    make_from_project_image
else
    make_from_cloud_image
fi
# The last step: a template, of which runs get linked clones.
run qm template "$vmid"
[ "$dry_run" = 1 ] || echo "pve-make-template: template $vmid ($name) on $storage is ready" >&2
