"""Step 13: each pod says where it may go (nodeSelector, node affinity, tolerations).

Four nodes; no name ends in a digit, so NodeNumber neither scores nor waits:

- gpu (8 CPU, 32Gi): labels accelerator=nvidia, disk=ssd, zone=a; tainted
  ``dedicated=ml:NoSchedule``: reserved for the pods that tolerate it;
- ssd (8 CPU, 16Gi): disk=ssd, zone=a;
- hdd (4 CPU, 8Gi): disk=hdd, zone=b;
- spot (8 CPU, 16Gi): disk=hdd, zone=b; tainted ``spot=true:PreferNoSchedule``: pods that do
  not tolerate it go there only when nothing else will do.

The pods, each bound before the next is created; every score is the default profile's
weighted sum (TaintToleration x3, NodeAffinity x2, NodeResourcesFit and BalancedAllocation
x1):

- trainer (2 CPU) tolerates ``dedicated=ml:NoSchedule`` and asks for ``nodeSelector:
  {accelerator: nvidia}``: only gpu has the label (NodeAffinity's Filter). The toleration lets
  it on gpu; the nodeSelector takes it there.
- web (1 CPU) asks for nothing: gpu's taint keeps it off (TaintToleration's Filter); spot
  scores 0 of TaintToleration's 100 for its PreferNoSchedule taint; ssd and hdd are left, and
  ssd has the most room (NodeResourcesFit): ssd.
- db (2 CPU) has ``nodeSelector: {disk: hdd}``: hdd or spot; spot's taint costs it 300: hdd.
- batch (2 CPU) requires ``zone In (b)`` (required node affinity) and tolerates spot's taint:
  hdd or spot, TaintToleration no longer tells them apart; spot has more room: spot.
- report (1 CPU) prefers ``disk In (ssd)`` with weight 50 (preferred node affinity): ssd gets
  NodeAffinity's 100, times its weight 2: ssd.
- stray (1 CPU) asks for the gpu label but does not tolerate the taint: gpu fails
  TaintToleration, the three others NodeAffinity; both reasons are UnschedulableAndUnresolvable,
  so preemption cannot help and the pod waits, with the FitError that says why.

Run: ``nox -s step13``, or ``nox -s step13 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step13.py [ARGS]`` does the same.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from minisched.scenario import Scenario

GPU_TAINT = client.V1Taint(key="dedicated", value="ml", effect="NoSchedule")
SPOT_TAINT = client.V1Taint(key="spot", value="true", effect="PreferNoSchedule")

# Node -> how it is created (Scenario.create_node's keywords).
NODES: dict[str, dict[str, Any]] = {
    "gpu": {
        "cpu": "8",
        "memory": "32Gi",
        "labels": {"accelerator": "nvidia", "disk": "ssd", "zone": "a"},
        "taints": [GPU_TAINT],
    },
    "ssd": {
        "cpu": "8",
        "memory": "16Gi",
        "labels": {"disk": "ssd", "zone": "a"},
    },
    "hdd": {
        "cpu": "4",
        "memory": "8Gi",
        "labels": {"disk": "hdd", "zone": "b"},
    },
    "spot": {
        "cpu": "8",
        "memory": "16Gi",
        "labels": {"disk": "hdd", "zone": "b"},
        "taints": [SPOT_TAINT],
    },
}


def tolerate(taint: client.V1Taint) -> client.V1Toleration:
    return client.V1Toleration(
        key=taint.key, operator="Equal", value=taint.value, effect=taint.effect
    )


def node_affinity(
    required: client.V1NodeSelectorRequirement | None = None,
    preferred: tuple[int, client.V1NodeSelectorRequirement] | None = None,
) -> client.V1Affinity:
    """A pod's node affinity: one required term, or one preferred term and its weight."""
    na = client.V1NodeAffinity()
    if required is not None:
        na.required_during_scheduling_ignored_during_execution = client.V1NodeSelector(
            node_selector_terms=[client.V1NodeSelectorTerm(match_expressions=[required])]
        )
    if preferred is not None:
        weight, expression = preferred
        na.preferred_during_scheduling_ignored_during_execution = [
            client.V1PreferredSchedulingTerm(
                weight=weight,
                preference=client.V1NodeSelectorTerm(match_expressions=[expression]),
            )
        ]
    return client.V1Affinity(node_affinity=na)


# Pod -> its CPU request and constraints (Scenario.create_pod's keywords), in the order they
# are created; each asks for twice its CPU in Gi of memory.
PODS: dict[str, dict[str, Any]] = {
    "trainer": {
        "cpu": "2",
        "tolerations": [tolerate(GPU_TAINT)],
        "node_selector": {"accelerator": "nvidia"},
    },
    "web": {
        "cpu": "1",
    },
    "db": {
        "cpu": "2",
        "node_selector": {"disk": "hdd"},
    },
    "batch": {
        "cpu": "2",
        "tolerations": [tolerate(SPOT_TAINT)],
        "affinity": node_affinity(
            required=client.V1NodeSelectorRequirement(key="zone", operator="In", values=["b"])
        ),
    },
    "report": {
        "cpu": "1",
        "affinity": node_affinity(
            preferred=(
                50,
                client.V1NodeSelectorRequirement(key="disk", operator="In", values=["ssd"]),
            )
        ),
    },
}

# Asks for gpu's label without tolerating its taint: it fits nowhere.
STRAY: dict[str, Any] = {
    "cpu": "1",
    "node_selector": {"accelerator": "nvidia"},
}


def create_pod(s: Scenario, name: str, spec: dict[str, Any]) -> None:
    options = dict(spec)
    cpu = options.pop("cpu")
    s.create_pod(name, requests={"cpu": cpu, "memory": f"{2 * int(cpu)}Gi"}, **options)


def unschedulable(pod: Any) -> bool:
    """Whether the scheduler has marked the pod PodScheduled=False (it tried and failed)."""
    conditions = (pod.status and pod.status.conditions) or []
    return any(c.type == "PodScheduled" and c.status == "False" for c in conditions)


def run(s: Scenario) -> dict[str, str | None]:
    for name, options in NODES.items():
        s.create_node(name, **options)
    s.scheduler_has_seen("node", list(NODES))
    # One after the other, each bound before the next: every cycle sees the pods before it.
    bindings: dict[str, str | None] = {}
    for name, spec in PODS.items():
        create_pod(s, name, spec)
        bindings |= s.wait_for_bindings([name])
    create_pod(s, "stray", STRAY)
    seen = s.wait_for(lambda pods: "stray" in pods and unschedulable(pods["stray"]))
    if "stray" in seen and unschedulable(seen["stray"]):
        s.say("scenario: stray wants gpu's label but not its taint: it fits no node")
    return bindings | {"stray": None}


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["13", *sys.argv[1:]]))
