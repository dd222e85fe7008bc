"""Step 10: pods go where their requests fit; one fits nowhere until a pod is deleted.

Three nodes of different sizes: small (1 CPU), medium (2 CPU), large (3 CPU), 4Gi each. Every
pod asks for 1Gi of memory and some CPU. No name ends in a digit, so NodeNumber neither scores
nor waits: NodeResourcesFit alone decides, with LeastAllocated.

- db asks for 2 CPU: small lacks it ("Insufficient cpu"); large keeps the most free: large.
- api asks for 1 CPU: medium keeps the most free (half its CPU): medium.
- web asks for 1 CPU: only small still has a whole CPU left with most memory: small.
- batch asks for 2 CPU: no node has 2 CPU left, ``0/3 nodes are available: 3 Insufficient
  cpu.``; it waits in unschedulableQ.
- db is deleted: NodeResourcesFit registered Pod Delete, so batch moves to the queue, and
  large, 3 CPU free again, is the one node it fits.

Run: ``nox -s step10``, or ``nox -s step10 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step10.py [ARGS]`` does the same.
"""

from __future__ import annotations

from typing import Any

from minisched.scenario import Scenario

NODES = {
    "small": "1",
    "medium": "2",
    "large": "3",
}

# Pod -> its CPU request; each asks for 1Gi of memory too.
PODS = {
    "db": "2",
    "api": "1",
    "web": "1",
}


def unschedulable(pod: Any) -> bool:
    """Whether the scheduler has marked the pod PodScheduled=False (it tried and failed)."""
    conditions = (pod.status and pod.status.conditions) or []
    return any(c.type == "PodScheduled" and c.status == "False" for c in conditions)


def run(s: Scenario) -> dict[str, str | None]:
    for name, cpu in NODES.items():
        s.create_node(name, cpu=cpu, memory="4Gi")
    s.scheduler_has_seen("node", list(NODES))
    # One after the other, each bound before the next: every cycle sees the pods before it.
    placed: dict[str, str | None] = {}
    for name, cpu in PODS.items():
        s.create_pod(name, requests={"cpu": cpu, "memory": "1Gi"})
        placed |= s.wait_for_bindings([name])
    s.create_pod("batch", requests={"cpu": "2", "memory": "1Gi"})
    seen = s.wait_for(lambda pods: "batch" in pods and unschedulable(pods["batch"]))
    if "batch" in seen and unschedulable(seen["batch"]):
        s.say("scenario: batch fits on no node; it waits until a pod leaves")
    s.delete_pod("db")
    bindings = s.wait_for_bindings(["batch"])
    if bindings["batch"] == "large":
        s.say("scenario: db's deletion freed 2 CPU on large; batch went there")
    return {name: node for name, node in placed.items() if name != "db"} | bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["10", *sys.argv[1:]]))
