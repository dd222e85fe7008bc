"""Plain objects for unit tests: pods, nodes, a recorder, and a scheduler with no API server."""

from __future__ import annotations

import argparse
import inspect
import json
import random
import threading
from types import SimpleNamespace
from typing import Any

from kubernetes import client

from minisched import steps
from minisched.clock import FakeClock
from minisched.informer import meta_namespace_key
from tests.conftest import step_module


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    uid: str | None = None,
    tolerations: list[client.V1Toleration] | None = None,
    priority: int | None = None,
    node_name: str | None = None,
) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(
            name=name, namespace=namespace, uid=uid or f"uid-{name}", resource_version="1"
        ),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="c", image="pause")],
            scheduler_name="minisched",
            tolerations=tolerations,
            priority=priority,
            node_name=node_name,
        ),
    )


def make_node(name: str, *, unschedulable: bool = False, taints: Any = None) -> client.V1Node:
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=name, resource_version="1"),
        spec=client.V1NodeSpec(unschedulable=unschedulable or None, taints=taints),
        status=client.V1NodeStatus(allocatable={"cpu": "4", "memory": "32Gi", "pods": "110"}),
    )


class ListRecorder:
    """Keeps every recorded event; ``_lock`` guards ``events`` (binding threads record too)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[tuple[str, dict[str, Any]]] = []

    def record(self, event: str, /, **fields: Any) -> None:
        with self._lock:
            self.events.append((event, fields))

    def wants_detail(self, pod: str) -> bool:
        return True  # tests read every node's result

    def of(self, event: str) -> list[dict[str, Any]]:
        """The fields of every ``event`` recorded, in order; without the wall-clock
        ``seconds`` of a ``selected`` event (step 15 on): tests assert no timings."""
        with self._lock:
            found = [f for e, f in self.events if e == event]
        if event == "selected":
            found = [{k: v for k, v in f.items() if k != "seconds"} for f in found]
        return found


class FakeCoreV1Api:
    """The few CoreV1Api calls a scheduler makes, recorded; binds can be made to fail."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bindings: list[tuple[str, str]] = []  # (namespace/name, node)
        self.bound = threading.Condition(self._lock)
        self.fail_binds = 0  # how many of the next binds answer 409
        self.calls: list[tuple[str, Any]] = []

    def create_namespaced_pod_binding(self, name: str, namespace: str, body: Any, **_: Any) -> Any:
        with self._lock:
            if self.fail_binds:
                self.fail_binds -= 1
                err = client.ApiException(status=409, reason="Conflict")
                # The Status body the API server sends with it.
                message = f'pod {name} is already assigned to node "elsewhere"'
                err.body = json.dumps({"kind": "Status", "code": 409, "message": message})
                raise err
            self.bindings.append((f"{namespace}/{name}", body.target.name))
            self.bound.notify_all()
        return SimpleNamespace(data=b'{"kind":"Status","code":201}')

    def wait_for_bindings(self, count: int, timeout: float = 5.0) -> bool:
        with self._lock:
            return self.bound.wait_for(lambda: len(self.bindings) >= count, timeout)

    def __getattr__(self, name: str) -> Any:
        # Any other call (status patches, events) is recorded and succeeds.
        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls.append((name, args))
            return None

        return call


# From step 14 the profile comes from a KubeSchedulerConfiguration, whose defaults are
# upstream's: the workshop's plugins run only when a profile enables them. This one does, in
# the places step 13's fixed profile had them, so that the tests of the earlier steps' features
# see the same framework on every step.
WORKSHOP_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1beta3
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: minisched
  plugins:
    multiPoint:
      enabled:
      - name: NodeNumber
    bind:
      disabled:
      - name: "*"
      enabled:
      - name: FlakyBinder
      - name: DefaultBinder
"""

# The profile (schedulerName) of make_pod's pods.
PROFILE = "minisched"


def configured(step: int) -> bool:
    """Whether the step reads a KubeSchedulerConfiguration (step 14 on)."""
    return has_module(step, "config")


def workshop_config(step: int) -> Any:
    """WORKSHOP_CONFIG, decoded and defaulted by the step (step 14 on)."""
    return step_module(step, "config").load_config(WORKSHOP_CONFIG)


def framework_of(sched: Any) -> Any:
    """The scheduler's framework: its one, or from step 14 its ``minisched`` profile's."""
    return sched.profiles[PROFILE] if hasattr(sched, "profiles") else sched.framework


def set_framework(sched: Any, fwk: Any) -> None:
    """Make ``fwk`` the framework the scheduler runs make_pod's pods in."""
    if hasattr(sched, "profiles"):
        sched.profiles[PROFILE] = fwk
    else:
        sched.framework = fwk


def offline_scheduler(step: int, *, seed: int = 1, **options: Any) -> Any:
    """Step ``step``'s real Scheduler, never started: tests fill its caches by hand and call
    its functions directly. ``sched.client`` is a FakeCoreV1Api. From step 14 its
    configuration is WORKSHOP_CONFIG unless ``config`` gives one."""
    module = step_module(step, "scheduler")
    if configured(step) and "config" not in options:
        options["config"] = workshop_config(step)
    sched = module.Scheduler(
        client.ApiClient(),
        rng=random.Random(seed),
        clock=options.pop("clock", None) or FakeClock(),
        recorder=ListRecorder(),
        **options,
    )
    sched.client = FakeCoreV1Api()
    if hasattr(sched, "cache"):  # the steps whose binding is a plugin
        for fwk in getattr(sched, "profiles", {}).values() or [sched.framework]:
            fwk.client = sched.client
    sched.event_recorder = FakeEventRecorder()
    return sched


class FakeEventRecorder:
    """Keeps (type, reason, message) of every event instead of posting it."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def eventf(self, obj: Any, type_: str, reason: str, action: str, message: str) -> None:
        self.events.append((type_, reason, message))

    def stop(self) -> None:
        return None


def add_nodes(sched: Any, *nodes: client.V1Node) -> None:
    for node in nodes:
        sched.node_informer.store._set(meta_namespace_key(node), node)
        if hasattr(sched, "cache"):  # the steps that read nodes from the scheduler cache
            sched.cache.add_node(node)


# --- the scheduling framework (steps 2 and later) ---------------------------------------------


def has_module(step: int, module: str) -> bool:
    """Whether step ``step`` has ``steps.stepN.<module>`` (its concept has arrived)."""
    return (steps.get(step).directory / f"{module.replace('.', '/')}.py").is_file()


def cycle_args(step: int) -> tuple[Any, ...]:
    """The leading CycleState argument of the plugin and framework calls, for the steps that
    have one: ``fwk.run_filter_plugins(*cycle_args(step), pod, node)`` works in every step."""
    if has_module(step, "cycle_state"):
        return (step_module(step, "cycle_state").CycleState(),)
    return ()


def new_framework(step: int, registry: dict[str, Any], **extension_points: Any) -> Any:
    """Step ``step``'s Framework with these plugins: ``new_framework(n, reg, filter=["A"])``;
    a ``(name, weight)`` pair enables a Score plugin with a weight.

    A ``clock`` keyword (default: a new FakeClock) is passed to the steps whose Framework
    takes one. In the steps where binding is a plugin, DefaultBinder binds (through the
    ``client`` keyword, e.g. a FakeCoreV1Api) unless ``bind`` names the Bind plugins.
    """
    runtime = step_module(step, "runtime")
    clock = extension_points.pop("clock", None) or FakeClock()
    client_set = extension_points.pop("client", None)
    if has_module(step, "plugins.defaultbinder") and "bind" not in extension_points:
        binder = step_module(step, "plugins.defaultbinder")
        registry = {binder.NAME: binder.new, **registry}
        extension_points["bind"] = [binder.NAME]

    if configured(step):
        return _configured_framework(step, registry, clock, client_set, extension_points)

    def enabled(n: str | tuple[str, int]) -> Any:
        return runtime.EnabledPlugin(*n) if isinstance(n, tuple) else runtime.EnabledPlugin(n)

    profile = runtime.Plugins(
        **{point: [enabled(n) for n in names] for point, names in extension_points.items()}
    )
    if "client_set" in inspect.signature(runtime.Framework).parameters:
        return runtime.Framework(registry, profile, clock=clock, client_set=client_set)
    if "clock" in inspect.signature(runtime.Framework).parameters:
        return runtime.Framework(registry, profile, clock=clock)
    return runtime.Framework(registry, profile)


def _configured_framework(
    step: int,
    registry: dict[str, Any],
    clock: Any,
    client_set: Any,
    extension_points: dict[str, list[Any]],
) -> Any:
    """new_framework from step 14: the plugins as a KubeSchedulerProfile. Upstream's framework
    wants one QueueSort plugin: PrioritySort, unless the test names one."""
    config = step_module(step, "config")
    if "queue_sort" not in extension_points:
        sort = step_module(step, "plugins.prioritysort")
        registry = {sort.NAME: sort.new, **registry}
        extension_points["queue_sort"] = [sort.NAME]

    def plugin(n: str | tuple[str, int]) -> Any:
        return config.Plugin(*n) if isinstance(n, tuple) else config.Plugin(n)

    plugins = config.Plugins(
        **{
            point: config.PluginSet(enabled=[plugin(n) for n in names])
            for point, names in extension_points.items()
        }
    )
    profile = config.KubeSchedulerProfile(scheduler_name=PROFILE, plugins=plugins)
    runtime = step_module(step, "runtime")
    return runtime.Framework(registry, profile, clock=clock, client_set=client_set)


def node_arg(step: int, node: client.V1Node | None) -> Any:
    """What a Filter plugin is given for a node: the Node, or in the steps with the cache, a
    NodeInfo holding it."""
    if node is None or not has_module(step, "cache"):
        return node
    node_info = step_module(step, "framework").NodeInfo()
    node_info.set_node(node)
    return node_info


def drive(sched: Any, bindings: int, *, seconds: float = 15.0) -> bool:
    """Let ``bindings`` bindings happen: advance the FakeClock past every permit wait (a no-op
    before Permit exists), then wait for the binding threads."""
    sched.clock.advance(seconds)
    return sched.client.wait_for_bindings(bindings)


def add_pods(sched: Any, *pods: client.V1Pod) -> None:
    """Put pods in the scheduler's pod informer cache, where its error func looks them up."""
    for pod in pods:
        sched.pod_informer.store._set(meta_namespace_key(pod), pod)


def scheduler_alone_args(kubeconfig: str) -> argparse.Namespace:
    """The command line of ``python -m steps.stepN --kubeconfig PATH``, for
    ``runner._run_scheduler_alone`` (seed 1, quiet, no web page)."""
    return argparse.Namespace(
        kubeconfig=kubeconfig,
        context=None,
        embedded=False,
        seed=1,
        verbose=0,
        node_selector=None,
        web=False,
        web_port=None,
    )


class CountedLists:
    """An informer's list function that counts the lists that returned (the watches it also
    opens are not counted): how a test sees that an informer relisted."""

    def __init__(self, list_func: Any) -> None:
        self.list_func = list_func
        self.lists = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        resp = self.list_func(*args, **kwargs)
        if not kwargs.get("watch"):
            self.lists += 1
        return resp


def count_lists(informer: Any) -> CountedLists:
    """Count ``informer``'s lists from now on (call it before the informer starts)."""
    counted = CountedLists(informer.list_func)
    informer.list_func = counted
    return counted
