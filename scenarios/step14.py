"""Step 14: one scheduler, two profiles: the same pods spread by one and packed by the other.

The run's configuration is ``CONFIG`` below, the file kube-scheduler would read: two profiles,
each a schedulerName with its own framework, sharing one queue.

- ``minisched-spread`` keeps every default: NodeResourcesFit scores LeastAllocated, the
  emptiest node first.
- ``minisched-pack`` gives NodeResourcesFit ``scoringStrategy: MostAllocated``: the fullest
  node that still fits, so that whole nodes stay free.

Three nodes: small (4 CPU, 16Gi), medium (6 CPU, 24Gi), large (8 CPU, 32Gi). Six identical
pods (1 CPU, 4Gi), created one at a time and each bound before the next, alternating between
the profiles by their ``schedulerName``:

- pack-a goes to small (25 % full after it, medium 16 %, large 12 %); spread-a to large, the
  emptiest;
- pack-b and pack-c join pack-a on small; spread-b goes to medium (83 % free after it, large
  75 %), spread-c to large.

A seventh pod asks for ``schedulerName: another-scheduler``: no profile has that name, so
minisched leaves it alone, as kube-scheduler leaves the pods of other schedulers.

Every pod asks for 4Gi per CPU, as every node has: NodeResourcesBalancedAllocation scores all
nodes alike, and NodeResourcesFit alone decides.

Run: ``nox -s step14``, or ``nox -s step14 -- --seed N --kubeconfig PATH``. With your own
file, ``nox -s step14 -- --config FILE``: name its profiles minisched-spread and
minisched-pack, or the scenario's pods wait for a scheduler that is not there.
``nox -s step14 -- --write-config-to -`` prints CONFIG with every default filled in.
"""

from __future__ import annotations

from typing import Any

from minisched.scenario import Scenario

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1beta3
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: minisched-spread
- schedulerName: minisched-pack
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""

SPREAD = "minisched-spread"
PACK = "minisched-pack"

# Node -> its CPU; each has 4Gi of memory per CPU.
NODES = {
    "small": 4,
    "medium": 6,
    "large": 8,
}

# Pod -> the profile that schedules it, in the order they are created.
PODS = {
    "pack-a": PACK,
    "spread-a": SPREAD,
    "pack-b": PACK,
    "spread-b": SPREAD,
    "pack-c": PACK,
    "spread-c": SPREAD,
}

STRANGER = "another-scheduler"


def never_tried(pod: Any) -> bool:
    """No scheduler has written a PodScheduled condition on the pod."""
    conditions = (pod.status and pod.status.conditions) or []
    return not any(c.type == "PodScheduled" for c in conditions)


def run(s: Scenario) -> dict[str, str | None]:
    for name, cpu in NODES.items():
        s.create_node(name, cpu=str(cpu), memory=f"{4 * cpu}Gi")
    s.scheduler_has_seen("node", list(NODES))
    s.create_pod("stranger", requests={"cpu": "1", "memory": "4Gi"}, scheduler_name=STRANGER)
    bindings: dict[str, str | None] = {}
    for name, profile in PODS.items():
        s.create_pod(name, requests={"cpu": "1", "memory": "4Gi"}, scheduler_name=profile)
        bindings |= s.wait_for_bindings([name])
    packed = {bindings[p] for p, profile in PODS.items() if profile == PACK}
    spread = {bindings[p] for p, profile in PODS.items() if profile == SPREAD}
    if len(packed) == 1 and len(spread) > 1:
        s.say(f"scenario: {PACK} packed its pods on one node; {SPREAD} spread them")
    stranger = s.wait_for(lambda pods: "stranger" in pods, timeout=1)
    if "stranger" in stranger and never_tried(stranger["stranger"]):
        s.say(f"scenario: stranger asks for {STRANGER}: no profile has it, so nobody tried it")
    return {"stranger": None} | bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["14", *sys.argv[1:]]))
