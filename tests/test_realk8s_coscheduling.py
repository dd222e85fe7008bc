"""Step 16 beside the real Coscheduling: the same groups, the same profile, the same outcomes
(opt-in, as test_realk8s_configuration.py).

Upstream counterpart: kube-scheduler v1.23.10 built by scheduler-plugins v0.23.10, whose
Coscheduling step 16 ports (``$KUBE_SCHEDULER_V1_23``, by default
``~/.cache/realk8s/v1.23/kube-scheduler``: its binary registers Coscheduling). It runs beside
a fresh real control plane (etcd and kube-apiserver v1.36.2, shared/realk8s) that has the
PodGroup CRD (``manifests/podgroup-crd.yaml``, applied as the runner does) and lets the
scheduler's identity (``system:kube-scheduler``) read and patch PodGroups, as scheduler-plugins'
install manifests do: without that, v1.23's Coscheduling waits for ever for its PodGroup
informer to list. The v1.36 API server no longer serves CSIStorageCapacity v1beta1, so v1.23
runs with ``--feature-gates=CSIStorageCapacity=false`` (realk8s_util.v1_23_kube_scheduler).

Two checks:

- **The scenario, played by each** (scenarios/step16.py's ``run``, its ``CONFIG`` given to
  both: kube-scheduler's profile is named ``kube-scheduler-v1-23``, step 16's keeps
  ``minisched``). One after the other, each on two fresh nodes of its own in a namespace of its
  own (the scenario's cleanup deletes the first one's pods, PodGroups and nodes before the
  second starts), so that each sees only its two nodes (the PreFilter message counts them)
  and neither holds room the other needs. Every version of every pod of the run is recorded by
  one watch on a thread of its own (``PodHistory``): a condition a retry overwrites a moment
  later is not missed between two waits. Both must tell the same story: trio-a and trio-b are
  marked PodScheduled=False and stay unbound until trio-c exists (each is first seen bound at
  a resourceVersion after trio-c's creation), then all three bind; no giant pod is ever bound,
  and one is rejected "optimistic rejection in PostFilter" (its PodScheduled condition, and a
  FailedScheduling event). PreFilter's rejection is the same text in both, in the condition
  and in the FailedScheduling event: ``0/2 nodes are available: 2 pre-filter pod trio-a cannot
  find enough sibling pods, current pods number: 1, minMember of group: 3.``
- **Coscheduling enabled without a pluginConfig** (the scenario's profile without its
  ``pluginConfig``, in v1beta2 and v1beta3). kube-scheduler v1.23.10 accepts it: scheduler-
  plugins registers CoschedulingArgs through kube-scheduler's own SchemeBuilder, so the
  profile's defaulting gives Coscheduling default args (``permitWaitingTimeSeconds: 60``) as it
  gives an in-tree plugin its. Its ``--write-config-to`` (written once the profiles are built,
  the PodGroup informer listed) and step 16's (``python -m steps.step16 --config FILE
  --write-config-to OUT``) must enable Coscheduling at the same extension points and give it
  the same pluginConfig; and step 16's Scheduler, built from the file, waits that long at
  Permit.

Skipped, in one line, unless the real control plane is built (``~/.cache/realk8s/bin/
kube-apiserver``) and ``$REALK8S_RUN`` names an instance of one's own (with its ``*_PORT``
variables), or when the v1.23 binary is missing. The files and v1.23's logs are in the test's
tmp_path.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, watch

from minisched import cluster
from minisched.scenario import SCHEDULER_NAME, Scenario
from scenarios import step16 as scenario
from tests.conftest import built_steps
from tests.realk8s_util import (
    TIMEOUT,
    V1_23_BINARY,
    V1_23_SCHEDULER,
    KubeSchedulerLog,
    free_port,
    informer_probe,
    kube_scheduler_probe,
    quiet,
    real_control_plane,
    require_real_control_plane,
    running,
    tail,
    v1_23_kube_scheduler,
)
from tests.test_realk8s_resources import WaitingRecorder

ROOT = Path(__file__).resolve().parents[1]
COSCHEDULING = "Coscheduling"
REJECTION = "optimistic rejection in PostFilter"
TRIO = ["trio-a", "trio-b", "trio-c"]
GIANTS = ["giant-a", "giant-b", "giant-c"]
# What scheduler-plugins' install manifests grant the scheduler on PodGroups (its
# ClusterRole, manifests/install/charts: get, list, watch; update and patch for PostBind).
PODGROUP_ACCESS = "minisched-podgroups"
PODGROUP_VERBS = ["get", "list", "watch", "update", "patch"]


def pre_filter_message(pod: str, siblings: int) -> str:
    """The FitError of a pod whose group has ``siblings`` of its three pods, on two nodes: the
    PreFilter status counts against every node (findNodesThatFitPod)."""
    return (
        f"0/2 nodes are available: 2 pre-filter pod {pod} cannot find enough sibling pods, "
        f"current pods number: {siblings}, minMember of group: 3."
    )


# --- the control plane ----------------------------------------------------------------------------


def grant_podgroups(api: client.ApiClient) -> None:
    """Let ``system:kube-scheduler`` (up.sh's scheduler.kubeconfig, which v1.23 uses) read and
    patch PodGroups."""
    rbac = client.RbacAuthorizationV1Api(api)
    rule = client.V1PolicyRule(
        api_groups=[scenario.GROUP], resources=[scenario.PLURAL], verbs=PODGROUP_VERBS
    )
    rbac.create_cluster_role(
        client.V1ClusterRole(metadata=client.V1ObjectMeta(name=PODGROUP_ACCESS), rules=[rule])
    )
    subject = client.RbacV1Subject(
        kind="User", name="system:kube-scheduler", api_group="rbac.authorization.k8s.io"
    )
    rbac.create_cluster_role_binding(
        client.V1ClusterRoleBinding(
            metadata=client.V1ObjectMeta(name=PODGROUP_ACCESS),
            role_ref=client.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=PODGROUP_ACCESS
            ),
            subjects=[subject],
        )
    )


@pytest.fixture(scope="module")
def kubeconfig() -> Iterator[str]:
    """A fresh real control plane with the PodGroup CRD and the scheduler's access to
    PodGroups, for the module; its admin kubeconfig."""
    require_real_control_plane()
    if not os.access(V1_23_BINARY, os.X_OK):
        pytest.skip(f"kube-scheduler v1.23 not built on this machine ({V1_23_BINARY})")
    with real_control_plane() as admin:
        api = config.new_client_from_config(config_file=admin)
        try:
            for manifest in scenario.CRDS:
                cluster.apply_crd(api, ROOT / manifest)
            grant_podgroups(api)
        finally:
            api.close()
        yield admin


def their_config(text: str, scheduler_kubeconfig: Path) -> str:
    """``text`` (a profile ``minisched``) for kube-scheduler v1.23: its profile named
    ``V1_23_SCHEDULER``, its identity up.sh's scheduler kubeconfig."""
    old = f"- schedulerName: {SCHEDULER_NAME}\n"
    assert text.count(old) == 1, text
    text = text.replace(old, f"- schedulerName: {V1_23_SCHEDULER}\n")
    return text + f"clientConnection: {{kubeconfig: {json.dumps(str(scheduler_kubeconfig))}}}\n"


# --- every version of every pod -------------------------------------------------------------------


class PodHistory:
    """Every version of the namespace's pods, in the order the API server wrote them, from one
    watch (renewed each second, from the last version seen) on a thread of its own;
    ``_changed`` guards ``versions`` and ``error``."""

    def __init__(self, core: client.CoreV1Api, namespace: str) -> None:
        self.core, self.namespace = core, namespace
        listed = core.list_namespaced_pod(namespace)
        self.versions: list[client.V1Pod] = list(listed.items)
        self.error: BaseException | None = None
        self._rv: str = listed.metadata.resource_version
        self._changed = threading.Condition()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="pod-history", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        try:
            while not self._stopped.is_set():
                w = watch.Watch()
                try:
                    for event in w.stream(
                        self.core.list_namespaced_pod,
                        self.namespace,
                        resource_version=self._rv,
                        timeout_seconds=1,
                        _request_timeout=10,
                    ):
                        if event["type"] == "ERROR":
                            raise AssertionError(f"pod watch: {event['raw_object']}")
                        pod = event["object"]
                        with self._changed:
                            self.versions.append(pod)
                            self._rv = pod.metadata.resource_version
                            self._changed.notify_all()
                        if self._stopped.is_set():
                            break
                finally:
                    w.stop()
        except BaseException as e:  # the waits report it
            with self._changed:
                self.error = e
                self._changed.notify_all()

    def wait(self, done: Callable[[list[client.V1Pod]], bool], timeout: float = TIMEOUT) -> bool:
        """Until ``done(versions)`` holds; False if ``timeout`` passes first (or the watch
        failed)."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self.error is not None or done(self.versions), timeout
            ) and done(self.versions)

    def caught_up(self, timeout: float = TIMEOUT) -> bool:
        """Until the watch has brought each pod as a list made now has it: the other watches'
        waits (the scenario's) may run ahead of this one."""
        listed = {
            p.metadata.name: int(p.metadata.resource_version)
            for p in self.core.list_namespaced_pod(self.namespace).items
        }

        def seen(versions: list[client.V1Pod]) -> bool:
            latest: dict[str, int] = {}
            for p in versions:
                latest[p.metadata.name] = int(p.metadata.resource_version)
            return all(latest.get(name, 0) >= rv for name, rv in listed.items())

        return self.wait(seen, timeout)

    def stop(self) -> list[client.V1Pod]:
        """End the watch (within its second); every version seen."""
        self._stopped.set()
        self._thread.join(5)
        with self._changed:
            if self.error is not None:
                raise AssertionError(f"the pod watch failed: {self.error!r}")
            return list(self.versions)


def pod_scheduled(pod: client.V1Pod) -> client.V1PodCondition | None:
    conditions = (pod.status and pod.status.conditions) or []
    return next((c for c in conditions if c.type == "PodScheduled"), None)


def unschedulable_message(pod: client.V1Pod) -> str | None:
    """The message of the pod's PodScheduled=False condition; None when it has none."""
    condition = pod_scheduled(pod)
    if condition is None or condition.status != "False":
        return None
    return condition.message or ""


# --- the FailedScheduling events ------------------------------------------------------------------


def failed_scheduling(
    core: client.CoreV1Api,
    namespace: str,
    done: Callable[[dict[str, list[str]]], bool],
    timeout: float = TIMEOUT,
) -> dict[str, list[str]]:
    """Pod -> the messages of its FailedScheduling events, oldest first, watched for until
    ``done`` holds on them or ``timeout`` passes. kube-scheduler posts its events
    (events.k8s.io/v1, seen here through core/v1: ``note`` is the message) from a goroutine of
    its own, after the condition."""
    selector = "reason=FailedScheduling"
    # uid -> (pod, when, the resourceVersion first seen, message): step 16's timestamps are
    # whole seconds, so the resourceVersion orders the events of one second.
    seen: dict[str, tuple[str, str, int, str]] = {}

    def add(event: client.CoreV1Event) -> None:
        when = event.event_time or event.first_timestamp or event.metadata.creation_timestamp
        first = seen.get(event.metadata.uid)
        seen[event.metadata.uid] = (
            event.involved_object.name,
            when.isoformat() if when else "",
            first[2] if first else int(event.metadata.resource_version),
            event.message or "",
        )

    def by_pod() -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for pod, _, _, message in sorted(seen.values(), key=lambda item: item[1:3]):
            out.setdefault(pod, []).append(message)
        return out

    listed = core.list_namespaced_event(namespace, field_selector=selector)
    for event in listed.items:
        add(event)
    rv = listed.metadata.resource_version
    deadline = time.monotonic() + timeout
    while not done(by_pod()):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        w = watch.Watch()
        try:
            for change in w.stream(
                core.list_namespaced_event,
                namespace,
                field_selector=selector,
                resource_version=rv,
                timeout_seconds=max(1, int(left + 0.999)),
                _request_timeout=left + 5,
            ):
                if change["type"] in ("ADDED", "MODIFIED"):
                    add(change["object"])
                    rv = change["object"].metadata.resource_version
                if done(by_pod()) or time.monotonic() >= deadline:
                    break
        finally:
            w.stop()
    return by_pod()


def rejection_event(events: dict[str, list[str]]) -> bool:
    return any(REJECTION in m for pod in GIANTS for m in events.get(pod, []))


# --- one scheduler's story ------------------------------------------------------------------------


@dataclass
class Story:
    """What one scheduler did with the scenario, from every version of its pods."""

    scheduler: str
    namespace: str
    seconds: float
    # The scenario's own answer: pod -> its node (None: not bound).
    bindings: dict[str, str | None]
    # Pod -> the resourceVersion of its creation.
    created: dict[str, int] = field(default_factory=dict)
    # Pod -> the message of its first PodScheduled=False condition.
    first_failure: dict[str, str] = field(default_factory=dict)
    # Pod -> (node, resourceVersion) of the first version seen bound.
    bound: dict[str, tuple[str, int]] = field(default_factory=dict)
    # The giants' PodScheduled=False messages, each once, in the order first seen, and the
    # giants whose condition said REJECTION at some point.
    giant_messages: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    # Pod -> its FailedScheduling events' messages.
    events: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        scheduler: str,
        namespace: str,
        seconds: float,
        bindings: dict[str, str | None],
        versions: list[client.V1Pod],
    ) -> Story:
        story = cls(scheduler, namespace, seconds, bindings)
        for pod in versions:
            name = pod.metadata.name
            # Resource versions are etcd revisions, which increase (minisched.runner's
            # version_reached compares them likewise).
            rv = int(pod.metadata.resource_version)
            story.created.setdefault(name, rv)
            message = unschedulable_message(pod)
            if message is not None:
                story.first_failure.setdefault(name, message)
                if name in GIANTS and message not in story.giant_messages:
                    story.giant_messages.append(message)
                if name in GIANTS and REJECTION in message and name not in story.rejected:
                    story.rejected.append(name)
            if pod.spec.node_name and name not in story.bound:
                story.bound[name] = (pod.spec.node_name, rv)
        return story

    def problems(self) -> list[str]:
        """What in the story is not the scenario's."""
        out = []
        trio_c = self.created.get("trio-c")
        for name in ("trio-a", "trio-b"):
            if name not in self.first_failure:
                out.append(f"{name} was never marked PodScheduled=False")
        for name in TRIO:
            if name not in self.bound:
                out.append(f"{name} was never bound")
            elif trio_c is None or self.bound[name][1] <= trio_c:
                out.append(f"{name} was bound before trio-c existed")
        for name in GIANTS:
            if name in self.bound:
                out.append(f"{name} was bound to {self.bound[name][0]}")
        if not self.rejected:
            out.append(f"no giant's PodScheduled condition said {REJECTION!r}")
        if not rejection_event(self.events):
            out.append(f"no giant's FailedScheduling event said {REJECTION!r}")
        return out

    def show(self) -> str:
        return (
            f"{self.scheduler} (namespace {self.namespace}, {self.seconds:.1f} s):\n"
            f"  bindings: {self.bindings}\n"
            f"  created at: {self.created}\n"
            f"  first bound: {self.bound}\n"
            f"  first PodScheduled=False: {json.dumps(self.first_failure, indent=4)}\n"
            f"  giants' messages: {self.giant_messages}; rejected: {self.rejected}\n"
            f"  FailedScheduling events: {json.dumps(self.events, indent=4)}"
        )


def play(
    api: client.ApiClient,
    scheduler_name: str,
    wait_for_cache: Callable[..., bool],
    flush_events: Callable[[], object] = lambda: None,
) -> Story:
    """scenarios/step16.py's ``run``, its pods for ``scheduler_name``, in a namespace and on
    nodes of its own (deleted after, with the PodGroups); every version of its pods recorded.
    ``flush_events``: posts what the scheduler recorded so far (step 16's EventRecorder)."""
    started = time.monotonic()
    s = Scenario(
        api,
        "coscheduling",
        timeout=TIMEOUT,
        say=quiet,
        wait_for_cache=wait_for_cache,
        scheduler_name=scheduler_name,
    )
    with s:
        history = PodHistory(s.core, s.namespace)
        try:
            bindings = scenario.run(s)
            assert history.caught_up(), f"the pod watch never caught up with {s.namespace}"
        finally:
            versions = history.stop()
        seconds = time.monotonic() - started
        story = Story.of(scheduler_name, s.namespace, seconds, bindings, versions)
        flush_events()
        trio_a = story.first_failure.get("trio-a")
        story.events = failed_scheduling(
            s.core,
            s.namespace,
            lambda events: trio_a in events.get("trio-a", []) and rejection_event(events),
        )
    return story


# --- the scenario, played by each -----------------------------------------------------------------


@pytest.mark.parametrize("step", built_steps(16), ids=lambda n: f"step{n}")
def test_groups_bind_all_or_nothing_as_with_kube_scheduler(
    step: int, kubeconfig: str, tmp_path: Path
) -> None:
    api = config.new_client_from_config(config_file=kubeconfig)
    try:
        # kube-scheduler v1.23.10 first, with the scenario's profile; stopped before step 16.
        started = time.monotonic()
        with v1_23_kube_scheduler(
            kubeconfig, tmp_path, config=lambda kc: their_config(scenario.CONFIG, kc)
        ) as log:
            up = time.monotonic() - started
            probe = kube_scheduler_probe(api, V1_23_SCHEDULER, KubeSchedulerLog(log))
            theirs = play(api, V1_23_SCHEDULER, probe)
        # Step 16 with the same file, its profile minisched.
        module = importlib.import_module(f"steps.step{step}.config")
        cfg = module.load_config(scenario.CONFIG)
        recorder = WaitingRecorder()
        with running(step, api, recorder, config=cfg) as sched:
            assert list(sched.profiles) == [SCHEDULER_NAME]
            ours = play(api, SCHEDULER_NAME, informer_probe(sched), sched.event_recorder.flush)
    finally:
        api.close()

    both = f"{theirs.show()}\nstep {step}: {ours.show()}\nkube-scheduler's log: {log}"
    print(
        f"\nkube-scheduler v1.23.10 (up in {up:.1f} s): {theirs.seconds:.1f} s;"
        f" step {step}: {ours.seconds:.1f} s\n{both}"
    )
    assert not theirs.problems(), f"kube-scheduler v1.23.10: {theirs.problems()}\n{both}"
    assert not ours.problems(), f"step {step}: {ours.problems()}\n{both}"
    # PreFilter's rejection: the same words, in the condition and in the event.
    for pod, siblings in (("trio-a", 1), ("trio-b", 2)):
        assert ours.first_failure[pod] == theirs.first_failure[pod], both
        assert theirs.first_failure[pod] == pre_filter_message(pod, siblings), both
    first = theirs.first_failure["trio-a"]
    assert first in theirs.events.get("trio-a", []), both
    assert first in ours.events.get("trio-a", []), both
    assert theirs.events["trio-a"][0] == ours.events["trio-a"][0] == first, both


# --- Coscheduling without a pluginConfig ----------------------------------------------------------


def without_plugin_config(api_version: str) -> str:
    """The scenario's CONFIG, in ``api_version``, without its pluginConfig."""
    text, cut = scenario.CONFIG.split("  pluginConfig:\n")
    assert cut.startswith(f"  - name: {COSCHEDULING}\n"), cut
    return text.replace("kubescheduler.config.k8s.io/v1beta2", api_version)


def coscheduling_in(written: Path) -> tuple[dict[str, bool], list[dict[str, Any]]]:
    """From a ``--write-config-to`` file of one profile: at which extension points Coscheduling
    is enabled, and its pluginConfig entries."""
    doc = yaml.safe_load(written.read_text())
    (profile,) = doc["profiles"]
    plugins = profile.get("plugins") or {}
    enabled = {
        point: any(p.get("name") == COSCHEDULING for p in (ps or {}).get("enabled") or [])
        for point, ps in plugins.items()
    }
    configs = [pc for pc in profile.get("pluginConfig") or [] if pc["name"] == COSCHEDULING]
    return enabled, configs


def v1_23_write_config(file: Path, out: Path, kubeconfig: str, tmp_path: Path) -> str:
    """kube-scheduler v1.23's ``--write-config-to``: it builds the profiles (Coscheduling's New
    lists the PodGroups, so it needs the control plane), writes ``out`` and exits; its
    output."""
    scheduler_kubeconfig = Path(kubeconfig).with_name("scheduler.kubeconfig")
    argv = [
        str(V1_23_BINARY),
        f"--config={file}",
        f"--write-config-to={out}",
        "--bind-address=127.0.0.1",
        f"--secure-port={free_port()}",
        f"--cert-dir={tmp_path / 'kube-scheduler-v1.23-certs'}",
        f"--authentication-kubeconfig={scheduler_kubeconfig}",
        f"--authorization-kubeconfig={scheduler_kubeconfig}",
        "--feature-gates=CSIStorageCapacity=false",
    ]
    log = tmp_path / "kube-scheduler-v1.23-write-config.log"
    with log.open("wb") as output:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, stdout=output, stderr=output, timeout=TIMEOUT
        )
    assert done.returncode == 0, f"kube-scheduler v1.23 exited {done.returncode}:\n{tail(log)}"
    return log.read_text(errors="replace")


@pytest.mark.parametrize("api_version", ["v1beta2", "v1beta3"])
@pytest.mark.parametrize("step", built_steps(16), ids=lambda n: f"step{n}")
def test_coscheduling_without_plugin_config_gets_default_args(
    step: int, api_version: str, kubeconfig: str, tmp_path: Path
) -> None:
    scheduler_kubeconfig = Path(kubeconfig).with_name("scheduler.kubeconfig")
    file = tmp_path / f"coscheduling-{api_version}.yaml"
    text = without_plugin_config(f"kubescheduler.config.k8s.io/{api_version}")
    file.write_text(their_config(text, scheduler_kubeconfig))
    theirs_file, ours_file = tmp_path / "theirs.yaml", tmp_path / "ours.yaml"

    v1_23_write_config(file, theirs_file, kubeconfig, tmp_path)
    ours_run = subprocess.run(
        [sys.executable, "-m", f"steps.step{step}", "--config", str(file)]
        + ["--write-config-to", str(ours_file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert ours_run.returncode == 0, ours_run.stdout + ours_run.stderr
    their_points, their_args = coscheduling_in(theirs_file)
    our_points, our_args = coscheduling_in(ours_file)
    print(f"\n{api_version}: kube-scheduler v1.23.10 wrote {their_args}; step {step} {our_args}")
    assert {p for p, on in our_points.items() if on} == {p for p, on in their_points.items() if on}
    assert our_args == their_args, (our_args, their_args)
    (args,) = their_args
    assert args["args"]["kind"] == "CoschedulingArgs"

    # Step 16's Scheduler, built from the file, waits that long at Permit.
    module = importlib.import_module(f"steps.step{step}.config")
    cfg = module.load_config_from_file(str(file))
    api = config.new_client_from_config(config_file=kubeconfig)
    try:
        with running(step, api, WaitingRecorder(), config=cfg) as sched:
            plugin = sched.profiles[V1_23_SCHEDULER].plugins_map[COSCHEDULING]
            assert plugin.schedule_timeout == args["args"]["permitWaitingTimeSeconds"]
            # Running: its informers have listed. (Stopped before its run() has started them,
            # a step's Scheduler fails: Informer.stop joins a thread that is not started yet.)
            for informer in [sched.pod_informer, sched.node_informer, *sched.dynamic_informers]:
                assert informer.wait_for_cache_sync(TIMEOUT), f"{informer.name} never listed"
    finally:
        api.close()
