"""Step 4: node0..node4 are cordoned, node5..node9 are not; pods pod8 and pod1.

The same cluster, pods and result as step 3. What changed is inside NodeNumber: PreScore
parses the pod's digit once per cycle and leaves it in the CycleState, and Score reads it
from there for each node. Scores are shown after normalization: pod8 -> node8 with NodeNumber
100; pod1 ties on node5..node9 at 0 and, with seed 1, goes to node8.

Run: ``nox -s step4``, or ``nox -s step4 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step4.py [ARGS]`` does the same.
"""

from __future__ import annotations

from minisched.scenario import Scenario


def run(s: Scenario) -> dict[str, str | None]:
    nodes = [f"node{i}" for i in range(10)]
    for i, name in enumerate(nodes):
        s.create_node(name, unschedulable=i < 5)
    s.scheduler_has_seen("node", nodes)
    s.create_pod("pod8")
    s.create_pod("pod1")
    return s.wait_for_bindings()


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["4", *sys.argv[1:]]))
