"""The host functions: what a guest may call while the scheduler calls it.

Upstream (kube-scheduler-wasm-extension): scheduler/plugin/host.go (the three host modules and
the ``stack`` of one call), mem.go (the buffer protocol), cstring.go (NUL-terminated lists)
and clusterevent.go (the events a guest registers).

WebAssembly functions take and return numbers only. So the host's exports (``filter``,
``score``...) take nothing: the guest asks for what it needs (the pod, the node's name) by
calling back into the host, and hands its results over the same way, before it returns a
status code. What the host knows about the call in progress lives in a ``Stack``; the host
functions find it in ``current_stack()`` (upstream carries it in the Go context).

The read protocol (upstream: marshalIfUnderLimit, writeStringIfUnderLimit): the guest passes
a buffer and its size (``buf``, ``buf_limit``); the host writes the value only if it fits, and
always returns its size, 0 meaning empty. A guest whose buffer was too small grows it to the
returned size and calls again: the Go SDK starts with 2 KiB, so a realistic Pod takes two calls.
"""

from __future__ import annotations

import json
import logging
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kubernetes.client import V1Node, V1ObjectMeta, V1Pod
from wasmtime import Caller, FuncType, Linker, Memory, ValType

from minisched import kproto

from ...framework import GVK, ActionType, ClusterEvent, Handle, NodeScore, NodeToStatusMap

log = logging.getLogger(__name__)

# The host modules a guest imports from (upstream: k8sApi, k8sKlog, k8sScheduler).
K8S_API = "k8s.io/api"
K8S_KLOG = "k8s.io/klog"
K8S_SCHEDULER = "k8s.io/scheduler"


# --- the stack of one call ----------------------------------------------------------------------


@dataclass
class Stack:
    """The inputs and results of one call of a guest export (upstream: stack).

    Each export reads only the inputs it needs; result fields start with ``result_``.
    """

    # The pod being scheduled (every export but enqueue).
    current_pod: V1Pod | None = None
    # The node being evaluated (Filter, Score, Reserve, Permit, the binding cycle).
    current_node_name: str = ""
    # PreScore's nodes: the ones that passed Filter.
    filtered_nodes: list[V1Node] | None = None
    # PostFilter's input: each node's Filter status.
    node_to_status_map: NodeToStatusMap | None = None
    # NormalizeScore's input.
    node_score_list: list[NodeScore] | None = None
    # The pod AddPod/RemovePod adds or removes.
    target_pod: V1Pod | None = None
    # enqueue's result.
    result_cluster_events: list[ClusterEvent] = field(default_factory=list)
    # PreFilter's result (upstream: PreFilterResult.NodeNames); None: all nodes.
    result_node_names: list[str] | None = None
    # PostFilter's result.
    result_nominated_node_name: str = ""
    # The reason of the status every export but enqueue returns.
    result_status_reason: str = ""
    # NormalizeScore's result, by node name.
    result_normalized_scores: dict[str, int] | None = None
    # The pod's protobuf bytes, kept for the guest's second read of a large pod.
    encoded: dict[int, bytes] = field(default_factory=dict)


_local = threading.local()


def current_stack() -> Stack:
    """The stack of the call in progress on this thread (upstream: paramsFromContext)."""
    stack: Stack = _local.stack
    return stack


def set_current_stack(stack: Stack | None) -> None:
    _local.stack = stack


# --- memory (mem.go) ----------------------------------------------------------------------------


def _memory(caller: Caller) -> Memory:
    memory = caller["memory"]
    assert isinstance(memory, Memory)
    return memory


def read_bytes(caller: Caller, ptr: int, length: int, what: str) -> bytes:
    """``length`` bytes of the guest's memory at ``ptr``. Raises, as upstream panics, when they
    are not all inside it (wasmtime's ``read`` would quietly return fewer)."""
    memory = _memory(caller)
    if ptr < 0 or length < 0 or ptr + length > memory.data_len(caller):
        raise MemoryError(f"out of memory reading {what}")
    return bytes(memory.read(caller, ptr, ptr + length))


def write_if_under_limit(caller: Caller, value: bytes, buf: int, buf_limit: int) -> int:
    """Write ``value`` at ``buf`` if it fits in ``buf_limit`` bytes; its length either way
    (upstream: marshalIfUnderLimit, writeStringIfUnderLimit). 0 means empty: nothing to read."""
    if not value:
        return 0
    if len(value) > buf_limit:
        return len(value)  # too big: the guest may grow its buffer and call again
    _memory(caller).write(caller, value, buf)
    return len(value)


def from_nul_terminated(b: bytes) -> list[str]:
    """The NUL-terminated strings in ``b``, skipping empty ones and an unterminated tail
    (upstream: fromNULTerminated)."""
    return [entry.decode() for entry in b.split(b"\0")[:-1] if entry]


# --- protobuf and JSON values -------------------------------------------------------------------


def _encoded(stack: Stack | None, kind: str, obj: Any) -> bytes:
    """``obj``'s protobuf bytes, encoded once per call even when the guest reads twice."""
    if obj is None:
        return b""
    if stack is None:
        return kproto.encode(kind, obj)
    key = id(obj)
    if key not in stack.encoded:
        stack.encoded[key] = kproto.encode(kind, obj)
    return stack.encoded[key]


def go_json(value: Any) -> bytes:
    """JSON as Go's encoding/json writes it: no spaces."""
    return json.dumps(value, separators=(",", ":")).encode()


# --- cluster events (clusterevent.go) -----------------------------------------------------------

# The ABI's numbers for the kinds of object (upstream: gvk). The step watches only Pods and
# Nodes: the other kinds have no GVK here (None).
GVK_BY_NUMBER: list[tuple[str, GVK | None]] = [
    ("Pod", GVK.POD),
    ("Node", GVK.NODE),
    ("PersistentVolume", None),
    ("PersistentVolumeClaim", None),
    ("PodSchedulingContext", None),
    ("ResourceClaim", None),
    ("storage.k8s.io/StorageClass", None),
    ("storage.k8s.io/CSINode", None),
    ("storage.k8s.io/CSIDriver", None),
    ("storage.k8s.io/CSIStorageCapacity", None),
    ("*", GVK.WILDCARD),
]


def decode_cluster_events(b: bytes) -> list[ClusterEvent]:
    """Each 8 bytes: the kind's number and the ActionType bits, both little-endian u32
    (upstream: decodeClusterEvents).

    Not implemented: events about the kinds this scheduler does not watch (volumes, storage
    classes, CSI, DRA): they are dropped, with a debug line. A guest that registers only such
    events registers none here, so the pods it rejects wait for the unschedulableQ timeout.
    """
    events = []
    for offset in range(0, len(b) - len(b) % 8, 8):
        number, action = struct.unpack_from("<II", b, offset)
        name, gvk = GVK_BY_NUMBER[number] if number < len(GVK_BY_NUMBER) else (str(number), None)
        if gvk is None:
            log.debug("Dropping a wasm guest's event the scheduler does not watch gvk=%s", name)
            continue
        events.append(ClusterEvent(gvk, ActionType(action & ActionType.ALL)))
    return events


# --- klog ---------------------------------------------------------------------------------------

# The guest's severities (upstream: severityInfo...severityFatal) and Python's levels for them.
SEVERITY_LEVELS = [logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL]


# --- the host functions -------------------------------------------------------------------------

I32 = ValType.i32()


def _define(
    linker: Linker, module: str, name: str, params: int, results: int, fn: Callable[..., Any]
) -> None:
    """Define ``module.name`` as ``fn(caller, *i32 params)`` returning ``results`` i32s."""
    linker.define_func(
        module, name, FuncType([I32] * params, [I32] * results), fn, access_caller=True
    )


class Host:
    """The host functions of one plugin, defined into its Linker (upstream: host and the
    instantiateHost* functions of host.go). ``guest_config`` and ``log_severity`` come from
    the plugin's args; ``handle`` is the framework's."""

    def __init__(self, handle: Handle | None, guest_config: str, log_severity: int) -> None:
        self.handle = handle
        self.guest_config = guest_config.encode()
        self.log_severity = log_severity

    def define(self, linker: Linker) -> None:
        """Every host function, with upstream's module, name and signature."""
        # k8s.io/api: the cluster's objects.
        _define(linker, K8S_API, "node", 4, 1, self.node)
        _define(linker, K8S_API, "nodeList", 2, 1, self.node_list)
        # k8s.io/klog: logging.
        _define(linker, K8S_KLOG, "log", 3, 0, self.klog_log)
        _define(linker, K8S_KLOG, "logs", 5, 0, self.klog_logs)
        _define(linker, K8S_KLOG, "severity", 0, 1, lambda caller: self.log_severity)
        # k8s.io/scheduler: the call's inputs, its results, and the framework's handle.
        _define(linker, K8S_SCHEDULER, "get_config", 2, 1, self.get_config)
        _define(linker, K8S_SCHEDULER, "filteredNodeList", 2, 1, filtered_node_list)
        _define(linker, K8S_SCHEDULER, "targetPod", 2, 1, target_pod)
        _define(linker, K8S_SCHEDULER, "currentNodeName", 2, 1, current_node_name)
        _define(linker, K8S_SCHEDULER, "nodeImageStates", 4, 1, self.node_image_states)
        _define(linker, K8S_SCHEDULER, "currentPod", 2, 1, current_pod)
        _define(linker, K8S_SCHEDULER, "result.cluster_events", 2, 0, result_cluster_events)
        _define(linker, K8S_SCHEDULER, "result.node_names", 2, 0, result_node_names)
        _define(
            linker, K8S_SCHEDULER, "result.nominated_node_name", 2, 0, result_nominated_node_name
        )
        _define(linker, K8S_SCHEDULER, "result.status_reason", 2, 0, result_status_reason)
        _define(linker, K8S_SCHEDULER, "nodeToStatusMap", 2, 1, node_to_status_map)
        _define(
            linker,
            K8S_SCHEDULER,
            "result.normalized_score_list",
            2,
            0,
            result_normalized_score_list,
        )
        _define(linker, K8S_SCHEDULER, "nodeScoreList", 2, 1, node_score_list)
        _define(linker, K8S_SCHEDULER, "handle.eventrecorder.eventf", 2, 0, self.eventf)
        _define(linker, K8S_SCHEDULER, "handle.reject_waiting_pod", 4, 0, self.reject_waiting_pod)
        _define(linker, K8S_SCHEDULER, "handle.get_waiting_pod", 4, 0, self.get_waiting_pod)

    # --- k8s.io/api -----------------------------------------------------------------------

    def _node_infos(self) -> Any:
        if self.handle is None:
            raise RuntimeError("wasm: the plugin was built without a framework handle")
        return self.handle.snapshot_shared_lister().node_infos()

    def node(self, caller: Caller, name: int, name_len: int, buf: int, buf_limit: int) -> int:
        """The Node of that name in the cycle's snapshot, as protobuf; 0 if there is none."""
        node_name = read_bytes(caller, name, name_len, "nodeName").decode()
        try:
            node = self._node_infos().get(node_name).node()
        except Exception:
            node = None
        return write_if_under_limit(caller, _encoded(None, "Node", node), buf, buf_limit)

    def node_list(self, caller: Caller, buf: int, buf_limit: int) -> int:
        """Every Node in the snapshot, as a protobuf NodeList."""
        items = [kproto.to_json(ni.node()) for ni in self._node_infos().list()]
        data = kproto.encode("NodeList", {"items": items})
        return write_if_under_limit(caller, data, buf, buf_limit)

    # --- k8s.io/klog ----------------------------------------------------------------------

    def klog_log(self, caller: Caller, severity: int, msg: int, msg_len: int) -> None:
        """klog.Info / klog.Error from the guest, into Python logging.

        Differs from upstream: a line is dropped when its severity is *below* the configured
        one, for ``log`` as for ``logs``. Upstream's ``log`` drops lines *above* it, so at the
        default (0, info) a guest's error lines were lost; and upstream writes only info and
        error lines (warning and fatal are dropped), where here every severity has its level.
        """
        if severity < self.log_severity:
            return
        try:
            text = read_bytes(caller, msg, msg_len, "message").decode(errors="replace")
        except MemoryError:
            return  # don't panic if we can't read the message
        log.log(_level(severity), "%s", text)
        self._record_log(text)

    def _record_log(self, text: str) -> None:
        """Not in upstream: the guest's line also goes to the report, under the pod of the
        call in progress, so that the run of the scenario shows what the guest said."""
        stack = getattr(_local, "stack", None)
        pod = stack.current_pod if stack is not None else None
        if self.handle is not None and pod is not None:
            key = f"{pod.metadata.namespace}/{pod.metadata.name}"
            self.handle.recorder.record("guest", pod=key, message=text)

    def klog_logs(
        self, caller: Caller, severity: int, msg: int, msg_len: int, kvs: int, kvs_len: int
    ) -> None:
        """klog.InfoS / klog.ErrorS: a message and key/value pairs, NUL-terminated strings.

        The line is klog's structured one: the message quoted, then ``key="value"`` pairs
        (``"hello" err="unhandled"``), as the host writes its own errors. The report gets it
        unquoted.
        """
        if kvs_len == 0:  # no key-values is unlikely, but possible
            self.klog_log(caller, severity, msg, msg_len)
            return
        if severity < self.log_severity:
            return
        try:
            text = read_bytes(caller, msg, msg_len, "message").decode(errors="replace")
            pairs = from_nul_terminated(read_bytes(caller, kvs, kvs_len, "kvs"))
        except MemoryError:
            return
        kv = " ".join(f'{k}="{v}"' for k, v in zip(pairs[::2], pairs[1::2], strict=False))
        log.log(_level(severity), '"%s" %s', text, kv)
        self._record_log(f"{text} {kv}")

    # --- k8s.io/scheduler: inputs ---------------------------------------------------------

    def get_config(self, caller: Caller, buf: int, buf_limit: int) -> int:
        """The plugin's ``guestConfig``, as it is (guests parse it, as JSON usually)."""
        return write_if_under_limit(caller, self.guest_config, buf, buf_limit)

    def node_image_states(
        self, caller: Caller, name: int, name_len: int, buf: int, buf_limit: int
    ) -> int:
        """The images on the node, as JSON ``{image: {"Size": bytes, "NumNodes": n}}``, n being
        how many nodes of the snapshot have the image; ``null`` for an unknown node.

        Upstream reads NodeInfo.ImageStates, which the snapshot fills the same way; this
        scheduler's NodeInfo has none, so they are counted here from the nodes' status.
        """
        node_name = read_bytes(caller, name, name_len, "nodeName").decode()
        states: dict[str, dict[str, int]] | None = None
        try:
            node_infos = self._node_infos()
            node = node_infos.get(node_name).node()
        except Exception:
            node = None
        if node is not None:
            count: dict[str, int] = {}
            for ni in node_infos.list():
                other = ni.node()
                for image in (other.status and other.status.images) or []:
                    for image_name in image.names or []:
                        count[image_name] = count.get(image_name, 0) + 1
            states = {}
            for image in (node.status and node.status.images) or []:
                for image_name in image.names or []:
                    size = image.size_bytes or 0
                    states[image_name] = {"Size": size, "NumNodes": count[image_name]}
        return write_if_under_limit(caller, go_json(states), buf, buf_limit)

    # --- k8s.io/scheduler: the handle -----------------------------------------------------

    def eventf(self, caller: Caller, buf: int, buf_len: int) -> None:
        """EventRecorder.Eventf from the guest: a JSON EventMessage.

        Simplified: this scheduler's recorder writes core/v1 Events about pods; the regarding
        reference's name, namespace, uid and resourceVersion make the event's involvedObject
        (its kind is taken to be Pod) and the related reference is dropped.
        """
        message = json.loads(read_bytes(caller, buf, buf_len, "eventrecorder event"))
        regarding = message.get("RegardingReference") or {}
        obj = SimpleNamespace(
            metadata=V1ObjectMeta(
                name=regarding.get("Name") or None,
                namespace=regarding.get("Namespace") or None,
                uid=regarding.get("UID") or None,
                resource_version=regarding.get("ResourceVersion") or None,
            )
        )
        recorder = self.handle.event_recorder() if self.handle is not None else None
        if recorder is None:
            log.debug("No event recorder for a wasm guest's event: %s", message)
            return
        recorder.eventf(
            obj,
            message.get("Eventtype", ""),
            message.get("Reason", ""),
            message.get("Action", ""),
            message.get("Note", ""),
        )

    def reject_waiting_pod(
        self, caller: Caller, uid: int, uid_len: int, buf: int, buf_limit: int
    ) -> None:
        """Handle.RejectWaitingPod; whether a pod was rejected goes to ``buf`` as a
        little-endian u64 0 or 1 (upstream writes it whatever ``buf_limit`` says)."""
        pod_uid = read_bytes(caller, uid, uid_len, "rejectWaitingPod").decode()
        rejected = self.handle is not None and self.handle.reject_waiting_pod(pod_uid)
        _memory(caller).write(caller, struct.pack("<Q", int(rejected)), buf)

    def get_waiting_pod(
        self, caller: Caller, uid: int, uid_len: int, buf: int, buf_limit: int
    ) -> None:
        """Handle.GetWaitingPod: the waiting pod's protobuf in ``buf``, or a u64 0 there when
        no pod of that UID waits. As upstream, nothing is returned: a pod larger than
        ``buf_limit`` is not written, and the guest cannot tell."""
        pod_uid = read_bytes(caller, uid, uid_len, "getWaitingPod").decode()
        waiting_pod = self.handle.get_waiting_pod(pod_uid) if self.handle is not None else None
        if waiting_pod is None:
            _memory(caller).write(caller, struct.pack("<Q", 0), buf)
            return
        data = kproto.encode("Pod", waiting_pod.get_pod())
        if write_if_under_limit(caller, data, buf, buf_limit) == 0:
            raise MemoryError("out of memory writing getWaitingPod result")


def _level(severity: int) -> int:
    return SEVERITY_LEVELS[min(max(severity, 0), len(SEVERITY_LEVELS) - 1)]


# --- k8s.io/scheduler: the call's inputs (no plugin state needed) -------------------------------


def filtered_node_list(caller: Caller, buf: int, buf_limit: int) -> int:
    """PreScore's nodes, as a JSON array of names."""
    nodes = current_stack().filtered_nodes or []
    data = go_json([n.metadata.name for n in nodes])
    return write_if_under_limit(caller, data, buf, buf_limit)


def target_pod(caller: Caller, buf: int, buf_limit: int) -> int:
    stack = current_stack()
    return write_if_under_limit(caller, _encoded(stack, "Pod", stack.target_pod), buf, buf_limit)


def current_node_name(caller: Caller, buf: int, buf_limit: int) -> int:
    return write_if_under_limit(caller, current_stack().current_node_name.encode(), buf, buf_limit)


def current_pod(caller: Caller, buf: int, buf_limit: int) -> int:
    stack = current_stack()
    return write_if_under_limit(caller, _encoded(stack, "Pod", stack.current_pod), buf, buf_limit)


def node_to_status_map(caller: Caller, buf: int, buf_limit: int) -> int:
    """PostFilter's input as JSON ``{node: status code}``."""
    statuses = current_stack().node_to_status_map or {}
    data = go_json({name: int(status.code) for name, status in statuses.items()})
    return write_if_under_limit(caller, data, buf, buf_limit)


def node_score_list(caller: Caller, buf: int, buf_limit: int) -> int:
    """NormalizeScore's input as JSON ``{node: score}``."""
    scores = current_stack().node_score_list or []
    data = go_json({s.name: s.score for s in scores})
    return write_if_under_limit(caller, data, buf, buf_limit)


# --- k8s.io/scheduler: results -------------------------------------------------------------------


def result_cluster_events(caller: Caller, buf: int, buf_len: int) -> None:
    b = read_bytes(caller, buf, buf_len, "clusterEvents")
    current_stack().result_cluster_events = decode_cluster_events(b)


def result_node_names(caller: Caller, buf: int, buf_len: int) -> None:
    b = read_bytes(caller, buf, buf_len, "nodeNames")
    current_stack().result_node_names = from_nul_terminated(b)


def result_nominated_node_name(caller: Caller, buf: int, buf_len: int) -> None:
    b = read_bytes(caller, buf, buf_len, "nominatedNodeName")
    current_stack().result_nominated_node_name = b.decode()


def result_status_reason(caller: Caller, buf: int, buf_len: int) -> None:
    try:
        reason = read_bytes(caller, buf, buf_len, "message").decode(errors="replace")
    except MemoryError:
        reason = "BUG: out of memory reading message"  # don't panic over a message
    current_stack().result_status_reason = reason


def result_normalized_score_list(caller: Caller, buf: int, buf_len: int) -> None:
    b = read_bytes(caller, buf, buf_len, "normalized score list")
    scores = json.loads(b)
    current_stack().result_normalized_scores = {str(k): int(v) for k, v in scores.items()}
