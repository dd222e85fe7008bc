"""Reading the few protobuf request bodies a real kube-scheduler and kubectl send.

Upstream: ``k8s.io/apimachinery/pkg/runtime/serializer/protobuf`` (the ``k8s\\x00`` envelope
around a ``runtime.Unknown``) and the ``generated.proto`` of each type. Client-go sends
built-in types as protobuf by default (kube-scheduler's ``--kube-api-content-type``; kubectl's
typed generators such as ``kubectl create namespace``), and does not retry as JSON on a 415.

Not implemented: protobuf for anything but the bodies of Binding (``pods/binding``),
Namespace and events.k8s.io/v1 Event creates, and DeleteOptions (other protobuf bodies still
get 415), and protobuf responses (answers are JSON, which those clients also accept). Fields
not listed in the schemas below are skipped.
"""

from __future__ import annotations

import base64
import time
from typing import Any

JSON = dict[str, Any]
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data):
            raise ProtobufError("truncated varint")
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value): ints for varints, bytes for length-delimited."""
    out, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            length, i = _varint(data, i)
            if i + length > len(data):
                raise ProtobufError("truncated field")
            value, i = data[i : i + length], i + length
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 5:
            value, i = data[i : i + 4], i + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _int(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value  # two's complement int64/int32


def _time(data: bytes, micro: bool) -> str:
    seconds = nanos = 0
    for number, _, value in _fields(data):
        if number == 1:
            seconds = _int(value)
        elif number == 2:
            nanos = _int(value)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{text}.{nanos // 1000:06d}Z" if micro else text + "Z"


# Schemas: field number -> (JSON name, type). Types: "str", "int", "bool", "bytes", "strs"
# (repeated string), "map" (map<string,string>), "time", "microtime", or a nested schema
# (a dict), or ("list", schema) for a repeated message.
_OWNER_REF = {
    1: ("kind", "str"),
    3: ("name", "str"),
    4: ("uid", "str"),
    5: ("apiVersion", "str"),
    6: ("controller", "bool"),
    7: ("blockOwnerDeletion", "bool"),
}
_OBJECT_META = {
    1: ("name", "str"),
    2: ("generateName", "str"),
    3: ("namespace", "str"),
    5: ("uid", "str"),
    6: ("resourceVersion", "str"),
    7: ("generation", "int"),
    8: ("creationTimestamp", "time"),
    9: ("deletionTimestamp", "time"),
    10: ("deletionGracePeriodSeconds", "int"),
    11: ("labels", "map"),
    12: ("annotations", "map"),
    13: ("ownerReferences", ("list", _OWNER_REF)),
    14: ("finalizers", "strs"),
}
_OBJECT_REFERENCE = {
    1: ("kind", "str"),
    2: ("namespace", "str"),
    3: ("name", "str"),
    4: ("uid", "str"),
    5: ("apiVersion", "str"),
    6: ("resourceVersion", "str"),
    7: ("fieldPath", "str"),
}
# meta/v1 DeleteOptions, the body of a DELETE (client-go sends one with every delete).
_DELETE_OPTIONS = {
    1: ("gracePeriodSeconds", "int"),
    2: ("preconditions", {1: ("uid", "str"), 2: ("resourceVersion", "str")}),
    3: ("orphanDependents", "bool"),
    4: ("propagationPolicy", "str"),
    5: ("dryRun", "strs"),
}
_SCHEMAS: dict[tuple[str, str], JSON] = {
    ("meta.k8s.io/v1", "DeleteOptions"): _DELETE_OPTIONS,
    ("v1", "DeleteOptions"): _DELETE_OPTIONS,
    ("v1", "Binding"): {1: ("metadata", _OBJECT_META), 2: ("target", _OBJECT_REFERENCE)},
    ("v1", "Namespace"): {
        1: ("metadata", _OBJECT_META),
        2: ("spec", {1: ("finalizers", "strs")}),
        3: ("status", {1: ("phase", "str")}),
    },
    ("events.k8s.io/v1", "Event"): {
        1: ("metadata", _OBJECT_META),
        2: ("eventTime", "microtime"),
        3: ("series", {1: ("count", "int"), 2: ("lastObservedTime", "microtime")}),
        4: ("reportingController", "str"),
        5: ("reportingInstance", "str"),
        6: ("action", "str"),
        7: ("reason", "str"),
        8: ("regarding", _OBJECT_REFERENCE),
        9: ("related", _OBJECT_REFERENCE),
        10: ("note", "str"),
        11: ("type", "str"),
        12: ("deprecatedSource", {1: ("component", "str"), 2: ("host", "str")}),
        13: ("deprecatedFirstTimestamp", "time"),
        14: ("deprecatedLastTimestamp", "time"),
        15: ("deprecatedCount", "int"),
    },
}


def _decode(data: bytes, schema: JSON) -> JSON:
    out: JSON = {}
    for number, wire, value in _fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if isinstance(kind, dict):
            out[name] = _decode(_bytes(value, wire), kind)
        elif isinstance(kind, tuple):
            out.setdefault(name, []).append(_decode(_bytes(value, wire), kind[1]))
        elif kind == "str":
            out[name] = _bytes(value, wire).decode("utf-8")
        elif kind == "strs":
            out.setdefault(name, []).append(_bytes(value, wire).decode("utf-8"))
        elif kind == "bytes":
            out[name] = base64.b64encode(_bytes(value, wire)).decode()
        elif kind in ("int", "bool"):
            if wire != 0:
                raise ProtobufError(f"field {name}: not a varint")
            out[name] = bool(value) if kind == "bool" else _int(value)
        elif kind == "map":
            entry = {n: _bytes(v, w).decode("utf-8") for n, w, v in _fields(_bytes(value, wire))}
            out.setdefault(name, {})[entry.get(1, "")] = entry.get(2, "")
        elif kind in ("time", "microtime"):
            out[name] = _time(_bytes(value, wire), kind == "microtime")
    return out


def _bytes(value: Any, wire: int) -> bytes:
    if wire != 2:
        raise ProtobufError("expected a length-delimited field")
    return bytes(value)


def decode(data: bytes) -> JSON:
    """The JSON form of a protobuf body; ProtobufError when it is not one we can read."""
    if not data.startswith(MAGIC):
        raise ProtobufError("the body does not start with the protobuf magic number")
    type_meta: JSON = {}
    raw = b""
    for number, wire, value in _fields(data[len(MAGIC) :]):
        if number == 1:
            type_meta = _decode(_bytes(value, wire), {1: ("apiVersion", "str"), 2: ("kind", "str")})
        elif number == 2:
            raw = _bytes(value, wire)
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    schema = _SCHEMAS.get((api_version, kind))
    if schema is None:
        raise ProtobufError(f"protobuf bodies of {api_version}/{kind} are not supported")
    return {"kind": kind, "apiVersion": api_version, **_decode(raw, schema)}
