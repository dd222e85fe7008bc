"""The project's hand-written WebAssembly guest, guests/nodenumber/nodenumber.wat.

Upstream: kube-scheduler-wasm-extension's guest ABI (``scheduler/plugin/guest.go`` for the
exports and how their results are unpacked, ``scheduler/plugin/host.go`` for the imports), and
its ``examples/nodenumber`` guest, whose rule this one follows.

The guest runs here in wasmtime directly, through a harness of the four host functions it
imports; the Pod reaches it as protobuf, encoded by hand below (field numbers from
``k8s.io/api/core/v1/generated.proto``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import wasmtime
from kubernetes.client import V1Node, V1Pod

GUEST = Path(__file__).resolve().parents[1] / "guests" / "nodenumber" / "nodenumber.wat"

I32 = wasmtime.ValType.i32()
I64 = wasmtime.ValType.i64()

# What the Go host's detectInterfaces (scheduler/plugin/guest.go) accepts: export -> (params,
# results). Any other export is ignored, except "memory", which compileGuest requires.
GO_HOST_EXPORTS: dict[str, tuple[list[str], list[str]]] = {
    "enqueue": ([], []),
    "prefilter": ([], ["i32"]),
    "filter": ([], ["i32"]),
    "postfilter": ([], ["i64"]),
    "prescore": ([], ["i32"]),
    "score": ([], ["i64"]),
    "normalizescore": ([], ["i32"]),
    "reserve": ([], ["i32"]),
    "unreserve": ([], []),
    "permit": ([], ["i64"]),
    "prebind": ([], ["i32"]),
    "bind": ([], ["i32"]),
    "postbind": ([], []),
    "addpod": ([], ["i32"]),
    "removepod": ([], ["i32"]),
}

# The k8s.io/scheduler host functions of scheduler/plugin/host.go this guest may import, with
# the Go host's signatures: (module, name) -> (params, results).
GO_HOST_IMPORTS: dict[tuple[str, str], tuple[list[str], list[str]]] = {
    ("k8s.io/scheduler", "get_config"): (["i32", "i32"], ["i32"]),
    ("k8s.io/scheduler", "currentPod"): (["i32", "i32"], ["i32"]),
    ("k8s.io/scheduler", "currentNodeName"): (["i32", "i32"], ["i32"]),
    ("k8s.io/scheduler", "result.cluster_events"): (["i32", "i32"], []),
    ("k8s.io/scheduler", "result.status_reason"): (["i32", "i32"], []),
    ("k8s.io/klog", "log"): (["i32", "i32", "i32"], []),
}

STATUS_SUCCESS = 0
# guest/api/clusterevent.go: GVK 1 is Node; ActionType bit 1 is Add.
GVK_NODE, ACTION_ADD = 1, 1


# --- Protobuf, by hand ------------------------------------------------------------------------


def varint(n: int) -> bytes:
    """A protobuf varint: 7 bits a byte, low bits first, top bit set on all but the last."""
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def length_delimited(number: int, payload: bytes) -> bytes:
    """Wire type 2: strings and nested messages."""
    return tag(number, 2) + varint(len(payload)) + payload


def encode_pod(name: str, namespace: str = "default", uid: str = "uid-1") -> bytes:
    """A v1.Pod as Go's marshaller writes it: metadata (1) with name (1), namespace (3) and
    uid (5), then an empty spec (2) and status (3)."""
    meta = (
        length_delimited(1, name.encode())
        + length_delimited(3, namespace.encode())
        + length_delimited(5, uid.encode())
    )
    return length_delimited(1, meta) + length_delimited(2, b"") + length_delimited(3, b"")


# --- The harness: the guest's four imports ----------------------------------------------------


def functype(params: list[str], results: list[str]) -> wasmtime.FuncType:
    types = {"i32": I32, "i64": I64}
    return wasmtime.FuncType([types[p] for p in params], [types[r] for r in results])


def type_names(types: list[wasmtime.ValType]) -> list[str]:
    return [str(t) for t in types]


@dataclass
class Host:
    """The values a Go host would keep in its per-call ``stack``, and what the guest sent back."""

    config: str = ""
    pod: bytes = b""
    node_name: str = ""
    cluster_events: bytes | None = None
    calls: list[tuple[str, int, int]] = field(default_factory=list)  # (import, limit, result)
    logs: list[tuple[int, str]] = field(default_factory=list)  # (severity, line)


class Guest:
    """One instance of the guest, served by ``host``; calls the exports the way the Go host
    does and unpacks their results (scheduler/plugin/guest.go)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.store = wasmtime.Store()
        linker = wasmtime.Linker(self.store.engine)

        def reader(name: str, value: Callable[[], bytes]) -> None:
            """A (buf, limit) -> len host function: write the value only if it fits."""

            def read(caller: wasmtime.Caller, buf: int, limit: int) -> int:
                data = value()
                if 0 < len(data) <= limit:
                    memory = caller["memory"]
                    assert isinstance(memory, wasmtime.Memory)
                    memory.write(caller, data, buf)
                host.calls.append((name, limit, len(data)))
                return len(data)

            linker.define_func(
                "k8s.io/scheduler", name, functype(["i32", "i32"], ["i32"]), read, True
            )

        def cluster_events(caller: wasmtime.Caller, ptr: int, size: int) -> None:
            memory = caller["memory"]
            assert isinstance(memory, wasmtime.Memory)
            host.cluster_events = bytes(memory.read(caller, ptr, ptr + size))

        def klog(caller: wasmtime.Caller, severity: int, ptr: int, size: int) -> None:
            memory = caller["memory"]
            assert isinstance(memory, wasmtime.Memory)
            host.logs.append((severity, bytes(memory.read(caller, ptr, ptr + size)).decode()))

        linker.define_func("k8s.io/klog", "log", functype(["i32", "i32", "i32"], []), klog, True)
        reader("get_config", lambda: host.config.encode())
        reader("currentPod", lambda: host.pod)
        reader("currentNodeName", lambda: host.node_name.encode())
        linker.define_func(
            "k8s.io/scheduler",
            "result.cluster_events",
            functype(["i32", "i32"], []),
            cluster_events,
            True,
        )
        self.instance = linker.instantiate(
            self.store, wasmtime.Module.from_file(linker.engine, GUEST)
        )
        # The Go host's wazero runs "_start" on instantiation (its ModuleConfig's default).
        self.call("_start")

    def call(self, name: str) -> int:
        fn = self.instance.exports(self.store)[name]
        assert isinstance(fn, wasmtime.Func)
        result = fn(self.store)
        return 0 if result is None else int(result)

    def memory_pages(self) -> int:
        memory = self.instance.exports(self.store)["memory"]
        assert isinstance(memory, wasmtime.Memory)
        return memory.size(self.store)

    def prescore(self, pod: bytes) -> int:
        self.host.pod = pod
        return self.call("prescore")

    def score(self, node_name: str) -> tuple[int, int]:
        """(score, status code): score is the high 32 bits (int32), the code the low 32."""
        self.host.node_name = node_name
        packed = self.call("score") & 0xFFFF_FFFF_FFFF_FFFF
        high = packed >> 32
        return high - (1 << 32) if high >= 1 << 31 else high, packed & 0xFFFF_FFFF


def scores(guest: Guest, pod_name: str, nodes: list[str]) -> dict[str, int]:
    """One scheduling cycle's scoring: prescore once, then score per node."""
    assert guest.prescore(encode_pod(pod_name)) == STATUS_SUCCESS
    out = {}
    for node in nodes:
        score, code = guest.score(node)
        assert code == STATUS_SUCCESS
        out[node] = score
    return out


# --- The ABI ----------------------------------------------------------------------------------


def test_exports_are_what_the_go_host_detects() -> None:
    """memory, _start, and plugin functions with detectInterfaces' signatures: enqueue, prescore
    and score, so the Go host's maskInterfaces makes it a score plugin."""
    module = wasmtime.Module.from_file(wasmtime.Engine(), GUEST)
    exports = {e.name: e.type for e in module.exports}
    assert set(exports) == {"memory", "_start", "enqueue", "prescore", "score"}
    assert isinstance(exports["memory"], wasmtime.MemoryType)
    start = exports["_start"]
    assert isinstance(start, wasmtime.FuncType)
    assert (start.params, start.results) == ([], [])
    for name, ty in exports.items():
        if name in GO_HOST_EXPORTS:
            assert isinstance(ty, wasmtime.FuncType)
            assert (type_names(ty.params), type_names(ty.results)) == GO_HOST_EXPORTS[name]


def test_imports_are_go_host_functions() -> None:
    """Only k8s.io/scheduler functions and klog's log, each with host.go's signature; no
    WASI."""
    module = wasmtime.Module.from_file(wasmtime.Engine(), GUEST)
    imports = {}
    for imp in module.imports:
        assert imp.name is not None
        ty = imp.type
        assert isinstance(ty, wasmtime.FuncType)
        imports[(imp.module, imp.name)] = (type_names(ty.params), type_names(ty.results))
    assert set(imports) == {
        ("k8s.io/scheduler", "get_config"),
        ("k8s.io/scheduler", "currentPod"),
        ("k8s.io/scheduler", "currentNodeName"),
        ("k8s.io/scheduler", "result.cluster_events"),
        ("k8s.io/klog", "log"),
    }
    for key, signature in imports.items():
        assert signature == GO_HOST_IMPORTS[key]


def test_enqueue_registers_node_add() -> None:
    host = Host()
    Guest(host).call("enqueue")
    assert host.cluster_events == GVK_NODE.to_bytes(4, "little") + ACTION_ADD.to_bytes(4, "little")


# --- The rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "node", "expected"),
    [
        ("pod1", "node1", 10),
        ("pod1", "node2", 0),
        ("pod8", "node8", 10),
        ("pod8", "node0", 0),
        ("pod10", "node0", 10),  # only the last characters count
        ("pod1", "node11", 10),
        ("pod1", "node", 0),  # a node without a digit never matches a pod with one
        ("pod1", "node-x", 0),
        ("web-7", "worker-7", 10),
    ],
)
def test_score_last_digits(pod: str, node: str, expected: int) -> None:
    assert scores(Guest(Host()), pod, [node]) == {node: expected}


def test_pod_without_digit_matches_every_node() -> None:
    """Upstream's guest: no digit, no preference, so every node scores 10."""
    nodes = ["node0", "node5", "node", "a"]
    assert scores(Guest(Host()), "nginx", nodes) == dict.fromkeys(nodes, 10)
    assert scores(Guest(Host()), "", nodes) == dict.fromkeys(nodes, 10)


def test_agrees_with_the_python_plugin_on_pods_with_a_digit() -> None:
    """Step 16's NodeNumber rule, for every pod with a final digit (without one, the Python
    plugin scores 0 everywhere and the guest 10: both prefer no node)."""
    from steps.step16.plugins.nodenumber import MATCH_SCORE, last_digit

    nodes = [f"node{i}" for i in range(10)] + ["node", "node-a", "n12"]
    guest = Guest(Host())
    for pod in ["pod0", "pod1", "pod8", "pod19", "x9"]:
        want = {n: MATCH_SCORE if last_digit(n) == last_digit(pod) else 0 for n in nodes}
        assert scores(guest, pod, nodes) == want


def test_each_prescore_replaces_the_previous_pod() -> None:
    """The pod's digit lives in a global between prescore and score, one cycle at a time."""
    guest = Guest(Host())
    assert scores(guest, "pod1", ["node1", "node2"]) == {"node1": 10, "node2": 0}
    assert scores(guest, "pod2", ["node1", "node2"]) == {"node1": 0, "node2": 10}
    assert scores(guest, "nginx", ["node1", "node2"]) == {"node1": 10, "node2": 10}
    assert scores(guest, "pod1", ["node1", "node2"]) == {"node1": 10, "node2": 0}


# --- Reading the pod --------------------------------------------------------------------------


def test_fields_in_any_order_and_of_every_wire_type() -> None:
    """The walker skips what it does not need: spec before metadata, and inside metadata
    varints (generation, 7), nested messages (creationTimestamp, 8), and fixed-width fields
    (numbers Kubernetes does not use, wire types 1 and 5) before the name."""
    meta = (
        length_delimited(3, b"default")
        + tag(7, 0)
        + varint(2**63 - 1)
        + length_delimited(8, tag(1, 0) + varint(1_700_000_000))
        + tag(90, 1)
        + b"\xff" * 8
        + tag(91, 5)
        + b"\xff" * 4
        + length_delimited(1, b"pod3")
    )
    pod = length_delimited(2, length_delimited(10, b"node1")) + length_delimited(1, meta)
    guest = Guest(Host())
    assert guest.prescore(pod) == STATUS_SUCCESS
    assert guest.score("node3") == (10, STATUS_SUCCESS)
    assert guest.score("node1") == (0, STATUS_SUCCESS)


def test_empty_pod_has_no_digit() -> None:
    """The host returns length 0 for an empty message; a pod without a name has no digit."""
    guest = Guest(Host())
    assert guest.prescore(b"") == STATUS_SUCCESS
    assert guest.score("node1") == (10, STATUS_SUCCESS)


def test_a_pod_larger_than_memory_grows_it() -> None:
    """The buffer protocol: the host answers a too-small limit with the length it needs and
    writes nothing; the guest grows its memory and asks again."""
    annotation = length_delimited(1, b"k") + length_delimited(2, b"v" * 200_000)
    meta = length_delimited(12, annotation) + length_delimited(1, b"pod4")
    host = Host()
    guest = Guest(host)
    assert guest.memory_pages() == 1
    host.calls.clear()
    assert guest.prescore(length_delimited(1, meta)) == STATUS_SUCCESS
    (first_limit, size), (second_limit, size2) = [(c[1], c[2]) for c in host.calls]
    assert first_limit < size == size2 <= second_limit
    assert guest.memory_pages() > 1
    assert guest.score("node4") == (10, STATUS_SUCCESS)


# --- guestConfig ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "reverse"),
    [
        ("", False),
        ('{"reverse":true}', True),
        ('{ "reverse" :\n\ttrue }', True),
        ('{"reverse":false}', False),
        ('{"other":true}', False),
        ('{"reverse":"true"}', False),  # a string, not true (upstream: a decode error)
        ('{"reverse"', False),
    ],
)
def test_reverse_config(config: str, reverse: bool) -> None:
    """{"reverse": true} swaps 10 and 0, as upstream's guest does."""
    guest = Guest(Host(config=config))
    match, no_match = (0, 10) if reverse else (10, 0)
    assert scores(guest, "pod1", ["node1", "node2"]) == {"node1": match, "node2": no_match}
    assert scores(guest, "nginx", ["node1"]) == {"node1": match}


# --- Through step 17's host -------------------------------------------------------------------


def test_step17_host_places_pods_like_the_python_plugin() -> None:
    """Step 17's wasm plugin running this guest, against step 17's Python NodeNumber, on step
    3's nodes (node0..node4 cordoned, so Filter leaves node5..node9): for each pod, the same
    best nodes, among all ten and among the feasible five; and the same events."""
    from steps.step17 import framework
    from steps.step17.cycle_state import CycleState
    from steps.step17.plugins import nodenumber, wasm
    from tests.fakes import ListRecorder, make_node, make_pod

    guest = wasm.new({"guestURL": f"file://{GUEST}"}, None)
    python = nodenumber.new(None, SimpleNamespace(recorder=ListRecorder()))
    assert isinstance(guest, framework.ScorePlugin)
    assert guest.score_extensions() is None  # raw scores: 10 and 0
    assert guest.events_to_register() == python.events_to_register()

    nodes = [make_node(f"node{i}", unschedulable=i < 5) for i in range(10)]
    feasible = [n for n in nodes if not n.spec.unschedulable]

    def best(plugin: Any, pod: V1Pod, candidates: list[V1Node]) -> set[str]:
        state = CycleState()
        if hasattr(plugin, "pre_filter"):  # the framework's first call (the guest has none)
            assert plugin.pre_filter(state, pod).is_success()
        assert plugin.pre_score(state, pod, candidates).is_success()
        scores = []
        for node in candidates:
            score, status = plugin.score(state, pod, node.metadata.name)
            assert status.is_success()
            scores.append(framework.NodeScore(node.metadata.name, score))
        if plugin.score_extensions() is not None:
            assert plugin.score_extensions().normalize_score(state, pod, scores).is_success()
        top = max(s.score for s in scores)
        return {s.name for s in scores if s.score == top}

    for name in ["pod8", "pod1", "pod0", "pod15", "nginx"]:
        pod = make_pod(name)
        for candidates in (nodes, feasible):
            assert best(guest, pod, candidates) == best(python, pod, candidates), name
    assert best(guest, make_pod("pod8"), feasible) == {"node8"}
    # pod1: no node ends in 1, so all five tie; the scenario's seeded draw picks among them.
    assert best(guest, make_pod("pod1"), feasible) == {f"node{i}" for i in range(5, 10)}


def test_prescore_logs_whether_the_pod_has_a_digit() -> None:
    host = Host(pod=encode_pod("pod8"))
    guest = Guest(host)
    guest.call("prescore")
    host.pod = encode_pod("nginx")
    guest.call("prescore")
    assert host.logs == [
        (0, "NodeNumber: the pod's name ends in a digit: the node that ends in it scores 10"),
        (0, "NodeNumber: the pod's name does not end in a digit: every node scores 10"),
    ]
