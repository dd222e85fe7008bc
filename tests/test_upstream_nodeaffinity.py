"""kube-scheduler v1.23's NodeAffinity test tables, and those of the node affinity helpers it
stands on, ported case by case.

Ported from:

- pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go (TestNodeAffinity,
  TestNodeAffinityPriority), read at
  QuarfotPrice/sched.dev@448ef7a3cea647dce342c869b72c2c3483cf1c1f, a copy of the scheduler tree
  of kubernetes v1.23.4. Its node_affinity.go is v1.23.10's (as
  kubernetes-sigs/scheduler-plugins v0.23.10 vendors it) but for EventsToRegister
  (``Add | UpdateNodeLabel`` there, ``Add | Update`` in v1.23.10), which no test reads.
- pkg/scheduler/apis/config/validation/validation_pluginargs_test.go (TestValidateNodeAffinityArgs),
  read at QuarfotPrice/sched.dev@bd78f932b5685f63c0bbe4aeffd822663695557b; v1.23.10's
  ValidateNodeAffinityArgs is the function it tests.
- staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go
  (TestNodeSelectorMatch, TestPreferredSchedulingTermsScore,
  TestNodeSelectorRequirementsAsSelector, TestPodMatchesNodeSelectorAndAffinityTerms), read at
  kubernetes/kubernetes@2d58ef7868e6efda493e876aeaf72fb7dfea7c44. No stored copy is tagged v1.23;
  this one calls only what v0.23.10's nodeaffinity.go has, with its signatures
  (``GetRequiredNodeAffinity(pod)``, ``nodeSelectorRequirementsAsSelector(reqs, path)``), and
  lacks the cases later releases added for later behaviour (matchFields NotIn with several
  values, the supported operators listed for an unknown one), which the newer copy at
  DataDog/kubernetes@11fe57545b89116b7a0ee3e7c684794bbabc5c03 has. Each expectation here was
  checked against v0.23.10's nodeaffinity.go and labels package (the scheduler-plugins mirror).
- staging/src/k8s.io/component-helpers/scheduling/corev1/helpers_test.go
  (TestMatchNodeSelectorTerms, TestMatchNodeSelectorTermsStateless), read at
  kubernetes/kubernetes@04c0d74f8e8bf18e93a9d8d082b218d3eb4c6395; the two tables are the same in
  the older copy at tzneal/kubernetes@63aeb10f537744edc7b50230481ca7601308e0e7, and
  MatchNodeSelectorTerms(node, nodeSelector) is v0.23.10's.

The ids are ``<upstream test>/<the case's name>``; TestNodeSelectorRequirementsAsSelector's cases
have no names upstream, so their index (which upstream's failure message prints) stands for it.
Each case runs against step 13, which brings NodeAffinity, and every later built step.

TestNodeAffinity and TestPodMatchesNodeSelectorAndAffinityTerms share 27 cases (same names,
pods and nodes; the plugin's Filter wants ErrReasonPod where the helper wants false): they are
written once, in SHARED_CASES, and each table adds its own.

How results are compared: upstream compares errors with go-cmp, ignoring BadValue (and Detail in
TestValidateNodeAffinityArgs); here an error is its (type, field, detail) triples, or (type,
field) pairs, flattened as upstream's Aggregate is. TestNodeSelectorRequirementsAsSelector's
expected selectors come from labels.Parse upstream; the port has no parser, so they are built
with ``new_requirement``: the Requirement Parse builds (values sorted, as the cases give them).

Upstream tests of these files not ported: helpers_test.go's TestPodPriority and
TestGetAvoidPodsFromNode (PodPriority and GetAvoidPodsFromNodeAnnotations are not ported: no step
needs them) and TestFindMatchingUntoleratedTaint (taints: TaintToleration's business); the
other tests of validation_pluginargs_test.go, which check other plugins' args.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from tests.conftest import built_steps, step_module

STEPS = built_steps(13)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")

MAX_NODE_SCORE = 100
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
INVALID = "FieldValueInvalid"
# The detail upstream's tests expect for a key with a space in it.
INVALID_KEY_DETAIL = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

# --- building the API objects the tables write as Go literals ---------------------------------


def req(
    key: str, operator: str, values: list[str] | None = None
) -> client.V1NodeSelectorRequirement:
    """Upstream: v1.NodeSelectorRequirement{Key, Operator, Values}."""
    return client.V1NodeSelectorRequirement(key=key, operator=operator, values=values)


def term(
    exprs: list[client.V1NodeSelectorRequirement] | None = None,
    fields: list[client.V1NodeSelectorRequirement] | None = None,
) -> client.V1NodeSelectorTerm:
    """Upstream: v1.NodeSelectorTerm{MatchExpressions, MatchFields}."""
    return client.V1NodeSelectorTerm(match_expressions=exprs, match_fields=fields)


def selector(*terms: client.V1NodeSelectorTerm) -> client.V1NodeSelector:
    return client.V1NodeSelector(node_selector_terms=list(terms))


def nil_terms_selector() -> client.V1NodeSelector:
    """Upstream: v1.NodeSelector{NodeSelectorTerms: nil}. The client's model insists on a list,
    so the model is built without validation."""
    return client.V1NodeSelector.model_construct(node_selector_terms=None)


def pod(
    node_selector: dict[str, str] | None = None,
    required: client.V1NodeSelector | None = None,
    affinity: client.V1Affinity | None = None,
) -> client.V1Pod:
    """A pod with the nodeSelector, and the required node affinity (or the whole affinity)."""
    if required is not None:
        affinity = client.V1Affinity(
            node_affinity=client.V1NodeAffinity(
                required_during_scheduling_ignored_during_execution=required
            )
        )
    return client.V1Pod(
        spec=client.V1PodSpec(containers=[], node_selector=node_selector, affinity=affinity)
    )


def node(name: str = "", labels: dict[str, str] | None = None) -> client.V1Node:
    """Upstream: v1.Node{ObjectMeta: metav1.ObjectMeta{Name, Labels}}."""
    return client.V1Node(metadata=client.V1ObjectMeta(name=name, labels=labels))


def pref(weight: int, t: client.V1NodeSelectorTerm) -> client.V1PreferredSchedulingTerm:
    return client.V1PreferredSchedulingTerm(weight=weight, preference=t)


def error_shape(err: BaseException | None, detail: bool = True) -> Any:
    """An error as the tests compare it: a FieldError as (type, field, detail), or (type,
    field) without detail; an Aggregate as the list of its errors' shapes."""
    if err is None:
        return None
    if hasattr(err, "errors"):  # an Aggregate (each step has its own class)
        return [error_shape(e, detail) for e in err.errors()]
    return (err.type, err.field, err.detail) if detail else (err.type, err.field)


def status_of(status: Any) -> tuple[str, list[str]]:
    return status.code.name, list(status.reasons)


SUCCESS: tuple[str, list[str]] = ("SUCCESS", [])
UNRESOLVABLE_POD = ("UNSCHEDULABLE_AND_UNRESOLVABLE", [ERR_REASON_POD])
UNRESOLVABLE_ENFORCED = ("UNSCHEDULABLE_AND_UNRESOLVABLE", [ERR_REASON_ENFORCED])

# --- the 27 cases of TestNodeAffinity and TestPodMatchesNodeSelectorAndAffinityTerms -----------

# (name, pod, node labels, node name, whether the pod's required affinity matches the node)
SHARED_CASES: list[tuple[str, client.V1Pod, dict[str, str] | None, str, bool]] = [
    ("no selector", pod(), None, "", True),
    ("missing labels", pod({"foo": "bar"}), None, "", False),
    ("same labels", pod({"foo": "bar"}), {"foo": "bar"}, "", True),
    ("node labels are superset", pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "", True),
    ("node labels are subset", pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, "", False),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        pod(required=selector(term([req("foo", "In", ["bar", "value2"])]))),
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        pod(required=selector(term([req("kernel-version", "Gt", ["0204"])]))),
        # Two digits for the major version and two for the minor one.
        {"kernel-version": "0206"},
        "",
        True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        pod(required=selector(term([req("mem-type", "NotIn", ["DDR", "DDR2"])]))),
        {"mem-type": "DDR3"},
        "",
        True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        pod(required=selector(term([req("GPU", "Exists")]))),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        pod(required=selector(term([req("foo", "In", ["value1", "value2"])]))),
        {"foo": "bar"},
        "",
        False,
    ),
    (
        "Pod with a nil []NodeSelectorTerm in affinity, can't match the node's labels and won't "
        "schedule onto the node",
        pod(required=nil_terms_selector()),
        {"foo": "bar"},
        "",
        False,
    ),
    (
        "Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and "
        "won't schedule onto the node",
        pod(required=selector()),
        {"foo": "bar"},
        "",
        False,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't "
        "schedule onto the node",
        pod(required=selector(term([]))),
        {"foo": "bar"},
        "",
        False,
    ),
    ("Pod with no Affinity will schedule onto a node", pod(), {"foo": "bar"}, "", True),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        pod(
            affinity=client.V1Affinity(
                node_affinity=client.V1NodeAffinity(
                    required_during_scheduling_ignored_during_execution=None
                )
            )
        ),
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        pod(required=selector(term([req("GPU", "Exists"), req("GPU", "NotIn", ["AMD", "INTER"])]))),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        pod(required=selector(term([req("GPU", "Exists"), req("GPU", "In", ["AMD", "INTER"])]))),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        False,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and "
        "will schedule onto the node",
        pod(
            required=selector(
                term([req("foo", "In", ["bar", "value2"])]),
                term([req("diffkey", "In", ["wrong", "value2"])]),
            )
        ),
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) "
        "both are satisfied, will schedule onto the node",
        pod({"foo": "bar"}, required=selector(term([req("foo", "Exists")]))),
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing "
        "that we are deprecating) is not satisfied, won't schedule onto the node",
        pod({"foo": "bar"}, required=selector(term([req("foo", "Exists")]))),
        {"foo": "barrrrrr"},
        "",
        False,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        pod(required=selector(term([req("foo", "NotIn", ["invalid value: ___@#$%^"])]))),
        {"foo": "bar"},
        "",
        False,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        pod(required=selector(term(fields=[req("metadata.name", "In", ["node_1"])]))),
        None,
        "node_1",
        True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        pod(required=selector(term(fields=[req("metadata.name", "In", ["node_1"])]))),
        None,
        "node_2",
        False,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        pod(
            required=selector(
                term(fields=[req("metadata.name", "In", ["node_1"])]),
                term([req("foo", "In", ["bar"])]),
            )
        ),
        {"foo": "bar"},
        "node_2",
        True,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        pod(
            required=selector(
                term([req("foo", "In", ["bar"])], [req("metadata.name", "In", ["node_1"])])
            )
        ),
        {"foo": "bar"},
        "node_2",
        False,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        pod(
            required=selector(
                term([req("foo", "In", ["bar"])], [req("metadata.name", "In", ["node_1"])])
            )
        ),
        {"foo": "bar"},
        "node_1",
        True,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        pod(
            required=selector(
                term(fields=[req("metadata.name", "In", ["node_1"])]),
                term([req("foo", "In", ["not-match-to-bar"])]),
            )
        ),
        {"foo": "bar"},
        "node_2",
        False,
    ),
]

# --- TestNodeAffinity --------------------------------------------------------------------------


def _node_affinity_case(
    name: str,
    p: client.V1Pod,
    labels: dict[str, str] | None,
    node_name: str,
    want: tuple[str, list[str]],
    added: client.V1NodeAffinity | None = None,
    disable_pre_filter: bool = False,
) -> Any:
    return pytest.param(
        p, labels, node_name, want, added, disable_pre_filter, id=f"TestNodeAffinity/{name}"
    )


def _added_required(t: client.V1NodeSelectorTerm) -> client.V1NodeAffinity:
    return client.V1NodeAffinity(required_during_scheduling_ignored_during_execution=selector(t))


NODE_AFFINITY = [
    _node_affinity_case(name, p, labels, node_name, SUCCESS if ok else UNRESOLVABLE_POD)
    for name, p, labels, node_name, ok in SHARED_CASES
] + [
    _node_affinity_case(
        "Matches added affinity and Pod's node affinity",
        pod(required=selector(term([req("zone", "In", ["foo"])]))),
        {"zone": "foo"},
        "node_2",
        SUCCESS,
        added=_added_required(term(fields=[req("metadata.name", "In", ["node_2"])])),
    ),
    _node_affinity_case(
        "Matches added affinity but not Pod's node affinity",
        pod(required=selector(term([req("zone", "In", ["bar"])]))),
        {"zone": "foo"},
        "node_2",
        UNRESOLVABLE_POD,
        added=_added_required(term(fields=[req("metadata.name", "In", ["node_2"])])),
    ),
    _node_affinity_case(
        "Doesn't match added affinity",
        pod(),
        {"zone": "foo"},
        "node_2",
        UNRESOLVABLE_ENFORCED,
        added=_added_required(term([req("zone", "In", ["bar"])])),
    ),
    _node_affinity_case(
        "Matches node selector correctly even if PreFilter is not called",
        pod({"foo": "bar"}),
        {"foo": "bar", "baz": "blah"},
        "",
        SUCCESS,
        disable_pre_filter=True,
    ),
    _node_affinity_case(
        "Matches node affinity correctly even if PreFilter is not called",
        pod(required=selector(term([req("GPU", "Exists"), req("GPU", "NotIn", ["AMD", "INTER"])]))),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        SUCCESS,
        disable_pre_filter=True,
    ),
]


@step_param
@pytest.mark.parametrize(
    ("p", "labels", "node_name", "want", "added", "disable_pre_filter"), NODE_AFFINITY
)
def test_node_affinity(
    step: int,
    p: client.V1Pod,
    labels: dict[str, str] | None,
    node_name: str,
    want: tuple[str, list[str]],
    added: client.V1NodeAffinity | None,
    disable_pre_filter: bool,
) -> None:
    """Upstream: New(&args, nil), PreFilter (unless disabled), then Filter's status."""
    na = step_module(step, "plugins.nodeaffinity")
    info = step_module(step, "framework").NodeInfo()
    info.set_node(node(node_name, labels))
    plugin = na.new(na.NodeAffinityArgs(added_affinity=added), None)
    state = step_module(step, "cycle_state").CycleState()
    if not disable_pre_filter:
        assert plugin.pre_filter(state, p).is_success()
    assert status_of(plugin.filter(state, p, info)) == want


# --- TestNodeAffinityPriority ------------------------------------------------------------------

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def affinity1() -> client.V1Affinity:
    return client.V1Affinity(
        node_affinity=client.V1NodeAffinity(
            preferred_during_scheduling_ignored_during_execution=[
                pref(2, term([req("foo", "In", ["bar"])])),
            ]
        )
    )


def affinity2() -> client.V1Affinity:
    return client.V1Affinity(
        node_affinity=client.V1NodeAffinity(
            preferred_during_scheduling_ignored_during_execution=[
                pref(2, term([req("foo", "In", ["bar"])])),
                pref(4, term([req("key", "In", ["value"])])),
                pref(
                    5,
                    term(
                        [
                            req("foo", "In", ["bar"]),
                            req("key", "In", ["value"]),
                            req("az", "In", ["az1"]),
                        ]
                    ),
                ),
            ]
        )
    )


def _priority_case(
    name: str,
    p: client.V1Pod,
    nodes: list[client.V1Node],
    expected: list[tuple[str, int]],
    added: client.V1NodeAffinity | None = None,
    disable_pre_score: bool = False,
) -> Any:
    return pytest.param(
        p, nodes, expected, added, disable_pre_score, id=f"TestNodeAffinityPriority/{name}"
    )


NODE_AFFINITY_PRIORITY = [
    _priority_case(
        "all machines are same priority as NodeAffinity is nil",
        client.V1Pod(
            metadata=client.V1ObjectMeta(annotations={}), spec=client.V1PodSpec(containers=[])
        ),
        [node("machine1", LABEL1), node("machine2", LABEL2), node("machine3", LABEL3)],
        [("machine1", 0), ("machine2", 0), ("machine3", 0)],
    ),
    _priority_case(
        "no machine matches preferred scheduling requirements in NodeAffinity of pod so all "
        "machines' priority is zero",
        pod(affinity=affinity1()),
        [node("machine1", LABEL4), node("machine2", LABEL2), node("machine3", LABEL3)],
        [("machine1", 0), ("machine2", 0), ("machine3", 0)],
    ),
    _priority_case(
        "only machine1 matches the preferred scheduling requirements of pod",
        pod(affinity=affinity1()),
        [node("machine1", LABEL1), node("machine2", LABEL2), node("machine3", LABEL3)],
        [("machine1", MAX_NODE_SCORE), ("machine2", 0), ("machine3", 0)],
    ),
    # machine1 2, machine5 2+4+5 = 11, machine2 4: 2*100/11 = 18, 100, 4*100/11 = 36.
    _priority_case(
        "all machines matches the preferred scheduling requirements of pod but with different "
        "priorities ",
        pod(affinity=affinity2()),
        [node("machine1", LABEL1), node("machine5", LABEL5), node("machine2", LABEL2)],
        [("machine1", 18), ("machine5", MAX_NODE_SCORE), ("machine2", 36)],
    ),
    _priority_case(
        "added affinity",
        pod(),
        [node("machine1", LABEL1), node("machine2", LABEL2)],
        [("machine1", MAX_NODE_SCORE), ("machine2", 0)],
        added=affinity1().node_affinity,
    ),
    # The pod's foo=bar weighs 2, the added key=value 3: 2, 3 and 5, so 40, 60 and 100.
    _priority_case(
        "added affinity and pod has default affinity",
        pod(affinity=affinity1()),
        [node("machine1", LABEL1), node("machine2", LABEL2), node("machine3", LABEL5)],
        [("machine1", 40), ("machine2", 60), ("machine3", MAX_NODE_SCORE)],
        added=client.V1NodeAffinity(
            preferred_during_scheduling_ignored_during_execution=[
                pref(3, term([req("key", "In", ["value"])])),
            ]
        ),
    ),
    _priority_case(
        "calculate the priorities correctly even if PreScore is not called",
        pod(affinity=affinity2()),
        [node("machine1", LABEL1), node("machine5", LABEL5), node("machine2", LABEL2)],
        [("machine1", 18), ("machine5", MAX_NODE_SCORE), ("machine2", 36)],
        disable_pre_score=True,
    ),
]


def new_snapshot(step: int, nodes: list[client.V1Node]) -> Any:
    """Upstream: cache.NewSnapshot(nil, nodes)."""
    snapshot = step_module(step, "snapshot").Snapshot()
    for n in nodes:
        info = step_module(step, "framework").NodeInfo()
        info.set_node(n)
        snapshot.node_info_map[n.metadata.name] = info
        snapshot.node_info_list.append(info)
    return snapshot


@step_param
@pytest.mark.parametrize(
    ("p", "nodes", "expected", "added", "disable_pre_score"), NODE_AFFINITY_PRIORITY
)
def test_node_affinity_priority(
    step: int,
    p: client.V1Pod,
    nodes: list[client.V1Node],
    expected: list[tuple[str, int]],
    added: client.V1NodeAffinity | None,
    disable_pre_score: bool,
) -> None:
    """Upstream: New with a framework handle on the snapshot, PreScore (unless disabled), Score
    on every node, then NormalizeScore; every step a success."""
    na = step_module(step, "plugins.nodeaffinity")
    snapshot = new_snapshot(step, nodes)
    handle = SimpleNamespace(snapshot_shared_lister=lambda: snapshot)
    plugin = na.new(na.NodeAffinityArgs(added_affinity=added), handle)
    state = step_module(step, "cycle_state").CycleState()
    if not disable_pre_score:
        assert plugin.pre_score(state, p, nodes).is_success()
    node_score = step_module(step, "framework").NodeScore
    got = []
    for n in nodes:
        score, status = plugin.score(state, p, n.metadata.name)
        assert status.is_success(), status
        got.append(node_score(n.metadata.name, score))
    assert plugin.score_extensions().normalize_score(state, p, got).is_success()
    assert [(s.name, s.score) for s in got] == expected


# --- TestValidateNodeAffinityArgs --------------------------------------------------------------

VALIDATE_NODE_AFFINITY_ARGS = [
    pytest.param(None, None, id="TestValidateNodeAffinityArgs/empty"),
    pytest.param(
        client.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=selector(
                term([req("label-1", "In", ["label-1-val"])])
            ),
            preferred_during_scheduling_ignored_during_execution=[
                pref(1, term(fields=[req("metadata.name", "In", ["node-1"])])),
            ],
        ),
        None,
        id="TestValidateNodeAffinityArgs/valid added affinity",
    ),
    pytest.param(
        client.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=selector(
                term([req("invalid/label/key", "In", ["label-1-val"])])
            ),
            preferred_during_scheduling_ignored_during_execution=[
                pref(1, term(fields=[req("metadata.name", "In", ["node-1", "node-2"])])),
            ],
        ),
        [
            (
                INVALID,
                "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms[0].matchExpressions[0].key",
            ),
            (
                INVALID,
                "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
                ".matchFields[0].values",
            ),
        ],
        id="TestValidateNodeAffinityArgs/invalid added affinity",
    ),
]


@step_param
@pytest.mark.parametrize(("added", "want_err"), VALIDATE_NODE_AFFINITY_ARGS)
def test_validate_node_affinity_args(
    step: int, added: client.V1NodeAffinity | None, want_err: list[tuple[str, str]] | None
) -> None:
    """Upstream: ValidateNodeAffinityArgs(nil, &args), compared without BadValue and Detail."""
    na = step_module(step, "plugins.nodeaffinity")
    err = na.validate_node_affinity_args(None, na.NodeAffinityArgs(added_affinity=added))
    assert error_shape(err, detail=False) == want_err


# --- TestNodeSelectorMatch ---------------------------------------------------------------------

NODE_SELECTOR_MATCH = [
    pytest.param(nil_terms_selector(), None, None, False, id="TestNodeSelectorMatch/nil node"),
    pytest.param(
        selector(
            term(fields=[req("metadata.name", "In", ["host_1", "host_2"])]),
            term(
                [req("label_1", "In", ["label_1_val"])],
                [req("metadata.name", "In", ["host_1"])],
            ),
            term([req("invalid key", "In", ["label_value"])]),
        ),
        None,
        [
            (INVALID, "nodeSelectorTerms[0].matchFields[0].values", "must have one element"),
            (INVALID, "nodeSelectorTerms[2].matchExpressions[0].key", INVALID_KEY_DETAIL),
        ],
        False,
        id="TestNodeSelectorMatch/invalid field selector and label selector",
    ),
    pytest.param(
        selector(
            term(
                [req("label_1", "In", ["label_1_val"])],
                [req("metadata.name", "In", ["host_1"])],
            )
        ),
        node("host_1"),
        None,
        False,
        id="TestNodeSelectorMatch/node matches field selector, but not labels",
    ),
    pytest.param(
        selector(
            term(
                [req("label_1", "In", ["label_1_val"])],
                [req("metadata.name", "In", ["host_1"])],
            )
        ),
        node("host_1", {"label_1": "label_1_val"}),
        None,
        True,
        id="TestNodeSelectorMatch/node matches field selector and label selector",
    ),
    pytest.param(
        selector(
            term([req("label_1", "In", ["label_1_val"])]),
            term(fields=[req("metadata.name", "In", ["host_1"])]),
        ),
        node("host_1"),
        None,
        True,
        id="TestNodeSelectorMatch/second term matches",
    ),
]


@step_param
@pytest.mark.parametrize(("ns", "n", "want_err", "want_match"), NODE_SELECTOR_MATCH)
def test_node_selector_match(
    step: int,
    ns: client.V1NodeSelector,
    n: client.V1Node | None,
    want_err: list[tuple[str, str, str]] | None,
    want_match: bool,
) -> None:
    """Upstream: NewNodeSelector's error, then (if none) NodeSelector.Match."""
    corev1 = step_module(step, "corev1")
    try:
        node_selector = corev1.new_node_selector(ns)
    except corev1.Aggregate as e:
        assert error_shape(e) == want_err
        return
    assert want_err is None
    assert node_selector.match(n) is want_match


# --- TestPreferredSchedulingTermsScore ---------------------------------------------------------

PREFERRED_SCHEDULING_TERMS_SCORE = [
    pytest.param(
        [
            pref(1, term(fields=[req("metadata.name", "In", ["host_1", "host_2"])])),
            pref(
                1,
                term(
                    [req("label_1", "In", ["label_1_val"])],
                    [req("metadata.name", "In", ["host_1"])],
                ),
            ),
            pref(1, term([req("invalid key", "In", ["label_value"])])),
        ],
        None,
        [
            (INVALID, "[0].matchFields[0].values", "must have one element"),
            (INVALID, "[2].matchExpressions[0].key", INVALID_KEY_DETAIL),
        ],
        0,
        id="TestPreferredSchedulingTermsScore/invalid field selector and label selector",
    ),
    pytest.param(
        [pref(0, term(fields=[req("metadata.name", "In", ["host_1", "host_2"])]))],
        node("host_1"),
        None,
        0,
        id="TestPreferredSchedulingTermsScore/invalid field selector but no weight, error not "
        "reported",
    ),
    pytest.param(
        [
            pref(5, term(fields=[req("metadata.name", "In", ["host_1"])])),
            pref(7, term([req("unknown_label", "In", ["unknown_label_val"])])),
            pref(11, term([req("label_1", "In", ["label_1_val"])])),
        ],
        node("host_1", {"label_1": "label_1_val"}),
        None,
        16,
        id="TestPreferredSchedulingTermsScore/first and third term match",
    ),
]


@step_param
@pytest.mark.parametrize(("terms", "n", "want_err", "want_score"), PREFERRED_SCHEDULING_TERMS_SCORE)
def test_preferred_scheduling_terms_score(
    step: int,
    terms: list[client.V1PreferredSchedulingTerm],
    n: client.V1Node | None,
    want_err: list[tuple[str, str, str]] | None,
    want_score: int,
) -> None:
    """Upstream: NewPreferredSchedulingTerms's error, then (if none) Score."""
    corev1 = step_module(step, "corev1")
    try:
        pref_sched_terms = corev1.new_preferred_scheduling_terms(terms)
    except corev1.Aggregate as e:
        assert error_shape(e) == want_err
        return
    assert want_err is None
    assert pref_sched_terms.score(n) == want_score


# --- TestNodeSelectorRequirementsAsSelector ----------------------------------------------------

# (input, the expected selector as (key, selection operator, values) or "nothing", the errors)
REQUIREMENTS_AS_SELECTOR: list[tuple[Any, Any, Any]] = [
    (None, "nothing", None),
    ([], "nothing", None),
    ([req("foo", "In", ["bar", "baz"])], ("foo", "in", ["bar", "baz"]), None),
    (
        [req("foo", "Exists", ["bar", "baz"])],
        None,
        [
            [
                (
                    INVALID,
                    "root[0].values",
                    "values set must be empty for exists and does not exist",
                )
            ]
        ],
    ),
    ([req("foo", "Gt", ["1"])], ("foo", "gt", ["1"]), None),
    ([req("bar", "Lt", ["7"])], ("bar", "lt", ["7"]), None),
]


@step_param
@pytest.mark.parametrize(
    ("reqs", "want_out", "want_errs"),
    [
        pytest.param(*case, id=f"TestNodeSelectorRequirementsAsSelector/{i}")
        for i, case in enumerate(REQUIREMENTS_AS_SELECTOR)
    ],
)
def test_node_selector_requirements_as_selector(
    step: int,
    reqs: list[client.V1NodeSelectorRequirement] | None,
    want_out: Any,
    want_errs: Any,
) -> None:
    """Upstream: nodeSelectorRequirementsAsSelector(in, field.NewPath("root")): its errors (a
    list of Aggregates here) and its selector, compared with what labels.Parse builds."""
    corev1 = step_module(step, "corev1")
    out, errs = corev1.node_selector_requirements_as_selector(reqs, "root")
    assert ([error_shape(e) for e in errs] or None) == want_errs
    if want_out == "nothing":
        expected = corev1.NOTHING
    elif want_out is None:
        expected = None
    else:
        key, op, values = want_out
        requirement = corev1.new_requirement(key, corev1.SelectionOperator(op), values)
        expected = corev1.LabelSelector().add(requirement)
    assert out == expected


# --- TestPodMatchesNodeSelectorAndAffinityTerms ------------------------------------------------


@step_param
@pytest.mark.parametrize(
    ("p", "labels", "node_name", "want"),
    [
        pytest.param(
            p, labels, node_name, ok, id=f"TestPodMatchesNodeSelectorAndAffinityTerms/{name}"
        )
        for name, p, labels, node_name, ok in SHARED_CASES
    ],
)
def test_pod_matches_node_selector_and_affinity_terms(
    step: int,
    p: client.V1Pod,
    labels: dict[str, str] | None,
    node_name: str,
    want: bool,
) -> None:
    """Upstream: GetRequiredNodeAffinity(pod).Match(node), its error ignored."""
    corev1 = step_module(step, "corev1")
    got, _ = corev1.get_required_node_affinity(p).match(node(node_name, labels))
    assert got is want


# --- TestMatchNodeSelectorTerms ----------------------------------------------------------------

LABEL_1_IN = req("label_1", "In", ["label_1_val"])


def _name_in(*names: str) -> client.V1NodeSelectorRequirement:
    return req("metadata.name", "In", list(names))


MATCH_NODE_SELECTOR_TERMS = [
    pytest.param(None, None, False, id="TestMatchNodeSelectorTerms/nil terms"),
    pytest.param(
        selector(term([LABEL_1_IN])),
        node(labels={"label_1": "label_1_val"}),
        True,
        id="TestMatchNodeSelectorTerms/node label matches matchExpressions terms",
    ),
    pytest.param(
        selector(term(fields=[_name_in("host_1")])),
        node("host_1"),
        True,
        id="TestMatchNodeSelectorTerms/node field matches matchFields terms",
    ),
    pytest.param(
        selector(term(fields=[_name_in("host_1", "host_2")])),
        node("host_1"),
        False,
        id="TestMatchNodeSelectorTerms/invalid node field requirement",
    ),
    pytest.param(
        selector(term(fields=[_name_in("host_1")])),
        node("not_host_1", {"metadata.name": "host_1"}),
        False,
        id="TestMatchNodeSelectorTerms/fieldSelectorTerm with node labels",
    ),
    pytest.param(
        selector(term([req("metadata.name", "In", ["host_1"])])),
        node("host_1"),
        False,
        id="TestMatchNodeSelectorTerms/labelSelectorTerm with node fields",
    ),
    pytest.param(
        selector(term([LABEL_1_IN], [_name_in("host_1")])),
        node("host_1"),
        False,
        id="TestMatchNodeSelectorTerms/labelSelectorTerm and fieldSelectorTerm was set, but only "
        "node fields",
    ),
    pytest.param(
        selector(term([LABEL_1_IN], [_name_in("host_1")])),
        node("host_1", {"label_1": "label_1_val"}),
        True,
        id="TestMatchNodeSelectorTerms/labelSelectorTerm and fieldSelectorTerm was set, both node "
        "fields and labels (both matched)",
    ),
    pytest.param(
        selector(term([LABEL_1_IN], [_name_in("host_1")])),
        node("host_1", {"label_1": "label_1_val-failed"}),
        False,
        id="TestMatchNodeSelectorTerms/labelSelectorTerm and fieldSelectorTerm was set, both node "
        "fields and labels (one mismatched)",
    ),
    pytest.param(
        selector(term([LABEL_1_IN]), term(fields=[_name_in("host_1")])),
        node("host_1", {"label_1": "label_1_val-failed"}),
        True,
        id="TestMatchNodeSelectorTerms/multi-selector was set, both node fields and labels (one "
        "mismatched)",
    ),
]


@step_param
@pytest.mark.parametrize(("ns", "n", "want"), MATCH_NODE_SELECTOR_TERMS)
def test_match_node_selector_terms(
    step: int, ns: client.V1NodeSelector | None, n: client.V1Node | None, want: bool
) -> None:
    """Upstream: MatchNodeSelectorTerms(node, nodeSelector), its error ignored."""
    got, _ = step_module(step, "corev1").match_node_selector_terms(n, ns)
    assert got is want


# --- TestMatchNodeSelectorTermsStateless -------------------------------------------------------


def _stateless_case(
    name: str,
    label_values: list[str] | None,
    name_values: list[str] | None,
    n: client.V1Node,
) -> Any:
    """A selector of one term: label_1 In label_values and/or metadata.name In name_values;
    the expected selector after the call is the same, built again."""

    def build() -> client.V1NodeSelector:
        return selector(
            term(
                [req("label_1", "In", list(label_values))] if label_values else None,
                [_name_in(*name_values)] if name_values else None,
            )
        )

    return pytest.param(build(), n, build(), id=f"TestMatchNodeSelectorTermsStateless/{name}")


HOST_1 = node("host_1")
LABELLED = node(labels={"label_1": "label_1_val"})
HOST_1_LABELLED = node("host_1", {"label_1": "label_1_val"})
ORDERED, UNORDERED = ["label_1_val", "label_2_val"], ["label_2_val", "label_1_val"]
HOSTS, HOSTS_UNORDERED = ["host_1", "host_2"], ["host_2", "host_1"]

MATCH_NODE_SELECTOR_TERMS_STATELESS = [
    pytest.param(None, None, None, id="TestMatchNodeSelectorTermsStateless/nil terms"),
    _stateless_case(
        "nodeLabels: preordered matchExpressions and nil matchFields", ORDERED, None, LABELLED
    ),
    _stateless_case(
        "nodeLabels: unordered matchExpressions and nil matchFields", UNORDERED, None, LABELLED
    ),
    _stateless_case(
        "nodeFields: nil matchExpressions and preordered matchFields", None, HOSTS, HOST_1
    ),
    _stateless_case(
        "nodeFields: nil matchExpressions and unordered matchFields", None, HOSTS_UNORDERED, HOST_1
    ),
    _stateless_case(
        "nodeLabels and nodeFields: ordered matchExpressions and ordered matchFields",
        ORDERED,
        HOSTS,
        HOST_1_LABELLED,
    ),
    _stateless_case(
        "nodeLabels and nodeFields: ordered matchExpressions and unordered matchFields",
        ORDERED,
        HOSTS_UNORDERED,
        HOST_1_LABELLED,
    ),
    _stateless_case(
        "nodeLabels and nodeFields: unordered matchExpressions and ordered matchFields",
        UNORDERED,
        HOSTS,
        HOST_1_LABELLED,
    ),
    _stateless_case(
        "nodeLabels and nodeFields: unordered matchExpressions and unordered matchFields",
        UNORDERED,
        HOSTS_UNORDERED,
        HOST_1_LABELLED,
    ),
]


@step_param
@pytest.mark.parametrize(("ns", "n", "want"), MATCH_NODE_SELECTOR_TERMS_STATELESS)
def test_match_node_selector_terms_stateless(
    step: int,
    ns: client.V1NodeSelector | None,
    n: client.V1Node | None,
    want: client.V1NodeSelector | None,
) -> None:
    """Upstream: MatchNodeSelectorTerms leaves the selector as it was, its values' order too."""
    step_module(step, "corev1").match_node_selector_terms(n, ns)
    assert ns == want
