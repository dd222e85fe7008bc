"""Server-side printing: ``meta.k8s.io/v1 Table`` answers for ``kubectl get``.

Upstream: ``pkg/printers/internalversion/printers.go`` (``printPod``, ``printNode``,
``printNamespace``, ``printEvent`` and their column definitions), apiextensions-apiserver's
``registry/customresource/tableconvertor`` (custom resources: Name and the CRD's
additionalPrinterColumns, or Age),
``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response.go`` (``asTable``, the
``includeObject`` parameter) and ``staging/src/k8s.io/apimachinery/pkg/util/duration``
(``HumanDuration`` for the Age column).

kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io``; answering it is what makes
``kubectl get pods -o wide`` show the NODE column from ``spec.nodeName``.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from typing import Any

JSON = dict[str, Any]
NONE = "<none>"

_NAME_DESC = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE_DESC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate operations. "
    "Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\n"
    "Populated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def _col(
    name: str, description: str, priority: int = 0, fmt: str = "", kind: str = "string"
) -> JSON:
    return {
        "name": name,
        "type": kind,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


POD_COLUMNS = [
    _col("Name", _NAME_DESC, fmt="name"),
    _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "The aggregate status of the containers in this pod."),
    _col(
        "Restarts",
        "The number of times the containers in this pod have been restarted and when the last "
        "container in this pod has restarted.",
    ),
    _col("Age", _AGE_DESC),
    _col(
        "IP",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not "
        "yet allocated.",
        1,
    ),
    _col(
        "Node",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
        "candidate for scheduling by the scheduler defined in schedulerName. Once this field is "
        "set, the kubelet for this node becomes responsible for the lifecycle of this pod. This "
        "field should not be used to express a desire for the pod to be scheduled on a specific "
        "node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        1,
    ),
    _col(
        "Nominated Node",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
        "cannot be scheduled right away as preemption victims receive their graceful termination "
        "periods. This field does not guarantee that the pod will be scheduled on this node. "
        "Scheduler may decide to place the pod elsewhere if other nodes become available sooner. "
        "Scheduler may also decide to give the resources on this node to a higher priority pod "
        "that is created after preemption. As a result, this field may be different than "
        "PodSpec.nodeName when the pod is scheduled.",
        1,
    ),
    _col(
        "Readiness Gates",
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready "
        "when all its containers are ready AND all conditions specified in the readiness gates "
        'have status equal to "True" More info: '
        "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        1,
    ),
]

# NodeStatus.addresses' field description, as kube-apiserver v1.36 serves it.
_ADDRESSES_DESC = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More "
    "info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is "
    "declared as mergeable, but the merge key is not sufficiently unique, which can cause data "
    "corruption when it is merged. Callers should instead use a full-replacement patch. See "
    "https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change "
    "during the lifetime of a Node. However, there are some exceptions where this may not be "
    "possible, such as Pods that inherit a Node's address in its own status or consumers of the "
    "downward API (status.hostIP)."
)

NODE_COLUMNS = [
    _col("Name", _NAME_DESC, fmt="name"),
    _col("Status", "The status of the node"),
    _col("Roles", "The roles of the node"),
    _col("Age", _AGE_DESC),
    _col("Version", "Kubelet Version reported by the node."),
    _col("Internal-IP", _ADDRESSES_DESC, 1),
    _col("External-IP", _ADDRESSES_DESC, 1),
    _col(
        "OS-Image",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        1,
    ),
    _col(
        "Kernel-Version",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        1,
    ),
    _col(
        "Container-Runtime",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        1,
    ),
]

NAMESPACE_COLUMNS = [
    _col("Name", _NAME_DESC, fmt="name"),
    _col("Status", "The status of the namespace"),
    _col("Age", _AGE_DESC),
]

PRIORITY_CLASS_COLUMNS = [
    _col("Name", _NAME_DESC, fmt="name"),
    _col(
        "Value",
        "value represents the integer value of this priority class. This is the actual "
        "priority that pods receive when they have the name of this class in their pod spec.",
        kind="integer",
    ),
    _col(
        "Global-Default",
        "globalDefault specifies whether this PriorityClass should be considered as the default "
        "priority for pods that do not have any priority class. Only one PriorityClass can be "
        "marked as `globalDefault`. However, if more than one PriorityClasses exists with their "
        "`globalDefault` field set to true, the smallest value of such global default "
        "PriorityClasses will be used as the default priority.",
        kind="boolean",
    ),
    _col("Age", _AGE_DESC),
    _col(
        "PreemptionPolicy",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, "
        "PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
    ),
]

EVENT_COLUMNS = [
    _col("Last Seen", "Time when last event occurred"),
    _col("Type", "Type of this event (Normal, Warning), new types could be added in the future."),
    _col(
        "Reason",
        "This should be a short, machine understandable string that gives the reason for this "
        "event being generated.",
    ),
    _col("Object", "The object that this event is about."),
    _col("Subobject", "The subobject that this event is about.", 1),
    _col(
        "Source",
        "The component reporting this event. Should be a short machine understandable string.",
        1,
    ),
    _col("Message", "A human-readable description of the status of this operation."),
    _col(
        "First Seen",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        1,
    ),
    _col("Count", "The number of times this event has occurred.", 1),
    _col("Name", _NAME_DESC, 1, fmt="name"),
]


def _parse_time(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: 45s, 3m20s, 12m, 5h3m, 2d4h, 1y30d..."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def age(obj: JSON, now: float) -> str:
    created = _parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
    return "<unknown>" if created is None else human_duration(now - created)


def _pod_row(pod: JSON, now: float) -> list[Any]:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or ""
    for c in statuses:
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason"):
            reason = state["terminated"]["reason"]
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    if meta.get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    if gates:
        true_conditions = {
            c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"
        }
        gate_cell = (
            f"{sum(1 for g in gates if g.get('conditionType') in true_conditions)}/{len(gates)}"
        )
    else:
        gate_cell = NONE
    return [
        meta["name"],
        f"{ready}/{len(spec.get('containers') or [])}",
        reason,
        str(restarts),
        age(pod, now),
        status.get("podIP") or NONE,
        spec.get("nodeName") or NONE,
        status.get("nominatedNodeName") or NONE,
        gate_cell,
    ]


def _node_row(node: JSON, now: float) -> list[Any]:
    meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    ready = "Unknown"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            ready = "Ready" if cond.get("status") == "True" else "NotReady"
    state = ready + (",SchedulingDisabled" if spec.get("unschedulable") else "")
    roles = {
        key.split("/", 1)[1]
        for key in (meta.get("labels") or {})
        if key.startswith("node-role.kubernetes.io/") and key.split("/", 1)[1]
    }
    role = (meta.get("labels") or {}).get("kubernetes.io/role")
    if role:
        roles.add(role)
    info = status.get("nodeInfo") or {}
    kernel = info.get("kernelVersion") or "<unknown>"
    if info.get("architecture"):  # the printer shows the architecture beside the kernel
        kernel = f"{kernel} ({info['architecture']})"

    def address(kind: str) -> str:
        for a in status.get("addresses") or []:
            if a.get("type") == kind:
                return a.get("address") or NONE
        return NONE

    return [
        meta["name"],
        state,
        ",".join(sorted(roles)) or NONE,  # findNodeRoles: one sorted set
        age(node, now),
        info.get("kubeletVersion") or "",
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        kernel,
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _namespace_row(ns: JSON, now: float) -> list[Any]:
    return [ns["metadata"]["name"], (ns.get("status") or {}).get("phase") or "", age(ns, now)]


# Upstream's default table convertor (rest.NewDefaultTableConvertor), for the stub resources.
DEFAULT_COLUMNS = [_col("Name", _NAME_DESC, fmt="name"), _col("Created At", _AGE_DESC, fmt="date")]


def _default_row(obj: JSON, now: float) -> list[Any]:
    return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp") or ""]


def _priority_class_row(pc: JSON, now: float) -> list[Any]:
    return [
        pc["metadata"]["name"],
        pc.get("value", 0),
        bool(pc.get("globalDefault")),
        age(pc, now),
        pc.get("preemptionPolicy") or "",
    ]


def _event_row(ev: JSON, now: float) -> list[Any]:
    # events.k8s.io/v1 Events name some fields differently (regarding, note, ...).
    obj = ev.get("involvedObject") or ev.get("regarding") or {}
    source = ev.get("source") or ev.get("deprecatedSource") or {}
    last = _parse_time(ev.get("lastTimestamp")) or _parse_time(ev.get("eventTime"))
    first = _parse_time(ev.get("firstTimestamp")) or last
    src = (
        source.get("component")
        or ev.get("reportingComponent")
        or ev.get("reportingController")
        or ""
    )
    if source.get("host"):
        src += ", " + source["host"]
    return [
        "<unknown>" if last is None else human_duration(now - last),
        ev.get("type") or "",
        ev.get("reason") or "",
        f"{(obj.get('kind') or '').lower()}/{obj.get('name') or ''}",
        obj.get("fieldPath") or "",
        src,
        (ev.get("message") or ev.get("note") or "").strip(),
        "<unknown>" if first is None else human_duration(now - first),
        int(ev.get("count") or ev.get("deprecatedCount") or 1),
        ev["metadata"]["name"],
    ]


_PRINTERS: dict[str, tuple[list[JSON], Callable[[JSON, float], list[Any]]]] = {
    "pods": (POD_COLUMNS, _pod_row),
    "nodes": (NODE_COLUMNS, _node_row),
    "namespaces": (NAMESPACE_COLUMNS, _namespace_row),
    "events": (EVENT_COLUMNS, _event_row),
    "priorityclasses": (PRIORITY_CLASS_COLUMNS, _priority_class_row),
}


def _row_object(obj: JSON, include: str) -> JSON | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj["metadata"],
    }


def to_table(
    resource: str,
    objects: list[JSON],
    resource_version: str,
    *,
    include_object: str = "Metadata",
    with_columns: bool = True,
    now: float | None = None,
    custom: Any = None,
) -> JSON:
    """Render ``objects`` as a Table. ``with_columns=False`` leaves out the column definitions
    (every watch event after the first, so kubectl prints its header once). ``custom``: the
    ``CustomKind`` of a custom resource (its printer columns)."""
    columns, printer = _PRINTERS.get(resource, (DEFAULT_COLUMNS, _default_row))
    if custom is not None:
        from . import crd

        columns = crd.table_columns(custom, _NAME_DESC, _AGE_DESC)

        def printer(obj: JSON, now: float) -> list[Any]:
            return crd.table_row(custom, obj, now, human_duration)

    when = time.time() if now is None else now
    rows = []
    for obj in objects:
        # includeObject=None leaves an empty RawExtension: "object": null.
        rows.append({"cells": printer(obj, when), "object": _row_object(obj, include_object)})
    table: JSON = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns if with_columns else None,
        "rows": rows,
    }
    return table
