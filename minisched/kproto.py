"""Kubernetes' protobuf wire format for the objects a scheduler reads: Pod, Node, NodeList.

Upstream: the ``generated.proto`` of ``k8s.io/api/core/v1``, ``k8s.io/apimachinery/pkg/apis/
meta/v1`` and ``k8s.io/apimachinery/pkg/api/resource`` (field numbers and types below are
theirs), and the gogo-generated ``Marshal`` methods client-go and kube-scheduler use.

Two parts of minisched speak this format: the embedded API server reads the protobuf bodies
kube-scheduler and kubectl send (``minisched/apiserver/protobuf.py``), and step 17's wasm plugin
hands the pod and the nodes to WebAssembly guests, which decode them with code generated from
the same ``.proto`` files (kube-scheduler-wasm-extension's ``kubernetes/proto``). It is the bare
message, without the ``k8s\\x00`` envelope of the API server's wire.

The message types are declared as tables (``Table``) and built at run time with Google's
``protobuf`` library (``build_messages``): there is no protoc step and no generated code in the
repository. ``encode`` fills such a message from an object's JSON form (or from the official
client's model of it) and serializes it.

Simplified: only the fields a scheduling plugin reads are declared (metadata, the pod's
containers, images, requests, node selector, affinity, tolerations, priority, the node's
taints, capacity, conditions and images...); any other field of the object is left out of the
message, as if it were empty. Not implemented: pod (anti-)affinity terms, volumes, topology
spread constraints' selectors.
"""

from __future__ import annotations

import datetime
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

# Message name -> [(field number, JSON name, type)]. A type is a scalar ("string", "int64",
# "int32", "bool", "bytes"), another message's name, "map" (map<string,string>) or
# "map <Message>" (map<string,Message>), any of them but maps after "repeated ". Upstream's
# proto field names are the JSON names, so these are both.
Table = dict[str, list[tuple[int, str, str]]]

# k8s.io.apimachinery.pkg.apis.meta.v1 (and resource.Quantity): what every object carries.
META: Table = {
    "Time": [(1, "seconds", "int64"), (2, "nanos", "int32")],
    "MicroTime": [(1, "seconds", "int64"), (2, "nanos", "int32")],
    "OwnerReference": [
        (1, "kind", "string"),
        (3, "name", "string"),
        (4, "uid", "string"),
        (5, "apiVersion", "string"),
        (6, "controller", "bool"),
        (7, "blockOwnerDeletion", "bool"),
    ],
    "ObjectMeta": [
        (1, "name", "string"),
        (2, "generateName", "string"),
        (3, "namespace", "string"),
        (5, "uid", "string"),
        (6, "resourceVersion", "string"),
        (7, "generation", "int64"),
        (8, "creationTimestamp", "Time"),
        (9, "deletionTimestamp", "Time"),
        (10, "deletionGracePeriodSeconds", "int64"),
        (11, "labels", "map"),
        (12, "annotations", "map"),
        (13, "ownerReferences", "repeated OwnerReference"),
        (14, "finalizers", "repeated string"),
    ],
    "ListMeta": [(1, "selfLink", "string"), (2, "resourceVersion", "string")],
    # k8s.io.apimachinery.pkg.api.resource: a quantity travels as its string ("100m").
    "Quantity": [(1, "string", "string")],
}

# k8s.io.api.core.v1: the parts of Pod and Node that scheduling plugins read.
CORE_V1: Table = {
    "ObjectReference": [
        (1, "kind", "string"),
        (2, "namespace", "string"),
        (3, "name", "string"),
        (4, "uid", "string"),
        (5, "apiVersion", "string"),
        (6, "resourceVersion", "string"),
        (7, "fieldPath", "string"),
    ],
    "ResourceRequirements": [(1, "limits", "map Quantity"), (2, "requests", "map Quantity")],
    "ContainerPort": [
        (1, "name", "string"),
        (2, "hostPort", "int32"),
        (3, "containerPort", "int32"),
        (4, "protocol", "string"),
        (5, "hostIP", "string"),
    ],
    "Container": [
        (1, "name", "string"),
        (2, "image", "string"),
        (6, "ports", "repeated ContainerPort"),
        (8, "resources", "ResourceRequirements"),
    ],
    "NodeSelectorRequirement": [
        (1, "key", "string"),
        (2, "operator", "string"),
        (3, "values", "repeated string"),
    ],
    "NodeSelectorTerm": [
        (1, "matchExpressions", "repeated NodeSelectorRequirement"),
        (2, "matchFields", "repeated NodeSelectorRequirement"),
    ],
    "NodeSelector": [(1, "nodeSelectorTerms", "repeated NodeSelectorTerm")],
    "PreferredSchedulingTerm": [(1, "weight", "int32"), (2, "preference", "NodeSelectorTerm")],
    "NodeAffinity": [
        (1, "requiredDuringSchedulingIgnoredDuringExecution", "NodeSelector"),
        (2, "preferredDuringSchedulingIgnoredDuringExecution", "repeated PreferredSchedulingTerm"),
    ],
    "Affinity": [(1, "nodeAffinity", "NodeAffinity")],
    "Toleration": [
        (1, "key", "string"),
        (2, "operator", "string"),
        (3, "value", "string"),
        (4, "effect", "string"),
        (5, "tolerationSeconds", "int64"),
    ],
    "PodSchedulingGate": [(1, "name", "string")],
    "PodSpec": [
        (2, "containers", "repeated Container"),
        (7, "nodeSelector", "map"),
        (10, "nodeName", "string"),
        (18, "affinity", "Affinity"),
        (19, "schedulerName", "string"),
        (20, "initContainers", "repeated Container"),
        (22, "tolerations", "repeated Toleration"),
        (24, "priorityClassName", "string"),
        (25, "priority", "int32"),
        (31, "preemptionPolicy", "string"),
        (32, "overhead", "map Quantity"),
        (38, "schedulingGates", "repeated PodSchedulingGate"),
    ],
    "PodCondition": [
        (1, "type", "string"),
        (2, "status", "string"),
        (3, "lastProbeTime", "Time"),
        (4, "lastTransitionTime", "Time"),
        (5, "reason", "string"),
        (6, "message", "string"),
    ],
    "PodStatus": [
        (1, "phase", "string"),
        (2, "conditions", "repeated PodCondition"),
        (3, "message", "string"),
        (4, "reason", "string"),
        (11, "nominatedNodeName", "string"),
    ],
    "Pod": [(1, "metadata", "ObjectMeta"), (2, "spec", "PodSpec"), (3, "status", "PodStatus")],
    "Taint": [
        (1, "key", "string"),
        (2, "value", "string"),
        (3, "effect", "string"),
        (4, "timeAdded", "Time"),
    ],
    "NodeSpec": [
        (1, "podCIDR", "string"),
        (4, "unschedulable", "bool"),
        (5, "taints", "repeated Taint"),
    ],
    "NodeCondition": [
        (1, "type", "string"),
        (2, "status", "string"),
        (3, "lastHeartbeatTime", "Time"),
        (4, "lastTransitionTime", "Time"),
        (5, "reason", "string"),
        (6, "message", "string"),
    ],
    "NodeAddress": [(1, "type", "string"), (2, "address", "string")],
    "ContainerImage": [(1, "names", "repeated string"), (2, "sizeBytes", "int64")],
    "NodeStatus": [
        (1, "capacity", "map Quantity"),
        (2, "allocatable", "map Quantity"),
        (3, "phase", "string"),
        (4, "conditions", "repeated NodeCondition"),
        (5, "addresses", "repeated NodeAddress"),
        (8, "images", "repeated ContainerImage"),
    ],
    "Node": [(1, "metadata", "ObjectMeta"), (2, "spec", "NodeSpec"), (3, "status", "NodeStatus")],
    "NodeList": [(1, "metadata", "ListMeta"), (2, "items", "repeated Node")],
}

_F = descriptor_pb2.FieldDescriptorProto


def _field(
    package: str, table: Table, number: int, name: str, kind: str
) -> descriptor_pb2.FieldDescriptorProto:
    repeated = kind.startswith("repeated ")
    kind = kind.removeprefix("repeated ")
    field = _F(name=name, number=number, label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
    if kind in table:
        field.type = _F.TYPE_MESSAGE
        field.type_name = f".{package}.{kind}"
    else:
        field.type = _F.Type.Value("TYPE_" + kind.upper())
    return field


def build_messages(package: str, table: Table) -> dict[str, type[Message]]:
    """The message classes of ``table``, from a descriptor built here (proto2, as upstream's
    files are), in a pool of their own so that nothing else's types can clash."""
    file = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package)
    for name, fields in table.items():
        message = file.message_type.add(name=name)
        for number, field_name, kind in fields:
            if not kind.startswith("map"):
                message.field.add().CopyFrom(_field(package, table, number, field_name, kind))
                continue
            # A map<string,V> is a repeated nested <Name>Entry{key = 1; value = 2}.
            value_kind = kind.removeprefix("map").strip() or "string"
            entry = message.nested_type.add(name=field_name[0].upper() + field_name[1:] + "Entry")
            entry.options.map_entry = True
            entry.field.add().CopyFrom(_field(package, table, 1, "key", "string"))
            entry.field.add().CopyFrom(_field(package, table, 2, "value", value_kind))
            message.field.add(
                name=field_name,
                number=number,
                label=_F.LABEL_REPEATED,
                type=_F.TYPE_MESSAGE,
                type_name=f".{package}.{name}.{entry.name}",
            )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
        for name in table
    }


# Built on first use: importing this module does not build a descriptor.
_CLASSES: dict[str, type[Message]] = {}


def message_class(name: str) -> type[Message]:
    """The class of a core/v1 (or meta/v1) message, e.g. ``message_class("Pod")``."""
    if not _CLASSES:
        _CLASSES.update(build_messages("minisched.k8s.core.v1", {**META, **CORE_V1}))
    return _CLASSES[name]


# --- JSON form -> message ----------------------------------------------------------------------


def _set_time(message: Any, value: Any) -> None:
    """meta/v1 Time: an RFC 3339 string in JSON (or a datetime, from the client's models)."""
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    seconds = value.timestamp()
    message.seconds = int(seconds // 1)
    message.nanos = value.microsecond * 1000


def _set(message: Any, field: FieldDescriptor, value: Any) -> None:
    """Set one field of ``message`` from its JSON value."""
    name = field.name
    sub: Descriptor | None = field.message_type
    if sub is not None and sub.GetOptions().map_entry:
        target = getattr(message, name)
        value_type = sub.fields_by_name["value"].message_type
        for k, v in value.items():
            if value_type is None:
                target[k] = v
            else:  # map<string, Quantity>
                target[k].string = str(v)
        return
    if field.is_repeated:
        target = getattr(message, name)
        if sub is None:
            target.extend(value)
        else:
            for item in value:
                _fill(target.add(), item)
        return
    if sub is None:
        setattr(message, name, value)
        return
    target = getattr(message, name)
    target.SetInParent()  # an empty object is still present, as upstream marshals it
    if sub.name in ("Time", "MicroTime"):
        _set_time(target, value)
    elif sub.name == "Quantity":
        target.string = str(value)
    else:
        _fill(target, value)


def _fill(message: Any, obj: Any) -> None:
    fields = message.DESCRIPTOR.fields_by_name
    for key, value in to_json(obj).items():
        field = fields.get(key)
        # A field not declared is left out; so is an absent (null) value.
        if field is not None and value is not None:
            _set(message, field, value)


def to_json(obj: Any) -> dict[str, Any]:
    """An object's JSON form: the dict itself, or the official client's model dumped by its
    JSON names (``V1Pod`` -> ``{"metadata": {"name": ...}, "spec": {"nodeName": ...}}``)."""
    if isinstance(obj, dict):
        return obj
    return obj.model_dump(by_alias=True, exclude_none=True)


def encode(kind: str, obj: Any) -> bytes:
    """The protobuf bytes of ``obj`` as the core/v1 message ``kind`` ("Pod", "Node",
    "NodeList"). ``obj`` is the object's JSON form or a model of the official client."""
    message = message_class(kind)()
    _fill(message, to_json(obj))
    return message.SerializeToString()


def decode(kind: str, data: bytes) -> Message:
    """The message ``kind`` parsed from ``data`` (for tests, and for reading a guest's
    answer)."""
    return message_class(kind).FromString(data)
