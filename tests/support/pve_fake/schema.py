"""The PVE API schema and PVE's parameter verification.

ApiSchema loads pve-api-schema.json (pve-docs' apidata.js: the tree of every
path, each with its methods and their parameter schemas), finds the method a
request names, and checks the request's parameters the way
PVE::JSONSchema::validate does, with PVE's messages:

  * a parameter the method does not define ("property is not defined in
    schema and the schema does not allow additional properties");
  * a required one missing ("property is missing and it is not optional");
  * types of form values: boolean is exactly 0 or 1, integer and number as
    PVE's regexes say, arrays from repeated keys;
  * format, pattern (anchored), maxLength/minLength, minimum/maximum, enum;
  * property strings (`scsi1=local-lvm:4,cache=unsafe`) parsed against the
    key table the schema gives, or a named format (formats.py); a wrong key
    or value is reported under the parameter's name as "invalid format - ...".

Parameters named NAME[n] in the schema stand for NAME0, NAME1, ... up to the
limit their description states ("n is 0 to 30") or, where it does not,
INDEXED_PARAMETER_LIMITS (PVE's constants, e.g. 32 network devices).
"""

import gzip
import json
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

import formats
from formats import FormatError

# NAME[n] parameters whose description does not state the range: PVE's
# limits (qemu-server / pve-container constants), highest index allowed.
INDEXED_PARAMETER_LIMITS = {
    "net": 31, "unused": 255, "hostpci": 15, "ipconfig": 31, "numa": 7,
    "virtiofs": 9, "link": 7, "mp": 255, "dev": 255, "acmedomain": 4,
}

NOT_DEFINED = "property is not defined in schema and the schema does not allow additional properties"
MISSING = "property is missing and it is not optional"

_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?")
_INDEXED = re.compile(r"(?P<prefix>.+)\[n\]$")
_RANGE_IN_DESCRIPTION = re.compile(r"n is 0 to (\d+)")


def perl_regex(pattern: str) -> "re.Pattern":
    """A schema pattern (Perl) as a Python regex: (?^:...) groups are Perl's
    stringified qr// and mean "default flags"."""
    return re.compile(pattern.replace("(?^i:", "(?i:").replace("(?^:", "(?:"))


@dataclass
class ApiMethod:
    path: str                      # the schema's template, /nodes/{node}/...
    method: str                    # GET, POST, PUT, DELETE
    info: dict                     # the schema's entry, verbatim
    properties: dict = field(default_factory=dict)   # exact parameter names
    indexed: list = field(default_factory=list)      # (prefix, highest, schema)
    additional: bool = False

    @classmethod
    def from_info(cls, path: str, method: str, info: dict) -> "ApiMethod":
        parameters = info.get("parameters", {})
        result = cls(path, method, info, additional=bool(parameters.get("additionalProperties")))
        for name, schema in parameters.get("properties", {}).items():
            indexed = _INDEXED.match(name)
            if indexed:
                result.indexed.append((indexed.group("prefix"), _highest_index(indexed.group("prefix"), schema),
                                       schema))
            else:
                result.properties[name] = schema
        return result

    def schema_of(self, name: str) -> Optional[dict]:
        if name in self.properties:
            return self.properties[name]
        for prefix, highest, schema in self.indexed:
            index = name[len(prefix):]
            if name.startswith(prefix) and index.isdigit() and str(int(index)) == index \
                    and int(index) <= highest:
                return schema
        return None

    def is_array(self, name: str) -> bool:
        schema = self.schema_of(name)
        return bool(schema) and schema.get("type") == "array"

    @property
    def returns(self) -> dict:
        return self.info.get("returns", {})


def _highest_index(prefix: str, schema: dict) -> int:
    stated = _RANGE_IN_DESCRIPTION.search(schema.get("description", ""))
    return int(stated.group(1)) if stated else INDEXED_PARAMETER_LIMITS.get(prefix, 255)


class ApiSchema:
    """The API tree: path templates, their methods, and format look-ups."""

    def __init__(self, tree: list):
        self._tree = tree
        self._methods = {}
        self._walk(tree)

    @classmethod
    def load(cls, path: str) -> "ApiSchema":
        # The repository keeps the schema gzipped (tests/data/pve/).
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            return cls(json.load(handle))

    def _walk(self, nodes: list) -> None:
        for node in nodes:
            for method, info in node.get("info", {}).items():
                self._methods[(node["path"], method)] = ApiMethod.from_info(node["path"], method, info)
            self._walk(node.get("children", []))

    def resolve(self, segments: list) -> Optional[tuple]:
        """(template, {param: value}) for decoded path segments, or None.
        Literal segments win over {templates}, as in PVE's router."""
        return self._resolve(self._tree, segments, {})

    def _resolve(self, nodes: list, segments: list, params: dict) -> Optional[tuple]:
        if not segments:
            return None
        head, rest = segments[0], segments[1:]
        ordered = sorted(nodes, key=lambda n: _last_segment(n["path"]).startswith("{"))
        for node in ordered:
            last = _last_segment(node["path"])
            if last.startswith("{"):
                if not head:
                    continue
                found = self._descend(node, rest, {**params, last[1:-1]: head})
            elif last == head:
                found = self._descend(node, rest, params)
            else:
                continue
            if found:
                return found
        return None

    def _descend(self, node: dict, rest: list, params: dict) -> Optional[tuple]:
        if not rest:
            return node["path"], params
        return self._resolve(node.get("children", []), rest, params)

    def method(self, template: str, method: str) -> Optional[ApiMethod]:
        return self._methods.get((template, method))

    def methods_of(self, template: str) -> list:
        return sorted(m for (p, m) in self._methods if p == template)

    def parameter_schema(self, template: str, method: str, parameter: str) -> Optional[dict]:
        found = self.method(template, method)
        return found.schema_of(parameter.replace("[n]", "0")) if found else None


def _last_segment(path: str) -> str:
    return path.rsplit("/", 1)[-1]


# ---- parameter verification ---------------------------------------------------


class Validator:
    """PVE's parameter checks over one schema. `on_unchecked(name)` is told of
    each named format the fake has no rule for (the value then passes)."""

    def __init__(self, schema: ApiSchema, on_unchecked: Callable[[str], None]):
        self._schema = schema
        self._on_unchecked = on_unchecked

    def validate(self, method: ApiMethod, params: dict) -> dict:
        """{parameter: message} for every problem; empty when all is well.
        pve-common src/PVE/JSONSchema.pm, check_object: every property of the
        schema is checked (a None value is Perl's undef: missing), then every
        parameter sent (one the schema lacks is an error even when its value
        is undef)."""
        errors = {}
        for name, schema in method.properties.items():
            self.check_prop(params.get(name), schema, name, errors)
        for name, value in params.items():
            schema = method.schema_of(name)
            if schema is None:
                if not method.additional:
                    _add_error(errors, name, NOT_DEFINED)
                continue
            if name not in method.properties:   # NAME[n]: a property of its own in PVE's schema
                self.check_prop(value, schema, name, errors)
            _check_requires("", name, schema, params, errors)
        return errors

    def check_prop(self, value, schema: dict, path: str, errors: dict) -> None:
        if schema.get("alias"):
            return
        if value is None:
            if not schema.get("optional"):
                _add_error(errors, path, MISSING)
            return
        if not _check_type(path, schema.get("type"), value, errors):
            return
        if isinstance(value, list):
            for index, item in enumerate(value):
                self.check_prop(item, _item_schema(schema), f"{path}[{index}]", errors)
            return
        if _perl_reference_type(value):
            return  # a JSON boolean (or object): check_prop checks no format of a reference
        for check in (self._check_format, _check_pattern, _check_length, _check_range, _check_enum):
            if not check(value, schema, path, errors):
                return

    def _check_format(self, value: str, schema: dict, path: str, errors: dict) -> bool:
        fmt = schema.get("format")
        if not fmt:
            return True
        try:
            if isinstance(fmt, dict):
                self.parse_property_string(fmt, value, path)
            else:
                self._check_named_format(fmt, value, path, schema)
        except FormatError as error:
            _add_error(errors, path, f"invalid format - {error}")
            return False
        return True

    def _check_named_format(self, name: str, value: str, path: str, owner: dict) -> None:
        if name == "regex":
            return
        base, kind = _split_format_name(name)
        check = formats.VALUE_FORMATS.get(base)
        if check:
            items = formats.split_list(value) if kind == "list" else [value] if value or kind != "opt" else []
            for item in items:
                check(item)
            return
        table = self.named_key_table(name, owner)
        if table is not None:
            self.parse_property_string(table, value, path)
            return
        self._on_unchecked(name)

    def named_key_table(self, name: str, owner: dict) -> Optional[dict]:
        """The key table of a named property-string format, if the fake knows one."""
        borrowed = formats.BORROWED_FORMATS.get(name)
        if borrowed:
            found = self._schema.parameter_schema(borrowed.path, borrowed.method, borrowed.parameter)
            return found.get("format") if found else None
        return formats.named_key_table(name, owner.get("typetext"))

    def parse_property_string(self, table: dict, text: str, path: str) -> dict:
        """KEY=VALUE,... (and the default key's bare value) as a dict, checked
        against `table`; raises FormatError with PVE's message."""
        parsed = _split_property_string(table, text)
        errors = {}
        for key, schema in table.items():
            self.check_prop(parsed.get(key), schema, f"{path}.{key}" if path else key, errors)
        for key in parsed:
            _check_requires(path, key, table.get(key, {}), parsed, errors)
        if errors:
            details = "".join(f"{key}: {message}\n" for key, message in sorted(errors.items()))
            raise FormatError("format error\n" + details)
        return parsed


def _split_format_name(name: str) -> tuple:
    match = re.fullmatch(r"(.*?)(?:-(list|opt))?", name)
    return match.group(1), match.group(2) or "none"


def _parse_boolean(text: str) -> Optional[str]:
    lowered = text.lower()
    if lowered in ("1", "on", "yes", "true"):
        return "1"
    if lowered in ("0", "off", "no", "false"):
        return "0"
    return None


def _split_property_string(table: dict, text: str) -> dict:
    """The parsing half of PVE's parse_property_string (checks come after)."""
    result, default_key = {}, None
    for part in text.split(","):
        if not part.strip():
            continue
        keyed = re.fullmatch(r"([^=]+)=(.+)", part, re.S)
        if keyed:
            key, value = keyed.group(1), keyed.group(2)
            if key in result:
                raise FormatError(f"duplicate key in comma-separated list property: {key}\n")
            schema = table.get(key)
            if schema and schema.get("alias"):
                if schema.get("keyAlias"):
                    if schema["keyAlias"] in result:
                        raise FormatError(f"key alias '{schema['keyAlias']}' is already defined\n")
                    result[schema["keyAlias"]] = key
                key = schema["alias"]
                schema = table.get(key)
                if key in result:
                    raise FormatError(f"key '{key}' is already defined (via alias)\n")
            if not schema:
                raise FormatError(f"invalid key in comma-separated list property: {key}\n")
            result[key] = _maybe_boolean(schema, value)
        elif "=" not in part:
            if default_key:
                raise FormatError(f"duplicate key in comma-separated list property: {default_key}\n")
            default_key = next((k for k, s in table.items() if s.get("default_key")), None)
            if not default_key:
                raise FormatError("value without key, but schema does not define a default key\n")
            if default_key in result:
                raise FormatError(f"duplicate key in comma-separated list property: {default_key}\n")
            result[default_key] = _maybe_boolean(table[default_key], part)
        else:
            raise FormatError("missing key in comma-separated list property\n")
    return result


def _maybe_boolean(schema: dict, value: str) -> str:
    if schema.get("type") == "boolean":
        return _parse_boolean(value) or value
    return value


def _item_schema(schema: dict) -> dict:
    items = dict(schema.get("items", {}))
    items.setdefault("type", "string")
    return items


def _add_error(errors: dict, path: str, message: str) -> None:
    path = path or "_root"
    errors[path] = f"{errors[path]}\\n{message}" if path in errors else message


def _perl_reference_type(value) -> Optional[str]:
    """What Perl's ref() says of a decoded value (None for a plain scalar)."""
    if isinstance(value, bool):
        return "JSON::PP::Boolean"
    if isinstance(value, list):
        return "ARRAY"
    if isinstance(value, dict):
        return "HASH"
    return None


def _check_type(path: str, expected, value, errors: dict) -> bool:
    """pve-common JSONSchema.pm, check_type, for decoded values (strings,
    lists, and from JSON bodies bools and dicts): a boolean is exactly "0"
    or "1" (or a JSON boolean); a reference where a scalar is due fails
    with "got ARRAY" / "got HASH" / "got JSON::PP::Boolean"."""
    reference = _perl_reference_type(value)
    if not expected or expected == "any":
        return True
    if expected in ("array", "object"):
        ok = reference == ("ARRAY" if expected == "array" else "HASH")
        if not ok:
            _add_error(errors, path, f"type check ('{expected}') failed")
        return ok
    if reference:
        if expected == "boolean" and reference == "JSON::PP::Boolean":
            return True
        _add_error(errors, path, f"type check ('{expected}') failed - got {reference}")
        return False
    if expected == "boolean":
        ok = value in ("0", "1")
    elif expected == "integer":
        ok = bool(_INTEGER.fullmatch(value))
    elif expected == "number":
        ok = bool(_NUMBER.fullmatch(value))
    else:
        ok = True
    if not ok:
        _add_error(errors, path, f"type check ('{expected}') failed - got '{value}'")
    return ok


def _check_requires(path: str, name: str, schema: dict, present: dict, errors: dict) -> None:
    """pve-common JSONSchema.pm, check_object: a property named by
    `requires` must be defined when the one requiring it is there."""
    required = schema.get("requires")
    if isinstance(required, str) and present.get(required) is None:
        _add_error(errors, f"{path}.{required}" if path else required,
                   f"missing property - '{f'{path}.{name}' if path else name}' requires this property")


def normalize_legacy_param_formats(method: ApiMethod, params: dict) -> dict:
    """pve-common src/PVE/RESTHandler.pm, $normalize_legacy_param_formats
    (before validation): for a parameter whose value is Perl-true (not undef,
    "" or "0"), a list for a string of a `-list` format is joined with ',',
    and a plain value for an array becomes a one-item list."""
    normalized = dict(params)
    for name, value in params.items():
        schema = method.schema_of(name)
        if schema is None or value in (None, "", "0", False):
            continue
        fmt = schema.get("format")
        if isinstance(value, list) and schema.get("type") == "string" and isinstance(fmt, str) \
                and fmt.endswith("-list"):
            normalized[name] = ",".join(str(item) for item in value)
        elif _perl_reference_type(value) is None and schema.get("type") == "array":
            normalized[name] = [value]
    return normalized


def handler_params(params: dict) -> dict:
    """The verified parameters as the simulation reads them: undef ones
    dropped (a handler's `defined($param->{x})` is false for them) and JSON
    booleans as "1"/"0"."""
    return {name: ("1" if value else "0") if isinstance(value, bool) else value
            for name, value in params.items() if value is not None}


def _check_pattern(value: str, schema: dict, path: str, errors: dict) -> bool:
    pattern = schema.get("pattern")
    if pattern and not perl_regex(pattern).fullmatch(value):
        _add_error(errors, path, "value does not match the regex pattern")
        return False
    return True


def _check_length(value: str, schema: dict, path: str, errors: dict) -> bool:
    longest, shortest = schema.get("maxLength"), schema.get("minLength")
    if longest is not None and len(value) > int(longest):
        _add_error(errors, path, f"value may only be {longest} characters long")
        return False
    if shortest is not None and len(value) < int(shortest):
        _add_error(errors, path, f"value must be at least {shortest} characters long")
        return False
    return True


def _check_range(value: str, schema: dict, path: str, errors: dict) -> bool:
    if not _NUMBER.fullmatch(value):
        return True
    number = float(value)
    highest, lowest = schema.get("maximum"), schema.get("minimum")
    if highest is not None and number > float(highest):
        _add_error(errors, path, f"value must have a maximum value of {highest}")
        return False
    if lowest is not None and number < float(lowest):
        _add_error(errors, path, f"value must have a minimum value of {lowest}")
        return False
    return True


def _check_enum(value: str, schema: dict, path: str, errors: dict) -> bool:
    allowed = schema.get("enum")
    if allowed is not None and value not in allowed:
        _add_error(errors, path, f"value '{value}' does not have a value in the enumeration '{', '.join(allowed)}'")
        return False
    return True


# ---- what the fake answers must match the schema's `returns` too ------------------


def return_problems(schema: dict, value, path: str = "data") -> list:
    """Where `value` (the fake's answer) breaks the method's `returns` schema:
    types, required properties, enums. Keeps the fake honest about shapes."""
    if value is None:
        return [] if schema.get("optional") or schema.get("type") in (None, "null", "any") \
            else [f"{path}: null where {schema.get('type')} is due"]
    kind = schema.get("type")
    if kind and not _json_type_ok(kind, value):
        return [f"{path}: {type(value).__name__} where {kind} is due"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} is not one of {schema['enum']}"]
    if isinstance(value, list):
        item = schema.get("items", {})
        return [p for i, element in enumerate(value) for p in return_problems(item, element, f"{path}[{i}]")]
    if isinstance(value, dict):
        return _object_problems(schema, value, path)
    return []


def _object_problems(schema: dict, value: dict, path: str) -> list:
    problems = []
    for key, sub in schema.get("properties", {}).items():
        if "[n]" in key:
            continue
        if key not in value:
            if not sub.get("optional"):
                problems.append(f"{path}.{key}: missing")
            continue
        problems += return_problems({**sub, "optional": 1}, value[key], f"{path}.{key}")
    return problems


def _json_type_ok(kind: str, value) -> bool:
    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool) or v in (0, 1),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
        "null": lambda v: v is None,
    }
    return checks.get(kind, lambda v: True)(value)
