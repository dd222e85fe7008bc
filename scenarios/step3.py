"""Step 3: node0..node4 are cordoned, node5..node9 are not; pods pod8 and pod1.

NodeNumber scores a node 10 when its name ends in the pod's digit, and its NormalizeScore
scales the best score to 100; the report shows scores after normalization. So pod8 goes to
node8 (NodeNumber 100, every other node 0). No node ends in 1, so all five nodes tie for pod1
at 0 and select_host picks one at random (seeded): with seed 1 that is node8 as well.

Run: ``nox -s step3``, or ``nox -s step3 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step3.py [ARGS]`` does the same.
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

    sys.exit(main(["3", *sys.argv[1:]]))
