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
  would leave it Terminating for ever. A scenario that deletes gracefully (or whose scheduler
  preempts) starts a fake kubelet for its nodes (``start_kubelet``, ``minisched/kubelet.py``).

Waiting is done on a watch with a deadline, never by sleeping.

Given the run's ``Report``, a scenario prints through it: each action's line ("created node
node5") comes before the lines of what the action caused (the scheduler's informer sees the
node, and moves pods, before the create call returns); the scenario's pods are followed, so
their per-node detail is kept for the summary; and the cleanup prints nothing: the story ends
with the scenario's last line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kubernetes import client, watch

from .kubelet import FakeKubelet

if TYPE_CHECKING:
    from .report import Report

log = logging.getLogger(__name__)

SCHEDULER_NAME = "minisched"
SCENARIO_LABEL = "minisched.io/scenario"
# The scheduler run by the runner only looks at nodes with this label, so a real cluster's
# own nodes are never used by a scenario (see docs: "Running on a real cluster").
NODE_SELECTOR = SCENARIO_LABEL


def node_status(pods: int, cpu: str, memory: str) -> dict[str, Any]:
    """What a kubelet posts for its Node: capacity = allocatable, and Ready."""
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake"}
        ],
    }


class Scenario:
    """One run of a scenario against one cluster."""

    def __init__(
        self,
        api_client: client.ApiClient,
        name: str,
        *,
        timeout: float = 30.0,
        wait_for_cache: Callable[..., bool] | None = None,
        say: Callable[[str], None] = print,
        report: Report | None = None,
        scheduler_name: str = SCHEDULER_NAME,
    ) -> None:
        self.api_client = api_client
        # The schedulerName of the pods it creates: another scheduler's name (the default
        # scheduler's) replays a scenario with that scheduler, for a side-by-side check.
        self.scheduler_name = scheduler_name
        self.core = client.CoreV1Api(api_client)
        self.name = name
        self.timeout = timeout
        self.report = report
        self.say = report.say if report is not None else say
        self._wait_for_cache = wait_for_cache
        self.namespace = ""
        self.nodes: list[str] = []
        self.pods: list[str] = []
        self._kubelets: list[FakeKubelet] = []
        self._priority_classes: list[str] = []
        # The sample extender the runner started for the scenario (step 15 on), or None.
        self.extender: Any = None
        # (kind, name) -> the resourceVersion this run's last write of that node or pod
        # returned: scheduler_has_seen waits for that version, not only for the name.
        self._written: dict[tuple[str, str], str] = {}

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
        """Delete this run's pods (grace 0), its namespace and its labelled nodes.

        With a report, silently: the queue moves the deletions cause are not the story's.
        """
        if self.report is not None:
            self.report.mute()
        for kubelet in self._kubelets:
            kubelet.stop()
        self._kubelets.clear()
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
        self._delete_priority_classes()

    # --- objects ---------------------------------------------------------------------------

    def create_node(
        self,
        name: str,
        *,
        unschedulable: bool = False,
        taints: list[client.V1Taint] | None = None,
        labels: dict[str, str] | None = None,
        pods: int = 110,
        cpu: str = "4",
        memory: str = "32Gi",
    ) -> client.V1Node:
        """A fake Node with the status a kubelet would have posted: by default 4 CPU, 32Gi,
        110 pods."""
        node = self._node(name, unschedulable, taints, labels)
        status = node_status(pods, cpu, memory)
        line = f"scenario: created node {name}" + (" (unschedulable)" if unschedulable else "")
        with self._announce(line, "node", name):
            created = self.core.create_node(node)
            # A Node's create keeps the status it is sent (a kubelet registers its Node that
            # way; it is a Pod's create that resets status). This writes it separately, through
            # /status as a kubelet's later updates do, so informers see an Add without status,
            # then an update (NodeAllocatableChange): step 7's chapter shows both.
            patched = self.core.patch_node_status(name, {"status": status})
            self._written[("node", name)] = patched.metadata.resource_version
        self.nodes.append(name)
        return created

    def create_nodes(self, nodes: Sequence[tuple[str, dict[str, Any]]], line: str) -> None:
        """Many fake Nodes at once, in this order, each ``(name, create_node's keywords)``,
        with one line for them all. Each is created with its status, as a kubelet registers
        its Node: one call per node, and informers see one Add each."""
        names = [name for name, _ in nodes]
        with self._announce(line, "node", names):
            for name, options in nodes:
                options = {"pods": 110, "cpu": "4", "memory": "32Gi"} | options
                resources = {k: options.pop(k) for k in ("pods", "cpu", "memory")}
                node = self._node(name, **options)
                node.status = node_status(**resources)
                created = self.core.create_node(node)
                self._written[("node", name)] = created.metadata.resource_version
                self.nodes.append(name)

    def _node(
        self,
        name: str,
        unschedulable: bool = False,
        taints: list[client.V1Taint] | None = None,
        labels: dict[str, str] | None = None,
    ) -> client.V1Node:
        return client.V1Node(
            metadata=client.V1ObjectMeta(
                name=name, labels={SCENARIO_LABEL: self.name, **(labels or {})}
            ),
            spec=client.V1NodeSpec(unschedulable=unschedulable or None, taints=taints),
        )

    def create_pod(
        self,
        name: str,
        *,
        tolerations: list[client.V1Toleration] | None = None,
        node_selector: dict[str, str] | None = None,
        affinity: client.V1Affinity | None = None,
        priority_class_name: str | None = None,
        requests: dict[str, str] | None = None,
        limits: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        scheduler_name: str | None = None,
    ) -> client.V1Pod:
        """A pause pod for the minisched scheduler (or the profile ``scheduler_name`` names),
        with the constraints it is given."""
        container = client.V1Container(
            name="pause",
            image="registry.k8s.io/pause:3.9",
            resources=client.V1ResourceRequirements(requests=requests, limits=limits)
            if requests or limits
            else None,
        )
        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(
                name=name,
                labels={SCENARIO_LABEL: self.name, **(labels or {})},
                annotations=annotations,
            ),
            spec=client.V1PodSpec(
                scheduler_name=scheduler_name or self.scheduler_name,
                containers=[container],
                tolerations=tolerations,
                node_selector=node_selector,
                affinity=affinity,
                priority_class_name=priority_class_name,
            ),
        )
        if self.report is not None:
            self.report.follow(f"{self.namespace}/{name}")
        with self._announce(f"scenario: created pod {name}", "pod", name):
            created = self.core.create_namespaced_pod(self.namespace, pod)
            self._written[("pod", name)] = created.metadata.resource_version
        self.pods.append(name)
        return created

    def delete_pod(self, name: str, *, grace_period_seconds: int | None = 0) -> None:
        """Delete one of this run's pods, by default at once (grace 0), as its workload ending
        would. ``grace_period_seconds=None`` is a graceful delete with the pod's own grace
        period: a bound pod then stays (Terminating) until a kubelet finishes it, see
        ``start_kubelet``; an unbound one goes at once."""
        graceful = grace_period_seconds is None
        line = f"scenario: deleted pod {name}" + (" gracefully" if graceful else "")
        options = {} if graceful else {"grace_period_seconds": grace_period_seconds}
        if self.report is not None:
            # As _announce: what the deletion causes prints after the line.
            with self.report.announce(line):
                self.core.delete_namespaced_pod(name, self.namespace, **options)
                # A graceful delete with no kubelet may leave the pod Terminating: no wait.
                if self._wait_for_cache is not None and (not graceful or self._kubelets):
                    if not self._wait_for_cache("pod", [name], present=False):
                        log.warning("the scheduler did not see pod %s deleted in time", name)
        else:
            # Said first, so that it comes before what the deletion causes (a fake kubelet's
            # line, from its own thread, for a graceful delete).
            self.say(line)
            self.core.delete_namespaced_pod(name, self.namespace, **options)
        self.pods.remove(name)

    def start_kubelet(self) -> FakeKubelet:
        """Start a fake kubelet for this run's nodes (``self.nodes``, as they are when it
        looks) and namespace: it finishes the graceful deletion of their pods, as a kubelet
        does once the containers stop. ``cleanup()`` stops it."""
        kubelet = FakeKubelet(
            self.api_client, namespace=self.namespace, nodes=lambda: tuple(self.nodes), say=self.say
        )
        kubelet.start()
        self._kubelets.append(kubelet)
        return kubelet

    @contextmanager
    def _announce(self, line: str, kind: str, name: str | list[str]) -> Iterator[None]:
        """Run the action (creating ``kind`` ``name``), then say ``line``: through the report,
        ahead of what it caused. The report holds the scheduler's lines until the scheduler
        has seen the object too, so that what the object causes (its informer handlers run
        right after the cache has it) is not held back behind the next action's line."""
        if self.report is not None:
            with self.report.announce(line):
                yield
                self.scheduler_has_seen(kind, name if isinstance(name, list) else [name])
        else:
            yield
            self.say(line)

    def scheduler_has_seen(self, kind: str, names: Iterable[str]) -> None:
        """Wait until the scheduler's informer cache holds these objects, each as this run
        last wrote it (at that resourceVersion or a later one).

        Only possible when the runner runs the scheduler in this process; elsewhere this
        returns at once. It makes seeded runs repeatable: without it, a pod could be scheduled
        before the scheduler's node informer has seen the last node; and without the version,
        before it has seen that node's status (``create_node`` writes it after the create),
        to a scheduler that then finds no room on the node.
        """
        if self._wait_for_cache is not None:
            names = list(names)
            versions = {n: self._written[(kind, n)] for n in names if (kind, n) in self._written}
            if not self._wait_for_cache(kind, names, versions=versions):
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
        bindings = {n: (pods[n].spec.node_name if n in pods else None) for n in wanted}
        report = self.report
        if report is not None:
            # The scheduler records a binding once its bind call returns, which may be after
            # this watch saw the pod bound: wait for those lines, so that they print before
            # the story's end (what the cleanup causes is not printed).
            keys = [f"{self.namespace}/{n}" for n, node in bindings.items() if node]
            if not report.wait_until(lambda: all(report.bound_node(k) for k in keys), 10.0):
                log.warning("the scheduler did not report the bindings of %s in time", keys)
        return bindings

    # --- priority classes ----------------------------------------------------------------------

    def create_priority_class(
        self, name: str, value: int, *, preemption_policy: str | None = None
    ) -> str:
        """A PriorityClass for this run's pods (``create_pod(priority_class_name=...)``); the
        name it was given. PriorityClasses are cluster-scoped, so the name is this run's
        namespace and ``name`` (``minisched-preemption-x7k2p-low``), labelled as the run's
        nodes are; ``cleanup()`` deletes it."""
        full_name = f"{self.namespace}-{name}"
        scheduling = client.SchedulingV1Api(self.api_client)
        scheduling.create_priority_class(
            client.V1PriorityClass(
                metadata=client.V1ObjectMeta(name=full_name, labels={SCENARIO_LABEL: self.name}),
                value=value,
                preemption_policy=preemption_policy,
                description=f"minisched scenario {self.name}: {name}",
            )
        )
        self.say(f"scenario: created PriorityClass {name} (value {value})")
        self._priority_classes.append(full_name)
        return full_name

    def _delete_priority_classes(self) -> None:
        scheduling = client.SchedulingV1Api(self.api_client)
        for name in self._priority_classes:
            try:
                scheduling.delete_priority_class(name)
            except client.ApiException as e:
                if e.status != 404:
                    log.warning("cleanup of PriorityClass %s: %s", name, e.reason)
        self._priority_classes.clear()
