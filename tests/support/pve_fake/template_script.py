"""The template VM of the fake's initial state, made from the commands that
`scripts/pve-make-template.sh --dry-run` prints (`pve_fake --template-from-script FILE`).

The script, run on a PVE node, makes the template with `install` (the boot
files) and `qm` (create, importdisk, set, template). This module replays a
dry run's output against the fake's cluster the way those commands change a
PVE node, so the simulated PVE holds exactly the template the script makes:

  * `install -D -m MODE SRC DST`: the file SRC is at DST on the node; a
    backend that boots guests reads DST (named in `args`) from SRC;
  * `qm create VMID --KEY VALUE ...`: qemu-server PVE/API2/Qemu.pm
    create_vm, the config as given plus `meta` (new_meta_info_string) and,
    as create_vm adds them when absent, `smbios1` with a uuid
    (generate_smbios1_uuid) and `vmgenid` (generate_uuid);
  * `qm importdisk VMID FILE STORAGE [--format F]`: qemu-server
    PVE/QemuServer/ImportDisk.pm do_import: vdisk_alloc of FILE's size (in
    KiB) on STORAGE in resolve_dst_disk_format's format, the image converted
    into it, the volume registered as `unusedN` (add_unused_volume); here
    the volume's content *is* FILE (the backend is told so; nothing is copied);
  * `qm set VMID --KEY VALUE ...`: PVE/API2/Qemu.pm update_vm: an existing
    volume as a drive gets `size=` (create_disks), and write_vm_config drops
    the `unusedN` that names a volume now in use. A dry run cannot know the
    imported volume's name (the script reads it back from `qm config`'s
    unused0 when it runs) and prints the LVM-style STORAGE:vm-VMID-disk-0:
    a drive naming a volume that does not exist, on the storage of the one
    `unused0` the import made, is that volume (on a dir storage the name is
    VMID/vm-VMID-disk-0.raw);
  * `qm template VMID`: QemuServer.pm template_create: each disk's volume
    becomes a base volume (vm- renamed base-), then `template: 1`.

Any other line, or a `qm` subcommand or option this does not model, is an
error (TemplateScriptError), so a change of the script cannot be silently
half-replayed.
"""

import os
import shlex
import uuid
from dataclasses import dataclass, field

from cluster import DRIVE_KEY, Cluster, Volume
from tasks import TaskFailed, TaskLog

FILE_FORMATS = ("raw", "qcow2", "vmdk")


class TemplateScriptError(Exception):
    """The script's output holds something this replay does not model."""


@dataclass
class TemplatePlan:
    """What the replay made: the template's id, its volumes backed by host
    files ((Volume, source file) pairs; a Volume's volid is its final name,
    after create_base), and the node paths of installed files (DST -> SRC)."""
    vmid: int = 0
    volume_files: list = field(default_factory=list)
    installed: dict = field(default_factory=dict)

    def files_by_volid(self) -> dict:
        return {volume.volid: path for volume, path in self.volume_files}


def load(cluster: Cluster, path: str) -> TemplatePlan:
    with open(path, encoding="utf-8") as handle:
        return replay(cluster, handle.read())


def replay(cluster: Cluster, text: str) -> TemplatePlan:
    """Applies the commands in order on the cluster's first node."""
    plan = TemplatePlan()
    for number, line in enumerate(text.splitlines(), 1):
        words = shlex.split(line)
        if not words:
            continue
        try:
            _run(cluster, plan, words)
        except (TaskFailed, ValueError, KeyError) as error:
            raise TemplateScriptError(f"line {number}: {line.strip()}: {error}") from None
    if not plan.vmid:
        raise TemplateScriptError("no `qm create` in the script's output")
    return plan


def _run(cluster: Cluster, plan: TemplatePlan, words: list) -> None:
    if words[0] == "install":
        _install(plan, words[1:])
        return
    if words[0] != "qm" or len(words) < 3:
        raise TemplateScriptError(f"not a command the replay models: {' '.join(words)}")
    subcommand, vmid, rest = words[1], int(words[2]), words[3:]
    handlers = {"create": _create, "importdisk": _importdisk, "set": _set, "template": _template}
    if subcommand not in handlers:
        raise TemplateScriptError(f"qm {subcommand} is not modelled")
    handlers[subcommand](cluster, plan, vmid, rest)


def _options(words: list) -> dict:
    """`--KEY VALUE` pairs, as qm's CLI handler (pve-common CLIHandler.pm, getopt) reads them."""
    if len(words) % 2 or any(not w.startswith("--") for w in words[::2]):
        raise TemplateScriptError(f"expected --KEY VALUE pairs: {words}")
    return {words[i][2:]: words[i + 1] for i in range(0, len(words), 2)}


def _install(plan: TemplatePlan, words: list) -> None:
    """install [-D] [-m MODE] SRC DST (coreutils install, one file)."""
    files, i = [], 0
    while i < len(words):
        if words[i] == "-m":
            i += 2
            continue
        if words[i].startswith("-"):
            i += 1
            continue
        files.append(words[i])
        i += 1
    if len(files) != 2:
        raise TemplateScriptError(f"install of one file expected: {words}")
    plan.installed[files[1]] = files[0]


def _node(cluster: Cluster) -> str:
    return cluster.nodes[0]


def _remove_existing(cluster: Cluster, vmid: int) -> None:
    """The script's VM replaces one of the same id in the fake's defaults (the stock template)."""
    old = cluster.vms.get(vmid)
    if old is None:
        return
    for volid in cluster.owned_volumes(old):
        cluster.volumes.pop(volid, None)
    del cluster.vms[vmid]


def _create(cluster: Cluster, plan: TemplatePlan, vmid: int, words: list) -> None:
    _remove_existing(cluster, vmid)
    config = dict(_options(words))
    if any(DRIVE_KEY.fullmatch(key) for key in config):
        raise TemplateScriptError("disks in `qm create` are not modelled (the script imports its disk)")
    config["meta"] = "creation-qemu=9.2.0,ctime=0"
    config.setdefault("smbios1", f"uuid={uuid.uuid5(uuid.NAMESPACE_OID, f'disksweep-template-{vmid}')}")
    config.setdefault("vmgenid", str(uuid.uuid5(uuid.NAMESPACE_OID, f'disksweep-vmgenid-{vmid}')))
    cluster.add_vm(vmid, _node(cluster), config)
    plan.vmid = vmid


def _importdisk(cluster: Cluster, plan: TemplatePlan, vmid: int, words: list) -> None:
    if len(words) < 2:
        raise TemplateScriptError("qm importdisk VMID SOURCE STORAGE [--format F]")
    source, storage_id, options = words[0], words[1], _options(words[2:])
    vm = cluster.vms[vmid]
    storage = cluster.storage_on(vm.node, storage_id)
    default, valid = storage.default_format()
    # QemuServer.pm resolve_dst_disk_format: the asked format if the storage has it, else its default.
    wanted = options.get("format")
    fmt = wanted if wanted in valid else default
    size = os.path.getsize(source)
    volid = cluster.alloc_image(storage, vm.node, vmid, fmt, -(-size // 1024))
    volume: Volume = cluster.volumes[volid]
    plan.volume_files.append((volume, source))
    cluster.register_unused(vm, volid)


def _set(cluster: Cluster, plan: TemplatePlan, vmid: int, words: list) -> None:
    vm = cluster.vms[vmid]
    log = TaskLog()
    for key, value in _options(words).items():
        if DRIVE_KEY.fullmatch(key):
            vm.config[key] = cluster.create_disk(vm, key, _imported_volume(cluster, vm, value), log)
        else:
            vm.config[key] = value
    cluster.drop_unused_in_use(vm)


def _imported_volume(cluster: Cluster, vm, drive: str) -> str:
    """The drive with the dry run's guessed volume name replaced by the
    imported one (module doc, `qm set`)."""
    volume, _, options = drive.partition(",")
    unused = vm.config.get("unused0", "")
    if volume in cluster.volumes or not unused or volume.split(":")[0] != unused.split(":")[0]:
        return drive
    return unused + ("," + options if options else "")


def _template(cluster: Cluster, plan: TemplatePlan, vmid: int, words: list) -> None:
    if words:
        raise TemplateScriptError(f"qm template options are not modelled: {words}")
    cluster.make_template(cluster.vms[vmid])
