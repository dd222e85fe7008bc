"""Step 11: a high-priority pod that fits nowhere preempts a lower-priority one.

Four PriorityClasses: low (100), standard (200), important (500), urgent (1000). The cluster
fills up node by node, each pod bound before the next is created (no name ends in a digit,
so NodeNumber neither scores nor waits):

- east (2 CPU): batch-a and batch-b, low, 1 CPU each;
- west (2 CPU): api, important, 2 CPU;
- north (3 CPU): web, standard, 1 CPU; batch-c, low, 2 CPU;
- south (2 CPU): ledger, urgent, 2 CPU;
- spare (2 CPU): cordoned.

Then payments (urgent, 2 CPU) fits no node. DefaultPreemption dry-runs the four nodes where
evicting pods might help (spare is cordoned: UnschedulableAndUnresolvable):

- east: evict batch-a and batch-b; west: evict api; south: nothing of lower priority
  (ledger is urgent too), no candidate;
- north: evict batch-c only: with the lower-priority pods gone, web (the more important
  one) is put back first, and payments still fits.

east and north both have a lowest-priority victim (low); north's victims sum to less: north.
batch-c is deleted gracefully; the scenario's fake kubelet (``Scenario.start_kubelet``)
finishes its deletion, as a kubelet would; that Pod Delete moves payments, which is bound to
its nominated node, north.

On a real cluster, the victims can only be pods bound to the scenario's nodes (the runner's
scheduler sees no other node). Each node is tainted ``minisched.io/scenario=preemption:
NoSchedule``, which the scenario's pods tolerate, so the default scheduler puts no pod of the
cluster's there; and before payments is created, the scenario checks that no pod of another
namespace with a priority below urgent runs on its nodes (a DaemonSet's that tolerates every
taint could), and stops if one does.

Run: ``nox -s step11``, or ``nox -s step11 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step11.py [ARGS]`` does the same.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from minisched.scenario import SCENARIO_LABEL, Scenario

PRIORITY_CLASSES = {
    "low": 100,
    "standard": 200,
    "important": 500,
    "urgent": 1000,
}

# Node -> its CPU, and the pods that fill it: name -> (priority class, CPU). Each node and its
# pods are created before the next node, so each pod has one node it fits.
NODES: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {
    "east": ("2", {"batch-a": ("low", "1"), "batch-b": ("low", "1")}),
    "west": ("2", {"api": ("important", "2")}),
    "north": ("3", {"web": ("standard", "1"), "batch-c": ("low", "2")}),
    "south": ("2", {"ledger": ("urgent", "2")}),
}
MEMORY = "512Mi"  # every pod's memory request: memory never decides here

# On every node, so that no other scheduler places a pod there; the scenario's pods tolerate it
# (minisched has no TaintToleration plugin: only its queue's pre-check for node events reads it).
TAINT = client.V1Taint(key=SCENARIO_LABEL, value="preemption", effect="NoSchedule")
TOLERATION = client.V1Toleration(key=SCENARIO_LABEL, operator="Exists", effect="NoSchedule")


def unschedulable(pod: Any) -> bool:
    """Whether the scheduler has marked the pod PodScheduled=False (it tried and failed)."""
    conditions = (pod.status and pod.status.conditions) or []
    return any(c.type == "PodScheduled" and c.status == "False" for c in conditions)


def foreign_pods_at_risk(s: Scenario, priority: int) -> list[str]:
    """The pods of other namespaces bound to this scenario's nodes with a priority below
    ``priority``: a preemptor of that priority could pick them as victims."""
    at_risk = []
    for node in s.nodes:
        selector = f"spec.nodeName={node}"
        for p in s.core.list_pod_for_all_namespaces(field_selector=selector).items:
            if p.metadata.namespace != s.namespace and (p.spec.priority or 0) < priority:
                at_risk.append(f"{p.metadata.namespace}/{p.metadata.name} on {node}")
    return at_risk


def run(s: Scenario) -> dict[str, str | None]:
    classes = {
        name: s.create_priority_class(name, value) for name, value in PRIORITY_CLASSES.items()
    }
    placed: dict[str, str | None] = {}
    for node, (cpu, pods) in NODES.items():
        s.create_node(node, cpu=cpu, memory="4Gi", taints=[TAINT])
        s.scheduler_has_seen("node", [node])
        for name, (priority, pod_cpu) in pods.items():
            s.create_pod(
                name,
                tolerations=[TOLERATION],
                priority_class_name=classes[priority],
                requests={"cpu": pod_cpu, "memory": MEMORY},
            )
            placed |= s.wait_for_bindings([name])
    s.create_node("spare", cpu="2", memory="4Gi", unschedulable=True, taints=[TAINT])
    s.scheduler_has_seen("node", ["spare"])
    others = foreign_pods_at_risk(s, PRIORITY_CLASSES["urgent"])
    if others:
        s.say(
            f"scenario: stopped: pods of others run on this scenario's nodes: {', '.join(others)}"
        )
        return placed
    s.say("scenario: every node is full; a fake kubelet now finishes graceful deletions")
    s.start_kubelet()

    s.create_pod(
        "payments",
        tolerations=[TOLERATION],
        priority_class_name=classes["urgent"],
        requests={"cpu": "2", "memory": MEMORY},
    )
    bindings = s.wait_for_bindings(["payments"])
    left = s.wait_for(lambda pods: "batch-c" not in pods)
    if "batch-c" not in left and bindings["payments"] == "north":
        s.say("scenario: batch-c was preempted; payments runs on north, its nominated node")
    return {name: node for name, node in placed.items() if name in left} | bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["11", *sys.argv[1:]]))
