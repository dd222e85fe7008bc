"""Step 8: the story of step 7 again, and now it ends with every pod bound.

node0..node4 are cordoned, so pod1 and pod8 fail and wait in unschedulableQ. node5..node9
arrive one at a time; node5's NodeAdd event moves both pods to podBackoffQ, as in step 7,
because their 1 s backoff has not run out. The queue's background loop now flushes
podBackoffQ every second: once the backoff is over, the pods go back to activeQ
(BackoffComplete), are scheduled onto the new nodes and bound after NodeNumber's Permit wait.
The v1.23 periods are kept (1 s for podBackoffQ; 30 s and 60 s for unschedulableQ leftovers,
which this story does not need).

Run: ``nox -s step8``, or ``nox -s step8 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step8.py [ARGS]`` does the same.
"""

from __future__ import annotations

from typing import Any

from minisched.scenario import Scenario


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
    # Up to 2 s of backoff and flush, then up to 9 s on Permit: leave room.
    bindings = s.wait_for_bindings(timeout=max(s.timeout, 25.0))
    if all(bindings.values()):
        s.say(
            "scenario: every pod is bound: the backoff flush (every 1 s) took them out of "
            "podBackoffQ, where step 7 left them"
        )
    return bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["8", *sys.argv[1:]]))
