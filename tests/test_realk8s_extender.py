"""Step 15 beside the real kube-scheduler: the same extender process and the same configuration
file (opt-in, as test_realk8s_configuration.py).

Upstream counterpart: kube-scheduler's ``extenders:`` (pkg/scheduler/extender.go, and the
places generic_scheduler.go and scheduler.go call it). Step 15 ports v1.23.10's HTTPExtender;
given the same file and the same extender, it must place pods where the real kube-scheduler
places them, and fail, or not, as it does when the extender is gone.

ONE sample extender process (``python -m minisched.sample_extender --port 0 --kubeconfig``,
the control plane's admin kubeconfig: it binds with the official client) serves both
schedulers. Each scheduler's file names it twice, in the same ``extenders:`` list:

- ``http://127.0.0.1:PORT``: filterVerb, prioritizeVerb, bindVerb, weight BINDER_WEIGHT, for
  the pods that ask for ``example.com/fast-disk`` (managedResources, ignoredByScheduler);
- ``http://127.0.0.1:PORT/ignorable``: filterVerb, prioritizeVerb, weight IGNORABLE_WEIGHT,
  ``ignorable: true``, no bindVerb, for the pods that ask for ``example.com/slow-disk``
  (ignoredByScheduler too). The sample extender takes the verb from the last segment of the
  path, so this is the same process under another name.

The extender fails the nodes labelled ``example.com/maintenance=true`` as unresolvable and
gives 10 to the node whose name ends in the pod's last digit. The nodes are
realk8s_util.random_nodes, named node1..node6, about half of them untainted, MAINTENANCE_NODES
of them under maintenance; the pods are realk8s_util.random_pod, about half without their
nodeSelector or node affinity (so that fewer fit nowhere), each named with a digit (1..9: 7..9
match no node) or without one, some asking for fast-disk, some for slow-disk, some for both
(an extended resource needs a limit: the pods have one; the real API server refuses a request
without it). The nodes advertise neither resource: that the pods are scheduled at all shows
ignoredByScheduler reached NodeResourcesFit, in v1.36 as in step 15.

Two references, each on a fresh real control plane (etcd and kube-apiserver v1.36.2), as in
test_realk8s_configuration.py: ``v1.36`` (the control plane's own kube-scheduler, a ``v1``
file through up.sh's SCHEDULER_CONFIG, the restricted random stream) and ``v1.23``
(kube-scheduler v1.23.10 started here with a ``v1beta3`` file, the full stream; skipped when
its binary is missing). Step 15 reads the same file in the same version; the files differ only
in the profile's schedulerName.

What is compared, and why:

- Placements and scores (filter, prioritize). Each pod is created twice
  (realk8s_util.play_twins' discipline): step 15's twin first, decided, recorded, deleted;
  then the reference's pod, kept where it binds. Where step 15's best node is unique, both go
  there; a pod pending with both is pending for the same words (v1.23: the FitError's text,
  with the extender's reasons). Both references log at ``-v=10`` each plugin's weighted score
  and each extender's score per node ("Extender scored node for pod"): the shared plugins'
  scores and the extenders' contributions (score x weight x 10) must be step 15's, node for
  node. No pod the extenders manage may go to a node under maintenance.
  v1.36 differs there, upstream's regression (kubernetes#141781, open): past a filter
  extender that is not nodeCacheCapable, its Score plugins are given nodes without their pods,
  and NodeResourcesFit scores every node as if idle. For the pods the extenders filtered,
  v1.36 is compared with step 15's scores with that one change (``as_v1_36_scores_it``): its
  Fit scores must be the idle nodes', and its node among the best of those totals. v1.23, the
  version step 15 ports, is compared as it is.
- Bind. A bound pod that asks for fast-disk was bound by the extender with both: step 15
  recorded an extender bind for it; the reference did not run its DefaultBinder for it (its
  "Attempting to bind pod to node" line, -v=3, is absent) and did for every other bound pod;
  the extender's log (its standard error, one line per request) counts one more
  ``POST /bind`` after each of them, and none for the others.
- The extender stopped (the process ends; its port refuses connections). A pod asking for
  fast-disk stays pending with both, and step 15's PodScheduled message and FailedScheduling
  event say exactly what kube-scheduler's do: Go's ``Post "URL/filter": dial tcp HOST:PORT:
  connect: connection refused``. A pod asking for slow-disk only (the ignorable extender)
  binds with both, with the default binder, on the same node where step 15's best is unique,
  the extender adding no score; the reference logs that it skipped the extender. (Both
  extenders are in the file from the start, so one configuration covers both cases; the
  ignorable one is exercised while it answers too.) The PodScheduled reasons are compared with
  v1.23 only: v1.36 says SchedulerError for an error where v1.23 says Unschedulable.

Skipped unless the real control plane is built (``~/.cache/realk8s/bin/kube-apiserver``) and
``$REALK8S_RUN`` names an instance of one's own (with its ``*_PORT`` variables). The files,
the extender's log and the reference's log (v1.36's: a copy) are in the test's tmp_path.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.utils import parse_quantity

from minisched import steps
from minisched.scenario import SCENARIO_LABEL, Scenario
from scenarios.step15 import FAST_DISK, MAINTENANCE_LABEL
from tests.conftest import built_steps
from tests.realk8s_util import (
    ATTEMPT_LINE,
    BALANCED_ALLOCATION,
    SCORE_LINE,
    SHARED_SCORE_PLUGINS,
    TIMEOUT,
    V1_23_BINARY,
    V1_23_SCHEDULER,
    Decision,
    KubeSchedulerLog,
    Reference,
    Row,
    bound,
    decided,
    decision,
    informer_probe,
    kube_scheduler_probe,
    quiet,
    random_nodes,
    random_pod,
    real_control_plane,
    require_real_control_plane,
    running,
    scheduled_message,
    scheduler_log,
    show_node,
    show_pod,
    v1_23_kube_scheduler,
)
from tests.test_realk8s_resources import WaitingRecorder

ROOT = Path(__file__).resolve().parents[1]
# Step 15's profile: the schedulerName of its twins.
OURS = "side-by-side"
V1_36_SCHEDULER = "kube-scheduler-v1-36"
GROUP = "kubescheduler.config.k8s.io"
SLOW_DISK = "example.com/slow-disk"
FIT = "NodeResourcesFit"
BINDER_WEIGHT = 5
IGNORABLE_WEIGHT = 2
IGNORABLE_PATH = "/ignorable"
# An extender's score (0..10) counts ten times in a node's total (MAX_NODE_SCORE / 10).
EXTENDER_SCALE = 10
MAINTENANCE_NODES = 2

# The random streams: their seeds, and how many pods each creates.
SEED = 1536
PODS = 30
V1_23_SEED = 2315
V1_23_PODS = 40

# kube-scheduler at -v=10: prioritizeNodes logs each extender's (unweighted) score per node.
EXTENDER_SCORE_LINE = re.compile(
    r'"Extender scored node for pod" pod="(?P<pod>[^"]+)" extender="(?P<extender>[^"]+)"'
    r' node="(?P<node>[^"]+)" score=(?P<score>-?[0-9]+)'
)
# DefaultBinder, at -v=3 (v1.23 and v1.36): an extender's binding logs no such line.
DEFAULT_BIND_LINE = re.compile(r'"Attempting to bind pod to node" .*?\bpod="(?P<pod>[^"]+)"')
# findNodesThatPassExtenders, for an ignorable extender's error (v1.23 and v1.36, -v=0).
SKIPPED_LINE = "Skipping extender as it returned error and has ignorable flag set"
# The sample extender's log line for a request (http.server's log_request).
REQUEST_LINE = re.compile(r'"POST (?P<path>\S+) HTTP/[0-9.]+" (?P<code>[0-9]+)')


def configuration(version: str, scheduler_name: str, url: str) -> str:
    """The file in ``version`` (v1, v1beta3): one profile ``scheduler_name`` with the
    default plugins, no leader election, and the sample extender at ``url`` twice (see the
    module's docstring)."""
    return (
        f"apiVersion: {GROUP}/{version}\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n"
        "  leaderElect: false\n"
        "profiles:\n"
        f"- schedulerName: {scheduler_name}\n"
        "extenders:\n"
        f"- urlPrefix: {json.dumps(url)}\n"
        "  filterVerb: filter\n"
        "  prioritizeVerb: prioritize\n"
        "  bindVerb: bind\n"
        f"  weight: {BINDER_WEIGHT}\n"
        "  managedResources:\n"
        f"  - name: {FAST_DISK}\n"
        "    ignoredByScheduler: true\n"
        f"- urlPrefix: {json.dumps(url + IGNORABLE_PATH)}\n"
        "  filterVerb: filter\n"
        "  prioritizeVerb: prioritize\n"
        f"  weight: {IGNORABLE_WEIGHT}\n"
        "  ignorable: true\n"
        "  managedResources:\n"
        f"  - name: {SLOW_DISK}\n"
        "    ignoredByScheduler: true\n"
    )


def extender_weights(url: str) -> dict[str, int]:
    """Each extender's name (its urlPrefix) -> its weight."""
    return {url: BINDER_WEIGHT, url + IGNORABLE_PATH: IGNORABLE_WEIGHT}


def extender_label(name: str) -> str:
    """How step 15 records an extender's score among the plugins' (schedule_one's)."""
    return f"extender {name}"


# --- the sample extender, a process of its own ---------------------------------------------------


class SampleExtender:
    """``python -m minisched.sample_extender`` for the duration: its URL (the first line on
    its standard output) and its log (standard error, one line per request), read as it grows
    by a thread of its own and copied to ``log``; ``_changed`` guards ``lines``."""

    def __init__(self, kubeconfig: str, log: Path) -> None:
        argv = [sys.executable, "-m", "minisched.sample_extender", "--port", "0"]
        self.proc = subprocess.Popen(
            [*argv, "--kubeconfig", kubeconfig],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(
            target=self._read, args=(log,), name="sample-extender-log", daemon=True
        )
        self._reader.start()
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.stop()
            raise AssertionError(f"the sample extender did not start:\n{''.join(self.lines)}")
        self.port = int(self.url.rsplit(":", 1)[1])

    def _read(self, log: Path) -> None:
        assert self.proc.stderr is not None
        with log.open("w") as out:
            for line in self.proc.stderr:
                out.write(line)
                out.flush()
                with self._changed:
                    self.lines.append(line)
                    self._changed.notify_all()

    def requests(self, path: str) -> list[str]:
        """The log lines of the requests to ``path`` (``/bind``, ``/ignorable/filter``)."""
        with self._changed:
            return self._requests(path)

    def wait_requests(self, path: str, count: int, timeout: float = 10.0) -> int:
        """Until the log shows ``count`` requests to ``path`` (or more); how many it shows. A
        request is logged once answered: the pod may be seen bound before its line is."""
        with self._changed:
            self._changed.wait_for(lambda: len(self._requests(path)) >= count, timeout)
            return len(self._requests(path))

    def _requests(self, path: str) -> list[str]:
        """``requests``, the lock held."""
        return [
            line for line in self.lines if (m := REQUEST_LINE.search(line)) and m["path"] == path
        ]

    def stop(self) -> None:
        """SIGTERM (it shuts its server down and exits), SIGKILL if that fails; then its port
        refuses connections."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextmanager
def sample_extender(kubeconfig: str, log: Path) -> Iterator[SampleExtender]:
    extender = SampleExtender(kubeconfig, log)
    try:
        yield extender
    finally:
        extender.stop()


@contextmanager
def reference_with_extender(
    version: str, tmp_path: Path
) -> Iterator[tuple[Reference, SampleExtender]]:
    """kube-scheduler ``version`` and the sample extender, both running with the file on a
    fresh real control plane, for the duration; skipped (v1.23) when its binary is missing.

    v1.36's file must name the extender before up.sh starts it: the extender starts first,
    with the admin kubeconfig up.sh is about to write (it reads it at its first bind)."""
    require_real_control_plane()
    extender_log = tmp_path / "sample-extender.log"
    if version == "v1.36":
        admin = Path(os.environ["REALK8S_RUN"]) / "admin.kubeconfig"
        with sample_extender(str(admin), extender_log) as extender:
            file = tmp_path / "kube-scheduler-v1.36.yaml"
            file.write_text(configuration("v1", V1_36_SCHEDULER, extender.url))
            with real_control_plane(
                scheduler=True, scheduler_config=file, scheduler_args=["--v=10"]
            ) as kubeconfig:
                assert Path(kubeconfig) == admin, f"up.sh's kubeconfig is {kubeconfig}"
                try:
                    yield (
                        Reference(
                            "v1.36",
                            V1_36_SCHEDULER,
                            any_shape=False,
                            kubeconfig=kubeconfig,
                            log=scheduler_log(),
                        ),
                        extender,
                    )
                finally:  # the control plane's log goes with it: a copy stays
                    shutil.copyfile(scheduler_log(), tmp_path / "kube-scheduler-v1.36.log")
        return
    if not os.access(V1_23_BINARY, os.X_OK):
        pytest.skip(f"kube-scheduler v1.23 not built on this machine ({V1_23_BINARY})")
    with (
        real_control_plane() as kubeconfig,
        sample_extender(kubeconfig, extender_log) as extender,
    ):

        def v1beta3(scheduler_kubeconfig: Path) -> str:
            text = configuration("v1beta3", V1_23_SCHEDULER, extender.url)
            return (
                text
                + f"clientConnection: {{kubeconfig: {json.dumps(str(scheduler_kubeconfig))}}}\n"
            )

        with v1_23_kube_scheduler(kubeconfig, tmp_path, config=v1beta3) as log:
            reference = Reference(
                "v1.23", V1_23_SCHEDULER, any_shape=True, kubeconfig=kubeconfig, log=log
            )
            yield reference, extender


# --- the nodes and pods --------------------------------------------------------------------------


def extender_nodes(rng: random.Random, any_shape: bool) -> list[tuple[str, dict[str, Any]]]:
    """realk8s_util's random nodes, named node1..node6 (the extender's prioritize reads the
    digit), MAINTENANCE_NODES of them labelled for maintenance (its filter fails them)."""
    nodes = [
        (f"node{i}", options) for i, (_, options) in enumerate(random_nodes(rng, any_shape), 1)
    ]
    for _, options in nodes:
        if rng.random() < 0.5:  # fewer taints than realk8s_util's: fewer pods fit nowhere
            options["taints"] = None
    for _, options in rng.sample(nodes, MAINTENANCE_NODES):
        options["labels"][MAINTENANCE_LABEL] = "true"
    return nodes


def extender_pod(rng: random.Random, any_shape: bool, i: int) -> tuple[str, dict[str, Any]]:
    """A random pod's name (ending in a digit 1..9, or in a letter) and create_pod's keywords:
    realk8s_util's random pod, asking for fast-disk, slow-disk, both or neither."""
    spec = random_pod(rng, any_shape)
    for constraint in ("node_selector", "affinity"):  # fewer than realk8s_util's
        if rng.random() < 0.5:
            spec.pop(constraint, None)
    if rng.random() < 0.55:
        spec["requests"][FAST_DISK] = "1"
    if rng.random() < 0.3:
        spec["requests"][SLOW_DISK] = "1"
    tag = f"d{rng.randint(1, 9)}" if rng.random() < 0.75 else "x"
    return f"p{i:02d}-{tag}", spec


def create_pod(s: Scenario, name: str, spec: dict[str, Any]) -> None:
    """Scenario.create_pod's pod, with a limit equal to each extended resource's request: the
    API server refuses an extended resource requested without one ("Limit must be set for
    non overcommitable resources")."""
    requests: dict[str, str] = spec["requests"]
    limits = {k: v for k, v in requests.items() if "/" in k}
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={SCENARIO_LABEL: s.name}),
        spec=client.V1PodSpec(
            scheduler_name=s.scheduler_name,
            containers=[
                client.V1Container(
                    name="pause",
                    image="registry.k8s.io/pause:3.9",
                    resources=client.V1ResourceRequirements(
                        requests=requests or None, limits=limits or None
                    ),
                )
            ],
            tolerations=spec.get("tolerations"),
            node_selector=spec.get("node_selector"),
            affinity=spec.get("affinity"),
        ),
    )
    s.core.create_namespaced_pod(s.namespace, pod)
    s.pods.append(name)


def failed_scheduling(
    core: client.CoreV1Api, namespace: str, pod: str, timeout: float = TIMEOUT
) -> str | None:
    """The message of the pod's first FailedScheduling event, watched for until ``timeout``
    (kube-scheduler posts events from a goroutine of its own); None if none came."""
    selector = f"involvedObject.name={pod},reason=FailedScheduling"
    listed = core.list_namespaced_event(namespace, field_selector=selector)
    if listed.items:
        return str(listed.items[0].message)
    w = watch.Watch()
    try:
        for event in w.stream(
            core.list_namespaced_event,
            namespace,
            field_selector=selector,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=int(timeout),
            _request_timeout=timeout + 5,
        ):
            if event["type"] in ("ADDED", "MODIFIED"):
                return str(event["object"].message)
    finally:
        w.stop()
    return None


# --- one pod, twice ------------------------------------------------------------------------------


@dataclass
class Twin:
    """One pod's two decisions (``row``), and how each was bound."""

    name: str
    spec: dict[str, Any]
    row: Row
    our_pod: str
    their_pod: str
    # The node each scheduler bound its pod to ("" when pending).
    ours: str = ""
    theirs: str = ""
    # Step 15 recorded an extender binding for its twin.
    ours_via_extender: bool = False
    # The extender's POST /bind lines after each decision, and how many there should be.
    binds: tuple[int, int] = (0, 0)
    expected_binds: tuple[int, int] = (0, 0)
    # The PodScheduled reasons, and the FailedScheduling events' messages (when asked for).
    our_reason: str = ""
    their_reason: str = ""
    our_event: str | None = None
    their_event: str | None = None

    @property
    def binder_managed(self) -> bool:
        """Whether the binding extender manages the pod (it asks for fast-disk)."""
        return FAST_DISK in self.spec["requests"]

    def bind_problem(self, default_bound: set[str], namespace: str) -> str | None:
        """What is wrong with how the two pods were bound, or None."""
        if self.binds != self.expected_binds:
            return f"the extender logged {self.binds} binds, not {self.expected_binds}"
        if not (self.ours and self.theirs):
            return None
        via_default = f"{namespace}/{self.their_pod}" in default_bound
        if self.binder_managed:
            if not self.ours_via_extender:
                return "step 15 did not bind it through the extender"
            if via_default:
                return f"{self.row.kube} bound it with DefaultBinder, not through the extender"
        else:
            if self.ours_via_extender:
                return "step 15 bound it through the extender, which does not manage it"
            if not via_default:
                return f"{self.row.kube} did not bind it with DefaultBinder"
        return None


def reason(pod: Any) -> str:
    conditions = (pod.status and pod.status.conditions) or []
    return next((c.reason or "" for c in conditions if c.type == "PodScheduled"), "")


class Twins:
    """The twins' namespace and nodes, and what both schedulers did with each pod so far
    (realk8s_util.play_twins' discipline, with the extender's bind log counted per pod)."""

    def __init__(
        self,
        step: int,
        api: client.ApiClient,
        sched: Any,
        recorder: WaitingRecorder,
        reference: Reference,
        extender: SampleExtender,
        shared: frozenset[str],
    ) -> None:
        self.step, self.sched, self.recorder = step, sched, recorder
        self.reference, self.extender, self.shared = reference, extender, shared
        self.kube = f"kube-scheduler {reference.version}"
        self.kube_log = KubeSchedulerLog(reference.log) if reference.log is not None else None
        self.ours = Scenario(
            api,
            "extender",
            timeout=TIMEOUT,
            say=quiet,
            wait_for_cache=informer_probe(sched),
            scheduler_name=OURS,
        )
        self.theirs = Scenario(
            api, "extender", timeout=TIMEOUT, say=quiet, scheduler_name=reference.scheduler_name
        )
        self.step_has_seen = informer_probe(sched)
        self.api = api
        self.expected_binds = 0

    @property
    def namespace(self) -> str:
        return self.ours.namespace

    def create_nodes(self, nodes: list[tuple[str, dict[str, Any]]]) -> None:
        """The nodes, seen by both schedulers (kube-scheduler: a probe pod bound on each)."""
        self.ours.create_nodes(nodes, "scenario: created the nodes")
        self.theirs.namespace = self.ours.namespace
        names = [name for name, _ in nodes]
        self.ours.scheduler_has_seen("node", names)
        probe = kube_scheduler_probe(self.api, self.reference.scheduler_name, self.kube_log)
        assert probe("node", names), f"{self.kube} never saw the nodes"

    def play(self, name: str, spec: dict[str, Any], *, events: bool = False) -> Twin:
        """Step 15's twin, decided, recorded and deleted; then the reference's pod, kept if
        bound. With ``events``, each pod left pending has its FailedScheduling event read."""
        our_pod, their_pod = f"ms-{name}", f"ks-{name}"
        key = f"{self.namespace}/{our_pod}"
        create_pod(self.ours, our_pod, spec)
        pods = self.ours.wait_for(lambda pods: decided(pods.get(our_pod)))
        our = pods.get(our_pod)
        assert decided(our), f"step {self.step} did not decide {our_pod}"
        ours_decided = decision(list(self.recorder.events), key)
        assert ours_decided.node == our.spec.node_name, (
            f"{our_pod} bound to {our.spec.node_name}, selected {ours_decided.node}"
        )
        managed = FAST_DISK in spec["requests"]
        via_extender = False
        if bound(our):
            # Recorded once the binding returned, which may be after the watch saw it.
            assert self.recorder.wait_for("bound", key), f"step {self.step} never bound {key}"
            via_extender = any(
                event == "extender" and f.get("pod") == key and f.get("verb") == "bind"
                for event, f in list(self.recorder.events)
            )
            self.expected_binds += int(managed)
        after_ours = (
            self.expected_binds,
            self.extender.wait_requests("/bind", self.expected_binds),
        )
        our_event = None
        if events and not bound(our):
            assert self.sched.event_recorder.flush(), "step 15's events were not posted"
            our_event = failed_scheduling(self.ours.core, self.namespace, our_pod)
        self.ours.delete_pod(our_pod)
        if self.kube_log is not None and bound(our):
            # Its cache must have let the bound twin go (see KubeSchedulerLog).
            assert self.kube_log.wait_deleted([key]), f"{self.kube} never logged {key} deleted"

        create_pod(self.theirs, their_pod, spec)
        pods = self.ours.wait_for(lambda pods: decided(pods.get(their_pod)))
        their = pods.get(their_pod)
        assert decided(their), f"{self.kube} did not decide {their_pod}"
        self.expected_binds += int(managed and bound(their))
        after_theirs = (
            self.expected_binds,
            self.extender.wait_requests("/bind", self.expected_binds),
        )
        their_event = None
        if events and not bound(their):
            their_event = failed_scheduling(self.theirs.core, self.namespace, their_pod)
        if bound(their):
            # Step 15 counts it before its next twin (one watch brings both in order).
            version = their.metadata.resource_version
            assert self.step_has_seen("pod", [their_pod], versions={their_pod: version})
        else:
            self.theirs.delete_pod(their_pod)  # no room taken: it only keeps it busy
        return Twin(
            name=name,
            spec=spec,
            row=Row(
                pod=name,
                spec=show_pod(spec),
                theirs=their.spec.node_name,
                ours=ours_decided,
                their_message=scheduled_message(their),
                our_message=scheduled_message(our),
                kube=self.kube,
                same_words=self.reference.version == "v1.23",
                step=self.step,
                shared=self.shared,
            ),
            our_pod=our_pod,
            their_pod=their_pod,
            ours=our.spec.node_name or "",
            theirs=their.spec.node_name or "",
            ours_via_extender=via_extender,
            binds=(after_ours[1], after_theirs[1]),
            expected_binds=(after_ours[0], after_theirs[0]),
            our_reason=reason(our),
            their_reason=reason(their),
            our_event=our_event,
            their_event=their_event,
        )


@contextmanager
def twins(*args: Any) -> Iterator[Twins]:
    played = Twins(*args)
    with played.ours:
        yield played


# --- kube-scheduler's log ------------------------------------------------------------------------


def logged_decisions(
    log: Path, weights: dict[str, int]
) -> tuple[dict[str, dict[str, dict[str, int]]], set[str]]:
    """From kube-scheduler's -v=10 log: pod -> node -> plugin -> weighted score of each pod's
    last attempt, the extenders' scores among them (as step 15 records them: ``extender
    <urlPrefix>``, score x weight x 10); and the pods DefaultBinder bound."""
    scores: dict[str, dict[str, dict[str, int]]] = {}
    default_bound: set[str] = set()
    for line in log.read_text(errors="replace").splitlines():
        if m := ATTEMPT_LINE.search(line):
            scores.pop(m["pod"], None)
        elif m := SCORE_LINE.search(line):
            by_node = scores.setdefault(m["pod"], {})
            by_node.setdefault(m["node"], {})[m["plugin"]] = int(m["score"])
        elif m := EXTENDER_SCORE_LINE.search(line):
            by_node = scores.setdefault(m["pod"], {})
            plugin = extender_label(m["extender"])
            score = int(m["score"]) * weights[m["extender"]] * EXTENDER_SCALE
            by_plugin = by_node.setdefault(m["node"], {})
            by_plugin[plugin] = by_plugin.get(plugin, 0) + score
        elif m := DEFAULT_BIND_LINE.search(line):
            default_bound.add(m["pod"])
    return scores, default_bound


def count_skipped_as_zero(row: Row) -> None:
    """v1.36's scores as v1.23 would log them: a shared Score plugin it did not run (its
    PreScore said Skip) scores 0 on each node, where step 15 ran it. Not the extenders: an
    extender score missing from the log stays missing."""
    theirs = row.their_scores
    if not theirs:
        return
    ran = {p for by_plugin in theirs.values() for p in by_plugin}
    ours = {p for by_plugin in row.ours.scores.values() for p in by_plugin}
    for plugin in (ours & SHARED_SCORE_PLUGINS & row.shared) - ran:
        for by_plugin in theirs.values():
            by_plugin[plugin] = 0


def idle_fit(options: dict[str, Any], requests: dict[str, str]) -> int:
    """v1.36's NodeResourcesFit score (LeastAllocated: CPU and memory, weight 1 each) of a node
    of ``options`` that holds no pod, for a pod of ``requests``: what it scores past a filter
    extender that is not nodeCacheCapable (kubernetes#141781, see ``as_v1_36_scores_it``)."""
    total = 0
    for resource, default, unit in (("cpu", "100m", 1000), ("memory", "200Mi", 1)):
        capacity = int(parse_quantity(options[resource]) * unit)
        requested = int(parse_quantity(requests.get(resource, default)) * unit)
        total += 0 if requested > capacity else (capacity - requested) * 100 // capacity
    return total // 2


def as_v1_36_scores_it(row: Row, spec: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> Row:
    """The row, step 15's NodeResourcesFit scores replaced by those of idle nodes.

    Why: since kubernetes#130537 (v1.34) the Score plugins are given the NodeInfos the Filter
    phase kept, and v1.36's HTTPExtender.Filter, for an extender that is not
    nodeCacheCapable, wraps each node it gets back in a new, empty NodeInfo: NodeResourcesFit
    then scores every node as if it held no pod (kubernetes#141781, open; fix proposed in
    kubernetes#141919). v1.23, which step 15 ports, scores the snapshot's node. So, for a pod
    the extenders filtered, v1.36's node must be among the best of step 15's scores with
    that one change, and v1.36's Fit scores must be the idle nodes' (which shows the cause).
    BalancedAllocation is not compared on v1.36's stream (see SHARED_SCORE_PLUGINS): on
    idle nodes of GI_PER_CPU it still scores every node alike."""
    scores = {
        node: {**by_plugin, FIT: idle_fit(nodes[node], spec["requests"])}
        for node, by_plugin in row.ours.scores.items()
    }
    model = Decision(scores=scores)
    best = model.best()
    model.node = best[0] if len(best) == 1 or row.theirs not in best else row.theirs
    return dataclasses.replace(row, ours=model, kube=f"{row.kube} (kubernetes#141781)")


def steered(row: Row, *extenders: str) -> bool:
    """Whether the extenders' scores changed the row's best nodes (the step's scores)."""
    without = Decision(
        scores={
            node: {p: s for p, s in by_plugin.items() if p not in extenders}
            for node, by_plugin in row.ours.scores.items()
        }
    )
    return without.best() != row.ours.best()


def rejected_by(recorder: WaitingRecorder, key: str, label: str) -> set[str]:
    """The nodes the step's extender ``label`` failed for the pod ``key``."""
    return {
        f["node"]
        for event, f in list(recorder.events)
        if event == "filter" and f.get("pod") == key and f.get("plugin") == label
    }


# --- the test ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "seed", "pods"),
    [
        pytest.param("v1.36", SEED, PODS, id=f"v1.36-seed{SEED}"),
        pytest.param("v1.23", V1_23_SEED, V1_23_PODS, id=f"v1.23-seed{V1_23_SEED}"),
    ],
)
@pytest.mark.parametrize("step", built_steps(15), ids=lambda n: f"step{n}")
def test_same_extender_same_file_same_placements(
    step: int, version: str, seed: int, pods: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    with reference_with_extender(version, tmp_path) as (reference, extender):
        kube = f"kube-scheduler {reference.version}"
        url = extender.url
        weights = extender_weights(url)
        binder, ignorable = (extender_label(name) for name in weights)
        ours_file = tmp_path / f"step{step}.yaml"
        ours_file.write_text(configuration("v1" if version == "v1.36" else "v1beta3", OURS, url))
        module = importlib.import_module(f"{steps.get(step).package}.config")
        cfg = module.load_config_from_file(str(ours_file))
        nodes = extender_nodes(rng, reference.any_shape)
        stream = [extender_pod(rng, reference.any_shape, i) for i in range(pods)]
        # v1.36's BalancedAllocation scores otherwise (kubernetes#135573): on its stream it
        # must score every node alike, as kube-scheduler's other plugins.
        shared = SHARED_SCORE_PLUGINS - ({BALANCED_ALLOCATION} if version == "v1.36" else set())
        shared |= {binder, ignorable}
        api = config.new_client_from_config(config_file=reference.kubeconfig)
        recorder = WaitingRecorder()
        with (
            running(step, api, recorder, config=cfg) as sched,
            twins(step, api, sched, recorder, reference, extender, frozenset(shared)) as played,
        ):
            assert [e.name() for e in sched.extenders] == list(weights)
            played.create_nodes(nodes)
            stream_twins = [played.play(name, spec) for name, spec in stream]
            namespace = played.namespace
            keys = {t.name: f"{namespace}/{t.our_pod}" for t in stream_twins}

            # The extender goes away.
            extender.stop()
            dial = f"dial tcp 127.0.0.1:{extender.port}: connect: connection refused"
            refused = f'Post "{url}/filter": {dial}'
            late1 = played.play(
                "late1", {"requests": {"cpu": "250m", "memory": "1Gi", FAST_DISK: "1"}}, events=True
            )
            late2 = played.play(
                "late2", {"requests": {"cpu": "250m", "memory": "1Gi", SLOW_DISK: "1"}}
            )
            late2_key = f"{namespace}/{late2.our_pod}"
            late2_filtered = any(
                event == "extender"
                and f.get("pod") == late2_key
                and f.get("extender") == url + IGNORABLE_PATH
                and f.get("verb") == "filter"
                for event, f in list(recorder.events)
            )
        assert reference.log is not None
        logged, default_bound = logged_decisions(reference.log, weights)
        reference_text = reference.log.read_text(errors="replace")
        bind_lines = len(extender.requests("/bind"))

    all_twins = [*stream_twins, late1, late2]
    for twin in all_twins:
        twin.row.their_scores = logged.get(f"{namespace}/{twin.their_pod}", {})
        if version == "v1.36":
            count_skipped_as_zero(twin.row)

    # Placements, scores and bindings of the stream. On v1.36, the pods the extenders filtered
    # are compared with step 15's scores as v1.36 computes them (as_v1_36_scores_it).
    by_name = dict(nodes)
    modelled = [
        t
        for t in stream_twins
        if version == "v1.36"
        and t.row.ours.scores
        and (FAST_DISK in t.spec["requests"] or SLOW_DISK in t.spec["requests"])
    ]
    for t in modelled:
        t.row = as_v1_36_scores_it(t.row, t.spec, by_name)
    # Where that sent v1.36's pod elsewhere than step 15's twin.
    moved = [t for t in modelled if t.theirs and t.ours and t.theirs != t.ours]
    problems = [
        (t, p)
        for t in stream_twins
        if (p := t.row.problem() or t.bind_problem(default_bound, namespace))
    ]
    maintenance = {name for name, options in nodes if MAINTENANCE_LABEL in options["labels"]}
    for t in stream_twins:
        managed = FAST_DISK in t.spec["requests"] or SLOW_DISK in t.spec["requests"]
        if managed and {t.ours, t.theirs} & maintenance:
            problems.append((t, "a pod the extenders manage went to a node under maintenance"))
    rows = [t.row for t in stream_twins]
    table = "\n".join(
        f"  {t.name}: {t.theirs or 'pending'} / {t.ours or 'pending'}"
        f"  binds {t.binds} of {t.expected_binds}  {t.row.spec}"
        for t in stream_twins
    )
    context = (
        f"{kube}, seed {seed}, extender {url}\nstep {step}'s file:\n{ours_file.read_text()}"
        "nodes:\n"
        + "\n".join(f"  {show_node(name, options)}" for name, options in nodes)
        + f"\nevery pod, in order ({kube}'s / step {step}'s):\n{table}"
    )
    assert not problems, (
        f"{len(problems)} of {len(rows)} pods differ\n"
        + "\n".join(f"{p}\n{t.row.show()}" for t, p in problems)
        + "\n"
        + context
    )
    both_bound = [t for t in stream_twins if t.ours and t.theirs]
    via_extender = [t for t in both_bound if t.binder_managed]
    # The pods whose unique best the extenders' scores made (without them, another node).
    decided_by_extender = [
        t for t in both_bound if len(t.row.ours.best()) == 1 and steered(t.row, binder, ignorable)
    ]
    filtered = [
        t
        for t in stream_twins
        if rejected_by(recorder, keys[t.name], binder)
        | rejected_by(recorder, keys[t.name], ignorable)
    ]
    scored = [t for t in both_bound if t.row.their_scores]
    pending = [t for t in stream_twins if not t.ours and not t.theirs]
    print(
        f"\n{kube}, seed {seed}: {len(rows)} twins: {len(both_bound)} bound by both"
        f" ({len(via_extender)} through the extender), {len(decided_by_extender)} with a unique"
        f" best told apart by an extender's score, {len(filtered)} with nodes the extenders"
        f" failed, scores compared for {len(scored)} ({len(modelled)} with idle nodes' Fit,"
        f" kubernetes#141781, {len(moved)} placed elsewhere for it), {len(pending)} pending"
        f" with both; extender bind requests: {bind_lines}; extender stopped: late1 pending"
        f" ({late1.our_reason} / {late1.their_reason}: {late1.row.their_message}), late2 on"
        f" {late2.theirs} / {late2.ours} (step {step}'s best: {', '.join(late2.row.ours.best())})"
    )
    # The stream must have compared something of each verb.
    assert via_extender and decided_by_extender and filtered and scored, context
    assert bind_lines == played.expected_binds == 2 * len(via_extender), context

    # The extender stopped: a pod it manages waits, with the words kube-scheduler gives.
    assert not late1.ours and not late1.theirs, late1.row.show()
    assert late1.row.our_message == late1.row.their_message == refused, late1.row.show()
    assert late1.our_event == late1.their_event == refused, (late1.our_event, late1.their_event)
    assert late1.bind_problem(default_bound, namespace) is None, late1.row.show()
    if version == "v1.23":  # v1.36 says SchedulerError for an error, v1.23 Unschedulable
        assert late1.our_reason == late1.their_reason, (late1.our_reason, late1.their_reason)
    # The ignorable one does not stop the pod it manages: both bind it, on the same node where
    # step 15's best is unique, with the plugins' scores alone, with the default binder.
    assert late2.ours and late2.theirs, late2.row.show()
    assert late2.row.problem() is None, late2.row.show()
    assert late2.bind_problem(default_bound, namespace) is None, late2.row.show()
    assert late2_filtered, f"step {step} never called the ignorable extender for late2"
    assert not any(
        p.startswith("extender") for by_plugin in late2.row.ours.scores.values() for p in by_plugin
    ), late2.row.show()
    skipped = [line for line in reference_text.splitlines() if SKIPPED_LINE in line]
    assert any(f"{url}{IGNORABLE_PATH}/filter" in line for line in skipped), (
        f"{kube} never logged that it skipped the ignorable extender"
    )
