"""Step 6: every node is cordoned, so pod1 cannot be scheduled, and now it is not lost.

NodeUnschedulable rejects pod1 on node0..node9. The error func puts it back in the scheduling
queue with the plugin that rejected it: it waits in unschedulableQ for a cluster event that
NodeUnschedulable registered (a node added, a node uncordoned). This scheduler has no event
handlers yet, so nothing moves it: pod1 stays pending, and the report shows where it waits.

Run: ``nox -s step6``, or ``nox -s step6 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step6.py [ARGS]`` does the same.
"""

from __future__ import annotations

from typing import Any

from minisched.scenario import Scenario


def unschedulable(pod: Any) -> bool:
    """Whether the scheduler has marked the pod PodScheduled=False (it tried and failed)."""
    conditions = (pod.status and pod.status.conditions) or []
    return any(c.type == "PodScheduled" and c.status == "False" for c in conditions)


def run(s: Scenario) -> dict[str, str | None]:
    nodes = [f"node{i}" for i in range(10)]
    for name in nodes:
        s.create_node(name, unschedulable=True)
    s.scheduler_has_seen("node", nodes)
    s.create_pod("pod1")
    # The scheduler re-queues the pod before it marks it PodScheduled=False: once the mark is
    # there, pod1 is waiting in unschedulableQ.
    pods = s.wait_for(lambda pods: "pod1" in pods and unschedulable(pods["pod1"]))
    if "pod1" in pods and unschedulable(pods["pod1"]):
        s.say(
            "scenario: pod1 is pending in unschedulableQ, rejected by NodeUnschedulable; "
            "no event handler moves it back until step 7"
        )
    return s.bindings()


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["6", *sys.argv[1:]]))
