"""Step 16: Coscheduling, an out-of-tree plugin: a group of pods binds all or nothing.

The run applies ``manifests/podgroup-crd.yaml`` (the PodGroup custom resource of
scheduler-plugins v0.23.10) if the cluster lacks it, and configures the scheduler with
``CONFIG`` below: scheduler-plugins' own example profile for Coscheduling
(``manifests/coscheduling/scheduler-config.yaml`` at v0.23.10), its schedulerName minisched.

Two nodes, node1 and node2, 4 CPU and 16Gi each. Two PodGroups, ``minMember: 3`` each; a pod
joins one with the label ``pod-group.scheduling.sigs.k8s.io: <group>``:

- trio: trio-a and trio-b (1 CPU each) are created first. Each fails PreFilter, its group
  too small: ``pre-filter pod trio-a cannot find enough sibling pods, current pods number:
  1, minMember of group: 3``. They wait in unschedulableQ; no cluster event moves them.
- trio-c arrives: PreFilter passes, it gets a node and waits at Permit (assigned 0 + 1 < 3),
  and Permit asks for its siblings to be activated (PodsToActivate): they leave
  unschedulableQ; trio-a waits at Permit too; trio-b makes three: Permit allows them all, and
  the three bind together.
- giant: three pods of 3 CPU. After trio, one node has 3 CPU free and the other 2: one giant
  pod fits, gets a node and waits at Permit; the next fits nowhere, and Coscheduling's
  PostFilter rejects the waiting one ("optimistic rejection in PostFilter"), which gives
  its room back. No giant pod binds, and none keeps room it cannot use.

Every pod asks for 4Gi per CPU, as every node has.

Run: ``nox -s step16``, or ``nox -s step16 -- --seed N --kubeconfig PATH`` (the run creates
the CRD there if it is missing, and leaves it).
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from minisched.scenario import Scenario

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1beta2
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: minisched
  plugins:
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
    preFilter:
      enabled:
      - name: Coscheduling
    postFilter:
      enabled:
      - name: Coscheduling
    permit:
      enabled:
      - name: Coscheduling
    reserve:
      enabled:
      - name: Coscheduling
    postBind:
      enabled:
      - name: Coscheduling
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
      deniedPGExpirationTimeSeconds: 3
"""

# The custom resources the scenario uses: the runner applies them before the scheduler starts.
CRDS = ("manifests/podgroup-crd.yaml",)

GROUP, VERSION, PLURAL = "scheduling.sigs.k8s.io", "v1alpha1", "podgroups"
POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"

NODES = ("node1", "node2")
# Group -> its minMember and the CPU of each of its pods.
GROUPS = {
    "trio": (3, 1),
    "giant": (3, 3),
}


def create_pod_group(s: Scenario, name: str, min_member: int) -> None:
    objects = client.CustomObjectsApi(s.api_client)
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member},
    }
    objects.create_namespaced_custom_object(GROUP, VERSION, s.namespace, PLURAL, body)
    s.say(f"scenario: created PodGroup {name} (minMember {min_member})")


def create_member(s: Scenario, group: str, name: str) -> None:
    cpu = GROUPS[group][1]
    s.create_pod(
        name,
        requests={"cpu": str(cpu), "memory": f"{4 * cpu}Gi"},
        labels={POD_GROUP_LABEL: group},
    )


def failed_with(pod: Any, text: str) -> bool:
    """Whether the scheduler marked the pod PodScheduled=False with ``text`` in its message."""
    conditions = (pod.status and pod.status.conditions) or []
    return any(
        c.type == "PodScheduled" and c.status == "False" and text in (c.message or "")
        for c in conditions
    )


def run(s: Scenario) -> dict[str, str | None]:
    for name in NODES:
        s.create_node(name, cpu="4", memory="16Gi")
    s.scheduler_has_seen("node", list(NODES))
    for group, (min_member, _) in GROUPS.items():
        create_pod_group(s, group, min_member)

    # Two of three: each waits for the rest of its group.
    for name in ("trio-a", "trio-b"):
        create_member(s, "trio", name)
        s.wait_for(lambda pods, n=name: n in pods and failed_with(pods[n], "sibling pods"))
    s.say("scenario: trio-a and trio-b wait: their group has 2 of its 3 pods")
    # The third makes the group whole: all three bind.
    create_member(s, "trio", "trio-c")
    bindings = s.wait_for_bindings(["trio-a", "trio-b", "trio-c"])
    if all(bindings.values()):
        s.say("scenario: trio-c arrived, and the three bound together")

    # A group that cannot fit: one pod would, but the group would not.
    giants = ["giant-a", "giant-b", "giant-c"]
    for name in giants:
        create_member(s, "giant", name)
    seen = s.wait_for(
        lambda pods: any(failed_with(pods[n], "optimistic rejection") for n in giants if n in pods)
    )
    bound = [n for n in giants if n in seen and seen[n].spec.node_name]
    if any(failed_with(seen[n], "optimistic rejection") for n in giants if n in seen) and not bound:
        s.say("scenario: giant fits one pod, not three: Coscheduling rejected it; none bound")
    return bindings | {n: seen[n].spec.node_name if n in seen else None for n in giants}


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["16", *sys.argv[1:]]))
