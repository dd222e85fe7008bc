"""Step 15: an extender, a scheduler you extend over HTTP, and what each call costs.

The run starts the sample extender (``minisched/sample_extender.py``) on a free port and
configures it as the one extender (``CONFIG`` below, ``{extender}`` its URL): filter, prioritize
and bind, weight 5, for the pods that ask for ``example.com/fast-disk`` only
(``managedResources``; ``ignoredByScheduler``: NodeResourcesFit leaves that resource to the
extender).

Four nodes: node1 (2 CPU), node2 (6 CPU), node3 (8 CPU) and node4 (16 CPU, labelled
``example.com/maintenance=true``). The pods, each bound before the next is created:

- web (1 CPU) does not ask for fast-disk: the extender is not called; node4, the emptiest,
  wins on NodeResourcesFit.
- db2 asks for fast-disk: the extender filters node4 out (maintenance: FailedAndUnresolvable),
  and prioritizes node2, the node of db2's digit: 10 x weight 5, scaled by 10, is 500, more than
  any plugin difference. The extender binds it (bindVerb): no Bind plugin runs.
- cache3 goes to node3 the same way.
- batch asks for fast-disk; its name has no digit, so the extender scores every node 0 and the
  plugins choose among node1..node3: node3 has the most room.
- The scenario stops the extender; late1 asks for fast-disk: the filter call fails, the
  extender is not ignorable, and the pod waits with the error kube-scheduler gives (the
  connection refused).

The report prints each extender call with its duration, the scheduler's own timing.

Run: ``nox -s step15``, or ``nox -s step15 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step15.py [ARGS]`` does the same.
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
- schedulerName: minisched
extenders:
- urlPrefix: "{extender}"
  filterVerb: filter
  prioritizeVerb: prioritize
  bindVerb: bind
  weight: 5
  managedResources:
  - name: example.com/fast-disk
    ignoredByScheduler: true
"""

FAST_DISK = "example.com/fast-disk"
MAINTENANCE_LABEL = "example.com/maintenance"

# Node -> its CPU, in the order they are created; each has 4Gi of memory per CPU.
NODES = {
    "node1": 2,
    "node2": 6,
    "node3": 8,
    "node4": 16,
}

# Pod -> whether it asks for the extender's resource, in the order they are created.
PODS = {
    "web": False,
    "db2": True,
    "cache3": True,
    "batch": True,
}


def create_pod(s: Scenario, name: str, fast_disk: bool) -> None:
    requests = {"cpu": "1", "memory": "4Gi"} | ({FAST_DISK: "1"} if fast_disk else {})
    # An extended resource cannot be overcommitted: the API server wants its limit, equal to
    # its request.
    limits = {FAST_DISK: "1"} if fast_disk else None
    s.create_pod(name, requests=requests, limits=limits)


def unschedulable(pod: Any) -> bool:
    """Whether the scheduler has marked the pod PodScheduled=False (it tried and failed)."""
    conditions = (pod.status and pod.status.conditions) or []
    return any(c.type == "PodScheduled" and c.status == "False" for c in conditions)


def run(s: Scenario) -> dict[str, str | None]:
    for name, cpu in NODES.items():
        labels = {MAINTENANCE_LABEL: "true"} if name == "node4" else None
        s.create_node(name, cpu=str(cpu), memory=f"{4 * cpu}Gi", labels=labels)
    s.scheduler_has_seen("node", list(NODES))
    bindings: dict[str, str | None] = {}
    for name, fast_disk in PODS.items():
        create_pod(s, name, fast_disk)
        bindings |= s.wait_for_bindings([name])
    if s.extender is not None:
        s.extender.shutdown()
        s.extender.server_close()
        s.say("scenario: stopped the extender")
        create_pod(s, "late1", True)
        seen = s.wait_for(lambda pods: "late1" in pods and unschedulable(pods["late1"]))
        if "late1" in seen and unschedulable(seen["late1"]):
            s.say("scenario: late1 needs the extender, which is gone: it waits")
        bindings["late1"] = None
    return bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["15", *sys.argv[1:]]))
