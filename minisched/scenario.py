"""What a scenario does to a cluster: create Nodes and Pods, wait for bindings, clean up.

Upstream counterpart: the Go originals' ``sched.go`` scenario, and the node/pod fixtures of
kube-scheduler's integration tests (``test/integration/util``, scheduler_perf's
``node-default.yaml`` and ``pod-default.yaml``).

Scenarios are written to behave on a shared real cluster as well as on the embedded server:

- everything happens in a namespace of its own, created here and deleted by ``cleanup()``;
- fake Nodes carry the label ``minisched.io/scenario`` and are deleted by that label;
- Pods ask for ``schedulerName: minisched``, so a cluster's default scheduler leaves them alone;
- Nodes get what a kubelet would report (capacity, allocatable, a Ready condition);
- Pods are deleted with grace period 0: with no kubelet, a graceful delete of a bound pod
  would leave it Terminating for ever.

Waiting is done on a watch with a deadline, never by sleeping.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes import client, watch

log = logging.getLogger(__name__)

SCHEDULER_NAME = "minisched"
SCENARIO_LABEL = "minisched.io/scenario"
# The scheduler run by the runner only looks at nodes with this label, so a real cluster's
# own nodes are never used by a scenario (see docs: "Running on a real cluster").
NODE_SELECTOR = SCENARIO_LABEL


class Scenario:
    """One run of a scenario against one cluster."""

    def __init__(
        self,
        api_client: client.ApiClient,
        name: str,
        *,
        timeout: float = 30.0,
        wait_for_cache: Callable[[str, Iterable[str]], bool] | None = None,
        say: Callable[[str], None] = print,
    ) -> None:
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.name = name
        self.timeout = timeout
        self.say = say
        self._wait_for_cache = wait_for_cache
        self.namespace = ""
        self.nodes: list[str] = []
        self.pods: list[str] = []

    # --- setup and teardown ----------------------------------------------------------------

    def __enter__(self) -> Scenario:
        ns = self.core.create_namespace(
            client.V1Namespace(
                metadata=client.V1ObjectMeta(
                    generate_name=f"minisched-{self.name}-", labels={SCENARIO_LABEL: self.name}
                )
            )
        )
        self.namespace = ns.metadata.name
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def cleanup(self) -> None:
        """Delete this run's pods (grace 0), its namespace and its labelled nodes."""
        if self.namespace:
            try:
                self.core.delete_collection_namespaced_pod(self.namespace, grace_period_seconds=0)
                self.core.delete_namespace(self.namespace, grace_period_seconds=0)
            except client.ApiException as e:
                if e.status != 404:
                    log.warning("cleanup of namespace %s: %s", self.namespace, e.reason)
        try:
            self.core.delete_collection_node(label_selector=f"{SCENARIO_LABEL}={self.name}")
        except client.ApiException as e:
            log.warning("cleanup of nodes: %s", e.reason)

    # --- objects ---------------------------------------------------------------------------

    def create_node(
        self,
        name: str,
        *,
        unschedulable: bool = False,
        taints: list[client.V1Taint] | None = None,
        labels: dict[str, str] | None = None,
        pods: int = 110,
    ) -> client.V1Node:
        """A fake Node with the status a kubelet would have posted: 4 CPU, 32Gi, 110 pods."""
        resources = {"cpu": "4", "memory": "32Gi", "pods": str(pods)}
        node = client.V1Node(
            metadata=client.V1ObjectMeta(
                name=name, labels={SCENARIO_LABEL: self.name, **(labels or {})}
            ),
            spec=client.V1NodeSpec(unschedulable=unschedulable or None, taints=taints),
        )
        created = self.core.create_node(node)
        # status is ignored on create (as on a real cluster): write it through /status.
        status = {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake"}
            ],
        }
        self.core.patch_node_status(name, {"status": status})
        self.nodes.append(name)
        self.say(f"scenario: created node {name}" + (" (unschedulable)" if unschedulable else ""))
        return created

    def create_pod(
        self,
        name: str,
        *,
        tolerations: list[client.V1Toleration] | None = None,
        priority: int | None = None,
        requests: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
    ) -> client.V1Pod:
        """A pause pod for the minisched scheduler."""
        container = client.V1Container(
            name="pause",
            image="registry.k8s.io/pause:3.9",
            resources=client.V1ResourceRequirements(requests=requests) if requests else None,
        )
        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(
                name=name, labels={SCENARIO_LABEL: self.name}, annotations=annotations
            ),
            spec=client.V1PodSpec(
                scheduler_name=SCHEDULER_NAME,
                containers=[container],
                tolerations=tolerations,
                priority=priority,
            ),
        )
        created = self.core.create_namespaced_pod(self.namespace, pod)
        self.pods.append(name)
        self.say(f"scenario: created pod {name}")
        return created

    def scheduler_has_seen(self, kind: str, names: Iterable[str]) -> None:
        """Wait until the scheduler's informer cache holds these objects.

        Only possible when the runner runs the scheduler in this process; elsewhere this
        returns at once. It makes seeded runs repeatable: without it, a pod could be scheduled
        before the scheduler's node informer has seen the last node.
        """
        if self._wait_for_cache is not None:
            names = list(names)
            if not self._wait_for_cache(kind, names):
                log.warning("the scheduler did not see %s %s in time", kind, names)

    # --- waiting -----------------------------------------------------------------------------

    def bindings(self) -> dict[str, str | None]:
        """Where each of this run's pods is bound now (None: not bound)."""
        pods = self.core.list_namespaced_pod(self.namespace).items
        found = {p.metadata.name: p.spec.node_name for p in pods}
        return {name: found.get(name) for name in self.pods}

    def wait_for(
        self, done: Callable[[dict[str, Any]], bool], timeout: float | None = None
    ) -> dict[str, Any]:
        """Watch this run's pods until ``done(pods)`` holds or ``timeout`` passes.

        ``pods`` maps pod name to the latest ``V1Pod``. Returns that map either way.
        """
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        listed = self.core.list_namespaced_pod(self.namespace)
        pods: dict[str, Any] = {p.metadata.name: p for p in listed.items}
        rv = listed.metadata.resource_version
        while not done(pods):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            w = watch.Watch()
            try:
                for event in w.stream(
                    self.core.list_namespaced_pod,
                    self.namespace,
                    resource_version=rv,
                    timeout_seconds=max(1, int(left + 0.999)),
                    _request_timeout=left + 5,
                ):
                    obj = event["object"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        pods[obj.metadata.name] = obj
                        rv = obj.metadata.resource_version
                    elif event["type"] == "DELETED":
                        pods.pop(obj.metadata.name, None)
                    if done(pods) or time.monotonic() >= deadline:
                        break
            finally:
                w.stop()
        return pods

    def wait_for_bindings(
        self, names: Iterable[str] | None = None, timeout: float | None = None
    ) -> dict[str, str | None]:
        """Wait until the named pods (default: all of this run's) are bound, or time out."""
        wanted = list(names or self.pods)

        def all_bound(pods: dict[str, Any]) -> bool:
            return all(n in pods and pods[n].spec.node_name for n in wanted)

        pods = self.wait_for(all_bound, timeout)
        return {n: (pods[n].spec.node_name if n in pods else None) for n in wanted}
