"""Step 7: pods first, then nodes: a node-add event moves the waiting pods, into podBackoffQ.

node0..node4 are cordoned, so pod1 and pod8 fail and wait in unschedulableQ, rejected by
NodeUnschedulable. Then node5..node9 arrive one at a time. NodeUnschedulable registered Node
Add, so node5's NodeAdd event moves both pods out of unschedulableQ, but they failed a moment
ago and their 1 s backoff has not run out: they go to podBackoffQ. Nothing takes pods out of
podBackoffQ in this step, so although five nodes are free, both stay pending.

Run: ``nox -s step7``, or ``nox -s step7 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step7.py [ARGS]`` does the same.
"""

from __future__ import annotations

from typing import Any

from minisched.scenario import Scenario

# Longer than any backoff the pods have (1 s): had anything flushed podBackoffQ, they would be
# bound by then.
WATCH_FOR = 4.0


def unschedulable(pod: Any) -> bool:
    """Whether the scheduler has marked the pod PodScheduled=False (it tried and failed)."""
    conditions = (pod.status and pod.status.conditions) or []
    return any(c.type == "PodScheduled" and c.status == "False" for c in conditions)


def run(s: Scenario) -> dict[str, str | None]:
    cordoned = [f"node{i}" for i in range(5)]
    for name in cordoned:
        s.create_node(name, unschedulable=True)
    s.scheduler_has_seen("node", cordoned)
    pods = ["pod1", "pod8"]
    for name in pods:
        s.create_pod(name)
    # Both are back in the queue (unschedulableQ) once the scheduler has marked them.
    s.wait_for(lambda seen: all(n in seen and unschedulable(seen[n]) for n in pods))
    for i in range(5, 10):
        s.create_node(f"node{i}")
        s.scheduler_has_seen("node", [f"node{i}"])
    bindings = s.wait_for_bindings(timeout=WATCH_FOR)
    pending = [name for name, node in bindings.items() if node is None]
    if pending:
        s.say(
            f"scenario: {' and '.join(pending)} still pending {WATCH_FOR:g} s after node9: "
            "node5's NodeAdd moved them while they were backing off, so they stay in "
            "podBackoffQ: nothing flushes it until step 8"
        )
    return bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["7", *sys.argv[1:]]))
