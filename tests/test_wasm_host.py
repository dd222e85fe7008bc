"""Step 17's wasm host (``steps/step17/plugins/wasm``) with the project's own WAT guests.

The guests are in tests/fixtures/wasm/*.wat; wasmtime compiles WebAssembly text itself. Each
test checks one behaviour of the host as kube-scheduler-wasm-extension's Go host has it: its
errors, which extension points it presents, the packed results, the buffer protocol, the
instance pool, and the host functions (klog, eventf, the waiting pods).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from minisched import kproto
from tests.conftest import step_module
from tests.wasm_util import (
    FakeHandle,
    Waiting,
    framework,
    make_node,
    make_pod,
    new_plugin,
    node_info,
    state,
    wasm,
)

FIXTURES = Path(__file__).parent / "fixtures" / "wasm"
host = step_module(17, "plugins.wasm.host")
config = step_module(17, "config")
runtime = step_module(17, "runtime")
prioritysort = step_module(17, "plugins.prioritysort")
defaultbinder = step_module(17, "plugins.defaultbinder")
plugins = step_module(17, "plugins")


def url(name: str) -> str:
    return f"file://{FIXTURES / name}"


def write_wat(tmp_path: Path, text: str) -> str:
    path = tmp_path / "guest.wat"
    path.write_text(text)
    return f"file://{path}"


NODES = [make_node(name) for name in ("node0", "node3", "nodeX")]


@pytest.fixture
def handle() -> FakeHandle:
    return FakeHandle(nodes=list(NODES))


# --- the factory's errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param({}, "wasm: guestURL is required", id="missing guestURL"),
        pytest.param(None, "wasm: guestURL is required", id="no args"),
        pytest.param(
            {"guestURL": "c:\\foo.wasm"},
            "wasm: error reading guestURL c:\\foo.wasm: unsupported URL scheme: c",
            id="unsupported scheme",
        ),
        pytest.param(
            {"guestURL": "foo.wasm"},
            "wasm: error reading guestURL foo.wasm: invalid URL: foo.wasm",
            id="no scheme",
        ),
        pytest.param(
            {"guestURL": "file:///nonexistent/x.wasm"},
            "wasm: error reading guestURL file:///nonexistent/x.wasm: "
            "open /nonexistent/x.wasm: no such file or directory",
            id="missing file",
        ),
        pytest.param(
            {"guestURL": url("enqueue_only.wat")},
            "wasm: filter, score, reserve, permit or bind must be exported",
            id="enqueue only",
        ),
        pytest.param(
            {"guestURL": url("noop.wat"), "logSeverity": "high"},
            "failed to decode into wasm PluginConfig: json: cannot unmarshal string into Go "
            "struct field PluginConfig.logSeverity of type int32",
            id="args of the wrong type",
        ),
    ],
)
def test_factory_errors(args: Any, message: str) -> None:
    with pytest.raises(wasm.WasmError) as e:
        wasm.new(args, None)
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("wat", "message"),
    [
        pytest.param(
            '(module (memory (export "memory") 1))',
            "wasm: guest does not export any plugin functions",
            id="no plugin function",
        ),
        pytest.param(
            '(module (func (export "filter") (result i32) (i32.const 0)))',
            "wasm: guest doesn't export memory[memory]",
            id="no memory",
        ),
        pytest.param(
            '(module (memory (export "memory") 1)'
            ' (func (export "score") (result i32) i32.const 0))',
            "wasm: guest exports the wrong signature for func[score]. should be () -> (i64)",
            id="wrong signature",
        ),
        pytest.param(
            '(module (memory (export "memory") 1)'
            ' (func (export "prescore") (result i32) i32.const 0))',
            "wasm: filter, score, reserve, permit or bind must be exported",
            id="prescore without score",
        ),
        pytest.param(
            "(module (memory (export",
            "wasm: error compiling guest: ",
            id="not wasm",
        ),
        pytest.param(
            '(module (import "k8s.io/nope" "f" (func)) (memory (export "memory") 1)'
            ' (func (export "filter") (result i32) i32.const 0))',
            "failed to create a guest pool: wasm: instantiate error: ",
            id="unknown import",
        ),
    ],
)
def test_guest_errors(tmp_path: Path, wat: str, message: str) -> None:
    with pytest.raises(wasm.WasmError) as e:
        new_plugin(write_wat(tmp_path, wat))
    assert str(e.value).startswith(message)


def test_the_framework_names_the_plugin_in_its_error() -> None:
    profile = profile_with({"guestURL": ""})
    with pytest.raises(ValueError, match='initializing plugin "wasm": wasm: guestURL is required'):
        runtime.Framework(plugins.new_registry(), profile, clock=None)


# --- the plugin as the framework sees it ---------------------------------------------------------


def kinds(plugin: Any) -> set[str]:
    names = [
        "PreFilterPlugin",
        "FilterPlugin",
        "PostFilterPlugin",
        "PreScorePlugin",
        "ScorePlugin",
        "ReservePlugin",
        "PermitPlugin",
        "PreBindPlugin",
        "BindPlugin",
        "PostBindPlugin",
        "EnqueueExtensions",
    ]
    return {n for n in names if isinstance(plugin, getattr(framework, n))}


def test_noop_is_a_filter_and_score_plugin_only() -> None:
    p = new_plugin(url("noop.wat"))
    assert p.name() == "wasm"
    assert kinds(p) == {"PreFilterPlugin", "FilterPlugin", "ScorePlugin", "EnqueueExtensions"}
    assert p.pre_filter_extensions() is None
    assert p.score_extensions() is None
    pod = make_pod("pod1")
    assert p.pre_filter(state(), pod).is_success()
    assert p.filter(state(), pod, node_info(NODES[0])).is_success()
    assert p.score(state(), pod, "node0") == (0, framework.Status())
    # No enqueue: every event may make the pod schedulable.
    assert p.events_to_register() == runtime.ALL_CLUSTER_EVENTS


def test_the_scoring_guest_is_presented_where_it_exports() -> None:
    p = new_plugin(url("score.wat"))
    # permit and postbind bring the binding cycle's bookkeeping: Reserve and PostBind.
    assert kinds(p) == {
        "PreFilterPlugin",
        "PreScorePlugin",
        "ScorePlugin",
        "ReservePlugin",
        "PermitPlugin",
        "PostBindPlugin",
        "EnqueueExtensions",
    }


def test_a_panic_is_an_error_status_with_what_the_guest_printed() -> None:
    p = new_plugin(url("panic_on_filter.wat"))
    assert kinds(p) == {"PreFilterPlugin", "FilterPlugin", "EnqueueExtensions"}
    pod = make_pod("pod1")
    want = (
        "wasm: filter error: panic!\nwasm error: unreachable\nwasm stack trace:\n"
        "\tpanic_on_filter.$1()"
    )
    for _ in range(2):  # the guest's output does not pile up from one call to the next
        status = p.filter(state(), pod, node_info(NODES[0]))
        assert status.code == framework.Code.ERROR
        assert status.message() == want
    # A guest that trapped goes on serving.
    assert p.pre_filter(state(), pod).is_success()


# --- scores, reasons and events ------------------------------------------------------------------


def test_scores_come_packed_with_their_status(handle: FakeHandle) -> None:
    p = new_plugin(url("score.wat"), handle)
    pod = make_pod("pod1")
    s = state()
    assert p.pre_filter(s, pod).is_success()
    assert p.score(s, pod, "node0") == (0, framework.Status())
    assert p.score(s, pod, "node3") == (30, framework.Status())
    score, status = p.score(s, pod, "nodeX")
    assert (score, status.code, status.message()) == (
        0,
        framework.Code.ERROR,
        "no digit in node name",
    )
    # A name longer than the guest's buffer is not written: the guest sees only its length.
    score, status = p.score(s, pod, "n" * 300 + "7")
    assert status.message() == "no digit in node name"


def test_enqueue_registers_the_guests_events() -> None:
    p = new_plugin(url("score.wat"))
    assert p.events_to_register() == [
        framework.ClusterEvent(framework.GVK.NODE, framework.ActionType.ADD)
    ]


def test_eventf_reaches_the_event_recorder(handle: FakeHandle) -> None:
    p = new_plugin(url("score.wat"), handle)
    pod = make_pod("pod1")
    assert p.pre_score(state(), pod, NODES).is_success()
    assert handle.recorder_events.events == [
        ("pod1", "Normal", "Scored", "Score", "from a wat guest")
    ]


@pytest.mark.parametrize(
    ("severity", "logged"),
    [
        pytest.param(0, True, id="info at info"),
        pytest.param(2, False, id="info below error"),
    ],
)
def test_guest_log_lines(caplog: pytest.LogCaptureFixture, severity: int, logged: bool) -> None:
    p = new_plugin(url("score.wat"), logSeverity=severity)
    with caplog.at_level(logging.INFO, logger=host.__name__):
        p.pre_filter(state(), make_pod("pod1"))
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == host.__name__]
    assert lines == ([(logging.INFO, "prefilter called")] if logged else [])


# --- Permit, the pool and the binding cycle ------------------------------------------------------


def test_permit_waits_and_the_guest_moves_to_the_binding_cycle(handle: FakeHandle) -> None:
    p = new_plugin(url("score.wat"), handle)
    pool = p.pool
    pod1, pod2 = make_pod("pod1"), make_pod("pod2")
    assert p.pre_filter(state(), pod1).is_success()
    first = pool.scheduled
    assert pool.scheduled_pod_uid == "uid-pod1" and pool.free == []
    status, timeout = p.permit(state(), pod1, "node3")
    assert (status.code, timeout) == (framework.Code.WAIT, 1.5)
    # The guest that scheduled pod1 now serves its binding cycle...
    assert pool.binding == {"uid-pod1": first} and pool.scheduled is None
    # ...and the next pod's cycle gets a new instance.
    assert p.pre_filter(state(), pod2).is_success()
    assert pool.scheduled is not first
    p.permit(state(), pod2, "node0")
    assert set(pool.binding) == {"uid-pod1", "uid-pod2"}
    # A failed binding cycle (Unreserve) and a finished one (PostBind) give the guests back.
    p.unreserve(state(), pod2, "node0")
    assert set(pool.binding) == {"uid-pod1"}
    handle.waiting["uid-waiting"] = Waiting(make_pod("waiting"))
    p.post_bind(state(), pod1, "node3")
    assert pool.binding == {} and len(pool.free) == 2
    # The guest's postbind rejected the waiting pod through the handle.
    assert handle.waiting["uid-waiting"].rejected


def test_a_reserve_without_the_guests_export_succeeds() -> None:
    p = new_plugin(url("score.wat"))
    assert p.reserve(state(), make_pod("pod1"), "node0") == framework.Status()


# --- in a framework ------------------------------------------------------------------------------


def profile_with(args: dict[str, Any]) -> Any:
    multi_point = config.PluginSet(enabled=[config.Plugin("wasm")])
    plugins_ = config.Plugins(
        queue_sort=config.PluginSet(enabled=[config.Plugin(prioritysort.NAME)]),
        bind=config.PluginSet(enabled=[config.Plugin(defaultbinder.NAME)]),
        multi_point=multi_point,
    )
    return config.KubeSchedulerProfile(
        scheduler_name="minisched",
        plugins=plugins_,
        plugin_config=[config.PluginConfig(name="wasm", args=args)],
    )


def test_multi_point_puts_the_guest_at_its_extension_points(handle: FakeHandle) -> None:
    fwk = runtime.Framework(
        plugins.new_registry(),
        profile_with({"guestURL": url("score.wat")}),
        clock=handle.clock,
        snapshot_shared_lister=handle.snapshot_shared_lister(),
    )
    wasm_plugin = fwk.plugins_map["wasm"]
    assert wasm_plugin in fwk.score_plugins and wasm_plugin in fwk.permit_plugins
    assert wasm_plugin not in fwk.filter_plugins and wasm_plugin not in fwk.bind_plugins
    pod = make_pod("pod1")
    s = state()
    assert fwk.run_pre_filter_plugins(s, pod).is_success()
    scores, status = fwk.run_score_plugins(s, pod, [NODES[0], NODES[1]])
    assert status.is_success()
    assert [(n.name, n.score) for n in scores["wasm"]] == [("node0", 0), ("node3", 30)]
    # The guest's event is registered under the plugin's name.
    event = framework.ClusterEvent(framework.GVK.NODE, framework.ActionType.ADD)
    assert fwk.cluster_event_map[event] == {"wasm"}


# --- the host's helpers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "entries"),
    [
        pytest.param(b"", [], id="empty"),
        pytest.param(b"a\0", ["a"], id="one"),
        pytest.param(b"a\0two\0", ["a", "two"], id="two"),
        pytest.param(b"a\0\0two\0", ["a", "two"], id="skip empty"),
        pytest.param(b"a\0two", ["a"], id="skip truncated"),
        pytest.param(b"a\0f\xc3\xb3o\0c\0", ["a", "fóo", "c"], id="unicode"),
    ],
)
def test_from_nul_terminated(data: bytes, entries: list[str]) -> None:
    """Upstream: cstring_test.go (Test_fromNULTerminated)."""
    assert host.from_nul_terminated(data) == entries


def test_cluster_events_the_step_cannot_watch_are_dropped() -> None:
    data = bytes([0, 0, 0, 0, 63, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 9])
    assert host.decode_cluster_events(data) == [
        framework.ClusterEvent(framework.GVK.POD, framework.ActionType.ALL),
        framework.ClusterEvent(framework.GVK.WILDCARD, framework.ActionType.ADD),
    ]


def test_kproto_encodes_what_guests_read() -> None:
    pod = make_pod("pod1", node_name="node3")
    pod.metadata.labels = {"app": "web"}
    pod.spec.containers[0].resources = {"requests": {"cpu": "100m"}}
    decoded: Any = kproto.decode("Pod", kproto.encode("Pod", pod))
    assert decoded.metadata.name == "pod1" and decoded.metadata.uid == "uid-pod1"
    assert dict(decoded.metadata.labels) == {"app": "web"}
    assert decoded.spec.nodeName == "node3"
    assert decoded.spec.containers[0].image == "pause"
    assert decoded.spec.containers[0].resources.requests["cpu"].string == "100m"
    node = make_node("node1")
    node_list: Any = kproto.decode("NodeList", kproto.encode("NodeList", {"items": [node]}))
    assert node_list.items[0].status.allocatable["pods"].string == "110"
