"""Step 12: 200 nodes, and each cycle filters only until 100 of them fit.

200 nodes, ``node-000x`` .. ``node-199x``, created in that order: 4 CPU each, except node-030x
(8 CPU), node-100x (6 CPU) and node-170x (16 CPU, the emptiest node of all); node-050x ..
node-069x are cordoned. The names end in a letter, so NodeNumber neither scores nor makes a pod
wait: NodeResourcesFit's LeastAllocated decides among the nodes Filter found.

With the default percentageOfNodesToScore (0, adaptive), a cycle over 200 nodes looks for
max(100, 200 x 49 %) = 100 feasible nodes, starting where the cycle before it stopped:

- web (1 CPU) starts at index 0: 120 nodes checked (20 cordoned), 100 found by node-119x;
  node-030x is the best of those: web goes there, though node-170x would score higher.
- api (1 CPU) starts at 120: node-120x .. node-199x, then node-000x .. node-019x; node-170x is
  among them: api goes there.
- batch (12 CPU) starts at 20: only node-170x has 12 CPU left, so no cycle stops early: every
  node is checked, one is found, and the index comes back to 20.
- cache (1 CPU) starts at 20 again: node-020x .. node-139x; node-100x is the emptiest there.

``nox -s step12 -- --percentage-of-nodes-to-score 100`` filters every node, as step 11 did:
web goes to node-170x.

Run: ``nox -s step12``, or ``nox -s step12 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step12.py [ARGS]`` does the same.
"""

from __future__ import annotations

from typing import Any

from minisched.scenario import Scenario

NUM_NODES = 200
CORDONED = range(50, 70)
# Node index -> its CPU, where it is not 4.
BIGGER = {
    30: "8",
    100: "6",
    170: "16",
}

# Pod -> its CPU request, in the order they are created; each asks for 1Gi of memory too.
PODS = {
    "web": "1",
    "api": "1",
    "batch": "12",
    "cache": "1",
}


def node_name(i: int) -> str:
    return f"node-{i:03d}x"


def nodes() -> list[tuple[str, dict[str, Any]]]:
    """Each node's name and shape, in the order they are created (the cache's order)."""
    return [
        (node_name(i), {"cpu": BIGGER.get(i, "4"), "unschedulable": i in CORDONED})
        for i in range(NUM_NODES)
    ]


def run(s: Scenario) -> dict[str, str | None]:
    s.create_nodes(
        nodes(),
        f"scenario: created {NUM_NODES} nodes {node_name(0)}..{node_name(NUM_NODES - 1)}: 4 CPU "
        f"each but {node_name(30)} 8, {node_name(100)} 6 and {node_name(170)} 16; "
        f"{node_name(CORDONED[0])}..{node_name(CORDONED[-1])} cordoned",
    )
    # One after the other, each bound before the next: each cycle starts where the last ended.
    bindings: dict[str, str | None] = {}
    for name, cpu in PODS.items():
        s.create_pod(name, requests={"cpu": cpu, "memory": "1Gi"})
        bindings |= s.wait_for_bindings([name])
    if bindings["web"] != node_name(170):
        s.say(f"scenario: web never saw {node_name(170)}: Filter stopped at 100 feasible nodes")
    if bindings["batch"] == node_name(170):
        s.say(f"scenario: batch fits {node_name(170)} alone, and Filter checked every node")
    return bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["12", *sys.argv[1:]]))
