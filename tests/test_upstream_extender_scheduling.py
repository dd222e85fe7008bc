"""kube-scheduler v1.23's own tests of the scheduler's calls to extenders, ported case by case,
run against every step from 15 (the step that calls extenders).

Ported from kubernetes v1.23.4's pkg/scheduler as vendored into QuarfotPrice/sched.dev (read at
commit 448ef7a3cea647dce342c869b72c2c3483cf1c1f), whose generic_scheduler.go, scheduler.go and
preemption.go call extenders as v1.23.10's do (kubernetes-sigs/scheduler-plugins v0.23.10's
vendor tree):

- pkg/scheduler/extender_test.go: TestGenericSchedulerWithExtenders (Filter and Prioritize
  through Schedule, upstream's FakeExtender: tests/fake_extender.py);
- pkg/scheduler/generic_scheduler_test.go: TestFindNodesThatPassExtenders;
- pkg/scheduler/scheduler_test.go: TestSchedulerBinding (with factory_test.go's fakeExtender).

Preemption's cases with extenders (TestPostFilter, TestPreempt of default_preemption_test.go)
are in tests/test_upstream_preemption.py, with the other cases of those tests.

Upstream's ScheduleResult (SuggestedHost, EvaluatedNodes, FeasibleNodes) is rebuilt here:
schedule_pod returns the host, and find_nodes_that_fit_pod, run again on the same cluster,
gives the feasible nodes and the Diagnosis (EvaluatedNodes = feasible + failed). Where upstream
only checks that Schedule failed, the tests here also check how (a FitError, or the
extender's error).

Then this project's checks of what upstream's tests do not cover: the score scaling, the
extenders called at once, the FitError's histogram, the nominated node, binding end to end,
an extender's victims at preemption, and what the report is told (the ``extender``,
``score`` and ``filter`` events).

Left out: extender_test.go's TestIsInterested and the tests of extender.go (the HTTP
extender); scheduler_test.go's TestSchedulerCreation/With extenders (building the extenders
from the configuration). Both belong to the HTTP extender's tests.
"""

from __future__ import annotations

import logging
import threading
from types import ModuleType
from typing import Any

import pytest
from kubernetes import client

from minisched.goroutine import wait_for
from tests import fake_extender as fe
from tests import test_upstream_preemption as up
from tests.conftest import built_steps, step_module
from tests.fakes import (
    add_nodes,
    add_pods,
    framework_of,
    make_node,
    make_pod,
    new_framework,
    offline_scheduler,
    set_framework,
)

STEPS = built_steps(15)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


def per_step(params: list[Any]) -> list[Any]:
    """Each case on every step, its id ``<upstream test>/<case>-stepN``."""
    return [
        pytest.param(step, *p.values, id=f"{p.id}-step{step}", marks=p.marks)
        for p in params
        for step in STEPS
    ]


class TrueFilter:
    """Upstream: st.NewTrueFilterPlugin."""

    def __init__(self, fw: ModuleType) -> None:
        self.fw = fw

    def name(self) -> str:
        return "TrueFilter"

    def filter(self, state: Any, pod: client.V1Pod, node_info: Any) -> Any:
        return self.fw.Status()


def use_extenders(sched: Any, extenders: list[Any]) -> None:
    """Make ``extenders`` the scheduler's, in place: the frameworks share its list (upstream:
    the Scheduler's Extenders, and each profile's WithExtenders)."""
    sched.extenders[:] = extenders


def scheduler(step: int, node_names: list[str], score: list[tuple[str, int]] | None = None) -> Any:
    """An offline scheduler whose framework runs TrueFilter, the ``score`` plugins (upstream's
    Node2Prioritizer, by weight) and DefaultBinder, on nodes of these names."""
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    registry: dict[str, Any] = {"TrueFilter": lambda _a, _h: TrueFilter(fw)}
    registry[fe.Node2PrioritizerPlugin.NAME] = lambda _a, _h: fe.Node2PrioritizerPlugin(fw)
    points: dict[str, Any] = {"filter": ["TrueFilter"]}
    if score:
        points["score"] = list(score)
    fwk = new_framework(step, registry, clock=sched.clock, client=sched.client, **points)
    set_framework(sched, fwk)
    add_nodes(sched, *[make_node(n) for n in node_names])
    return sched


def cycle_state(step: int) -> Any:
    return step_module(step, "cycle_state").CycleState()


def empty_pod() -> client.V1Pod:
    """Upstream's podIgnored, &v1.Pod{}."""
    return client.V1Pod(metadata=client.V1ObjectMeta(name=""), spec=client.V1PodSpec(containers=[]))


# --- extender_test.go: TestGenericSchedulerWithExtenders ---------------------------------------


def _true() -> list[Any]:
    return [fe.true_predicate_extender]


GENERIC_SCHEDULER_WITH_EXTENDERS = [
    pytest.param(
        [],
        lambda fw: [
            fe.FakeExtender(fw, predicates=_true()),
            fe.FakeExtender(fw, predicates=[fe.error_predicate_extender]),
        ],
        ["node1", "node2"],
        "some error",
        id="TestGenericSchedulerWithExtenders/test 1",
    ),
    pytest.param(
        [],
        lambda fw: [
            fe.FakeExtender(fw, predicates=_true()),
            fe.FakeExtender(fw, predicates=[fe.false_predicate_extender]),
        ],
        ["node1", "node2"],
        "FitError",
        id="TestGenericSchedulerWithExtenders/test 2",
    ),
    pytest.param(
        [],
        lambda fw: [
            fe.FakeExtender(fw, predicates=_true()),
            fe.FakeExtender(fw, predicates=[fe.node1_predicate_extender]),
        ],
        ["node1", "node2"],
        ("node1", 2, 1),
        id="TestGenericSchedulerWithExtenders/test 3",
    ),
    pytest.param(
        [],
        lambda fw: [
            fe.FakeExtender(fw, predicates=[fe.node2_predicate_extender]),
            fe.FakeExtender(fw, predicates=[fe.node1_predicate_extender]),
        ],
        ["node1", "node2"],
        "FitError",
        id="TestGenericSchedulerWithExtenders/test 4",
    ),
    pytest.param(
        [],
        lambda fw: [
            fe.FakeExtender(
                fw,
                predicates=_true(),
                prioritizers=[fe.PriorityConfig(fe.error_prioritizer_extender, 10)],
                weight=1,
            )
        ],
        ["node1"],
        ("node1", 1, 1),
        id="TestGenericSchedulerWithExtenders/test 5",
    ),
    pytest.param(
        [],
        lambda fw: [
            fe.FakeExtender(
                fw,
                predicates=_true(),
                prioritizers=[fe.PriorityConfig(fe.node1_prioritizer_extender, 10)],
                weight=1,
            ),
            fe.FakeExtender(
                fw,
                predicates=_true(),
                prioritizers=[fe.PriorityConfig(fe.node2_prioritizer_extender, 10)],
                weight=5,
            ),
        ],
        ["node1", "node2"],
        ("node2", 2, 2),
        id="TestGenericSchedulerWithExtenders/test 6",
    ),
    pytest.param(
        [(fe.Node2PrioritizerPlugin.NAME, 20)],
        lambda fw: [
            fe.FakeExtender(
                fw,
                predicates=_true(),
                prioritizers=[fe.PriorityConfig(fe.node1_prioritizer_extender, 10)],
                weight=1,
            )
        ],
        ["node1", "node2"],
        ("node2", 2, 2),  # node2 has higher score
        id="TestGenericSchedulerWithExtenders/test 7",
    ),
    pytest.param(
        # Scheduler is expected to not send pod to extender in Filter/Prioritize phases if the
        # extender is not interested in the pod: its predicate and prioritizer fail.
        [(fe.Node2PrioritizerPlugin.NAME, 1)],
        lambda fw: [
            fe.FakeExtender(
                fw,
                predicates=[fe.error_predicate_extender],
                prioritizers=[fe.PriorityConfig(fe.error_prioritizer_extender, 10)],
                un_interested=True,
            )
        ],
        ["node1", "node2"],
        ("node2", 2, 2),  # node2 has higher score
        id="TestGenericSchedulerWithExtenders/test 8",
    ),
    pytest.param(
        # Scheduling is expected to not fail in Filter/Prioritize phases if the extender is not
        # available and ignorable.
        [],
        lambda fw: [
            fe.FakeExtender(fw, predicates=[fe.error_predicate_extender], ignorable=True),
            fe.FakeExtender(fw, predicates=[fe.node1_predicate_extender]),
        ],
        ["node1", "node2"],
        ("node1", 2, 1),
        id="TestGenericSchedulerWithExtenders/test 9",
    ),
]


@pytest.mark.parametrize(
    ("step", "score", "extenders", "nodes", "expected"), per_step(GENERIC_SCHEDULER_WITH_EXTENDERS)
)
def test_generic_scheduler_with_extenders(
    step: int,
    score: list[tuple[str, int]],
    extenders: Any,
    nodes: list[str],
    expected: tuple[str, int, int] | str,
) -> None:
    """``expected``: (SuggestedHost, EvaluatedNodes, FeasibleNodes); "FitError" when no node
    passes; else the message of the error Schedule fails with."""
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    sched = scheduler(step, nodes, score)
    use_extenders(sched, extenders(fw))
    fwk = framework_of(sched)
    pod = empty_pod()
    if expected == "FitError":
        with pytest.raises(fw.FitError):
            so.schedule_pod(sched, fwk, cycle_state(step), pod)
        return
    if isinstance(expected, str):
        with pytest.raises(Exception, match=expected) as raised:
            so.schedule_pod(sched, fwk, cycle_state(step), pod)
        assert not isinstance(raised.value, fw.FitError)
        return
    host = so.schedule_pod(sched, fwk, cycle_state(step), pod)
    feasible, diagnosis = so.find_nodes_that_fit_pod(
        sched, fwk, cycle_state(step), pod, sched.snapshot.node_infos().list()
    )
    evaluated = len(feasible) + len(diagnosis.node_to_status_map)
    assert (host, evaluated, len(feasible)) == expected


# --- generic_scheduler_test.go: TestFindNodesThatPassExtenders -------------------------------


def _a_only(fw: ModuleType, pod: client.V1Pod, node: client.V1Node) -> Any:
    """Success on a, Unschedulable elsewhere."""
    if node.metadata.name == "a":
        return fw.Status()
    return fw.Status(fw.Code.UNSCHEDULABLE, [f'node "{node.metadata.name}" is not allowed'])


def _a_b_c(fw: ModuleType, pod: client.V1Pod, node: client.V1Node) -> Any:
    """Success on a, Unschedulable on b, UnschedulableAndUnresolvable elsewhere."""
    name = node.metadata.name
    if name == "a":
        return fw.Status()
    if name == "b":
        return fw.Status(fw.Code.UNSCHEDULABLE, [f'node "{name}" is not allowed'])
    return fw.Status(fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [f'node "{name}" is not allowed'])


def _failed(name: str) -> tuple[str, list[str]]:
    return "UNSCHEDULABLE", [f'FakeExtender: node "{name}" failed']


def _unresolvable(name: str, *before: str) -> tuple[str, list[str]]:
    return (
        "UNSCHEDULABLE_AND_UNRESOLVABLE",
        [*before, f'FakeExtender: node "{name}" failed and unresolvable'],
    )


FIND_NODES_THAT_PASS_EXTENDERS = [
    pytest.param(
        [[fe.error_predicate_extender]],
        ["a"],
        {},
        None,
        None,
        id="TestFindNodesThatPassExtenders/error",
    ),
    pytest.param(
        [[fe.true_predicate_extender]],
        ["a"],
        {},
        ["a"],
        {},
        id="TestFindNodesThatPassExtenders/success",
    ),
    pytest.param(
        [[_a_only]],
        ["a", "b"],
        {},
        ["a"],
        {"b": _failed("b")},
        id="TestFindNodesThatPassExtenders/unschedulable",
    ),
    pytest.param(
        [[_a_b_c]],
        ["a", "b", "c"],
        {},
        ["a"],
        {"b": _failed("b"), "c": _unresolvable("c")},
        id="TestFindNodesThatPassExtenders/unschedulable and unresolvable",
    ),
    pytest.param(
        [[_a_b_c]],
        ["a", "b", "c"],
        {"c": ("UNSCHEDULABLE", ['FakeFilterPlugin: node "c" failed'])},
        ["a"],
        {"b": _failed("b"), "c": _unresolvable("c", 'FakeFilterPlugin: node "c" failed')},
        id="TestFindNodesThatPassExtenders/extender may overwrite the statuses",
    ),
    pytest.param(
        [[_a_b_c], [_a_only]],
        ["a", "b", "c"],
        {},
        ["a"],
        {"b": _failed("b"), "c": _unresolvable("c")},
        id="TestFindNodesThatPassExtenders/multiple extenders",
    ),
]


@pytest.mark.parametrize(
    ("step", "predicates", "nodes", "statuses", "expected_nodes", "expected_statuses"),
    per_step(FIND_NODES_THAT_PASS_EXTENDERS),
)
def test_find_nodes_that_pass_extenders(
    step: int,
    predicates: list[list[Any]],
    nodes: list[str],
    statuses: dict[str, tuple[str, list[str]]],
    expected_nodes: list[str] | None,
    expected_statuses: dict[str, tuple[str, list[str]]] | None,
) -> None:
    """``expected_nodes`` None: the call fails."""
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    extenders = [fe.FakeExtender(fw, predicates=p) for p in predicates]
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="1", uid="1"))
    status_map = {n: fw.Status(fw.Code[code], list(r)) for n, (code, r) in statuses.items()}
    node_list = [client.V1Node(metadata=client.V1ObjectMeta(name=n)) for n in nodes]
    if expected_nodes is None:
        with pytest.raises(Exception, match="some error"):
            so.find_nodes_that_pass_extenders(extenders, pod, node_list, status_map)
        return
    got = so.find_nodes_that_pass_extenders(extenders, pod, node_list, status_map)
    assert [n.metadata.name for n in got] == expected_nodes
    got_statuses = {n: (s.code.name, s.reasons) for n, s in status_map.items()}
    assert got_statuses == expected_statuses


# --- scheduler_test.go: TestSchedulerBinding -------------------------------------------------

SCHEDULER_BINDING = [
    pytest.param(
        "pod0",
        [(False, "pod0")],
        -1,  # default binding
        id="TestSchedulerBinding/the extender is not a binder",
    ),
    pytest.param(
        "pod0",
        [(False, "pod0"), (True, "pod0")],
        1,
        id="TestSchedulerBinding/one of the extenders is a binder and interested in pod",
    ),
    pytest.param(
        "pod1",
        [(False, "pod1"), (True, "pod0")],
        -1,  # default binding
        id="TestSchedulerBinding/one of the extenders is a binder, but not interested in pod",
    ),
]


@pytest.mark.parametrize(
    ("step", "pod_name", "extenders", "want_binder_id"), per_step(SCHEDULER_BINDING)
)
def test_scheduler_binding(
    step: int, pod_name: str, extenders: list[tuple[bool, str]], want_binder_id: int
) -> None:
    so = step_module(step, "schedule_one")
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name=pod_name), spec=client.V1PodSpec(containers=[])
    )
    sched = offline_scheduler(step)
    # Upstream's framework: PrioritySort and DefaultBinder only.
    set_framework(sched, new_framework(step, {}, clock=sched.clock, client=sched.client))
    fakes = [fe.BindingExtender(binder, name) for binder, name in extenders]
    use_extenders(sched, fakes)
    err = so.bind(sched, framework_of(sched), cycle_state(step), pod, "node")
    assert err is None
    # Checking default binding.
    assert bool(sched.client.bindings) == (want_binder_id == -1)
    # Checking extenders binding.
    assert [f.got_bind for f in fakes] == [i == want_binder_id for i in range(len(fakes))]


# --- this project's checks ---------------------------------------------------------------------


def weighted(fw: ModuleType, function: Any, weight: int, **kw: Any) -> Any:
    """A FakeExtender that passes every node and prioritizes with ``function`` (weight 1 in
    the extender), the extender weighing ``weight``."""
    return fe.FakeExtender(
        fw,
        predicates=_true(),
        prioritizers=[fe.PriorityConfig(function, 1)],
        weight=weight,
        **kw,
    )


@step_param
def test_extender_scores_are_weighted_and_scaled_to_max_node_score(step: int) -> None:
    """An extender's score times its weight, times MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY
    (10), is added to the plugins' sum, not normalized: node1 gets 10 * 3 * 10."""
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    sched = scheduler(step, ["node1", "node2"], [(fe.Node2PrioritizerPlugin.NAME, 2)])
    use_extenders(sched, [weighted(fw, fe.node1_prioritizer_extender, 3)])
    nodes = [make_node("node1"), make_node("node2")]
    result = so.prioritize_nodes(sched, framework_of(sched), cycle_state(step), empty_pod(), nodes)
    assert [(s.name, s.score) for s in result] == [("node1", 20 + 300), ("node2", 200 + 30)]
    # Each extender's part is told to the report as a score under "extender <name>".
    scores = {(e["node"], e["plugin"]): e["score"] for e in sched.recorder.of("score")}
    assert scores == {
        ("node1", fe.Node2PrioritizerPlugin.NAME): 20,
        ("node2", fe.Node2PrioritizerPlugin.NAME): 200,
        ("node1", "extender FakeExtender"): 300,
        ("node2", "extender FakeExtender"): 30,
    }
    [event] = sched.recorder.of("extender")
    assert event["verb"] == "prioritize" and event["extender"] == "FakeExtender"
    assert isinstance(event["seconds"], float) and event["seconds"] >= 0


@step_param
def test_an_extender_that_does_not_prioritize_still_turns_off_the_score_of_1(step: int) -> None:
    """No Score plugin and no extender: every node scores 1. An extender without prioritizers
    (an HTTP one without prioritizeVerb) counts as an extender: every node scores 0."""
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    sched = scheduler(step, ["a", "b"])
    nodes = [make_node("a"), make_node("b")]
    fwk = framework_of(sched)
    result = so.prioritize_nodes(sched, fwk, cycle_state(step), empty_pod(), nodes)
    assert [(s.name, s.score) for s in result] == [("a", 1), ("b", 1)]
    use_extenders(sched, [fe.FakeExtender(fw, predicates=_true())])
    result = so.prioritize_nodes(sched, fwk, cycle_state(step), empty_pod(), nodes)
    assert [(s.name, s.score) for s in result] == [("a", 0), ("b", 0)]


@step_param
def test_extenders_prioritize_at_once_and_their_scores_add_up(step: int) -> None:
    """Each extender is called on a thread of its own: two extenders that each wait for the
    other (a barrier of 2) both answer, which one after the other could not."""
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    barrier = threading.Barrier(2, timeout=10)

    def meet_then(function: Any) -> Any:
        def prioritize(pod: client.V1Pod, nodes: list[client.V1Node]) -> list[tuple[str, int]]:
            barrier.wait()
            return function(pod, nodes)

        return prioritize

    sched = scheduler(step, ["node1", "node2"])
    use_extenders(
        sched,
        [
            weighted(fw, meet_then(fe.node1_prioritizer_extender), 1),
            weighted(fw, meet_then(fe.node2_prioritizer_extender), 2),
        ],
    )
    nodes = [make_node("node1"), make_node("node2")]
    result = so.prioritize_nodes(sched, framework_of(sched), cycle_state(step), empty_pod(), nodes)
    assert [(s.name, s.score) for s in result] == [
        ("node1", (10 * 1 + 1 * 2) * 10),
        ("node2", (1 * 1 + 10 * 2) * 10),
    ]
    # Two extenders of one name: the report gets their sum under that name.
    scores = {e["node"]: e["score"] for e in sched.recorder.of("score")}
    assert scores == {"node1": 120, "node2": 210}


@step_param
def test_a_prioritize_error_is_ignored(step: int) -> None:
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    sched = scheduler(step, ["node1", "node2"])
    use_extenders(
        sched,
        [
            weighted(fw, fe.error_prioritizer_extender, 5),
            weighted(fw, fe.node2_prioritizer_extender, 1),
        ],
    )
    nodes = [make_node("node1"), make_node("node2")]
    result = so.prioritize_nodes(sched, framework_of(sched), cycle_state(step), empty_pod(), nodes)
    assert [(s.name, s.score) for s in result] == [("node1", 10), ("node2", 100)]
    # Both calls are timed, the failed one too.
    assert [e["verb"] for e in sched.recorder.of("extender")] == ["prioritize"] * 2


@step_param
def test_the_fit_error_counts_the_extenders_reasons(step: int) -> None:
    """The FitError's histogram counts every reason of every node's status, the extenders'
    too; their statuses name no plugin, so the pod has no rejecting plugin."""
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    sched = scheduler(step, ["node1", "node2", "node3"])
    use_extenders(sched, [fe.FakeExtender(fw, predicates=[fe.node1_predicate_extender])])
    fwk = framework_of(sched)
    # node1 passes the extender, and then a second extender that fails every node as
    # unresolvable.
    sched.extenders.append(
        fe.FakeExtender(fw, predicates=[fe.false_and_unresolve_predicate_extender])
    )
    with pytest.raises(fw.FitError) as raised:
        so.schedule_pod(sched, fwk, cycle_state(step), empty_pod())
    assert str(raised.value) == (
        "0/3 nodes are available: "
        '1 FakeExtender: node "node1" failed and unresolvable, '
        '1 FakeExtender: node "node2" failed, '
        '1 FakeExtender: node "node3" failed.'
    )
    assert raised.value.diagnosis.unschedulable_plugins == set()
    codes = {n: s.code for n, s in raised.value.diagnosis.node_to_status_map.items()}
    assert codes == {
        "node1": fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node2": fw.Code.UNSCHEDULABLE,
        "node3": fw.Code.UNSCHEDULABLE,
    }
    # The report's Why table names the extender where it names a Filter plugin.
    rejected = {e["node"]: (e["plugin"], e["reason"]) for e in sched.recorder.of("filter")}
    assert rejected == {
        "node1": ("extender FakeExtender", 'FakeExtender: node "node1" failed and unresolvable'),
        "node2": ("extender FakeExtender", 'FakeExtender: node "node2" failed'),
        "node3": ("extender FakeExtender", 'FakeExtender: node "node3" failed'),
    }
    assert [e["verb"] for e in sched.recorder.of("extender")] == ["filter", "filter"]


def nominated_pod(node: str) -> client.V1Pod:
    pod = empty_pod()
    pod.status = client.V1PodStatus(nominated_node_name=node)
    return pod


@step_param
def test_the_nominated_node_is_tried_with_the_extenders_first(step: int) -> None:
    """The nominated node goes through the extenders alone first (evaluateNominatedNode): if
    they keep it, no other node is examined."""
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    sched = scheduler(step, ["node1", "node2"])
    ext = fe.FakeExtender(fw, predicates=[fe.node2_predicate_extender])
    use_extenders(sched, [ext])
    fwk = framework_of(sched)
    assert so.schedule_pod(sched, fwk, cycle_state(step), nominated_pod("node2")) == "node2"
    assert ext.calls == ["filter"]
    # Nominated to node1, which the extender fails: every node is searched, node2 passes.
    ext.calls.clear()
    assert so.schedule_pod(sched, fwk, cycle_state(step), nominated_pod("node1")) == "node2"
    assert ext.calls == ["filter", "filter"]


@step_param
def test_a_nominated_node_the_extender_fails_counts_its_reason_twice(step: int) -> None:
    """v1.23's histogram counts reasons, not nodes: a nominated node that an extender fails
    alone, then again in the search of every node, has its reason appended twice to its one
    status (AppendReason)."""
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    sched = scheduler(step, ["node1", "node2"])
    use_extenders(sched, [fe.FakeExtender(fw, predicates=[fe.false_predicate_extender])])
    with pytest.raises(fw.FitError) as raised:
        so.schedule_pod(sched, framework_of(sched), cycle_state(step), nominated_pod("node1"))
    assert str(raised.value) == (
        "0/2 nodes are available: "
        '1 FakeExtender: node "node2" failed, '
        '2 FakeExtender: node "node1" failed.'
    )


@step_param
def test_an_extender_error_on_the_nominated_node_is_logged_and_every_node_searched(
    step: int, caplog: pytest.LogCaptureFixture
) -> None:
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    sched = scheduler(step, ["node1", "node2"])

    def error_on_node1(fw: ModuleType, pod: client.V1Pod, node: client.V1Node) -> Any:
        if node.metadata.name == "node1":
            return fe.error_predicate_extender(fw, pod, node)
        return fw.Status()

    ext = fe.FakeExtender(fw, predicates=[error_on_node1])
    use_extenders(sched, [ext])
    fwk = framework_of(sched)
    with caplog.at_level(logging.ERROR):
        # The search of every node hands node1 to the extender again: its error ends the cycle.
        with pytest.raises(Exception, match="some error"):
            so.schedule_pod(sched, fwk, cycle_state(step), nominated_pod("node1"))
    assert "Evaluation failed on nominated node" in caplog.text
    assert ext.calls == ["filter", "filter"]


@step_param
def test_an_ignorable_extender_error_is_skipped_with_upstreams_line(
    step: int, caplog: pytest.LogCaptureFixture
) -> None:
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    broken = fe.FakeExtender(fw, predicates=[fe.error_predicate_extender], ignorable=True)
    nodes = [make_node("node1")]
    pod = empty_pod()
    with caplog.at_level(logging.INFO):
        got = so.find_nodes_that_pass_extenders([broken], pod, nodes, {})
    assert got == nodes
    assert "Skipping extender as it returned error and has ignorable flag set" in caplog.text


@step_param
def test_extenders_stop_once_no_node_is_left_and_skip_the_uninterested(step: int) -> None:
    fw = step_module(step, "framework")
    so = step_module(step, "schedule_one")
    uninterested = fe.FakeExtender(fw, predicates=_true(), un_interested=True)
    none_left = fe.FakeExtender(fw, predicates=[fe.false_predicate_extender])
    never = fe.FakeExtender(fw, predicates=_true())
    nodes = [make_node("node1"), make_node("node2")]
    statuses: dict[str, Any] = {}
    got = so.find_nodes_that_pass_extenders(
        [uninterested, none_left, never], empty_pod(), nodes, statuses
    )
    assert got == []
    assert (uninterested.calls, none_left.calls, never.calls) == ([], ["filter"], [])
    assert sorted(statuses) == ["node1", "node2"]


def _schedule_and_bind(step: int, sched: Any, pod: client.V1Pod) -> None:
    """One scheduling cycle for ``pod``, and its binding cycle to its end."""
    add_pods(sched, pod)
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    sched.clock.advance(15)
    assert wait_for("binding", 10)


@step_param
def test_an_extender_that_binds_replaces_the_bind_plugins(step: int) -> None:
    """The first extender that binds and is interested gets a Binding of the pod to the node;
    DefaultBinder is not called; the pod counts as bound."""
    fw = step_module(step, "framework")
    sched = scheduler(step, ["node1", "node2"])
    binder = fe.FakeExtender(fw, predicates=[fe.node2_predicate_extender])
    use_extenders(sched, [binder])
    pod = make_pod("p")
    _schedule_and_bind(step, sched, pod)
    assert sched.client.bindings == []
    [binding] = binder.bindings
    assert (binding.metadata.namespace, binding.metadata.name, binding.metadata.uid) == (
        "default",
        "p",
        "uid-p",
    )
    assert (binding.target.kind, binding.target.name) == ("Node", "node2")
    assert [(e["pod"], e["node"]) for e in sched.recorder.of("bound")] == [("default/p", "node2")]
    assert [e["verb"] for e in sched.recorder.of("extender")] == ["filter", "bind"]


class RefusingBinder(fe.FakeExtender):
    """A FakeExtender whose Bind always fails."""

    def bind(self, binding: client.V1Binding) -> None:
        self.calls.append("bind")
        raise Exception("the extender refuses")


@step_param
def test_an_extender_bind_error_fails_the_binding_as_a_bind_plugins_would(step: int) -> None:
    """Unreserve, forget the assumed pod, back to the queue with the error; DefaultBinder is
    not tried (v1.23 reads no ``ignorable`` here)."""
    fw = step_module(step, "framework")
    sched = scheduler(step, ["node1"])
    binder = RefusingBinder(fw, predicates=_true(), ignorable=True)
    use_extenders(sched, [binder])
    pod = make_pod("p")
    _schedule_and_bind(step, sched, pod)
    assert binder.calls == ["filter", "bind"]
    assert sched.client.bindings == []
    assert [e["node"] for e in sched.recorder.of("forgotten")] == ["node1"]
    errors = [e["message"] for e in sched.recorder.of("error")]
    assert errors == ["binding rejected: the extender refuses"]
    assert sched.recorder.of("bound") == []


@step_param
def test_the_frameworks_share_the_schedulers_extenders(step: int) -> None:
    """Upstream: Handle.Extenders() of every profile is the Scheduler's Extenders."""
    sched = offline_scheduler(step)
    for fwk in sched.profiles.values():
        assert fwk.extenders() is sched.extenders


# --- preemption: callExtenders, beyond upstream's cases ----------------------------------------


class VictimlessExtender(fe.FakeExtender):
    """Answers every node, with no victims on ``empty``."""

    def __init__(self, fw: ModuleType, empty: str, **kw: Any) -> None:
        super().__init__(fw, **kw)
        self.empty = empty

    def process_preemption(
        self, pod: client.V1Pod, node_name_to_victims: dict[str, Any], node_infos: Any
    ) -> dict[str, Any]:
        self.calls.append("preempt")
        preemption = step_module(fe.step_of(self.fw), "preemption")
        return {
            n: (preemption.Victims() if n == self.empty else v)
            for n, v in node_name_to_victims.items()
        }


def _preempt(step: int, extenders: list[Any]) -> tuple[Any, Any, up.Harness]:
    """TestPreempt's "basic preemption logic" cluster (node1's two low pods are the victims
    of choice, node3's mid pod the other candidate), preempted with these extenders."""
    preemptor = up._preemptor()
    pods = up._basic_pods("default")
    h = up.harness(
        step,
        up.fit_registry(step),
        pre_filter=[up.FIT],
        filter=[up.FIT],
        pods=pods,
        nodes=[up.make_node(n, up.VERY_LARGE_RES) for n in up.THREE],
        listed=[preemptor, *pods],
        extenders=extenders,
    )
    plugin = h.dp.DefaultPreemption(h.dp.DefaultPreemptionArgs(), h.fwk)
    ev = h.preemption.Evaluator(h.dp.NAME, h.fwk, h.state(preemptor), plugin)
    result, status = ev.preempt(preemptor, {})
    return result, status, h


@step_param
def test_an_extender_answering_a_node_without_victims_fails_the_preemption(step: int) -> None:
    fw = step_module(step, "framework")
    ext = VictimlessExtender(fw, "node1")
    result, status, h = _preempt(step, [ext])
    assert result is None
    assert (status.code, status.reasons) == (
        fw.Code.ERROR,
        ['expected at least one victim pod on node "node1"'],
    )
    assert h.deleted() == []


@step_param
def test_an_ignorable_extender_answering_a_node_without_victims_drops_it(step: int) -> None:
    """Without node1 (dropped), node3 is the only candidate left."""
    fw = step_module(step, "framework")
    ext = VictimlessExtender(fw, "node1", ignorable=True)
    result, status, h = _preempt(step, [ext])
    assert status.is_success(), status
    assert result == fw.new_post_filter_result_with_nominated_node("node3")
    assert h.deleted() == ["p3.1"]
    [event] = h.fwk.recorder.of("extender")
    assert (event["extender"], event["verb"]) == ("FakeExtender", "preempt")


@step_param
def test_a_preemption_extender_error_fails_the_post_filter_unless_ignorable(step: int) -> None:
    fw = step_module(step, "framework")
    broken = fe.FakeExtender(fw, predicates=[fe.error_predicate_extender])
    result, status, h = _preempt(step, [broken])
    assert result is None
    assert (status.code, status.reasons) == (fw.Code.ERROR, ["some error"])
    assert h.deleted() == []
    broken = fe.FakeExtender(fw, predicates=[fe.error_predicate_extender], ignorable=True)
    result, status, h = _preempt(step, [broken])
    assert result == fw.new_post_filter_result_with_nominated_node("node1")


@step_param
def test_the_extenders_that_do_not_preempt_are_not_asked(step: int) -> None:
    """An extender without preemptVerb (BindingExtender) or not interested in the pod is not
    asked; nothing else changes."""
    fw = step_module(step, "framework")
    uninterested = fe.FakeExtender(fw, predicates=[fe.false_predicate_extender], un_interested=True)
    result, status, h = _preempt(step, [fe.BindingExtender(True, "p"), uninterested])
    assert result == fw.new_post_filter_result_with_nominated_node("node1")
    assert uninterested.calls == []
    assert h.fwk.recorder.of("extender") == []
