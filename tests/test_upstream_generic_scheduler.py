"""kube-scheduler v1.23's own tests of one scheduling cycle's search, ported case by case.

Ported from kubernetes v1.23.x pkg/scheduler/generic_scheduler_test.go (read at
QuarfotPrice/sched.dev@448ef7a3cea647dce342c869b72c2c3483cf1c1f, a copy of kube-scheduler
v1.23.4's pkg/scheduler under another module path, whose generic_scheduler.go is v1.23.10's
line for line). Each test names the upstream test, and the case where the upstream test has a
table. The code under test is schedule_one.py: schedule_pod (upstream: Schedule),
find_nodes_that_fit_pod, select_host, prioritize_nodes and num_feasible_nodes_to_find. Each case
runs on the first step that has what it needs (Filter: step 2; Score: step 3; Filter reading
the pods on a node: step 9; PreFilter: step 10; the nominator: step 11; percentageOfNodesToScore:
step 12) and on step 12.

The fake plugins are upstream's (pkg/scheduler/testing/fake_plugins.go and the ones in the
test file), written once for every step: their methods take ``*args``, as the extension points'
arguments differ from step to step (a CycleState from step 4, a NodeInfo from step 9).

Upstream's ScheduleResult.EvaluatedNodes (the nodes that passed plus those that failed) is
read from the report here: the steps' schedule_pod returns the node's name alone.

Left out:

- TestFindNodesThatPassExtenders: extenders ("Not implemented: extenders", schedule_one.py).
- TestGenericScheduler/existing PVC, /unknown PVC, /deleted PVC: the VolumeBinding plugin,
  which no step has.
- TestGenericScheduler/test podtopologyspread plugin - 2 nodes with maxskew=1 and
  /... - 3 nodes with maxskew=2: the PodTopologySpread plugin, which no step has.
- TestZeroRequest: its expected totals (250, 230) add up three Score plugins, two of which
  (NodeResourcesBalancedAllocation, SelectorSpread) no step has.
- TestPreferNominatedNodeFilterCallCounts/Disable the feature, ...: the PreferNominatedNode
  feature gate; the steps have no feature gates, and always prefer the nominated node (as
  v1.23 does by default).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from tests.conftest import built_steps, step_module
from tests.fakes import (
    add_nodes,
    cycle_args,
    has_module,
    make_node,
    new_framework,
    offline_scheduler,
)

# The step that brings each thing a case needs.
FILTER, SCORE, NODE_INFO, PRE_FILTER, NOMINATOR, SAMPLING = 2, 3, 9, 10, 11, 12
LAST = 12

# Upstream: st.ErrReasonFake.
ERR_REASON_FAKE = "Nodes failed the fake plugin"

LOW_PRIORITY, MID_PRIORITY, HIGH_PRIORITY = 0, 100, 1000


def steps_from(first: int) -> list[int]:
    """The step that introduces what a case needs, and the last step."""
    built = built_steps(first)
    return sorted({s for s in (first, LAST) if s in built})


def params(test_id: str, first: int, *values: Any, marks: Any = ()) -> list[Any]:
    """One pytest param per step, its id naming the upstream test (and case)."""
    return [
        pytest.param(s, *values, id=f"{test_id}-step{s}", marks=marks) for s in steps_from(first)
    ]


def pod(
    name: str,
    uid: str = "",
    *,
    priority: int | None = None,
    nominated: str | None = None,
    node_name: str | None = None,
) -> client.V1Pod:
    """A pod with no namespace, as upstream's tests make them."""
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, uid=uid or None),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="c")], priority=priority, node_name=node_name
        ),
        status=client.V1PodStatus(
            nominated_node_name=nominated, phase="Running" if node_name else None
        ),
    )


# --- the fake plugins ------------------------------------------------------------------------


def node_of(arg: Any) -> client.V1Node:
    """The node a Filter plugin is given: the Node, or from step 9 a NodeInfo holding it."""
    return arg if isinstance(arg, client.V1Node) else arg.node()


class Plugin:
    """A fake plugin, built for one step's framework module."""

    NAME = ""

    def __init__(self, fw: ModuleType) -> None:
        self.fw = fw

    def name(self) -> str:
        return self.NAME

    def status(self, code: Any = None, *reasons: str) -> Any:
        fw = self.fw
        return fw.Status() if code is None else fw.Status(code, list(reasons))


class TrueFilter(Plugin):
    NAME = "TrueFilter"

    def filter(self, *args: Any) -> Any:
        return self.status()


class FalseFilter(Plugin):
    NAME = "FalseFilter"

    def filter(self, *args: Any) -> Any:
        return self.status(self.fw.Code.UNSCHEDULABLE, ERR_REASON_FAKE)


class MatchFilter(Plugin):
    """Passes the node whose name is the pod's."""

    NAME = "MatchFilter"

    def filter(self, *args: Any) -> Any:
        p, node = args[-2], node_of(args[-1])
        if node is None:
            return self.status(self.fw.Code.ERROR, "node not found")
        if p.metadata.name == node.metadata.name:
            return self.status()
        return self.status(self.fw.Code.UNSCHEDULABLE, ERR_REASON_FAKE)


class NoPodsFilter(Plugin):
    """Passes the nodes with no pod (needs a NodeInfo: step 9)."""

    NAME = "NoPodsFilter"

    def filter(self, *args: Any) -> Any:
        if len(args[-1].pods) == 0:
            return self.status()
        return self.status(self.fw.Code.UNSCHEDULABLE, ERR_REASON_FAKE)


class FakeFilter(Plugin):
    """Counts its calls; fails the nodes of ``failed_node_return_code_map`` with their code."""

    NAME = "FakeFilter"

    def __init__(self, fw: ModuleType, failed_node_return_code_map: dict[str, str] | None = None):
        super().__init__(fw)
        self.num_filter_called = 0
        self.failed_node_return_code_map = failed_node_return_code_map or {}

    def filter(self, *args: Any) -> Any:
        self.num_filter_called += 1
        p, node = args[-2], node_of(args[-1])
        code = self.failed_node_return_code_map.get(node.metadata.name)
        if code is not None:
            return self.status(self.fw.Code[code], f"injecting failure for pod {p.metadata.name}")
        return self.status()


class FakePreFilter(Plugin):
    """Returns the status it was built with."""

    NAME = "FakePreFilter"

    def __init__(self, fw: ModuleType, code: str, reason: str) -> None:
        super().__init__(fw)
        self._status = self.status(fw.Code[code], reason)

    def pre_filter(self, *args: Any) -> Any:
        return self._status

    def pre_filter_extensions(self) -> None:
        return None


class NumericMap(Plugin):
    """Scores a node by its name, a number."""

    NAME = "NumericMap"

    def score(self, *args: Any) -> tuple[int, Any]:
        node_name = args[-1]
        try:
            return int(node_name), self.status()
        except ValueError:
            message = f"Error converting nodename to int: {node_name}"
            return 0, self.status(self.fw.Code.ERROR, message)

    def score_extensions(self) -> Any:
        return None


class ReverseNumericMap(NumericMap):
    """NumericMap, normalized to max + min - score."""

    NAME = "ReverseNumericMap"

    def score_extensions(self) -> Any:
        return self

    def normalize_score(self, *args: Any) -> Any:
        scores = args[-1]
        high = max((s.score for s in scores), default=0)
        low = min((s.score for s in scores), default=0)
        for s in scores:
            s.score = high + low - s.score
        return self.status()


class TrueMap(Plugin):
    NAME = "TrueMap"

    def score(self, *args: Any) -> tuple[int, Any]:
        return 1, self.status()

    def score_extensions(self) -> Any:
        return self

    def normalize_score(self, *args: Any) -> Any:
        for s in args[-1]:
            if s.name == "":
                return self.status(self.fw.Code.ERROR, "unexpected empty host name")
        return self.status()


ERR_PRIORITIZE = "priority map encounters an error"


class FalseMap(Plugin):
    NAME = "FalseMap"

    def score(self, *args: Any) -> tuple[int, Any]:
        return 0, self.fw.as_status(Exception(ERR_PRIORITIZE))

    def score_extensions(self) -> None:
        return None


# --- running a cycle -------------------------------------------------------------------------


class Cycle:
    """An offline scheduler of one step with these nodes (and bound pods), and a framework of
    these plugins: ``{"filter": [plugin, ...], "score": [(plugin, weight), ...], ...}``."""

    def __init__(
        self,
        step: int,
        nodes: list[str],
        plugins: dict[str, list[Any]],
        *,
        pods: tuple[client.V1Pod, ...] = (),
        **options: Any,
    ) -> None:
        self.step = step
        self.so = step_module(step, "schedule_one")
        self.sched = offline_scheduler(step, **options)
        add_nodes(self.sched, *(node(n) for n in nodes))
        for p in pods:
            self.sched.cache.add_pod(p)
        registry: dict[str, Callable[..., Any]] = {}
        points: dict[str, list[Any]] = {}
        for point, enabled in plugins.items():
            for entry in enabled:
                plugin, weight = entry if isinstance(entry, tuple) else (entry, 0)
                registry[plugin.name()] = lambda args, handle, plugin=plugin: plugin
                points.setdefault(point, []).append(
                    (plugin.name(), weight) if point == "score" else plugin.name()
                )
        self.fwk = new_framework(step, registry, **points)

    def nodes(self) -> list[Any]:
        """The nodes a cycle sees: from the snapshot, brought up to date, from step 9."""
        sched = self.sched
        if has_module(self.step, "cache"):
            sched.cache.update_snapshot(sched.snapshot)
            return sched.snapshot.node_infos().list()
        return sched.node_lister.list()

    def schedule(self, p: client.V1Pod) -> str:
        """Upstream: Schedule."""
        return self.so.schedule_pod(self.sched, self.fwk, *cycle_args(self.step), p)

    def find_nodes_that_fit_pod(self, p: client.V1Pod) -> tuple[list[client.V1Node], Any]:
        return self.so.find_nodes_that_fit_pod(
            self.sched, self.fwk, *cycle_args(self.step), p, self.nodes()
        )

    def evaluated_nodes(self, p: client.V1Pod) -> int:
        """Upstream: ScheduleResult.EvaluatedNodes, the nodes that passed or failed Filter."""
        recorder = self.sched.recorder
        name = p.metadata.name
        failed = [f for f in recorder.of("filter") if f["pod"] == name]
        feasible = [f for f in recorder.of("feasible") if f["pod"] == name]
        return feasible[-1]["passed"] + len(failed)


def node(name: str) -> client.V1Node:
    n = make_node(name)
    n.metadata.labels = {"hostname": name}
    return n


def fit_error(fw: ModuleType, num_all_nodes: int, statuses: dict[str, Any]) -> Any:
    """The FitError upstream expects: ``statuses`` maps each node to (code, reason, plugin)."""
    diagnosis = fw.Diagnosis()
    for name, (code, reason, plugin) in statuses.items():
        status = fw.Status(fw.Code[code], [reason], failed_plugin=plugin)
        diagnosis.node_to_status_map[name] = status
        diagnosis.unschedulable_plugins.add(plugin)
    return SimpleNamespace(num_all_nodes=num_all_nodes, diagnosis=diagnosis)


# --- TestSelectHost ----------------------------------------------------------------------------

SELECT_HOST: list[tuple[str, list[tuple[str, int]], set[str], bool]] = [
    # (name, the scores, the possible hosts, whether it is an error)
    (
        "unique properly ordered scores",
        [("machine1.1", 1), ("machine2.1", 2)],
        {"machine2.1"},
        False,
    ),
    (
        "equal scores",
        [("machine1.1", 1), ("machine1.2", 2), ("machine1.3", 2), ("machine2.1", 2)],
        {"machine1.2", "machine1.3", "machine2.1"},
        False,
    ),
    (
        "out of order scores",
        [
            ("machine1.1", 3),
            ("machine1.2", 3),
            ("machine2.1", 2),
            ("machine3.1", 1),
            ("machine1.3", 3),
        ],
        {"machine1.1", "machine1.2", "machine1.3"},
        False,
    ),
    ("empty priority list", [], set(), True),
]


@pytest.mark.parametrize(
    ("step", "scores", "possible_hosts", "expects_err"),
    [
        p
        for name, scores, possible_hosts, expects_err in SELECT_HOST
        for p in params(f"TestSelectHost/{name}", SCORE, scores, possible_hosts, expects_err)
    ],
)
def test_select_host(
    step: int, scores: list[tuple[str, int]], possible_hosts: set[str], expects_err: bool
) -> None:
    fw = step_module(step, "framework")
    select_host = step_module(step, "schedule_one").select_host
    sched = SimpleNamespace(rng=random.Random(1))
    # Upstream tries 10 times, for the randomness.
    for _ in range(10):
        node_scores = [fw.NodeScore(name, score) for name, score in scores]
        if expects_err:
            with pytest.raises(Exception, match="empty priorityList"):
                select_host(sched, node_scores)
        else:
            assert select_host(sched, node_scores) in possible_hosts


# --- TestGenericScheduler ----------------------------------------------------------------------


def unschedulable(plugin: str, reason: str = ERR_REASON_FAKE) -> tuple[str, str, str]:
    return ("UNSCHEDULABLE", reason, plugin)


GENERIC_SCHEDULER: list[dict[str, Any]] = [
    {
        "name": "test 1",
        "first": FILTER,
        "plugins": {"filter": [FalseFilter]},
        "nodes": ["machine1", "machine2"],
        "pod": ("2", "2"),
        "fit_error": (
            2,
            {"machine1": unschedulable("FalseFilter"), "machine2": unschedulable("FalseFilter")},
        ),
    },
    {
        "name": "test 2",
        "first": FILTER,
        "plugins": {"filter": [TrueFilter]},
        "nodes": ["machine1", "machine2"],
        "pod": ("ignore", "ignore"),
        "expected_hosts": {"machine1", "machine2"},
    },
    {
        # Fits on a machine where the pod ID matches the machine name.
        "name": "test 3",
        "first": FILTER,
        "plugins": {"filter": [MatchFilter]},
        "nodes": ["machine1", "machine2"],
        "pod": ("machine2", "machine2"),
        "expected_hosts": {"machine2"},
    },
    {
        "name": "test 4",
        "first": SCORE,
        "plugins": {"filter": [TrueFilter], "score": [(NumericMap, 1)]},
        "nodes": ["3", "2", "1"],
        "pod": ("ignore", "ignore"),
        "expected_hosts": {"3"},
    },
    {
        "name": "test 5",
        "first": SCORE,
        "plugins": {"filter": [MatchFilter], "score": [(NumericMap, 1)]},
        "nodes": ["3", "2", "1"],
        "pod": ("2", "2"),
        "expected_hosts": {"2"},
    },
    {
        "name": "test 6",
        "first": SCORE,
        "plugins": {
            "filter": [TrueFilter],
            "score": [(NumericMap, 1), (ReverseNumericMap, 2)],
        },
        "nodes": ["3", "2", "1"],
        "pod": ("2", "2"),
        "expected_hosts": {"1"},
    },
    {
        "name": "test 7",
        "first": SCORE,
        "plugins": {"filter": [TrueFilter, FalseFilter], "score": [(NumericMap, 1)]},
        "nodes": ["3", "2", "1"],
        "pod": ("2", "2"),
        "fit_error": (3, {n: unschedulable("FalseFilter") for n in ("3", "2", "1")}),
    },
    {
        "name": "test 8",
        "first": NODE_INFO,
        "plugins": {"filter": [NoPodsFilter, MatchFilter], "score": [(NumericMap, 1)]},
        "bound_pods": [("2", "2", "2")],  # (name, uid, node)
        "nodes": ["1", "2"],
        "pod": ("2", "2"),
        "fit_error": (
            2,
            {"1": unschedulable("MatchFilter"), "2": unschedulable("NoPodsFilter")},
        ),
    },
    {
        "name": "test error with priority map",
        "first": SCORE,
        "plugins": {"filter": [TrueFilter], "score": [(FalseMap, 1), (TrueMap, 2)]},
        "nodes": ["2", "1"],
        "pod": ("2", ""),
        "error": f'running Score plugins: plugin "FalseMap" failed with: {ERR_PRIORITIZE}',
    },
    {
        "name": "test with filter plugin returning Unschedulable status",
        "first": FILTER,
        "plugins": {
            "filter": [(FakeFilter, {"3": "UNSCHEDULABLE"})],
            "score": [(NumericMap, 1)],
        },
        "nodes": ["3"],
        "pod": ("test-filter", "test-filter"),
        "fit_error": (
            1,
            {"3": unschedulable("FakeFilter", "injecting failure for pod test-filter")},
        ),
    },
    {
        "name": "test with filter plugin returning UnschedulableAndUnresolvable status",
        "first": FILTER,
        "plugins": {
            "filter": [(FakeFilter, {"3": "UNSCHEDULABLE_AND_UNRESOLVABLE"})],
            "score": [(NumericMap, 1)],
        },
        "nodes": ["3"],
        "pod": ("test-filter", "test-filter"),
        "fit_error": (
            1,
            {
                "3": (
                    "UNSCHEDULABLE_AND_UNRESOLVABLE",
                    "injecting failure for pod test-filter",
                    "FakeFilter",
                )
            },
        ),
    },
    {
        "name": "test with partial failed filter plugin",
        "first": FILTER,
        "plugins": {
            "filter": [(FakeFilter, {"1": "UNSCHEDULABLE"})],
            "score": [(NumericMap, 1)],
        },
        "nodes": ["1", "2"],
        "pod": ("test-filter", "test-filter"),
    },
    {
        "name": "test prefilter plugin returning Unschedulable status",
        "first": PRE_FILTER,
        "plugins": {
            "pre_filter": [
                (FakePreFilter, "UNSCHEDULABLE_AND_UNRESOLVABLE", "injected unschedulable status")
            ]
        },
        "nodes": ["1", "2"],
        "pod": ("test-prefilter", "test-prefilter"),
        "fit_error": (
            2,
            {
                n: (
                    "UNSCHEDULABLE_AND_UNRESOLVABLE",
                    "injected unschedulable status",
                    "FakePreFilter",
                )
                for n in ("1", "2")
            },
        ),
    },
    {
        "name": "test prefilter plugin returning error status",
        "first": PRE_FILTER,
        "plugins": {"pre_filter": [(FakePreFilter, "ERROR", "injected error status")]},
        "nodes": ["1", "2"],
        "pod": ("test-prefilter", "test-prefilter"),
        "error": 'running PreFilter plugin "FakePreFilter": injected error status',
    },
]


def build(fw: ModuleType, entry: Any) -> Any:
    """A plugin from a table entry: a class, or (class, its arguments...)."""
    if isinstance(entry, tuple):
        cls, *args = entry
        return cls(fw, *args)
    return entry(fw)


def built_plugins(step: int, fw: ModuleType, plugins: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The table's plugins built for one step; a score entry is (plugin, weight). Step 2 has no
    Score extension point: the cases it runs fail every node or pass one, so no node is scored,
    and their Score plugins are left out there."""
    out: dict[str, list[Any]] = {}
    for point, entries in plugins.items():
        if point == "score" and step < SCORE:
            continue
        if point == "score":
            out[point] = [(build(fw, e), w) for e, w in entries]
        else:
            out[point] = [build(fw, e) for e in entries]
    return out


@pytest.mark.parametrize(
    ("step", "case"),
    [
        p
        for case in GENERIC_SCHEDULER
        for p in params(f"TestGenericScheduler/{case['name']}", case["first"], case)
    ],
)
def test_generic_scheduler(step: int, case: dict[str, Any]) -> None:
    fw = step_module(step, "framework")
    bound = tuple(pod(n, u, node_name=on) for n, u, on in case.get("bound_pods", []))
    cycle = Cycle(step, case["nodes"], built_plugins(step, fw, case["plugins"]), pods=bound)
    p = pod(*case["pod"])
    if "fit_error" in case:
        want = fit_error(fw, *case["fit_error"])
        with pytest.raises(fw.FitError) as info:
            cycle.schedule(p)
        assert info.value.pod is p
        assert info.value.num_all_nodes == want.num_all_nodes
        assert info.value.diagnosis == want.diagnosis
    elif "error" in case:
        with pytest.raises(Exception) as info:
            cycle.schedule(p)
        assert not isinstance(info.value, fw.FitError)
        assert str(info.value) == case["error"]
    else:
        host = cycle.schedule(p)
        if "expected_hosts" in case:
            assert host in case["expected_hosts"]
        assert cycle.evaluated_nodes(p) == len(case["nodes"])


# --- TestFindFitAllError, TestFindFitSomeError -------------------------------------------------


@pytest.mark.parametrize("step", params("TestFindFitAllError", FILTER))
def test_find_fit_all_error(step: int) -> None:
    fw = step_module(step, "framework")
    plugins = {"filter": [TrueFilter(fw), MatchFilter(fw)]}
    cycle = Cycle(step, ["3", "2", "1"], plugins)
    _, diagnosis = cycle.find_nodes_that_fit_pod(pod(""))
    want = fit_error(fw, 3, {n: unschedulable("MatchFilter") for n in ("1", "2", "3")})
    assert diagnosis == want.diagnosis


@pytest.mark.parametrize("step", params("TestFindFitSomeError", FILTER))
def test_find_fit_some_error(step: int) -> None:
    fw = step_module(step, "framework")
    plugins = {"filter": [TrueFilter(fw), MatchFilter(fw)]}
    nodes = ["3", "2", "1"]
    cycle = Cycle(step, nodes, plugins)
    p = pod("1", "1")
    _, diagnosis = cycle.find_nodes_that_fit_pod(p)
    assert len(diagnosis.node_to_status_map) == len(nodes) - 1
    assert diagnosis.unschedulable_plugins == {"MatchFilter"}
    for name in nodes:
        if name == p.metadata.name:
            continue
        assert diagnosis.node_to_status_map[name].reasons == [ERR_REASON_FAKE], name


# --- the nominated pods ------------------------------------------------------------------------

FIND_FIT_PREDICATE_CALL_COUNTS = [
    # (name, the pod's priority, the Filter calls)
    ("nominated pods have lower priority, predicate is called once", HIGH_PRIORITY, 1),
    ("nominated pods have higher priority, predicate is called twice", LOW_PRIORITY, 2),
]


@pytest.mark.parametrize(
    ("step", "priority", "expected_count"),
    [
        p
        for name, priority, count in FIND_FIT_PREDICATE_CALL_COUNTS
        for p in params(f"TestFindFitPredicateCallCounts/{name}", NOMINATOR, priority, count)
    ],
)
def test_find_fit_predicate_call_counts(step: int, priority: int, expected_count: int) -> None:
    """A node is filtered twice when pods of the pod's priority or higher are nominated to it:
    with them, and without them."""
    fw = step_module(step, "framework")
    sq = step_module(step, "scheduling_queue")
    plugin = FakeFilter(fw)
    cycle = Cycle(step, ["1"], {"filter": [plugin]})
    nominator = sq.Nominator()
    cycle.fwk.pod_nominator = nominator
    nominated = pod("", "nominated", priority=MID_PRIORITY)
    nominator.add_nominated_pod(nominated, fw.NominatingInfo("1", fw.NominatingMode.OVERRIDE))
    cycle.find_nodes_that_fit_pod(pod("1", "1", priority=priority))
    assert plugin.num_filter_called == expected_count


PREFER_NOMINATED_NODE = [
    # (name, the pod's nominated node, the nodes the filter fails, the Filter calls)
    (
        "Enable the feature, pod has the nominated node set, filter is called only once",
        "p_with_nominated_node",
        "node1",
        {},
        1,
    ),
    (
        "pod without the nominated pod, filter is called for each node",
        "p_without_nominated_node",
        None,
        {},
        3,
    ),
    (
        "nominated pod cannot pass the filter, filter is called for each node",
        "p_with_nominated_node",
        "node1",
        {"node1": "UNSCHEDULABLE"},
        4,
    ),
]


@pytest.mark.parametrize(
    ("step", "pod_name", "nominated", "code_map", "expected_count"),
    [
        p
        for name, pod_name, nominated, code_map, count in PREFER_NOMINATED_NODE
        for p in params(
            f"TestPreferNominatedNodeFilterCallCounts/{name}",
            NOMINATOR,
            pod_name,
            nominated,
            code_map,
            count,
        )
    ],
)
def test_prefer_nominated_node_filter_call_counts(
    step: int, pod_name: str, nominated: str | None, code_map: dict[str, str], expected_count: int
) -> None:
    """A pod nominated to a node tries that node alone first."""
    fw = step_module(step, "framework")
    plugin = FakeFilter(fw, code_map)
    cycle = Cycle(step, ["node1", "node2", "node3"], {"filter": [plugin]})
    p = pod(pod_name, "p", priority=HIGH_PRIORITY, nominated=nominated)
    cycle.find_nodes_that_fit_pod(p)
    assert plugin.num_filter_called == expected_count


# --- percentageOfNodesToScore ------------------------------------------------------------------

NUM_FEASIBLE_NODES_TO_FIND = [
    # (name, percentageOfNodesToScore (0: not set), nodes, want)
    ("not set percentageOfNodesToScore and nodes number not more than 50", 0, 10, 10),
    ("set percentageOfNodesToScore and nodes number not more than 50", 40, 10, 10),
    ("not set percentageOfNodesToScore and nodes number more than 50", 0, 1000, 420),
    ("set percentageOfNodesToScore and nodes number more than 50", 40, 1000, 400),
    ("not set percentageOfNodesToScore and nodes number more than 50*125", 0, 6000, 300),
    ("set percentageOfNodesToScore and nodes number more than 50*125", 40, 6000, 2400),
]


@pytest.mark.parametrize(
    ("step", "percentage", "num_all_nodes", "want"),
    [
        p
        for name, percentage, num_all_nodes, want in NUM_FEASIBLE_NODES_TO_FIND
        for p in params(
            f"TestNumFeasibleNodesToFind/{name}", SAMPLING, percentage, num_all_nodes, want
        )
    ],
)
def test_num_feasible_nodes_to_find(
    step: int, percentage: int, num_all_nodes: int, want: int
) -> None:
    schedule_one = step_module(step, "schedule_one")
    assert schedule_one.num_feasible_nodes_to_find(percentage, num_all_nodes) == want


@pytest.mark.parametrize("step", params("TestFairEvaluationForNodes", SAMPLING))
def test_fair_evaluation_for_nodes(step: int) -> None:
    """Each cycle starts where the last stopped: every node gets its turn."""
    fw = step_module(step, "framework")
    num_all_nodes = 500
    cycle = Cycle(step, [str(i) for i in range(num_all_nodes)], {"filter": [TrueFilter(fw)]})
    # 30 %: numAllNodes % nodesToFind != 0.
    cycle.sched.percentage_of_nodes_to_score = 30
    nodes_to_find = cycle.so.num_feasible_nodes_to_find(30, num_all_nodes)
    assert nodes_to_find == 150
    # Over all the nodes more than twice.
    for i in range(2 * (num_all_nodes // nodes_to_find + 1)):
        nodes_that_fit, _ = cycle.find_nodes_that_fit_pod(pod(""))
        assert len(nodes_that_fit) == nodes_to_find
        assert cycle.sched.next_start_node_index == (i + 1) * nodes_to_find % num_all_nodes
