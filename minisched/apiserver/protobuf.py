"""Reading the few protobuf request bodies a real kube-scheduler and kubectl send.

Upstream: ``k8s.io/apimachinery/pkg/runtime/serializer/protobuf`` (the ``k8s\\x00`` envelope
around a ``runtime.Unknown``) and the ``generated.proto`` of each type. Client-go sends
built-in types as protobuf by default (kube-scheduler's ``--kube-api-content-type``; kubectl's
typed generators such as ``kubectl create namespace``), and does not retry as JSON on a 415.

The wire format is parsed by Google's ``protobuf`` library; the message types are declared
below (field numbers and types from upstream's ``generated.proto``) and built at run time by
``minisched/kproto.py``, which also declares the meta/v1 types shared with step 17's wasm
plugin, so there is no protoc step and no generated code in the repository. This module is
imported on the first protobuf body only: the API server's start does not pay for
``google.protobuf``.

Not implemented: protobuf for anything but the bodies of Binding (``pods/binding``),
Namespace and events.k8s.io/v1 Event creates, and DeleteOptions (other protobuf bodies still
get 415), and protobuf responses (answers are JSON, which those clients also accept). Fields
not declared below are skipped.
"""

from __future__ import annotations

import base64
import datetime
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from minisched import kproto

JSON = dict[str, Any]
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    pass


# The messages of the bodies read here, by name; the meta/v1 ones (ObjectMeta, Time...) and
# ObjectReference are the shared declarations of minisched/kproto.py (see Table there).
_MESSAGES: kproto.Table = {
    **kproto.META,
    "ObjectReference": kproto.CORE_V1["ObjectReference"],
    # k8s.io.apimachinery.pkg.runtime
    "TypeMeta": [(1, "apiVersion", "string"), (2, "kind", "string")],
    "Unknown": [
        (1, "typeMeta", "TypeMeta"),
        (2, "raw", "bytes"),
        (3, "contentEncoding", "string"),
        (4, "contentType", "string"),
    ],
    # k8s.io.apimachinery.pkg.apis.meta.v1
    "Preconditions": [(1, "uid", "string"), (2, "resourceVersion", "string")],
    # The body of a DELETE (client-go sends one with every delete).
    "DeleteOptions": [
        (1, "gracePeriodSeconds", "int64"),
        (2, "preconditions", "Preconditions"),
        (3, "orphanDependents", "bool"),
        (4, "propagationPolicy", "string"),
        (5, "dryRun", "repeated string"),
    ],
    # k8s.io.api.core.v1
    "Binding": [(1, "metadata", "ObjectMeta"), (2, "target", "ObjectReference")],
    "NamespaceSpec": [(1, "finalizers", "repeated string")],
    "NamespaceStatus": [(1, "phase", "string")],
    "Namespace": [
        (1, "metadata", "ObjectMeta"),
        (2, "spec", "NamespaceSpec"),
        (3, "status", "NamespaceStatus"),
    ],
    # k8s.io.api.events.v1
    "EventSeries": [(1, "count", "int32"), (2, "lastObservedTime", "MicroTime")],
    "EventSource": [(1, "component", "string"), (2, "host", "string")],
    "Event": [
        (1, "metadata", "ObjectMeta"),
        (2, "eventTime", "MicroTime"),
        (3, "series", "EventSeries"),
        (4, "reportingController", "string"),
        (5, "reportingInstance", "string"),
        (6, "action", "string"),
        (7, "reason", "string"),
        (8, "regarding", "ObjectReference"),
        (9, "related", "ObjectReference"),
        (10, "note", "string"),
        (11, "type", "string"),
        (12, "deprecatedSource", "EventSource"),
        (13, "deprecatedFirstTimestamp", "Time"),
        (14, "deprecatedLastTimestamp", "Time"),
        (15, "deprecatedCount", "int32"),
    ],
}
# (apiVersion, kind) of the envelope -> the message its raw bytes hold.
_KINDS = {
    ("meta.k8s.io/v1", "DeleteOptions"): "DeleteOptions",
    ("v1", "DeleteOptions"): "DeleteOptions",
    ("v1", "Binding"): "Binding",
    ("v1", "Namespace"): "Namespace",
    ("events.k8s.io/v1", "Event"): "Event",
}
_CLASSES = kproto.build_messages("minisched.k8s", _MESSAGES)


def _time(message: Any, micro: bool) -> str:
    """meta/v1 Time and MicroTime are RFC 3339 strings in JSON (seconds, or microseconds)."""
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    moment = epoch + datetime.timedelta(seconds=message.seconds)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{message.nanos // 1000:06d}Z" if micro else text + "Z"


def _value(field: FieldDescriptor, value: Any) -> Any:
    message: Descriptor | None = field.message_type
    if message is not None and message.GetOptions().map_entry:
        return dict(value)
    if field.is_repeated:
        return [_single(field, v) for v in value]
    return _single(field, value)


def _single(field: FieldDescriptor, value: Any) -> Any:
    message: Descriptor | None = field.message_type
    if message is None and field.type == FieldDescriptor.TYPE_STRING and isinstance(value, bytes):
        # proto2 does not check UTF-8 on parse and the library hands such a string back as
        # bytes (a map's key or value raises instead): both are a body we cannot read.
        raise ProtobufError(f"field {field.name}: invalid UTF-8")
    if message is None:
        # int64 stays an int (not JSON's string form); bytes are base64, as in Kubernetes' JSON.
        return base64.b64encode(value).decode() if isinstance(value, bytes) else value
    if message.name in ("Time", "MicroTime"):
        return _time(value, message.name == "MicroTime")
    return _json(value)


def _json(message: Message) -> JSON:
    """The fields present on the wire, by their JSON names (proto2 keeps presence)."""
    return {field.name: _value(field, value) for field, value in message.ListFields()}


def decode(data: bytes) -> JSON:
    """The JSON form of a protobuf body; ProtobufError when it is not one we can read."""
    if not data.startswith(MAGIC):
        raise ProtobufError("the body does not start with the protobuf magic number")
    try:
        unknown: Any = _CLASSES["Unknown"].FromString(data[len(MAGIC) :])
        api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
        name = _KINDS.get((api_version, kind))
        if name is None:
            raise ProtobufError(f"protobuf bodies of {api_version}/{kind} are not supported")
        body = _json(_CLASSES[name].FromString(unknown.raw))
    except (DecodeError, UnicodeDecodeError, OverflowError) as e:
        # A truncated or garbled body (or a Time beyond year 9999) is the client's error.
        raise ProtobufError(f"invalid protobuf body: {e}") from None
    return {"kind": kind, "apiVersion": api_version, **body}
