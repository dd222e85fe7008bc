"""What the side-by-side tests with the real kube-scheduler share (test_realk8s_constraints.py
for step 13, test_realk8s_configuration.py for step 14's configuration files): a fresh real
control plane (shared/realk8s), kube-scheduler v1.23.10 started beside it, the waits that make
both schedulers decide each pod from the same cluster state, the seeded random nodes and pods,
the stream of twin pods, each scheduler's decision and per-plugin scores, and the rows that
compare them.

The control plane is v1.36.2 (etcd, kube-apiserver, optionally its own kube-scheduler); every
helper here skips, in one line, unless it is built (``~/.cache/realk8s/bin/kube-apiserver``)
and ``$REALK8S_RUN`` names an instance of one's own (with its ``*_PORT`` variables).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from minisched import steps
from minisched.runner import new_scheduler, version_reached
from minisched.scenario import NODE_SELECTOR, SCHEDULER_NAME, Scenario
from scenarios.step13 import unschedulable
from tests.test_bench import REALK8S, realk8s_scripts
from tests.test_permit import join_binding_threads
from tests.test_realk8s_resources import WaitingRecorder

TIMEOUT = 30.0
DEFAULT_SCHEDULER = "default-scheduler"
V1_23_SCHEDULER = "kube-scheduler-v1-23"
V1_23_BINARY = Path(
    os.environ.get(
        "KUBE_SCHEDULER_V1_23", Path.home() / ".cache" / "realk8s" / "v1.23" / "kube-scheduler"
    )
)

# Nodes: names end in a letter, so the workshop's NodeNumber plugin scores none of them.
NODE_NAMES = [f"node-{c}" for c in "abcdef"]
DISKS = ["ssd", "hdd"]
ZONES = ["a", "b", "c"]
CORES = [4, 8, 12, 16, 24, 32]
# Taints the nodes may carry: (key, value); keys differ, so a node never has two taints with
# the same key and effect (the API server refuses that).
TAINTS = [("dedicated", "ml"), ("spot", "true"), ("gpu", "nvidia"), ("team", "web")]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
# Memory per CPU in the v1.36 stream, the same on every node and in every pod's requests. Nodes
# and pods of other shapes are left out of it because NodeResourcesBalancedAllocation scores
# differently since v1.36 (kubernetes#135573): v1.23 scores the node's balance with the pod,
# (1 - std) * 100; v1.36 scores the change the pod makes to it, 50 + (50 + with - without) / 2,
# so 75 when it makes none. That alone can send a pod elsewhere: with pods of other shapes, a
# pod of 512Mi and no CPU could go to node-d (CPU 0.75 used, memory 0.23) or node-f (0.8, 0.13);
# v1.23 prefers node-d (73 against 66), v1.36 scores both 75 and NodeResourcesFit (48 against
# 46) sends it to node-f. With one shape, every node's CPU and memory fractions are equal, with
# or without the pod: BalancedAllocation gives every node 100 in v1.23 and 75 in v1.36, and
# decides nothing. It also leaves out best-effort pods, which v1.36's BalancedAllocation does
# not score at all (kubernetes#129138). The v1.23 stream has every shape.
GI_PER_CPU = 4
# Label key -> the values a node may have.
LABEL_VALUES = {"disk": DISKS, "zone": ZONES, "cores": [str(c) for c in CORES]}

TOLERATE_ALL = client.V1Toleration(operator="Exists")
BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
# The score plugins the steps share with kube-scheduler (step 13's NodeNumber scores none of the
# nodes here; kube-scheduler's others must score all nodes alike).
SHARED_SCORE_PLUGINS = frozenset(
    {"TaintToleration", "NodeAffinity", "NodeResourcesFit", BALANCED_ALLOCATION}
)


# --- the control plane ---------------------------------------------------------------------------


def require_real_control_plane() -> Path:
    """shared/realk8s's scripts; skips, in one line, unless the real control plane is built on
    this machine and ``$REALK8S_RUN`` names an instance of one's own."""
    scripts = realk8s_scripts()
    if not os.access(REALK8S / "bin" / "kube-apiserver", os.X_OK) or scripts is None:
        pytest.skip("real control plane not built on this machine (shared/realk8s)")
    if not os.environ.get("REALK8S_RUN"):
        pytest.skip("opt-in: set REALK8S_RUN and its *_PORT variables to an instance of your own")
    return scripts


@contextmanager
def real_control_plane(
    *,
    scheduler: bool = False,
    scheduler_config: Path | None = None,
    scheduler_args: Sequence[str] = (),
) -> Iterator[str]:
    """A fresh real control plane of the instance ``$REALK8S_RUN`` names, for the duration
    (wiped after); yields its admin kubeconfig. With ``scheduler``, its own kube-scheduler
    v1.36 runs too: with ``--config`` a copy of ``scheduler_config`` (up.sh's
    ``SCHEDULER_CONFIG``: it fills in clientConnection.kubeconfig) and ``scheduler_args`` after
    up.sh's flags (``SCHEDULER_EXTRA_ARGS``). Its log: ``scheduler_log()``."""
    scripts = require_real_control_plane()
    env = dict(os.environ)
    if scheduler_config is not None:
        env["SCHEDULER_CONFIG"] = str(scheduler_config)
    if scheduler_args:
        env["SCHEDULER_EXTRA_ARGS"] = " ".join(scheduler_args)
    argv = [str(scripts / "up.sh"), "--fresh", *(["--scheduler"] if scheduler else [])]
    try:
        up = subprocess.run(argv, capture_output=True, text=True, timeout=90, env=env)
        assert up.returncode == 0, up.stderr[-2000:]
        yield up.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run([str(scripts / "down.sh"), "--wipe"], capture_output=True, timeout=60)


def scheduler_log() -> Path:
    """Where up.sh's kube-scheduler logs (deleted with the control plane)."""
    return Path(os.environ["REALK8S_RUN"]) / "logs" / "kube-scheduler.log"


def bound(pod: Any) -> bool:
    return pod is not None and bool(pod.spec.node_name)


def decided(pod: Any) -> bool:
    """Bound, or marked PodScheduled=False: the scheduler has made up its mind."""
    return pod is not None and (bound(pod) or unschedulable(pod))


def scheduled_message(pod: Any) -> str:
    """The message of the pod's PodScheduled condition ("" if it has none)."""
    conditions = (pod.status and pod.status.conditions) or []
    return next((c.message or "" for c in conditions if c.type == "PodScheduled"), "")


def quiet(line: str) -> None:
    """A Scenario's ``say`` that prints nothing."""


# --- waiting until a scheduler has seen the nodes ------------------------------------------------


def only_on(node: str) -> client.V1Affinity:
    """Required node affinity to the one node (matchFields metadata.name)."""
    term = client.V1NodeSelectorTerm(
        match_fields=[
            client.V1NodeSelectorRequirement(key="metadata.name", operator="In", values=[node])
        ]
    )
    return client.V1Affinity(
        node_affinity=client.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=client.V1NodeSelector(
                node_selector_terms=[term]
            )
        )
    )


def kube_scheduler_probe(
    api: client.ApiClient, scheduler_name: str, kube_log: KubeSchedulerLog | None = None
) -> Callable[..., bool]:
    """A ``Scenario(wait_for_cache=...)`` for kube-scheduler (its profile ``scheduler_name``),
    whose informers this process cannot look into: for each node, a pod of that profile's
    allowed on that node only,
    tolerating every taint and requesting nothing. Bound, it shows kube-scheduler has the node
    with its status (without one, allocatable pods is 0 and no pod fits); the probes are then
    deleted, on the pod watch, before any pod of the test is created. In a namespace of its
    own, so that the scenario's pods are the only ones in its namespace. With its log
    (``kube_log``), also waits until its cache has let the probes go (see KubeSchedulerLog):
    they request nothing, but score as 100m CPU and 200Mi."""

    def wait(
        kind: str,
        names: Iterable[str],
        present: bool = True,
        versions: Mapping[str, str] | None = None,
    ) -> bool:
        if kind != "node" or not present:
            return True
        names = list(names)
        with Scenario(api, "probe", timeout=TIMEOUT, say=quiet, scheduler_name=scheduler_name) as p:
            for node in names:
                p.create_pod(f"probe-{node}", tolerations=[TOLERATE_ALL], affinity=only_on(node))
            pods = p.wait_for(lambda pods: all(bound(pods.get(f"probe-{n}")) for n in names))
            probes = [f"{p.namespace}/probe-{n}" for n in names]
        seen = all(bound(pods.get(f"probe-{n}")) for n in names)
        if seen and kube_log is not None:
            return kube_log.wait_deleted(probes)
        return seen

    return wait


# kube-scheduler at -v=3 and above: its cache's handler logs each deletion of a bound pod
# (eventhandlers.go, deletePodFromCache) before it removes the pod.
DELETE_LINE = re.compile(r'"Delete event for scheduled pod" pod="(?P<pod>[^"]+)"')


class KubeSchedulerLog:
    """kube-scheduler's log, read as it grows, for the bound pods its cache saw deleted.

    Why: kube-scheduler's pod informer hands each event to two handlers, each on a goroutine
    of its own (client-go's processorListener): the cache's (bound pods) and the queue's (its
    own pending pods). The deletion of a bound twin and the creation of kube-scheduler's pod
    right after it reach the two in that order, but nothing orders the goroutines: its
    scheduling cycle can start before the cache has let the twin go, and see the twin still
    on its node (seen here: "Attempting to schedule pod" logged before that twin's "Delete
    event for scheduled pod"). Waiting for that line before creating kube-scheduler's pod
    orders them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.deleted: set[str] = set()
        self._offset = 0
        self._partial = b""

    def _read(self) -> None:
        with self.path.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            if m := DELETE_LINE.search(line.decode(errors="replace")):
                self.deleted.add(m["pod"])

    def wait_deleted(self, pods: Iterable[str], timeout: float = TIMEOUT) -> bool:
        """Until the log shows each pod ("namespace/name") deleted from kube-scheduler's cache;
        False if ``timeout`` passes first. Polls the file every few milliseconds."""
        wanted = set(pods)
        deadline = time.monotonic() + timeout
        while True:
            self._read()
            if wanted <= self.deleted:
                return True
            if time.monotonic() >= deadline:
                return False
            # sleep-ok: a file has no event to wait on; this paces the polling of the log,
            # and the wait itself is for its lines, under the deadline above.
            time.sleep(0.002)


def informer_probe(sched: Any) -> Callable[..., bool]:
    """A ``Scenario(wait_for_cache=...)`` for the step's scheduler, run in this process: waits
    until its informers hold the named objects at the versions written (as the runner's)."""

    def wait(
        kind: str,
        names: Iterable[str],
        present: bool = True,
        versions: Mapping[str, str] | None = None,
    ) -> bool:
        informer = sched.node_informer if kind == "node" else sched.pod_informer
        wanted = set(names)

        def seen(items: dict[str, Any]) -> bool:
            held = {key.rsplit("/", 1)[-1]: obj for key, obj in items.items()}
            if not present:
                return not (wanted & held.keys())
            return wanted <= held.keys() and all(
                version_reached(held[n].metadata.resource_version, v)
                for n, v in (versions or {}).items()
                if n in wanted
            )

        return bool(informer.store.wait_until(seen, TIMEOUT))

    return wait


@contextmanager
def running(
    step: int, api: client.ApiClient, recorder: WaitingRecorder, **options: Any
) -> Iterator[Any]:
    """Step ``step``'s scheduler, running in a thread for the duration; ``options`` are its
    settings (``config=``, from step 14)."""
    sched = new_scheduler(
        steps.get(step), api, seed=1, recorder=recorder, node_selector=NODE_SELECTOR, **options
    )
    thread = threading.Thread(target=sched.run, name="scheduler", daemon=True)
    thread.start()
    try:
        yield sched
    finally:
        sched.stop()
        thread.join(10)
        join_binding_threads()


# --- the references: kube-scheduler v1.36 (the control plane's), v1.23 (started here) ------------


@dataclass(frozen=True)
class Reference:
    """A kube-scheduler to compare a step with, and the cluster it runs on."""

    version: str
    scheduler_name: str
    # The full random stream (any shape, best-effort pods), or the one restricted to the
    # shapes on which v1.36's BalancedAllocation decides nothing (see GI_PER_CPU).
    any_shape: bool
    kubeconfig: str = ""  # the control plane's admin kubeconfig
    log: Path | None = None  # where kube-scheduler logs its scores (-v=10), when it does


def v1_23_config(kubeconfig: Path) -> str:
    """kube-scheduler v1.23's configuration: one profile with the default plugins, no
    leader election (as up.sh's ``--leader-elect=false``), the control plane's scheduler
    identity (``--kubeconfig`` is ignored once ``--config`` is given)."""
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\n"
        f"clientConnection: {{kubeconfig: {json.dumps(str(kubeconfig))}}}\n"
        "profiles:\n"
        f"- schedulerName: {V1_23_SCHEDULER}\n"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 25) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Until ``/healthz`` on ``port`` answers ok (its serving certificate is self-signed),
    failing with the log's tail if the process exits first or the deadline passes."""
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    url = f"https://127.0.0.1:{port}/healthz"
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            with urllib.request.urlopen(url, context=insecure, timeout=2) as answer:
                if answer.read() == b"ok":
                    return
        except (OSError, http.client.HTTPException):
            pass  # not listening yet, or not healthy yet
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"kube-scheduler v1.23 not healthy in {TIMEOUT} s:\n{tail(log)}"
        try:  # the pause between probes: returns early if it exits
            code = proc.wait(timeout=min(0.1, remaining))
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"kube-scheduler v1.23 exited ({code}) at start:\n{tail(log)}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, and a second one: without leader election v1.23 does not finish its shutdown
    (scheduleOne waits on the queue's Pop, and the queue is closed only after that loop
    returns); its signal handler exits at once on the second signal. SIGKILL if even that
    fails."""
    for signal_again in (True, False):
        proc.terminate()
        try:
            proc.wait(timeout=1 if signal_again else 10)
            return
        except subprocess.TimeoutExpired:
            pass
    proc.kill()
    proc.wait()


@contextmanager
def v1_23_kube_scheduler(
    kubeconfig: str, tmp_path: Path, config: Callable[[Path], str] = v1_23_config
) -> Iterator[Path]:
    """kube-scheduler v1.23 against the control plane of ``kubeconfig``, healthy, for the
    duration; yields its log's path. ``config``: its configuration file's text, given the
    kubeconfig it must name in clientConnection (``--kubeconfig`` is ignored once ``--config``
    is given)."""
    scheduler_kubeconfig = Path(kubeconfig).with_name("scheduler.kubeconfig")  # up.sh's
    assert scheduler_kubeconfig.is_file(), f"no {scheduler_kubeconfig}"
    config_file = tmp_path / "kube-scheduler-v1.23.yaml"
    config_file.write_text(config(scheduler_kubeconfig))
    log = tmp_path / "kube-scheduler-v1.23.log"
    port = free_port()
    argv = [
        str(V1_23_BINARY),
        f"--config={config_file}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={tmp_path / 'kube-scheduler-v1.23-certs'}",
        f"--authentication-kubeconfig={scheduler_kubeconfig}",
        f"--authorization-kubeconfig={scheduler_kubeconfig}",
        "--feature-gates=CSIStorageCapacity=false",
        "--v=10",  # each node's score per plugin (see logged_scores)
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        wait_healthy(proc, port, log)
        yield log
    finally:
        stop(proc)


# --- the seeded random nodes and pods ------------------------------------------------------------


def random_nodes(rng: random.Random, any_shape: bool) -> list[tuple[str, dict[str, Any]]]:
    """Nodes with random labels (some missing, for Exists/DoesNotExist), taints and sizes:
    memory of any size, or (not ``any_shape``) GI_PER_CPU Gi per CPU."""
    nodes = []
    for name in NODE_NAMES:
        labels = {"zone": rng.choice(ZONES)}
        if rng.random() < 0.8:
            labels["disk"] = rng.choice(DISKS)
        if rng.random() < 0.8:
            labels["cores"] = str(rng.choice(CORES))
        taints = None
        if rng.random() < 0.6:
            taints = [
                client.V1Taint(key=key, value=value, effect=rng.choice(EFFECTS))
                for key, value in rng.sample(TAINTS, rng.randint(1, 2))
            ]
        cpu = rng.choice([2, 4, 8, 16])
        memory = rng.choice([4, 8, 16, 32, 64]) if any_shape else cpu * GI_PER_CPU
        options = {
            "cpu": str(cpu),
            "memory": f"{memory}Gi",
            "labels": labels,
            "taints": taints,
        }
        nodes.append((name, options))
    return nodes


def random_toleration(rng: random.Random) -> client.V1Toleration:
    """One toleration of one of TAINTS's keys, Equal or Exists, with or without an effect; at
    times with a value no node has; rarely the one that tolerates everything."""
    if rng.random() < 0.05:
        return TOLERATE_ALL
    key, value = rng.choice(TAINTS)
    effect = rng.choice([None, *EFFECTS])
    if rng.random() < 0.5:
        return client.V1Toleration(key=key, operator="Exists", effect=effect)
    if rng.random() < 0.25:
        value = "other"
    return client.V1Toleration(key=key, operator="Equal", value=value, effect=effect)


def random_expression(rng: random.Random) -> client.V1NodeSelectorRequirement:
    operator = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    if operator in ("Gt", "Lt"):
        limit = str(rng.choice(CORES[:-1]))
        return client.V1NodeSelectorRequirement(key="cores", operator=operator, values=[limit])
    if operator in ("Exists", "DoesNotExist"):
        # Every node has a zone: a zone DoesNotExist would rule out all of them.
        key = rng.choice(["disk", "cores"])
        return client.V1NodeSelectorRequirement(key=key, operator=operator)
    key = rng.choice(list(LABEL_VALUES))
    values = rng.sample(LABEL_VALUES[key], rng.randint(1, 2))
    return client.V1NodeSelectorRequirement(key=key, operator=operator, values=values)


def random_term(rng: random.Random) -> client.V1NodeSelectorTerm:
    """One to two expressions, ANDed."""
    return client.V1NodeSelectorTerm(
        match_expressions=[random_expression(rng) for _ in range(rng.randint(1, 2))]
    )


def random_affinity(rng: random.Random) -> client.V1Affinity | None:
    """Required node affinity (one term, or two ORed), preferred terms with weights, both or
    neither."""
    na = client.V1NodeAffinity()
    if rng.random() < 0.45:
        na.required_during_scheduling_ignored_during_execution = client.V1NodeSelector(
            node_selector_terms=[random_term(rng) for _ in range(rng.choice([1, 1, 2]))]
        )
    if rng.random() < 0.5:
        na.preferred_during_scheduling_ignored_during_execution = [
            client.V1PreferredSchedulingTerm(
                weight=rng.randint(1, 100), preference=random_term(rng)
            )
            for _ in range(rng.randint(1, 3))
        ]
    if (
        na.required_during_scheduling_ignored_during_execution is None
        and na.preferred_during_scheduling_ignored_during_execution is None
    ):
        return None
    return client.V1Affinity(node_affinity=na)


def random_requests(rng: random.Random, any_shape: bool) -> dict[str, str]:
    """Not ``any_shape``: CPU and memory, always both and always GI_PER_CPU Gi of memory per
    CPU (see there), a quarter CPU and 1Gi up to 3 CPU and 12Gi. ``any_shape``: CPU and
    memory of any sizes, at times only one of them, at times neither (a best-effort pod)."""
    if not any_shape:
        quarters = rng.choice([1, 2, 4, 6, 8, 12])
        return {"cpu": f"{250 * quarters}m", "memory": f"{quarters * GI_PER_CPU // 4}Gi"}
    if rng.random() < 0.12:
        return {}
    requests = {
        "cpu": rng.choice(["100m", "250m", "500m", "1", "1500m", "2", "3"]),
        "memory": rng.choice(["128Mi", "512Mi", "1Gi", "2Gi", "4Gi", "8Gi"]),
    }
    if rng.random() < 0.3:
        del requests[rng.choice(["cpu", "memory"])]
    return requests


def random_pod(rng: random.Random, any_shape: bool) -> dict[str, Any]:
    """``Scenario.create_pod``'s keywords for one random pod."""
    spec: dict[str, Any] = {"requests": random_requests(rng, any_shape)}
    if rng.random() < 0.6:
        spec["tolerations"] = [random_toleration(rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.25:
        key = rng.choice(["disk", "zone"])
        spec["node_selector"] = {key: rng.choice(LABEL_VALUES[key])}
    affinity = random_affinity(rng)
    if affinity is not None:
        spec["affinity"] = affinity
    return spec


# --- summaries for the table ---------------------------------------------------------------------


def show_toleration(t: client.V1Toleration) -> str:
    if not t.key:
        return "*Exists"
    text = f"{t.key}={t.value}" if t.operator == "Equal" else f"{t.key} Exists"
    return text + (f":{t.effect}" if t.effect else "")


def show_term(term: client.V1NodeSelectorTerm) -> str:
    return " & ".join(
        f"{e.key} {e.operator} {','.join(e.values)}" if e.values else f"{e.key} {e.operator}"
        for e in term.match_expressions
    )


def show_pod(spec: dict[str, Any]) -> str:
    parts = [" ".join(f"{k}={v}" for k, v in spec["requests"].items()) or "best-effort"]
    if spec.get("tolerations"):
        parts.append("tol[" + ", ".join(show_toleration(t) for t in spec["tolerations"]) + "]")
    if spec.get("node_selector"):
        parts.append("sel{" + ",".join(f"{k}={v}" for k, v in spec["node_selector"].items()) + "}")
    na = spec["affinity"].node_affinity if spec.get("affinity") else None
    if na and na.required_during_scheduling_ignored_during_execution:
        terms = na.required_during_scheduling_ignored_during_execution.node_selector_terms
        parts.append("req[" + " | ".join(f"({show_term(t)})" for t in terms) + "]")
    if na and na.preferred_during_scheduling_ignored_during_execution:
        prefs = na.preferred_during_scheduling_ignored_during_execution
        parts.append(
            "pref[" + ", ".join(f"{p.weight}:({show_term(p.preference)})" for p in prefs) + "]"
        )
    return " ".join(parts)


def show_node(name: str, options: dict[str, Any]) -> str:
    labels = ",".join(f"{k}={v}" for k, v in sorted(options["labels"].items()))
    taints = ",".join(f"{t.key}={t.value}:{t.effect}" for t in options["taints"] or [])
    return f"{name}: {options['cpu']} CPU {options['memory']} {{{labels}}} [{taints}]"


# --- what the step decided -----------------------------------------------------------------------


@dataclass
class Decision:
    """The step's last attempt for one pod: where it went (None: unschedulable) and each
    scored node's weighted score per plugin."""

    node: str | None = None
    scores: dict[str, dict[str, int]] = field(default_factory=dict)

    def totals(self) -> dict[str, int]:
        return {node: sum(by_plugin.values()) for node, by_plugin in self.scores.items()}

    def best(self) -> list[str]:
        """The best-scored nodes. A pod that fits one node only is not scored (upstream:
        "only one node is feasible, skip scoring"): that node is the best."""
        if not self.scores and self.node is not None:
            return [self.node]
        totals = self.totals()
        top = max(totals.values(), default=0)
        return sorted(node for node, total in totals.items() if total == top)

    def show(self) -> str:
        totals = sorted(self.totals().items(), key=lambda item: (-item[1], item[0]))
        return " ".join(f"{node}={total}" for node, total in totals)

    def show_plugins(self) -> str:
        return "; ".join(
            f"{node}: " + " ".join(f"{p}={s}" for p, s in sorted(by_plugin.items()))
            for node, by_plugin in sorted(self.scores.items())
        )


def decision(events: list[tuple[str, dict[str, Any]]], key: str) -> Decision:
    """The scores of the pod's last attempt (each attempt starts afresh) and its selected
    node, from the recorder's events."""
    found = Decision()
    for event, fields in events:
        if fields.get("pod") != key:
            continue
        if event == "attempt":
            found = Decision()
        elif event == "score":
            found.scores.setdefault(fields["node"], {})[fields["plugin"]] = fields["score"]
        elif event == "selected":
            found.node = fields["node"]
    return found


# kube-scheduler v1.23 at -v=10: prioritizeNodes (generic_scheduler.go) logs each node's
# weighted score per plugin; scheduleOne logs each attempt (-v=3).
ATTEMPT_LINE = re.compile(r'"Attempting to schedule pod" pod="(?P<pod>[^"]+)"')
SCORE_LINE = re.compile(
    r'"Plugin scored node for pod" pod="(?P<pod>[^"]+)" plugin="(?P<plugin>[^"]+)"'
    r' node="(?P<node>[^"]+)" score=(?P<score>-?[0-9]+)'
)


def logged_scores(log: Path) -> dict[str, dict[str, dict[str, int]]]:
    """Pod ("namespace/name") -> node -> plugin -> weighted score, of each pod's last attempt,
    from kube-scheduler v1.23's log. A pod whose last attempt scored nothing (it fit one node
    only, or none) is left out."""
    scores: dict[str, dict[str, dict[str, int]]] = {}
    for line in log.read_text(errors="replace").splitlines():
        if m := ATTEMPT_LINE.search(line):
            scores.pop(m["pod"], None)
        elif m := SCORE_LINE.search(line):
            by_node = scores.setdefault(m["pod"], {})
            by_node.setdefault(m["node"], {})[m["plugin"]] = int(m["score"])
    return scores


def show_scores(scores: Mapping[str, Mapping[str, int]]) -> str:
    return "; ".join(
        f"{node}: " + " ".join(f"{p}={s}" for p, s in sorted(by_plugin.items()))
        for node, by_plugin in sorted(scores.items())
    )


@dataclass
class Row:
    pod: str
    spec: str
    theirs: str | None
    ours: Decision
    their_message: str = ""
    our_message: str = ""
    kube: str = "kube-scheduler"  # which one, for the table
    # Whether a pod pending with both must be so for the same words (v1.23, which steps 13
    # and 14 port; v1.36 words some reasons differently).
    same_words: bool = False
    # kube-scheduler's scores (node -> plugin -> weighted score), when it logs them (-v=10):
    # empty when it did not score (one node fit); None when they are not known.
    their_scores: dict[str, dict[str, int]] | None = None
    step: int = 13  # which step, for the table
    # The score plugins whose scores must be equal, node for node; kube-scheduler's others
    # must score every node alike.
    shared: frozenset[str] = SHARED_SCORE_PLUGINS

    def problem(self) -> str | None:
        """What is wrong with this pair of decisions, or None."""
        if (self.theirs is None) != (self.ours.node is None):
            return "one bound, the other did not"
        if self.theirs is None:
            if self.same_words and self.their_message != self.our_message:
                return "pending with both, for other reasons"
            return None
        best = self.ours.best()
        if self.ours.node not in best:
            return f"step {self.step} did not pick one of its best nodes"
        if self.theirs not in best:
            return f"{self.kube}'s node is not among step {self.step}'s best"
        if len(best) == 1 and self.theirs != self.ours.node:
            return f"step {self.step}'s best is unique and differs"
        if self.their_scores is not None:
            return self.score_problem(self.their_scores)
        return None

    def score_problem(self, theirs: dict[str, dict[str, int]]) -> str | None:
        """What differs between the two schedulers' scores, or None: the shared plugins' must
        be equal, node for node; kube-scheduler's other plugins must not tell nodes apart."""
        ours = {
            node: {p: s for p, s in by_plugin.items() if p in self.shared}
            for node, by_plugin in self.ours.scores.items()
        }
        shared = {
            node: {p: s for p, s in by_plugin.items() if p in self.shared}
            for node, by_plugin in theirs.items()
        }
        if ours != shared:
            return f"the scores differ from {self.kube}'s"
        others = {p for by_plugin in theirs.values() for p in by_plugin} - self.shared
        for plugin in sorted(others):
            if len({by_plugin.get(plugin) for by_plugin in theirs.values()}) > 1:
                return f"{self.kube}'s {plugin} scores nodes differently"
        return None

    def show(self) -> str:
        theirs = self.theirs or f"pending ({self.their_message})"
        ours = self.ours.node or f"pending ({self.our_message})"
        return (
            f"{self.pod}: {self.problem()}\n"
            f"    spec:           {self.spec}\n"
            f"    {self.kube + ':':<15} {theirs}\n"
            f"    {f'step {self.step}:':<15} {ours}\n"
            f"    step {self.step} totals: {self.ours.show()}\n"
            f"    per plugin:     {self.ours.show_plugins()}"
            + (
                f"\n    {self.kube}: {show_scores(self.their_scores)}"
                if self.their_scores is not None
                else ""
            )
        )


# --- the stream of twins -------------------------------------------------------------------------


def play_twins(
    step: int,
    api: client.ApiClient,
    sched: Any,
    recorder: WaitingRecorder,
    reference: Reference,
    nodes: Sequence[tuple[str, dict[str, Any]]],
    specs: Sequence[dict[str, Any]],
    *,
    scheduler_name: str = SCHEDULER_NAME,
    shared: frozenset[str] = SHARED_SCORE_PLUGINS,
) -> list[Row]:
    """Create ``nodes``, then each pod of ``specs`` twice: first as a twin for the step's
    scheduler ``sched`` (in this process, recording to ``recorder``; its pods ask for
    ``scheduler_name``), whose decision and per-node scores are recorded before the twin is
    deleted, then for kube-scheduler (``reference``), which keeps its pod if it binds it. Both
    therefore decide each pod from the same cluster state: the pods kube-scheduler bound
    before it. One row per pod, with kube-scheduler's scores when it logs them (its log read
    once every pod is decided).

    Waiting: both schedulers watch all pods on one watch each, so whatever was written to pods
    before a pod is created is seen before that pod is. The step's handlers run one after the
    other on its informer's thread; kube-scheduler's cache and queue handle those events on
    goroutines of their own: with its log (``reference.log``), the deletion of a bound twin
    (and of the probes) is waited for there (KubeSchedulerLog) before its pod is created.
    Nodes come on another watch: the step's node informer is waited on, and kube-scheduler
    binds a probe pod per node (``kube_scheduler_probe``)."""
    kube = f"kube-scheduler {reference.version}"
    kube_log = KubeSchedulerLog(reference.log) if reference.log is not None else None
    rows: list[Row] = []
    with Scenario(
        api,
        "twins",
        timeout=TIMEOUT,
        say=quiet,
        wait_for_cache=informer_probe(sched),
        scheduler_name=scheduler_name,
    ) as ours:
        # kube-scheduler's pods, in the same namespace.
        theirs = Scenario(
            api, "twins", timeout=TIMEOUT, say=quiet, scheduler_name=reference.scheduler_name
        )
        theirs.namespace = ours.namespace
        ours.create_nodes(nodes, "scenario: created the random nodes")
        names = [name for name, _ in nodes]
        ours.scheduler_has_seen("node", names)
        step_has_seen = informer_probe(sched)
        probe = kube_scheduler_probe(api, reference.scheduler_name, kube_log)
        assert probe("node", names), f"{kube} never saw the nodes"

        for i, spec in enumerate(specs):
            our_pod, their_pod = f"p{i:02d}-ms", f"p{i:02d}-ks"
            # The step's twin first, on the cluster as it is; decided, it is deleted.
            ours.create_pod(our_pod, **spec)
            pods = ours.wait_for(lambda pods, name=our_pod: decided(pods.get(name)))
            our = pods.get(our_pod)
            assert decided(our), f"step {step} did not decide {our_pod}"
            ours_decided = decision(list(recorder.events), f"{ours.namespace}/{our_pod}")
            assert ours_decided.node == our.spec.node_name, (
                f"{our_pod} bound to {our.spec.node_name}, selected {ours_decided.node}"
            )
            ours.delete_pod(our_pod)
            if kube_log is not None and our.spec.node_name:
                # Its cache must have let the bound twin go (see KubeSchedulerLog).
                twin = f"{ours.namespace}/{our_pod}"
                assert kube_log.wait_deleted([twin]), f"{kube} never logged {twin} deleted"
            # Then kube-scheduler's pod: its pod watch brings the twin's deletion first, so it
            # decides from the same state. Bound, it stays, for both schedulers' next pods.
            theirs.create_pod(their_pod, **spec)
            pods = ours.wait_for(lambda pods, name=their_pod: decided(pods.get(name)))
            their = pods.get(their_pod)
            assert decided(their), f"{kube} did not decide {their_pod}"
            rows.append(
                Row(
                    pod=f"p{i:02d}",
                    spec=show_pod(spec),
                    theirs=their.spec.node_name,
                    ours=ours_decided,
                    their_message=scheduled_message(their),
                    our_message=scheduled_message(our),
                    kube=kube,
                    same_words=reference.version == "v1.23",
                    step=step,
                    shared=shared,
                )
            )
            if their.spec.node_name:
                # The step counts it before its next twin: one watch brings both in order;
                # waiting here says so.
                version = their.metadata.resource_version
                assert step_has_seen("pod", [their_pod], versions={their_pod: version})
            else:
                theirs.delete_pod(their_pod)  # no room taken: it only keeps kube-scheduler busy

        if reference.log is not None:  # every pod is decided: its scores are in the log
            logged = logged_scores(reference.log)
            for row in rows:
                row.their_scores = logged.get(f"{ours.namespace}/{row.pod}-ks", {})
    return rows
