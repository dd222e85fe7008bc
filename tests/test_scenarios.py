"""Every step's scenario end to end: embedded API server, the step's scheduler, fixed seed.

These run exactly what ``nox -s stepN`` runs (``minisched.runner.run_step``) and assert the
bindings and the printed report.
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client
from rich.console import Console

from minisched import runner
from minisched.informer import Store
from minisched.report import Report
from minisched.scenario import Scenario
from tests.conftest import built_steps

SEED = 1


def _random_nodes(seed: int, pods: int, nodes: int) -> list[str]:
    rng = random.Random(seed)
    return [f"node{rng.randrange(nodes)}" for _ in range(pods)]


def _nodes(first: int, last: int) -> set[str]:
    return {f"node{i}" for i in range(first, last)}


# step -> a check of the bindings, and lines the report must print.
EXPECTED: dict[int, tuple[Callable[[dict[str, str | None]], bool], list[str]]] = {
    1: (
        # node0..node9 are seen in creation order; each pod costs one randrange(10).
        lambda b: list(b.values()) == _random_nodes(SEED, 3, 10),
        ["bound    minisched-random-", "random pick among 10 nodes"],
    ),
    2: (
        # pod1 fits node10 only; pod-tolerant passes everywhere: one randrange(11).
        lambda b: b == {"pod1": "node10", "pod-tolerant": _random_nodes(SEED, 1, 11)[0]},
        [
            "NodeUnschedulable: node(s) were unschedulable",
            "bound    minisched-filter-",
            "1 of 11 nodes passed Filter",
            "random among the 11 of 11 nodes that passed Filter",
        ],
    ),
    3: (
        # pod8 scores 100 on node8; pod1 ties on node5..node9: seed 1 picks node8.
        lambda b: b["pod8"] == "node8" and b["pod1"] in _nodes(5, 10) and b["pod1"] == "node8",
        [
            "NodeNumber 100 <- selected",
            "bound    minisched-score-",
            "score 0 (NodeNumber 0); 5 nodes tied, picked at random",
        ],
    ),
    4: (
        # As step 3: PreScore changes how NodeNumber computes, not what it decides.
        lambda b: b["pod8"] == "node8" and b["pod1"] in _nodes(5, 10) and b["pod1"] == "node8",
        [
            "NodeNumber 100 <- selected",
            "bound    minisched-prescore-",
            "/pod8: NodeNumber wrote PreScoreNodeNumber = PreScoreState(pod_suffix_number=8) to",
        ],
    ),
    5: (
        # As step 3, each pod held on Permit for its node's digit (8 s on node8) first.
        lambda b: b["pod8"] == "node8" and b["pod1"] in _nodes(5, 10) and b["pod1"] == "node8",
        [
            "/pod8: on node8, Permit by NodeNumber (wait 8s, timeout 10s)",
            "NodeNumber 100 <- selected",
            "bound    minisched-permit-",
        ],
    ),
    6: (
        # Every node is cordoned: pod1 is re-queued, not lost, and waits for an event.
        lambda b: b == {"pod1": None},
        [
            "NodeUnschedulable: node(s) were unschedulable",
            "/pod1: -> unschedulableQ (ScheduleAttemptFailure)",
            "scenario: pod1 is pending in unschedulableQ, rejected by NodeUnschedulable",
        ],
    ),
    7: (
        # node5's NodeAdd finds both pods still backing off: parked in podBackoffQ for good.
        lambda b: b == {"pod1": None, "pod8": None},
        [
            "/pod1: -> unschedulableQ (ScheduleAttemptFailure)",
            "/pod1: -> podBackoffQ (NodeAdd)",
            "/pod8: -> podBackoffQ (NodeAdd)",
            "stay in podBackoffQ: nothing flushes it until step 8",
        ],
    ),
    8: (
        # The same story; the backoff flush lets both pods onto the new nodes.
        lambda b: set(b) == {"pod1", "pod8"} and all(n in _nodes(5, 10) for n in b.values()),
        [
            "/pod1: -> podBackoffQ (NodeAdd)",
            "/pod1: -> activeQ (BackoffComplete)",
            "/pod8: -> activeQ (BackoffComplete)",
            "scenario: every pod is bound",
        ],
    ),
    9: (
        # Each node takes one pod: pod12's cycle counts pod2, assumed on node2 and not bound.
        lambda b: b == {"pod2": "node2", "pod12": "node3"},
        [
            "assumed  minisched-cache-",
            "node2 │ MaxPods: Too many pods",
            "/pod2 on node2: Unreserve ran, the cache no longer counts it",
            'binding rejected: running Bind plugin "FlakyBinder"',
            "/pod2: -> podBackoffQ (ScheduleAttemptFailure)",
            "scenario: pod12 went to node3 because node2 held pod2",
        ],
    ),
    10: (
        # LeastAllocated alone decides (no name ends in a digit); batch waits for db's deletion.
        lambda b: b == {"api": "medium", "web": "small", "batch": "large"},
        [
            "score 62 (NodeNumber 0, NodeResourcesFit 62)",
            "/batch: 0/3 nodes are available: 3 Insufficient cpu.",
            "small  │ NodeResourcesFit: Insufficient cpu",
            "/batch: -> podBackoffQ (AssignedPodDelete)",
            "│ large  │ 2 / 3 │ 1Gi / 4Gi │ 1 / 110 │",
            "scenario: db's deletion freed 2 CPU on large; batch went there",
        ],
    ),
    11: (
        # payments (urgent) fits nowhere; batch-c (low) on north is its one victim.
        lambda b: (
            b
            == {
                "batch-a": "east",
                "batch-b": "east",
                "api": "west",
                "web": "north",
                "ledger": "south",
                "payments": "north",
            }
        ),
        [
            "/payments: west is a candidate: evict api (priority 500)",
            "/payments: north is a candidate: evict batch-c (priority 100); web (priority 200)"
            " can stay (reprieved)",
            "/payments: south is no candidate: No victims found on node south for preemptor pod"
            " payments",
            "/payments: picked north: the smallest sum of victim priorities",
            "/batch-c on north, for minisched-preemption-",
            "/payments: 0/5 nodes are available: 1 node(s) were unschedulable, 4 Insufficient cpu.",
            "/payments -> north (status.nominatedNodeName)",
            "its nominated node, tried first, passed Filter",
            "scenario: batch-c was preempted; payments runs on north, its nominated node",
        ],
    ),
    12: (
        # 200 nodes, 100 feasible ones found per cycle: web never sees node-170x; batch fits
        # node-170x alone and every node is checked to find it.
        lambda b: (
            b
            == {"web": "node-030x", "api": "node-170x", "batch": "node-170x", "cache": "node-100x"}
        ),
        [
            "/web: checked 120 of 200 nodes from index 0, found 100 feasible "
            "(numFeasibleNodesToFind 100)",
            "/api: checked 100 of 200 nodes from index 120, found 100 feasible",
            "/batch: checked 200 of 200 nodes from index 20, found 1 feasible",
            "/cache: checked 120 of 200 nodes from index 20, found 100 feasible",
            "│ 20 nodes      │ NodeUnschedulable: node(s) were unschedulable │",
            "│ 179 nodes │ NodeResourcesFit: Insufficient cpu",
            "│ 197 more nodes │",
            "scenario: web never saw node-170x: Filter stopped at 100 feasible nodes",
            "scenario: batch fits node-170x alone, and Filter checked every node",
        ],
    ),
    13: (
        # Every choice is unique (scenarios/step13.py works out the scores); stray fits nowhere.
        lambda b: (
            b
            == {
                "trainer": "gpu",
                "web": "ssd",
                "db": "hdd",
                "batch": "spot",
                "report": "ssd",
                "stray": None,
            }
        ),
        [
            "gpu  │ TaintToleration: node(s) had taint {dedicated: ml}, that the pod didn't "
            "tolerate",
            "ssd  │ NodeAffinity: node(s) didn't match Pod's node affinity/selector",
            "score 487 (NodeAffinity 0, NodeNumber 0, NodeResourcesBalancedAllocation 100, "
            "NodeResourcesFit 87, TaintToleration 300)",
            "score 675 (NodeAffinity 200, NodeNumber 0, NodeResourcesBalancedAllocation 100, "
            "NodeResourcesFit 75, TaintToleration 300)",
            "/stray: 0/4 nodes are available: 1 node(s) had taint {dedicated: ml}, that the pod "
            "didn't tolerate, 3 node(s) didn't match Pod's node affinity/selector.",
            "scenario: stray wants gpu's label but not its taint: it fits no node",
        ],
    ),
    14: (
        # One scheduler, two profiles: minisched-pack (MostAllocated) packs small, minisched-
        # spread (LeastAllocated) spreads; stranger names no profile and is left alone.
        lambda b: (
            b
            == {
                "stranger": None,
                "pack-a": "small",
                "spread-a": "large",
                "pack-b": "small",
                "spread-b": "medium",
                "pack-c": "small",
                "spread-c": "large",
            }
        ),
        [
            "/pack-a -> small (profile minisched-pack)",
            "/spread-a -> large (profile minisched-spread)",
            "score 425 (NodeAffinity 0, NodeResourcesBalancedAllocation 100, NodeResourcesFit 25, "
            "TaintToleration 300)",
            "scenario: minisched-pack packed its pods on one node; minisched-spread spread them",
            "scenario: stranger asks for another-scheduler: no profile has it, so nobody tried it",
        ],
    ),
    15: (
        # The extender filters node4 out and prioritizes the node of the pod's digit; web does
        # not ask for its resource; late1 finds it stopped.
        lambda b: (
            b
            == {
                "web": "node4",
                "db2": "node2",
                "cache3": "node3",
                "batch": "node3",
                "late1": None,
            }
        ),
        [
            "/db2: filter took ",
            "/db2: prioritize took ",
            "/db2: bind took ",
            "node4 │ extender http://127.0.0.1:",
            "NodeResourcesFit 83, TaintToleration 300, extender http://127.0.0.1:",
            "scenario: stopped the extender",
            '/late1: Post "http://127.0.0.1:',
            "connect: connection refused",
            "scenario: late1 needs the extender, which is gone: it waits",
        ],
    ),
    16: (
        # trio: two pods wait at PreFilter; the third makes three, and all bind. trio-c and
        # trio-b each tie on the two nodes (seed 1 picks node2); trio-a gets the one left.
        # giant: one pod fits, waits, and is rejected when a sibling fits nowhere.
        lambda b: (
            b
            == {
                "trio-a": "node1",
                "trio-b": "node2",
                "trio-c": "node2",
                "giant-a": None,
                "giant-b": None,
                "giant-c": None,
            }
        ),
        [
            "0/2 nodes are available: 2 pre-filter pod trio-a cannot find enough sibling pods, "
            "current pods number: 1, minMember of group: 3.",
            "pre-filter pod trio-b cannot find enough sibling pods, current pods number: 2,",
            "/trio-c: on node2, Permit by Coscheduling",
            "/trio-a: -> activeQ (ForceActivate)",
            "/trio-b: -> activeQ (ForceActivate)",
            "scenario: trio-c arrived, and the three bound together",
            "optimistic rejection in PostFilter",
            "scenario: giant fits one pod, not three: Coscheduling rejected it; none bound",
        ],
    ),
    17: (
        # The WebAssembly guest scores the node of the pod's digit 10, the others 0; web has no
        # digit, every node ties, and seed 1 picks node2 among the seven left empty.
        lambda b: b == {"pod8": "node8", "pod3": "node3", "pod5": "node5", "web": "node2"},
        [
            "TaintToleration 300, wasm 10 <- selected",
            "TaintToleration 300, wasm 0",
            "score 507 (NodeAffinity 0, NodeResourcesBalancedAllocation 100, NodeResourcesFit 97, "
            "TaintToleration 300, wasm 10)",
            "7 nodes tied, picked at random",
        ],
    ),
    # Step 18 tells step 17's story: every pod where step 17 put it, with the same scores.
    18: (
        lambda b: b == {"pod8": "node8", "pod3": "node3", "pod5": "node5", "web": "node2"},
        [
            "TaintToleration 300, wasm 10 <- selected",
            "score 507 (NodeAffinity 0, NodeResourcesBalancedAllocation 100, NodeResourcesFit 97, "
            "TaintToleration 300, wasm 10)",
            "7 nodes tied, picked at random",
        ],
    ),
}


# step -> lines that must print in this order: a scenario's action before what it caused.
ORDER: dict[int, list[str]] = {
    1: ["scenario: created pod pod1", "/pod1: -> FIFO (PodAdd)"],
    7: [
        "scenario: created pod pod8",
        "/pod8: -> activeQ (PodAdd)",
        "scenario: created node node5",
        "/pod1: -> podBackoffQ (NodeAdd)",
        "/pod8: -> podBackoffQ (NodeAdd)",
        "scenario: created node node6",
    ],
    8: ["scenario: created node node5", "/pod1: -> podBackoffQ (NodeAdd)"],
    10: [
        "scenario: batch fits on no node",
        "scenario: deleted pod db",
        "/batch: -> podBackoffQ (AssignedPodDelete)",
        "bound    minisched-resources-",
    ],
    11: [
        "scenario: created pod payments",
        "/payments: picked north",
        "preempted minisched-preemption-",
        "/payments -> north (status.nominatedNodeName)",
        "bound    minisched-preemption-",
        "scenario: batch-c was preempted",
    ],
    16: [
        "scenario: trio-a and trio-b wait",
        "scenario: created pod trio-c",
        "/trio-c: on node2, Permit by Coscheduling",
        "/trio-a: -> activeQ (ForceActivate)",
        "bound    minisched-coscheduling-",
        "scenario: trio-c arrived",
        "scenario: created pod giant-c",
        "optimistic rejection in PostFilter",
        "scenario: giant fits one pod",
    ],
    12: [
        "/web: checked 120 of 200 nodes from index 0",
        "bound    minisched-sampling-",
        "/api: checked 100 of 200 nodes from index 120",
        "/batch: checked 200 of 200 nodes from index 20",
        "/cache: checked 120 of 200 nodes from index 20",
    ],
}

# The steps whose story ends with a line of the scenario's own: nothing prints after it (the
# cleanup's deletions move the pods, silently) until the summary tables.
LAST_LINE = {
    6: "scenario: pod1 is pending in unschedulableQ",
    7: "scenario: pod1 and pod8 still pending",
    8: "scenario: every pod is bound",
    12: "scenario: batch fits node-170x alone",
    13: "scenario: stray wants gpu's label but not its taint",
    14: "scenario: stranger asks for another-scheduler",
    15: "scenario: late1 needs the extender, which is gone",
}


def run(step: int) -> tuple[dict[str, str | None], str]:
    out = io.StringIO()
    report = Report(Console(file=out, width=200, force_terminal=False), live=False)
    result = runner.run_step(step, seed=SEED, report=report)
    return result.bindings, out.getvalue()


@pytest.mark.parametrize("step", built_steps(1), ids=lambda n: f"step{n}")
def test_scenario(step: int) -> None:
    check, lines = EXPECTED[step]
    bindings, output = run(step)
    assert check(bindings), bindings
    for line in lines:
        assert line in output, output
    for pod, node in bindings.items():
        if node:
            assert f"{pod}" in output and node in output
    at = 0
    for line in ORDER.get(step, []):
        found = output.find(line, at)
        assert found >= 0, f"{line!r} missing or out of order:\n{output}"
        at = found
    if step in LAST_LINE:
        story = output.split(f"Step {step}: where each pod went")[0].splitlines()
        assert story[-1].startswith(LAST_LINE[step]), output


# --- waiting for the scheduler's informers -----------------------------------------------------


def test_a_created_node_is_waited_for_at_its_status_write_not_at_its_create(
    api_client: client.ApiClient,
) -> None:
    """create_node writes the Node, then its status: the scheduler must have seen the second
    write. Seeing the first was not enough: a pod created then met a node with no allocatable
    (step 11's api went on to preempt east's pods, once in a few loaded runs)."""
    asked: list[tuple[str, list[str], dict[str, str]]] = []

    def wait_for_cache(kind: str, names: list[str], present: bool = True, **kw: Any) -> bool:
        asked.append((kind, list(names), dict(kw.get("versions") or {})))
        return True

    with Scenario(api_client, "cache-versions", wait_for_cache=wait_for_cache, say=str) as s:
        created = s.create_node("cache-versions-n", cpu="2")
        s.scheduler_has_seen("node", ["cache-versions-n"])
        now = client.CoreV1Api(api_client).read_node("cache-versions-n")
        assert now.metadata.resource_version != created.metadata.resource_version
        assert asked == [
            ("node", ["cache-versions-n"], {"cache-versions-n": now.metadata.resource_version})
        ]


def test_the_cache_probe_waits_for_the_version_written() -> None:
    store: Store[client.V1Node] = Store()
    scheduler = SimpleNamespace(node_informer=SimpleNamespace(store=store))
    wait = runner._cache_probe(scheduler, SimpleNamespace(server=None), timeout=0.2)

    def node_at(rv: str) -> client.V1Node:
        return client.V1Node(metadata=client.V1ObjectMeta(name="n", resource_version=rv))

    store._set("n", node_at("5"))  # the Add, before the status write at 6
    assert wait("node", ["n"])  # by name only: seen
    assert not wait("node", ["n"], versions={"n": "6"})
    store._set("n", node_at("6"))
    assert wait("node", ["n"], versions={"n": "6"})
    store._set("n", node_at("7"))  # a later write (a node controller's) is as good
    assert wait("node", ["n"], versions={"n": "6"})
    assert runner.version_reached("x", "x") and not runner.version_reached("x", "y")
