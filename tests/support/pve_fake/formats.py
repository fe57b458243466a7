"""Named formats of the PVE API schema, as data.

A parameter of the schema names its format in one of two ways:
  * a key table (a dict, e.g. `scsi[n]`): the schema itself says which keys a
    property string may have; schema.py parses those directly;
  * a name (`pve-vmid`, `pve-qm-boot`, ...) that PVE's Perl code registers
    (PVE::JSONSchema::register_format). The schema file does not carry these
    rules, so this module writes them down:
      - VALUE_FORMATS: plain-value checks, with the message PVE dies with
        (learned from pve-common's JSONSchema.pm and qemu-server; the rule is
        restated here, not copied);
      - BORROWED_FORMATS: a named property-string format that the schema
        spells out elsewhere (`pve-qm-ide` is the key table of `ide[n]`);
      - key tables derived from the parameter's own `typetext` in the schema
        (derived_key_table below), with KEY_TABLE_OVERRIDES where the typetext
        says `<enum>` and the description gives the values.
A name in none of these is not checked (the value passes as a string); the
server reports such names once on stderr and docs/proxmox.md lists them.

Every check raises FormatError with PVE's message (which, as in PVE, ends in
a newline); schema.py turns it into "invalid format - MESSAGE".
"""

import ipaddress
import re
from dataclasses import dataclass
from typing import Callable, Optional


class FormatError(Exception):
    """A value does not match its format; str() is PVE's message."""


# ---- plain-value formats --------------------------------------------------------


def _regex(pattern: str, message: str, flags: int = 0) -> Callable[[str], None]:
    """A check that the whole value matches `pattern`; `message` may name {value}."""
    compiled = re.compile(pattern, flags)

    def check(value: str) -> None:
        if not compiled.fullmatch(value):
            raise FormatError(message.format(value=value))

    return check


def _accept(value: str) -> None:
    del value


def _storage_style_id(kind: str) -> Callable[[str], None]:
    """PVE's parse_id: at least two characters, then a letter ... alnum."""
    shape = re.compile(r"[a-z][a-z0-9\-_.]*[a-z0-9]", re.I)

    def check(value: str) -> None:
        if len(value) < 2:
            raise FormatError(f"{kind} ID '{value}' cannot be shorter than 2 characters\n")
        if not shape.fullmatch(value):
            raise FormatError(f"{kind} ID '{value}' contains illegal characters\n")

    return check


_check_volume_id = _regex(r"[a-z][a-z0-9\-_.]*[a-z0-9]:.+", "unable to parse volume ID '{value}'\n",
                          re.I | re.S)


def _check_volume_id_or_absolute_path(value: str) -> None:
    if not value.startswith("/"):
        _check_volume_id(value)


def _check_volume_id_or_qm_path(value: str) -> None:
    if value not in ("none", "cdrom"):
        _check_volume_id_or_absolute_path(value)


def _ip_check(kinds: tuple, message: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            raise FormatError(message) from None
        if type(address) not in kinds:
            raise FormatError(message)

    return check


def _cidr_check(kinds: tuple, message: str) -> Callable[[str], None]:
    """ADDRESS/BITS with the prefix range PVE accepts (8..32 / 8..128)."""
    limits = {ipaddress.IPv4Address: 32, ipaddress.IPv6Address: 128}

    def check(value: str) -> None:
        address, _, bits = value.partition("/")
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            raise FormatError(message) from None
        if type(parsed) not in kinds or not bits.isdigit() or not 7 < int(bits) <= limits[type(parsed)]:
            raise FormatError(message)

    return check


_V4 = (ipaddress.IPv4Address,)
_V6 = (ipaddress.IPv6Address,)
_ANY_IP = _V4 + _V6
_check_dns_name = _regex(r"(([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)",
                         "value does not look like a valid DNS name\n")


def _check_address(value: str) -> None:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        try:
            _check_dns_name(value)
        except FormatError:
            raise FormatError(f"value does not look like a valid address: {value}\n") from None


HOTPLUG_FEATURES = ("network", "disk", "cpu", "memory", "usb", "cloudinit")


def _check_hotplug_features(value: str) -> None:
    """'0', '1' (the default set) or a list of HOTPLUG_FEATURES."""
    compact = re.sub(r"\s+", "", value)
    if compact in ("0", "1"):
        return
    for feature in split_list(compact):
        if feature not in HOTPLUG_FEATURES:
            raise FormatError(f"invalid hotplug feature '{feature}'\n")


VALUE_FORMATS = {
    "string": _accept,
    "urlencoded": _regex(r"[-%a-zA-Z0-9_.!~*'()]*", "invalid urlencoded string: {value}\n"),
    "pve-configid": _regex(r"[a-z][a-z0-9_-]+", "invalid configuration ID '{value}'\n", re.I),
    "pve-storage-id": _storage_style_id("storage"),
    "pve-vmid": _regex(r"[1-9][0-9]{2,8}", "value does not look like a valid VM ID\n"),
    "pve-node": _regex(r"[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?",
                       "value does not look like a valid node name\n"),
    "dns-name": _check_dns_name,
    "pve-tag": _regex(r"[a-z0-9_][a-z0-9_\-+.]*", "invalid characters in tag\n", re.I),
    "disk-size": _regex(r"\d+(\.\d+)?([KMGT](iB)?)?", "value does not look like a valid disk size: {value}\n"),
    "pve-volume-id": _check_volume_id,
    "pve-volume-id-or-absolute-path": _check_volume_id_or_absolute_path,
    "pve-volume-id-or-qm-path": _check_volume_id_or_qm_path,
    "ipv4": _ip_check(_V4, "value does not look like a valid IPv4 address\n"),
    "ipv6": _ip_check(_V6, "value does not look like a valid IPv6 address\n"),
    "ip": _ip_check(_ANY_IP, "value does not look like a valid IP address\n"),
    "CIDRv4": _cidr_check(_V4, "value does not look like a valid IPv4 CIDR network\n"),
    "CIDRv6": _cidr_check(_V6, "value does not look like a valid IPv6 CIDR network\n"),
    "CIDR": _cidr_check(_ANY_IP, "value does not look like a valid CIDR network\n"),
    "address": _check_address,
    "mac-addr": _regex(r"[a-f0-9][02468ace](:[a-f0-9]{2}){5}",
                       "value does not look like a valid unicast MAC address\n", re.I),
    "pve-hotplug-features": _check_hotplug_features,
    "pve-bridge-id": _regex(r"[-_.\w]+", "invalid bridge ID '{value}'\n"),
    # The schema gives bootdisk a pattern as well; the pattern is the check.
    "pve-qm-bootdisk": _accept,
}


def split_list(text: str) -> list:
    """PVE's split_list: NUL-separated if there is a NUL, else , ; and blanks."""
    if "\0" in text:
        return text.split("\0")
    return [item for item in re.split(r"[,;\s]+", text) if item]


# ---- named property-string formats ------------------------------------------------


@dataclass(frozen=True)
class BorrowedFormat:
    """The key table of another parameter of the schema."""
    path: str
    method: str
    parameter: str


BORROWED_FORMATS = {
    # `cdrom` is an alias of ide2 (its description says so): same drive keys.
    "pve-qm-ide": BorrowedFormat("/nodes/{node}/qemu/{vmid}/config", "POST", "ide[n]"),
}

# What a typetext cannot say: enums it writes as `<enum>` (values from the
# option's documentation) and value patterns it only shows (`<[acdn]{1,4}>`).
KEY_TABLE_OVERRIDES = {
    "pve-qm-boot": {
        "legacy": {"type": "string", "optional": 1, "default_key": 1, "pattern": "[acdn]{1,4}"},
    },
    "pve-qm-watchdog": {
        "action": {"type": "string", "optional": 1,
                   "enum": ["reset", "shutdown", "poweroff", "pause", "debug", "none"]},
    },
}

# One item of a typetext, e.g. "[[legacy=]<[acdn]{1,4}>]", "[type=]<sev-type>",
# "[,order=<device[;device...]>]", "device=<...>", "[,up=\\d+]". "[" opens an
# optional item, "[key=]" marks the default key (the value may come without it).
_TYPETEXT_ITEM = re.compile(r"""\s*
    (?P<optional>\[,?)?
    (?:\[(?P<default_key>[\w-]+)=\] | (?P<key>[\w-]+)=)
    (?P<value><[^>]*>|[^\s\]]+)
    \]?""", re.X)
_WORD = re.compile(r"[A-Za-z/][\w/.\-]*")


def _value_schema(spelled: str) -> dict:
    """The schema of one key from how the typetext spells its value."""
    inner = spelled[1:-1] if spelled.startswith("<") else spelled
    if inner == "1|0":
        return {"type": "boolean"}
    if inner == "integer":
        return {"type": "integer"}
    if inner == r"\d+":
        return {"type": "integer", "minimum": 0}
    alternatives = inner.split("|")
    if len(alternatives) > 1 and all(_WORD.fullmatch(a) for a in alternatives):
        return {"type": "string", "enum": alternatives}
    return {"type": "string"}


def derived_key_table(typetext: str) -> Optional[dict]:
    """The key table a property-string typetext describes, or None when the
    typetext is not one ("<string>", "<volume>")."""
    table, position, text = {}, 0, typetext.rstrip()
    while position < len(text):
        match = _TYPETEXT_ITEM.match(text, position)
        if not match:
            return None
        entry = _value_schema(match.group("value"))
        if match.group("default_key"):
            entry["default_key"] = 1
        if match.group("optional"):
            entry["optional"] = 1
        table[match.group("default_key") or match.group("key")] = entry
        position = match.end()
    return table or None


def named_key_table(name: str, typetext: Optional[str]) -> Optional[dict]:
    """The key table of a named property-string format (derived + overrides)."""
    table = derived_key_table(typetext or "")
    if table is None:
        return None
    for key, entry in KEY_TABLE_OVERRIDES.get(name, {}).items():
        table[key] = dict(entry)
    return table
