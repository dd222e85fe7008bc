"""Step 5: the cluster and pods of step 3, and now Permit holds each pod before binding.

NodeNumber's Permit makes a pod wait as many seconds as its node's digit (with a 10 s
timeout) before the binding cycle may bind it. The binding cycle runs in a thread of its own,
so the scheduler goes on with the next pod meanwhile. pod8 goes to node8 (NodeNumber 100
after normalization) and waits 8 s; pod1 ties on node5..node9 and, with seed 1, goes to node8
too, and waits 8 s as well. The report shows both pods waiting on Permit, then bound.

Run: ``nox -s step5``, or ``nox -s step5 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step5.py [ARGS]`` does the same.
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
    # Each bind waits up to 9 s on Permit: leave room.
    return s.wait_for_bindings(timeout=max(s.timeout, 20.0))


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["5", *sys.argv[1:]]))
