"""Step 2: node0..node9 are cordoned (unschedulable), node10 is not.

pod1 can only go to node10: NodeUnschedulable filters out the ten others, and the report shows
why for each of them. pod-tolerant tolerates the ``node.kubernetes.io/unschedulable`` taint,
so every node passes the filters and it lands on a node chosen at random (seeded).

Run: ``nox -s step2``, or ``nox -s step2 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step2.py [ARGS]`` does the same.
"""

from __future__ import annotations

from kubernetes import client

from minisched.scenario import Scenario

TOLERATE_UNSCHEDULABLE = client.V1Toleration(
    key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"
)


def run(s: Scenario) -> dict[str, str | None]:
    nodes = [f"node{i}" for i in range(11)]
    for name in nodes:
        s.create_node(name, unschedulable=name != "node10")
    s.scheduler_has_seen("node", nodes)
    s.create_pod("pod1")
    s.create_pod("pod-tolerant", tolerations=[TOLERATE_UNSCHEDULABLE])
    return s.wait_for_bindings()


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["2", *sys.argv[1:]]))
