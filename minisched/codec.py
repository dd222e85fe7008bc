"""How Kubernetes reads a component's configuration file, ported as far as kube-scheduler's
needs: YAML to JSON-like values, a strict decode against a Go type's schema with Go's error
texts, apiVersion and kind, Go's durations, and JSON-like values back to YAML.

Upstream, at the versions kubernetes v1.23.10 vendors: sigs.k8s.io/yaml (YAMLToJSON,
YAMLToJSONStrict, JSONToYAML), sigs.k8s.io/json (the strict, case-sensitive decoder and its
errors, as k8s.io/apimachinery's runtime/serializer/json runs it), the serializer's
SimpleMetaFactory (Interpret) and schema.ParseGroupVersion, and Go's time.ParseDuration and
Duration.String.

The scheduler's own part, which types a KubeSchedulerConfiguration has and what their defaults
are, is step 14's ``config.py``; this module only reads and writes the text, as the library
kube-scheduler imports does.

Differs from upstream: a YAML syntax error reads ``yaml: line N: <PyYAML's problem>``; go-yaml
words its problems differently ("did not find expected node content").
Differs from upstream: PyYAML reads YAML 1.1 as go-yaml v2 does, but for timestamps (kept as
strings here, as a JSON round trip leaves them) and merge keys (``<<``, unsupported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from .apimachinery import go_quote, json_kind


class DecodeError(ValueError):
    """The text cannot be decoded; the message is upstream's."""


# --- Go durations (time.ParseDuration, Duration.String) --------------------------------------

_DURATION_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # µ, the micro sign
    "\u03bcs": 1_000,  # μ, the Greek letter
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX_INT64 = 2**63 - 1


def parse_duration(s: str) -> int:
    """Nanoseconds, as Go's time.ParseDuration reads ``s`` ("1h2m0.5s", "-3ms"); raises
    DecodeError with Go's text."""
    orig = s
    invalid = DecodeError(f"time: invalid duration {go_quote(orig)}")
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise invalid
    total = 0
    while s:
        if not (s[0] == "." or s[0].isascii() and s[0].isdigit()):
            raise invalid
        i = 0
        while i < len(s) and "0" <= s[i] <= "9":
            i += 1
        pre = i > 0
        whole = int(s[:i]) if pre else 0
        s = s[i:]
        frac, scale, post = 0, 1, False
        if s.startswith("."):
            s = s[1:]
            i = 0
            while i < len(s) and "0" <= s[i] <= "9":
                i += 1
            post = i > 0
            # Go keeps the digits that fit, as Python's ints need not.
            digits = s[:i]
            frac, scale = (int(digits), 10 ** len(digits)) if digits else (0, 1)
            s = s[i:]
        if not pre and not post:
            raise invalid
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            raise DecodeError(f"time: missing unit in duration {go_quote(orig)}")
        unit_name, s = s[:i], s[i:]
        if unit_name not in _DURATION_UNITS:
            raise DecodeError(
                f"time: unknown unit {go_quote(unit_name)} in duration {go_quote(orig)}"
            )
        unit = _DURATION_UNITS[unit_name]
        value = whole * unit + int(frac * (unit / scale))
        total += value
        if total > 2**63:
            raise invalid
    if neg:
        return -total
    if total > _MAX_INT64:
        raise invalid
    return total


def _fmt_frac(v: int, prec: int) -> tuple[str, int]:
    """The fraction of ``v`` below 10**prec, as ".5" (no trailing zeros; "" when zero), and
    the rest (upstream: fmtFrac)."""
    frac = v % 10**prec
    digits = f"{frac:0{prec}d}".rstrip("0") if prec else ""
    return ("." + digits if digits else ""), v // 10**prec


def format_duration(ns: int) -> str:
    """``ns`` nanoseconds as Go's Duration.String writes them: "15s", "1m30s", "1.5ms"."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000_000_000:
        unit, prec = ("ns", 0) if u < 1_000 else ("\u00b5s", 3) if u < 1_000_000 else ("ms", 6)
        frac, whole = _fmt_frac(u, prec)
        return f"{sign}{whole}{frac}{unit}"
    frac, secs = _fmt_frac(u, 9)
    text = f"{secs % 60}{frac}s"
    minutes = secs // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


# --- YAML to JSON-like values (sigs.k8s.io/yaml) ----------------------------------------------


class Loader(yaml.SafeLoader):
    """A SafeLoader that leaves timestamps as strings (what a JSON round trip makes of
    them)."""


Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def json_key(value: Any) -> str:
    """A mapping key as YAMLToJSON writes it: a string (true, 1, 1.5 as text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def node_to_json(node: yaml.Node, loader: Loader, duplicates: list[str]) -> Any:
    """A YAML node as JSON-like Python values; each key set twice in a mapping is added to
    ``duplicates`` as go-yaml's strict mode words it, and the last value wins."""
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = json_key(loader.construct_object(key_node, deep=True))
            if key in out:
                duplicates.append(
                    f"line {key_node.start_mark.line + 1}: key {go_quote(key)} already set in map"
                )
                del out[key]  # the last one wins, and takes the last place
            out[key] = node_to_json(value_node, loader, duplicates)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [node_to_json(n, loader, duplicates) for n in node.value]
    value = loader.construct_object(node, deep=True)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        # YAMLToJSON writes 10.0 as 10: an int field takes it.
        return int(value)
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


def yaml_to_json(text: str) -> tuple[Any, list[str]]:
    """The first YAML document of ``text`` as JSON-like values, and its duplicate keys."""
    loader = Loader(text)
    try:
        node = loader.get_node() if loader.check_node() else None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise DecodeError(f"yaml: line {line}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise DecodeError(f"yaml: {e}") from None
    finally:
        loader.dispose()
    if node is None:
        return None, []
    duplicates: list[str] = []
    return node_to_json(node, Loader(""), duplicates), duplicates


@dataclass(frozen=True)
class Scalar:
    """A scalar field; ``go_type`` is how Go's json errors name its type."""

    kind: str  # "string", "bool", "int32", "int64", "float32", "duration"
    go_type: str


@dataclass(frozen=True)
class ListOf:
    elem: Type

    @property
    def go_type(self) -> str:
        return "[]" + self.elem.go_type


@dataclass(frozen=True)
class Struct:
    """A Go struct: its name, its package (for the type's name in errors) and its fields by
    JSON name."""

    name: str
    package: str
    fields: Mapping[str, Type]

    @property
    def go_type(self) -> str:
        return f"{self.package}.{self.name}"


@dataclass(frozen=True)
class Raw:
    """Any JSON value, kept as it is (upstream: runtime.RawExtension)."""

    go_type: str = "runtime.RawExtension"


Type = Scalar | ListOf | Struct | Raw

STRING = Scalar("string", "string")
BOOL = Scalar("bool", "bool")
INT32 = Scalar("int32", "int32")
INT64 = Scalar("int64", "int64")
FLOAT32 = Scalar("float32", "float32")
# metav1.Duration: a string Go's time.ParseDuration reads.
DURATION = Scalar("duration", "string")
TYPE_META: dict[str, Type] = {"apiVersion": STRING, "kind": STRING}

# --- strict decoding (sigs.k8s.io/json, as the json serializer runs it) ---------------------


def go_number(value: int | float) -> str:
    """A JSON number as YAMLToJSON writes it (and Go's json errors quote it): Python's repr
    and Go's shortest 'g' format agree for the finite floats YAML gives."""
    return repr(value) if isinstance(value, float) else str(value)


INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


@dataclass
class Decoder:
    """One strict decode: the unknown fields it met (upstream: saveStrictError, each text
    once) and the first value of the wrong type (upstream: saveError, fatal at the end)."""

    strict: list[str] = field(default_factory=list)
    type_error: str | None = None

    def _wrong_type(self, what: str, typ: Type, struct: str, path: list[str]) -> None:
        if self.type_error is None:
            where = f"Go struct field {struct}.{'.'.join(path)}" if path else "Go value"
            self.type_error = f"json: cannot unmarshal {what} into {where} of type {typ.go_type}"

    def decode(self, value: Any, typ: Type, struct: str, path: list[str]) -> Any:
        """``value`` as ``typ`` (fields checked, ints as ints); None for JSON's null, which
        leaves the Go field unset."""
        if isinstance(typ, Raw):
            return value
        if isinstance(typ, Scalar) and typ.kind == "duration":
            return self._duration(value, struct, path)
        if value is None:
            return None
        if isinstance(typ, Struct):
            if not isinstance(value, dict):
                self._wrong_type(json_kind(value), typ, struct, path)
                return None
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key not in typ.fields:
                    text = f"unknown field {go_quote(key)}"
                    if text not in self.strict:
                        self.strict.append(text)
                    continue
                decoded = self.decode(item, typ.fields[key], typ.name, [*path, key])
                if decoded is not None:
                    out[key] = decoded
            return out
        if isinstance(typ, ListOf):
            if not isinstance(value, list):
                self._wrong_type(json_kind(value), typ, struct, path)
                return None
            items = [self.decode(item, typ.elem, struct, path) for item in value]
            # A null item is the element type's zero value.
            return [zero_value(typ.elem) if item is None else item for item in items]
        return self._scalar(value, typ, struct, path)

    def _scalar(self, value: Any, typ: Scalar, struct: str, path: list[str]) -> Any:
        if typ.kind == "string":
            if isinstance(value, str):
                return value
        elif typ.kind == "bool":
            if isinstance(value, bool):
                return value
        elif typ.kind == "float32":
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            low, high = INT_RANGES[typ.kind]
            if isinstance(value, int) and low <= value <= high:
                return value
            self._wrong_type(f"number {go_number(value)}", typ, struct, path)
            return None
        self._wrong_type(json_kind(value), typ, struct, path)
        return None

    def _duration(self, value: Any, struct: str, path: list[str]) -> int:
        """metav1.Duration.UnmarshalJSON: a string, parsed; its errors stop the decode (a
        JSON null reads as "", which does not parse)."""
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise DecodeError(
                f"json: cannot unmarshal {json_kind(value)} into Go struct field "
                f"{struct}.{'.'.join(path)} of type string"
            )
        return parse_duration(value)


def zero_value(typ: Type) -> Any:
    if isinstance(typ, Struct):
        return {}
    if isinstance(typ, Scalar):
        return {"string": "", "bool": False, "float32": 0.0, "duration": 0}.get(typ.kind, 0)
    return None


# --- apiVersion and kind (runtime/serializer/json: Interpret; schema.ParseGroupVersion) -------

FIND_KIND_TYPE = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


def interpret(value: Any) -> tuple[str, str, str]:
    """The (group, version, kind) a JSON-like document names (upstream: SimpleMetaFactory's
    Interpret)."""
    if value is None:
        return "", "", ""
    if not isinstance(value, dict):
        raise DecodeError(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{json_kind(value)} into Go value of type {FIND_KIND_TYPE}"
        )
    found: dict[str, str] = {}
    for key in ("apiVersion", "kind"):
        item = value.get(key)
        if item is not None and not isinstance(item, str):
            raise DecodeError(
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{json_kind(item)} into Go struct field .{key} of type string"
            )
        found[key] = item or ""
    api_version = found["apiVersion"]
    parts = api_version.split("/")
    if api_version == "":
        group, version = "", ""
    elif len(parts) == 1:
        group, version = "", parts[0]
    elif len(parts) == 2:
        group, version = parts
    else:
        raise DecodeError(f"unexpected GroupVersion string: {api_version}")
    return group, version, found["kind"]


def group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


class Dumper(yaml.SafeDumper):
    """Writes YAML as go-yaml v2 does from JSON: keys sorted, block style, a string that
    would read as another type double-quoted."""


def _represent_str(dumper: Dumper, value: str) -> yaml.ScalarNode:
    # PyYAML's "yaml" tag (a value of "=", "*", "&"...) is a str to go-yaml: quoted only if
    # plain is not allowed, which the emitter decides (single quotes, as go-yaml's does).
    tag = dumper.resolve(yaml.ScalarNode, value, (True, False))
    if value == "" or tag not in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:yaml"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _represent_float(dumper: Dumper, value: float) -> yaml.ScalarNode:
    # JSON has one number type; go-yaml writes an integral one as an int.
    if value.is_integer():
        return dumper.represent_int(int(value))
    return dumper.represent_scalar("tag:yaml.org,2002:float", repr(value))


Dumper.add_representer(str, _represent_str)
Dumper.add_representer(float, _represent_float)


def dump_yaml(obj: Any) -> str:
    """JSON-like values as kube-scheduler writes them (sigs.k8s.io/yaml's JSONToYAML)."""
    return yaml.dump(
        obj, Dumper=Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True
    )
