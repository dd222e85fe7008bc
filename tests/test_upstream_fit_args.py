"""kube-scheduler v1.23's own tests of NodeResourcesFit's args: the MostAllocated and
RequestedToCapacityRatio strategies and the validation of NodeResourcesFitArgs, ported case by
case and run against every step from 14, the step whose Fit reads its args.

Ported from kubernetes v1.23.4's scheduler as vendored into QuarfotPrice/sched.dev (read at
commit 448ef7a3cea647dce342c869b72c2c3483cf1c1f; validation_pluginargs_test.go is the same
there and at bd78f932b5685f63c0bbe4aeffd822663695557b), checked against v1.23.10's sources
(kubernetes-sigs/scheduler-plugins v0.23.10's vendor tree: most_allocated.go,
requested_to_capacity_ratio.go, helper/shape_score.go and validation_pluginargs.go are the
same):

- pkg/scheduler/framework/plugins/noderesources/most_allocated_test.go:
  TestMostAllocatedScoringStrategy;
- pkg/scheduler/framework/plugins/noderesources/requested_to_capacity_ratio_test.go:
  TestRequestedToCapacityRatioScoringStrategy, TestBrokenLinearFunction,
  TestResourceBinPackingSingleExtended, TestResourceBinPackingMultipleExtended;
- pkg/scheduler/apis/config/validation/validation_pluginargs_test.go: TestValidateFitArgs,
  TestValidateLeastAllocatedScoringStrategy, TestValidateMostAllocatedScoringStrategy,
  TestValidateRequestedToCapacityRatioScoringStrategy (TestValidateDefaultPreemptionArgs is in
  tests/test_upstream_preemption_args.py).

The ids are ``<upstream test>/<the case's name>``; a name the table repeats gets Go's ``#01``,
as ``go test`` names it. Errors are compared as upstream compares them (cmp with
``ignoreBadValueDetail``: each error's type and field); the texts are pinned by the tests at
the end, which are this project's, not upstream's.

v1.23 has no helper/shape_score_test.go (it came later): TestBrokenLinearFunction is its test.

Left out, or expected to fail:
- the cases that score extended resources (``intel.com/foo``, ``abc.com/xyz`` requested): the
  steps count none (strict xfail, EXTENDED). The cases where the pod asks for none pass.
- the other tables of validation_pluginargs_test.go (InterPodAffinity, PodTopologySpread,
  VolumeBinding): plugins the steps do not have. BalancedAllocation's and NodeAffinity's are in
  tests/test_upstream_balanced_allocation.py and tests/test_upstream_nodeaffinity.py.

TestValidateFitArgs checks that an error, if any, contains the expected text: it passes with no
error at all. Here a case without a text wants no error, and a case with one wants an error that
contains it, except "ScoringStrategy: field is required": its text is not in v1.23 (which
validates no missing strategy; NewFit refuses it later), so here it wants no error, as v1.23
gives none.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from tests.conftest import built_steps, step_module
from tests.test_upstream_noderesources import (
    EXTENDED,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    node_info_of,
    st_node,
    st_pod,
)

STEPS = built_steps(14)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")

INVALID, REQUIRED = "FieldValueInvalid", "FieldValueRequired"

# (name, weight): upstream's config.ResourceSpec literals.
Res = tuple[str, int]
# (utilization, score): upstream's config.UtilizationShapePoint literals.
Point = tuple[int, int]
DEFAULT_RESOURCES: tuple[Res, ...] = (("cpu", 1), ("memory", 1))
EXTENDED_RES = "abc.com/xyz"
EXTENDED_RESOURCE_SET: tuple[Res, ...] = (*DEFAULT_RESOURCES, (EXTENDED_RES, 1))


def fit_args(
    step: int,
    strategy: str | None,
    resources: tuple[Res, ...] | None = None,
    shape: tuple[Point, ...] | None = None,
    ignored_resources: tuple[str, ...] = (),
    ignored_resource_groups: tuple[str, ...] = (),
) -> Any:
    """The step's NodeResourcesFitArgs; no strategy when ``strategy`` is None, no
    requestedToCapacityRatio when ``shape`` is None (upstream's nil pointers)."""
    nr = step_module(step, "plugins.noderesources")
    scoring = None
    if strategy is not None:
        scoring = nr.ScoringStrategy(
            strategy,
            tuple(nr.ResourceSpec(n, w) for n, w in resources or ()),
            None
            if shape is None
            else nr.RequestedToCapacityRatioParam(
                tuple(nr.UtilizationShapePoint(u, s) for u, s in shape)
            ),
        )
    return nr.NodeResourcesFitArgs(ignored_resources, ignored_resource_groups, scoring)


def new_snapshot(step: int, pods: list[client.V1Pod], nodes: list[client.V1Node]) -> Any:
    """Upstream: cache.NewSnapshot(pods, nodes). A pod on no listed node (upstream keeps it
    under a NodeInfo without a Node) is left out: no scored node holds it."""
    snapshot = step_module(step, "snapshot").Snapshot()
    for node in nodes:
        info = node_info_of(step, node)
        snapshot.node_info_map[node.metadata.name] = info
        snapshot.node_info_list.append(info)
    for pod in pods:
        if pod.spec.node_name in snapshot.node_info_map:
            snapshot.node_info_map[pod.spec.node_name].add_pod(pod)
    return snapshot


def scores(
    step: int,
    args: Any,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
    existing: list[client.V1Pod],
) -> list[tuple[str, int]]:
    """NewFit on a framework handle over the snapshot, then Score on every node, each a
    success, with a fresh CycleState (as upstream's loops)."""
    snapshot = new_snapshot(step, existing, nodes)
    handle = SimpleNamespace(snapshot_shared_lister=lambda: snapshot)
    fit = step_module(step, "plugins.noderesources").new_fit(args, handle)
    state = step_module(step, "cycle_state").CycleState()
    got = []
    for node in nodes:
        score, status = fit.score(state, pod, node.metadata.name)
        assert status.is_success(), status
        got.append((node.metadata.name, score))
    return got


def type_and_field(err: Any) -> list[tuple[str, str]] | None:
    """An Aggregate of field errors as upstream's tests compare it (ignoreBadValueDetail): the
    type and field of each error, in order; None for no error."""
    if err is None:
        return None
    return [(e.type, e.field) for e in err.errors()]


def _nodes(*specs: tuple[str, str, str]) -> list[client.V1Node]:
    return [st_node(n, {"cpu": cpu, "memory": mem}) for n, cpu, mem in specs]


# The pod most cases score: two containers, 3000 cpu and 5000 memory in all.
TWO_CONTAINERS = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


# --- most_allocated_test.go: TestMostAllocatedScoringStrategy ---------------------------------


@dataclass
class ScoreCase:
    pod: client.V1Pod
    nodes: list[client.V1Node]
    existing: list[client.V1Pod]
    expected: list[tuple[str, int]]
    resources: tuple[Res, ...] | None
    want_errs: list[tuple[str, str]] | None = None


MOST_ALLOCATED = [
    # cpu 0, memory 0 on both nodes.
    pytest.param(
        ScoreCase(
            st_pod(),
            _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
            [],
            [("node1", MIN_NODE_SCORE), ("node2", MIN_NODE_SCORE)],
            DEFAULT_RESOURCES,
        ),
        id="TestMostAllocatedScoringStrategy/nothing scheduled, nothing requested",
    ),
    # node1: cpu 3000*100/4000 = 75, memory 50, (75+50)/2 = 62; node2: cpu 50, memory 50, 50.
    pytest.param(
        ScoreCase(
            st_pod(*TWO_CONTAINERS),
            _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
            [],
            [("node1", 62), ("node2", 50)],
            DEFAULT_RESOURCES,
        ),
        id="TestMostAllocatedScoringStrategy/nothing scheduled, resources requested, "
        "differently sized machines",
    ),
    # No resource weighs: every score is 0.
    pytest.param(
        ScoreCase(
            st_pod(*TWO_CONTAINERS),
            _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
            [],
            [("node1", MIN_NODE_SCORE), ("node2", MIN_NODE_SCORE)],
            None,
        ),
        id="TestMostAllocatedScoringStrategy/Resources not set, nothing scheduled, resources "
        "requested, differently sized machines",
    ),
    # node1: cpu 6000*100/10000 = 60, memory 0, 30; node2: cpu 60, memory 5000*100/20000 = 25,
    # (60+25)/2 = 42.
    pytest.param(
        ScoreCase(
            st_pod(),
            _nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
            [
                st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
                st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
                st_pod({"cpu": "3000", "memory": "0"}, node="node2"),
                st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
            ],
            [("node1", 30), ("node2", 42)],
            DEFAULT_RESOURCES,
        ),
        id="TestMostAllocatedScoringStrategy/no resources requested, pods scheduled with resources",
    ),
    # node1: cpu 60, memory 25, 42; node2: cpu 60, memory 50, 55.
    pytest.param(
        ScoreCase(
            st_pod(*TWO_CONTAINERS),
            _nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
            [
                st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
                st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
            ],
            [("node1", 42), ("node2", 55)],
            DEFAULT_RESOURCES,
        ),
        id="TestMostAllocatedScoringStrategy/resources requested, pods scheduled with resources",
    ),
    # node1: cpu 5000 of 5000 = 100, memory 90, 95; node2: cpu 50, memory 9000 of 9000 = 100,
    # 75.
    pytest.param(
        ScoreCase(
            st_pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
            _nodes(("node1", "5000", "10000"), ("node2", "10000", "9000")),
            [],
            [("node1", 95), ("node2", 75)],
            DEFAULT_RESOURCES,
        ),
        id="TestMostAllocatedScoringStrategy/resources requested equal node capacity",
    ),
    # node1: (75*1 + 50*2) / 3 = 58; node2: (50*1 + 50*2) / 3 = 50. Upstream names this case
    # as the second one.
    pytest.param(
        ScoreCase(
            st_pod(*TWO_CONTAINERS),
            _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
            [],
            [("node1", 58), ("node2", 50)],
            (("memory", 2), ("cpu", 1)),
        ),
        id="TestMostAllocatedScoringStrategy/nothing scheduled, resources requested, "
        "differently sized machines#01",
    ),
    # Containers without requests count 100m cpu and 200Mi memory: node1 holds 300m of 250m
    # cpu (100, capped) and 600Mi of 1000Mi memory (60), 80; node2 100m (40) and 200Mi (20), 30.
    pytest.param(
        ScoreCase(
            st_pod({}),
            [
                st_node("node1", {"cpu": "250m", "memory": "1000Mi"}),
                st_node("node2", {"cpu": "250m", "memory": "1000Mi"}),
            ],
            [st_pod({}, node="node1"), st_pod({}, node="node1")],
            [("node1", 80), ("node2", 30)],
            DEFAULT_RESOURCES,
        ),
        id="TestMostAllocatedScoringStrategy/no resources requested, pods scheduled, nonzero "
        "request for resource",
    ),
    pytest.param(
        ScoreCase(
            st_pod(*TWO_CONTAINERS),
            _nodes(("node2", "4000", "10000")),
            [],
            [],
            (("memory", -1), ("cpu", 1)),
            want_errs=[(INVALID, "resources[0].weight")],
        ),
        id="TestMostAllocatedScoringStrategy/resource with negtive weight",
    ),
    pytest.param(
        ScoreCase(
            st_pod(*TWO_CONTAINERS),
            _nodes(("node2", "4000", "10000")),
            [],
            [],
            (("memory", 1), ("cpu", 0)),
            want_errs=[(INVALID, "resources[1].weight")],
        ),
        id="TestMostAllocatedScoringStrategy/resource with zero weight",
    ),
    pytest.param(
        ScoreCase(
            st_pod(*TWO_CONTAINERS),
            _nodes(("node2", "4000", "10000")),
            [],
            [],
            (("memory", 101),),
            want_errs=[(INVALID, "resources[0].weight")],
        ),
        id="TestMostAllocatedScoringStrategy/resource weight larger than MaxNodeScore",
    ),
    # The pod asks for no abc.com/xyz, so it is left out: (50 + 50) / 2 on both nodes.
    pytest.param(
        ScoreCase(
            st_pod(*TWO_CONTAINERS),
            [
                st_node("node1", {"cpu": "6000", "memory": "10000"}),
                st_node("node2", {"cpu": "6000", "memory": "10000", EXTENDED_RES: "4"}),
            ],
            [],
            [("node1", 50), ("node2", 50)],
            EXTENDED_RESOURCE_SET,
        ),
        id="TestMostAllocatedScoringStrategy/bypass extended resource if the pod does not request",
    ),
    # cpu and memory 50 on both; abc.com/xyz 2 of 4 (50) on node1, 2 of 10 (20) on node2:
    # (50+50+50)/3 = 50 and (50+50+20)/3 = 40.
    pytest.param(
        ScoreCase(
            st_pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}, node="node1"),
            [
                st_node("node1", {"cpu": "6000", "memory": "10000", EXTENDED_RES: "4"}),
                st_node("node2", {"cpu": "6000", "memory": "10000", EXTENDED_RES: "10"}),
            ],
            [],
            [("node1", 50), ("node2", 40)],
            EXTENDED_RESOURCE_SET,
        ),
        marks=EXTENDED,
        id="TestMostAllocatedScoringStrategy/honor extended resource if the pod request",
    ),
]


@step_param
@pytest.mark.parametrize("case", MOST_ALLOCATED)
def test_most_allocated_scoring_strategy(step: int, case: ScoreCase) -> None:
    args = fit_args(step, "MostAllocated", case.resources)
    nr = step_module(step, "plugins.noderesources")
    if case.want_errs is not None:
        with pytest.raises(ValueError) as err:
            nr.new_fit(args, None)
        assert type_and_field(err.value) == case.want_errs
        return
    assert scores(step, args, case.pod, case.nodes, case.existing) == case.expected


# --- requested_to_capacity_ratio_test.go: TestRequestedToCapacityRatioScoringStrategy ---------

# Upstream's shape: 10 (100 once stretched) at 0 % used, down to 0 at 100 %: least allocated.
SHAPE: tuple[Point, ...] = ((0, 10), (100, 0))

RTC_RATIO = [
    pytest.param(
        ScoreCase(
            st_pod(),
            _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
            [st_pod(node="node1"), st_pod(node="node1")],
            [("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)],
            DEFAULT_RESOURCES,
        ),
        id="TestRequestedToCapacityRatioScoringStrategy/nothing scheduled, nothing requested "
        "(default - least requested nodes have priority)",
    ),
    # node1: cpu 75 % used -> 25, memory 50 % -> 50, (25+50)/2 = 37.5, rounded 38; node2: 50
    # and 50, 50.
    pytest.param(
        ScoreCase(
            st_pod(*TWO_CONTAINERS),
            _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
            [st_pod(node="node1"), st_pod(node="node1")],
            [("node1", 38), ("node2", 50)],
            DEFAULT_RESOURCES,
        ),
        id="TestRequestedToCapacityRatioScoringStrategy/nothing scheduled, resources requested, "
        "differently sized machines (default - least requested nodes have priority)",
    ),
    pytest.param(
        ScoreCase(
            st_pod(),
            _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
            [
                st_pod({"cpu": "3000", "memory": "5000"}, node="node1"),
                st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
            ],
            [("node1", 38), ("node2", 50)],
            DEFAULT_RESOURCES,
        ),
        id="TestRequestedToCapacityRatioScoringStrategy/no resources requested, pods scheduled "
        "with resources (default - least requested nodes have priority)",
    ),
]


@step_param
@pytest.mark.parametrize("case", RTC_RATIO)
def test_requested_to_capacity_ratio_scoring_strategy(step: int, case: ScoreCase) -> None:
    args = fit_args(step, "RequestedToCapacityRatio", case.resources, SHAPE)
    assert scores(step, args, case.pod, case.nodes, case.existing) == case.expected


# --- requested_to_capacity_ratio_test.go: TestBrokenLinearFunction ----------------------------

BROKEN_LINEAR = [
    pytest.param(
        ((10, 1), (90, 9)),
        [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9)]
        + [(100, 9), (110, 9)],
        id="TestBrokenLinearFunction/case_0",
    ),
    pytest.param(
        ((0, 2), (40, 10), (100, 0)),
        [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        id="TestBrokenLinearFunction/case_1",
    ),
    pytest.param(
        ((0, 2), (40, 2), (100, 2)),
        [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
        id="TestBrokenLinearFunction/case_2",
    ),
]


@step_param
@pytest.mark.parametrize(("points", "assertions"), BROKEN_LINEAR)
def test_broken_linear_function(
    step: int, points: tuple[Point, ...], assertions: list[tuple[int, int]]
) -> None:
    nr = step_module(step, "plugins.noderesources")
    function = nr.build_broken_linear_function(
        tuple(nr.UtilizationShapePoint(u, s) for u, s in points)
    )
    # Upstream compares with assert.InDelta(..., 0.1): the values are integers, so equal.
    assert [(p, function(p)) for p, _ in assertions] == assertions


# --- requested_to_capacity_ratio_test.go: TestResourceBinPacking{Single,Multiple}Extended -----


def node_with_extended_resource(name: str, extended: dict[str, int]) -> client.V1Node:
    """Upstream: makeNodeWithExtendedResource(name, 4000, 10000*1024*1024, extended), the only
    sizes these tables use."""
    return st_node(
        name,
        {
            "cpu": "4000m",
            "memory": str(10000 * 1024 * 1024),
            **{k: str(v) for k, v in extended.items()},
        },
    )


FOO, BAR = "intel.com/foo", "intel.com/bar"


def _bin_packing(
    test: str,
    name: str,
    pod: client.V1Pod,
    existing: list[client.V1Pod],
    extended: tuple[dict[str, int], dict[str, int]],
    expected: list[tuple[str, int]],
    marks: Any = (),
) -> Any:
    nodes = [
        node_with_extended_resource("machine1", extended[0]),
        node_with_extended_resource("machine2", extended[1]),
    ]
    return pytest.param(pod, existing, nodes, expected, marks=marks, id=f"{test}/{name}")


SINGLE = "TestResourceBinPackingSingleExtended"
SINGLE_NODES = ({FOO: 8}, {FOO: 4})
BIN_PACKING_SINGLE = [
    # The pod asks for no intel.com/foo: no resource is scored.
    _bin_packing(
        SINGLE,
        "nothing scheduled, nothing requested",
        st_pod(),
        [],
        SINGLE_NODES,
        [("machine1", 0), ("machine2", 0)],
    ),
    # machine1: 2 of 8 used, 25 % -> 2 (shape (0, 0), (100, 1), stretched to 0..10); machine2:
    # 2 of 4, 50 % -> 5.
    _bin_packing(
        SINGLE,
        "resources requested, pods scheduled with less resources",
        st_pod({FOO: "2"}),
        [st_pod()],
        SINGLE_NODES,
        [("machine1", 2), ("machine2", 5)],
        marks=EXTENDED,
    ),
    _bin_packing(
        SINGLE,
        "resources requested, pods scheduled with resources, on node with existing pod running ",
        st_pod({FOO: "2"}),
        [st_pod({FOO: "2"}, node="machine2")],
        SINGLE_NODES,
        [("machine1", 2), ("machine2", 10)],
        marks=EXTENDED,
    ),
    _bin_packing(
        SINGLE,
        "resources requested, pods scheduled with more resources",
        st_pod({FOO: "4"}),
        [st_pod()],
        SINGLE_NODES,
        [("machine1", 5), ("machine2", 10)],
        marks=EXTENDED,
    ),
]

MULTIPLE = "TestResourceBinPackingMultipleExtended"
MULTIPLE_NODES = ({FOO: 8, BAR: 4}, {FOO: 4, BAR: 8})
BIN_PACKING_MULTIPLE = [
    _bin_packing(
        MULTIPLE,
        "nothing scheduled, nothing requested",
        st_pod(),
        [],
        MULTIPLE_NODES,
        [("machine1", 0), ("machine2", 0)],
    ),
    # machine1: foo 2 of 8 -> 2, bar 2 of 4 -> 5, (2*3 + 5*5) / 8 = 3.875, rounded 4; machine2:
    # foo 5, bar 2, (15 + 10) / 8 = 3.125, 3.
    _bin_packing(
        MULTIPLE,
        "resources requested, pods scheduled with less resources",
        st_pod({FOO: "2", BAR: "2"}),
        [st_pod()],
        MULTIPLE_NODES,
        [("machine1", 4), ("machine2", 3)],
        marks=EXTENDED,
    ),
    _bin_packing(
        MULTIPLE,
        "resources requested, pods scheduled with resources, on node with existing pod running ",
        st_pod({FOO: "2", BAR: "2"}),
        [st_pod({FOO: "2", BAR: "2"}, node="machine2")],
        MULTIPLE_NODES,
        [("machine1", 4), ("machine2", 7)],
        marks=EXTENDED,
    ),
    _bin_packing(
        MULTIPLE,
        "resources requested, pods scheduled with more resources",
        st_pod({FOO: "4", BAR: "2"}),
        [st_pod()],
        MULTIPLE_NODES,
        [("machine1", 5), ("machine2", 5)],
        marks=EXTENDED,
    ),
]


@step_param
@pytest.mark.parametrize(("pod", "existing", "nodes", "expected"), BIN_PACKING_SINGLE)
def test_resource_bin_packing_single_extended(
    step: int,
    pod: client.V1Pod,
    existing: list[client.V1Pod],
    nodes: list[client.V1Node],
    expected: list[tuple[str, int]],
) -> None:
    args = fit_args(step, "RequestedToCapacityRatio", ((FOO, 1),), ((0, 0), (100, 1)))
    assert scores(step, args, pod, nodes, existing) == expected


@step_param
@pytest.mark.parametrize(("pod", "existing", "nodes", "expected"), BIN_PACKING_MULTIPLE)
def test_resource_bin_packing_multiple_extended(
    step: int,
    pod: client.V1Pod,
    existing: list[client.V1Pod],
    nodes: list[client.V1Node],
    expected: list[tuple[str, int]],
) -> None:
    args = fit_args(step, "RequestedToCapacityRatio", ((FOO, 3), (BAR, 5)), ((0, 0), (100, 1)))
    assert scores(step, args, pod, nodes, existing) == expected


# --- validation_pluginargs_test.go: TestValidateFitArgs ---------------------------------------

VALIDATE_FIT_ARGS = [
    pytest.param(
        {"ignored_resources": ("longvalue" + "a" * 64,)},
        "name part must be no more than 63 characters",
        id="TestValidateFitArgs/IgnoredResources: too long value",
    ),
    pytest.param(
        {"ignored_resources": ("example.com/",)},
        "name part must be non-empty",
        id="TestValidateFitArgs/IgnoredResources: name is empty",
    ),
    pytest.param(
        {"ignored_resources": ("example.com/aaa/bbb",)},
        "a qualified name must consist of alphanumeric characters",
        id="TestValidateFitArgs/IgnoredResources: name has too many slash",
    ),
    pytest.param(
        {"ignored_resources": ("example.com",)},
        None,
        id="TestValidateFitArgs/IgnoredResources: valid args",
    ),
    pytest.param(
        {"ignored_resource_groups": ("example.com",)},
        None,
        id="TestValidateFitArgs/IgnoredResourceGroups: valid args ",
    ),
    pytest.param(
        {"ignored_resource_groups": ("example.com/",)},
        "name part must be non-empty",
        id="TestValidateFitArgs/IgnoredResourceGroups: illegal args",
    ),
    pytest.param(
        {"ignored_resource_groups": ("a" * 64,)},
        "name part must be no more than 63 characters",
        id="TestValidateFitArgs/IgnoredResourceGroups: name is too long",
    ),
    pytest.param(
        {"ignored_resource_groups": ("example.com/aa",)},
        "resource group name can't contain '/'",
        id="TestValidateFitArgs/IgnoredResourceGroups: name cannot be contain slash",
    ),
    # Upstream expects "ScoringStrategy field is required", which v1.23 never says: its
    # validation lets a missing strategy through (the test passes on the nil error).
    pytest.param(
        {"strategy": None},
        None,
        id="TestValidateFitArgs/ScoringStrategy: field is required",
    ),
]


@step_param
@pytest.mark.parametrize(("fields", "expect"), VALIDATE_FIT_ARGS)
def test_validate_fit_args(step: int, fields: dict[str, Any], expect: str | None) -> None:
    nr = step_module(step, "plugins.noderesources")
    # Every case but the last has upstream's defaultScoringStrategy.
    fields = {"strategy": "LeastAllocated", "resources": DEFAULT_RESOURCES, **fields}
    err = nr.validate_node_resources_fit_args(None, fit_args(step, **fields))
    if expect is None:
        assert err is None
    else:
        assert expect in str(err)


# --- validation_pluginargs_test.go: TestValidate{Least,Most}AllocatedScoringStrategy ----------


def _weights_cases(test: str) -> list[Any]:
    return [
        pytest.param(None, None, id=f"{test}/default config"),
        pytest.param((("cpu", 1), ("memory", 10)), None, id=f"{test}/multi valid resources"),
        pytest.param(
            (("cpu", 0),), [(INVALID, "resources[0].weight")], id=f"{test}/weight less than min"
        ),
        pytest.param(
            (("cpu", 101),),
            [(INVALID, "resources[0].weight")],
            id=f"{test}/weight greater than max",
        ),
        pytest.param(
            (("cpu", 0), ("memory", 101)),
            [(INVALID, "resources[0].weight"), (INVALID, "resources[1].weight")],
            id=f"{test}/multi invalid resources",
        ),
    ]


@step_param
@pytest.mark.parametrize(
    ("strategy", "resources", "want_errs"),
    [
        pytest.param("LeastAllocated", *p.values, id=p.id)
        for p in _weights_cases("TestValidateLeastAllocatedScoringStrategy")
    ]
    + [
        pytest.param("MostAllocated", *p.values, id=p.id)
        for p in _weights_cases("TestValidateMostAllocatedScoringStrategy")
    ],
)
def test_validate_allocated_scoring_strategy(
    step: int,
    strategy: str,
    resources: tuple[Res, ...] | None,
    want_errs: list[tuple[str, str]] | None,
) -> None:
    nr = step_module(step, "plugins.noderesources")
    err = nr.validate_node_resources_fit_args(None, fit_args(step, strategy, resources))
    assert type_and_field(err) == want_errs


# --- validation_pluginargs_test.go: TestValidateRequestedToCapacityRatioScoringStrategy -------

DEFAULT_SHAPE: tuple[Point, ...] = ((30, 3),)
RTC = "TestValidateRequestedToCapacityRatioScoringStrategy"
VALIDATE_RTC = [
    pytest.param(None, (), [(REQUIRED, "shape")], id=f"{RTC}/no shapes"),
    pytest.param(
        (("cpu", 101),),
        DEFAULT_SHAPE,
        [(INVALID, "resources[0].weight")],
        id=f"{RTC}/weight greater than max",
    ),
    pytest.param(
        (("cpu", 0),),
        DEFAULT_SHAPE,
        [(INVALID, "resources[0].weight")],
        id=f"{RTC}/weight less than min",
    ),
    pytest.param(None, DEFAULT_SHAPE, None, id=f"{RTC}/valid shapes"),
    pytest.param(
        None, ((-1, 3),), [(INVALID, "shape[0].utilization")], id=f"{RTC}/utilization less than min"
    ),
    pytest.param(
        None,
        ((101, 3),),
        [(INVALID, "shape[0].utilization")],
        id=f"{RTC}/utilization greater than max",
    ),
    pytest.param(
        None,
        ((10, 3), (10, 3)),
        [(INVALID, "shape[1].utilization")],
        id=f"{RTC}/duplicated utilization values",
    ),
    pytest.param(
        None, ((10, 3), (20, 3), (30, 3)), None, id=f"{RTC}/increasing utilization values"
    ),
    pytest.param(
        None,
        ((10, 3), (20, 3), (15, 3)),
        [(INVALID, "shape[2].utilization")],
        id=f"{RTC}/non-increasing utilization values",
    ),
    pytest.param(None, ((10, -1),), [(INVALID, "shape[0].score")], id=f"{RTC}/score less than min"),
    pytest.param(
        None, ((10, 11),), [(INVALID, "shape[0].score")], id=f"{RTC}/score greater than max"
    ),
]


@step_param
@pytest.mark.parametrize(("resources", "shape", "want_errs"), VALIDATE_RTC)
def test_validate_requested_to_capacity_ratio_scoring_strategy(
    step: int,
    resources: tuple[Res, ...] | None,
    shape: tuple[Point, ...],
    want_errs: list[tuple[str, str]] | None,
) -> None:
    nr = step_module(step, "plugins.noderesources")
    args = fit_args(step, "RequestedToCapacityRatio", resources, shape)
    assert type_and_field(nr.validate_node_resources_fit_args(None, args)) == want_errs


# --- this project's own: the texts, NewFit's own refusals, the defaults ------------------------


@step_param
def test_validation_texts_are_upstreams(step: int) -> None:
    """Every message of ValidateNodeResourcesFitArgs, in its order, under a path (as the
    configuration's validation passes one)."""
    nr = step_module(step, "plugins.noderesources")
    args = fit_args(
        step,
        "RequestedToCapacityRatio",
        (("cpu", 0), ("memory", 101)),
        ((50, 3), (20, 11), (101, 1)),
        ignored_resources=("example.com/",),
        ignored_resource_groups=("example.com/aa",),
    )
    err = nr.validate_node_resources_fit_args("args", args)
    assert [str(e) for e in err.errors()] == [
        'args.ignoredResources[0]: Invalid value: "example.com/": name part must be non-empty',
        'args.ignoredResources[0]: Invalid value: "example.com/": name part must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'args.ignoredResourceGroups[0]: Invalid value: "example.com/aa": resource group name '
        "can't contain '/'",
        "args.resources[0].weight: Invalid value: 0: resource weight of cpu not in valid range "
        "(0, 100]",
        "args.resources[1].weight: Invalid value: 101: resource weight of memory not in valid "
        "range (0, 100]",
        "args.shape[1].utilization: Invalid value: 20: utilization values must be sorted in "
        "increasing order",
        "args.shape[1].score: Invalid value: 11: not in valid range [0, 10]",
        "args.shape[2].utilization: Invalid value: 101: not in valid range [0, 100]",
    ]
    empty = nr.validate_node_resources_fit_args(
        None, fit_args(step, "RequestedToCapacityRatio", (), ())
    )
    assert str(empty) == "shape: Required value: at least one point must be specified"


@step_param
def test_new_fit_refuses_what_validation_lets_through(step: int) -> None:
    """NewFit's own errors: no strategy, an unknown one. Differs from upstream: a
    RequestedToCapacityRatio strategy without its parameter panics in v1.23 (a nil pointer);
    here it is an error."""
    nr = step_module(step, "plugins.noderesources")
    with pytest.raises(ValueError, match="^scoring strategy not specified$"):
        nr.new_fit(fit_args(step, None), None)
    with pytest.raises(ValueError, match="^scoring strategy Balanced is not supported$"):
        nr.new_fit(fit_args(step, "Balanced", DEFAULT_RESOURCES), None)
    with pytest.raises(ValueError, match="needs requestedToCapacityRatio"):
        nr.new_fit(fit_args(step, "RequestedToCapacityRatio", DEFAULT_RESOURCES), None)
    with pytest.raises(TypeError, match="want args to be of type NodeResourcesFitArgs"):
        nr.new_fit(object(), None)


@step_param
def test_no_args_are_the_defaults(step: int) -> None:
    """None stands for v1beta3's defaults: LeastAllocated, cpu and memory weighing 1."""
    nr = step_module(step, "plugins.noderesources")
    fit = nr.new_fit(None, None)
    assert (fit.scorer.name, fit.resource_to_weight) == ("LeastAllocated", {"cpu": 1, "memory": 1})
    assert nr.DEFAULT_FIT_ARGS == fit_args(step, "LeastAllocated", DEFAULT_RESOURCES)


@step_param
def test_broken_linear_function_truncates_toward_zero(step: int) -> None:
    """Between two points Go's integer division truncates: on a falling segment the value is
    rounded up (10 - 310/60 = 10 - 5), where Python's // would give 4."""
    nr = step_module(step, "plugins.noderesources")
    shape = tuple(nr.UtilizationShapePoint(u, s) for u, s in ((0, 2), (40, 10), (100, 0)))
    assert nr.build_broken_linear_function(shape)(71) == 5
