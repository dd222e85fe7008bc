"""Scheduler workloads: scheduler_perf's SchedulingBasic, run against the scheduler as users run it.

Upstream counterpart: ``test/integration/scheduler_perf`` (``BenchmarkPerfScheduling`` running
the SchedulingBasic test case: ``createNodes`` with ``node-default.yaml``, ``createPods`` with
``pod-default.yaml``, metric SchedulingThroughput).

One run of a workload:

1. an API server: a fresh embedded one (its start-to-ready time is kept), or the cluster of
   ``--kubeconfig``;
2. with no scheduler running, ``nodes`` Nodes (4 CPU, 32Gi, 110 pods, Ready; created, then
   their status written, as a kubelet would) and ``pods`` Pods (one pause container, requests =
   limits = 100m / 500Mi) in a namespace of the run's own, created concurrently through the
   official client; creation is timed on its own;
3. the scheduler starts as a process of its own, exactly as a user starts it: ``python -m
   steps.stepN --kubeconfig PATH`` (its report on stdout and its log lines at default
   verbosity on stderr, both to files; TLS when the cluster speaks TLS), the baseline binder
   (``python -m minisched.bench.binder``), or, with ``--with-default-scheduler``, the command
   given for the cluster's ``default-scheduler``, or with ``--kube-scheduler`` the binary with a
   generated configuration (its defaults, or the step's plugins only);
4. a watch on the namespace, in this process, notes when each pod gets its node: throughput is
   taken from the first binding to the last, and the scheduler's CPU and RSS are read from
   ``/proc`` at the first binding and at the last (peak RSS: ``VmHWM``);
5. every pod is checked to be bound: a run that loses pods is *failed*, never averaged;
6. the scheduler is stopped (SIGTERM), the namespace and the labelled nodes are deleted (a real
   cluster), or the server is stopped.

Node and pod names end in a letter, so the teaching plugin NodeNumber (steps 3+) scores every
node 0 and its Permit (steps 5+) lets every pod through at once: the benchmark measures
scheduling, not NodeNumber's sleeping.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config

from minisched.cluster import EmbeddedServer
from minisched.scenario import NODE_SELECTOR, SCENARIO_LABEL, SCHEDULER_NAME, Scenario

from . import kube_scheduler
from .proc import cpu_seconds, peak_rss_mib, rss_mib, stop_process

SCENARIO_NAME = "bench"
DEFAULT_SCHEDULER = "default-scheduler"
# Why the names look like this; printed with the results.
NAMING_NOTE = (
    "node and pod names end in a letter ('...x'): NodeNumber scores every node 0 and its "
    "Permit never waits"
)
MEASURE_NOTE = (
    "each scheduler runs as a process of its own, as users run it (python -m steps.stepN "
    "--kubeconfig PATH); a watch in the bench sees each binding, and throughput is taken from "
    "the first binding to the last"
)
NODE_RESOURCES = {"cpu": "4", "memory": "32Gi", "pods": "110"}
POD_RESOURCES = {"cpu": "100m", "memory": "500Mi"}
CREATE_THREADS = 4


def node_name(i: int) -> str:
    return f"bench-node-{i:05d}x"


def pod_name(i: int) -> str:
    return f"bench-pod-{i:05d}x"


@dataclass
class Target:
    """Where to run: the embedded server (kubeconfig None) or a real cluster."""

    kubeconfig: str | None = None
    context: str | None = None
    # The embedded server serves HTTPS: kube-scheduler (client-go) sends its token only over
    # TLS. Every contender then runs against the same HTTPS server.
    tls: bool = False

    @property
    def embedded(self) -> bool:
        return self.kubeconfig is None


@dataclass
class Contender:
    """What schedules the pods of a run.

    ``name`` is the key in the results: ``binder``, ``step8``, ``default-scheduler``.
    ``command`` is the scheduler's command line, ``{kubeconfig}`` standing for the cluster's
    kubeconfig and ``{namespace}`` for the run's namespace; None for a scheduler the cluster
    already runs (its pods are then created while it runs, so its throughput is at most the
    creation rate). A step also gets ``--seed`` and the cluster's ``--context``.
    ``kube_scheduler``: the path of a kube-scheduler binary and its percentageOfNodesToScore
    (None: unset); its command, with a configuration written for the run, replaces ``command``.
    ``kube_plugins``: the only plugins that kube-scheduler runs, (name, Score weight or None)
    in order (``kube_scheduler.step_plugins``); None: its default plugins.
    """

    name: str
    scheduler_name: str
    command: list[str] | None
    step: int | None = None
    kube_scheduler: tuple[str, int | None] | None = None
    kube_plugins: tuple[tuple[str, int | None], ...] | None = None

    def argv(
        self, server: Server, seed: int, namespace: str, directory: str = "."
    ) -> list[str] | None:
        """The command line; a kube-scheduler's configuration is written to ``directory``."""
        if self.kube_scheduler is not None:
            path, percentage = self.kube_scheduler
            return kube_scheduler.command(
                path,
                directory,
                server.kubeconfig,
                server.context,
                self.scheduler_name,
                percentage,
                self.kube_plugins,
            )
        if self.command is None:
            return None
        argv = [
            part.replace("{kubeconfig}", server.kubeconfig).replace("{namespace}", namespace)
            for part in self.command
        ]
        if self.step is not None:
            argv += ["--seed", str(seed)]
            if server.context:
                argv += ["--context", server.context]
        return argv


def step_contender(step: int, percentage_of_nodes_to_score: int | None = None) -> Contender:
    """Step N's scheduler, started as ``python -m steps.stepN``; 0 is the baseline binder.

    ``--node-selector``: on a real cluster the scheduler binds to the benchmark's nodes only.
    ``percentage_of_nodes_to_score``: its flag, for a step that has the setting.
    """
    if step == 0:
        command = [sys.executable, "-m", "minisched.bench.binder", "--kubeconfig", "{kubeconfig}"]
        command += ["--namespace", "{namespace}", "--node-selector", NODE_SELECTOR]
        return Contender("binder", SCHEDULER_NAME, command, step)
    command = [sys.executable, "-m", f"steps.step{step}", "--kubeconfig", "{kubeconfig}"]
    command += ["--node-selector", NODE_SELECTOR]
    if percentage_of_nodes_to_score is not None:
        command += ["--percentage-of-nodes-to-score", str(percentage_of_nodes_to_score)]
    return Contender("binder" if step == 0 else f"step{step}", SCHEDULER_NAME, command, step)


def default_scheduler_contender(command: str | None) -> Contender:
    """The cluster's ``default-scheduler``: started by ``command`` (shell words; ``{kubeconfig}``
    is replaced by the cluster's kubeconfig) after the pods exist, or the one already running."""
    argv = shlex.split(command) if command else None
    return Contender(DEFAULT_SCHEDULER, DEFAULT_SCHEDULER, argv)


def kube_scheduler_contender(
    path: str, percentage: int | None, plugins: kube_scheduler.StepPlugins | None = None
) -> Contender:
    """The real kube-scheduler binary at ``path`` playing the ``default-scheduler``: a
    configuration with one profile of that name is generated for each run
    (``kube_scheduler.config``), and it is started once the pods exist, stopped after.

    With ``plugins`` the profile runs a step's plugins only, and the results' key is
    ``kube-scheduler-same``; without, its defaults, under the key ``default-scheduler``.
    """
    if plugins is None:
        return Contender(
            DEFAULT_SCHEDULER, DEFAULT_SCHEDULER, None, kube_scheduler=(path, percentage)
        )
    return Contender(
        kube_scheduler.SAME_PLUGINS,
        DEFAULT_SCHEDULER,
        None,
        kube_scheduler=(path, percentage),
        kube_plugins=tuple(plugins.enabled),
    )


def label(name: str) -> str:
    """How a contender is shown in tables: ``8``, ``binder``, ``default-scheduler``."""
    return name[len("step") :] if name.startswith("step") else name


@dataclass
class Server:
    """An API server for one run: its kubeconfig, client and (embedded only) process."""

    kubeconfig: str
    context: str | None
    api_client: client.ApiClient
    pid: int | None
    ready_s: float | None


@contextmanager
def api_server(target: Target) -> Iterator[Server]:
    """A fresh embedded API server for one run, or a client for the real cluster."""
    if target.embedded:
        started = time.monotonic()
        with EmbeddedServer(*(["--tls"] if target.tls else [])) as embedded:
            ready = time.monotonic() - started
            api = config.new_client_from_config(config_file=embedded.kubeconfig)
            try:
                assert embedded.process is not None
                yield Server(embedded.kubeconfig, None, api, embedded.process.pid, ready)
            finally:
                api.close()
        return
    assert target.kubeconfig is not None
    api = config.new_client_from_config(config_file=target.kubeconfig, context=target.context)
    try:
        yield Server(target.kubeconfig, target.context, api, None, None)
    finally:
        api.close()


# --- objects ---------------------------------------------------------------------------------


def node_body(name: str) -> dict[str, Any]:
    """scheduler_perf's node-default.yaml, labelled as scenarios label their fake nodes."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {SCENARIO_LABEL: SCENARIO_NAME}},
    }


NODE_STATUS = {
    "status": {
        "capacity": NODE_RESOURCES,
        "allocatable": NODE_RESOURCES,
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake"}
        ],
    }
}


def pod_body(name: str, scheduler_name: str = SCHEDULER_NAME) -> dict[str, Any]:
    """scheduler_perf's pod-default.yaml: one pause container, requests = limits."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {SCENARIO_LABEL: SCENARIO_NAME}},
        "spec": {
            "schedulerName": scheduler_name,
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": POD_RESOURCES, "limits": POD_RESOURCES},
                }
            ],
        },
    }


def create_all(count: int, create_one: Callable[[int], None]) -> float:
    """Call ``create_one(i)`` for every i, from a few threads; the seconds it took.

    Bodies are plain dicts and responses are not decoded (``_preload_content=False``): setup
    should cost the API server, not the client's model validation.
    """
    started = time.monotonic()
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        for _ in pool.map(create_one, range(count)):
            pass
    return time.monotonic() - started


def create_nodes(core: client.CoreV1Api, count: int) -> float:
    def create(i: int) -> None:
        name = node_name(i)
        core.create_node(node_body(name), _preload_content=False).data  # noqa: B018
        # Status is ignored on create, as on a real cluster: write it through /status.
        core.patch_node_status(name, NODE_STATUS, _preload_content=False).data  # noqa: B018

    return create_all(count, create)


def create_pods(
    core: client.CoreV1Api, namespace: str, count: int, scheduler_name: str = SCHEDULER_NAME
) -> float:
    def create(i: int) -> None:
        body = pod_body(pod_name(i), scheduler_name)
        core.create_namespaced_pod(namespace, body, _preload_content=False).data  # noqa: B018

    return create_all(count, create)


def bound_pods(core: client.CoreV1Api, namespace: str) -> tuple[int, int]:
    """How many pods of the namespace exist, and how many of them have a node."""
    response = core.list_namespaced_pod(namespace, _preload_content=False)
    items = json.loads(response.data)["items"]
    return len(items), sum(1 for p in items if (p.get("spec") or {}).get("nodeName"))


# --- watching the bindings -------------------------------------------------------------------


class BindingWatch:
    """Watches one namespace's pods and notes when each first has a node.

    It runs in the bench, not in the scheduler, so that every scheduler (a step, the binder,
    the cluster's default-scheduler) is timed the same way. ``on_first`` and ``on_bound`` run
    on the watch thread right after the first and after every binding. ``_cond`` guards
    ``bound`` and ``error``.
    """

    def __init__(
        self,
        core: client.CoreV1Api,
        namespace: str,
        expected: int,
        on_first: Callable[[], None] = lambda: None,
    ) -> None:
        self.core = core
        self.namespace = namespace
        self.expected = expected
        self.on_first = on_first
        self.bound: dict[str, float] = {}
        self.error: str | None = None
        self._cond = threading.Condition()
        self._response: Any = None
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="bench-watch", daemon=True)

    def start(self) -> None:
        """List (the pods bound already count) and start watching from that list."""
        self._rv = self._list()
        self._thread.start()

    def _list(self) -> str:
        response = self.core.list_namespaced_pod(self.namespace, _preload_content=False)
        listed = json.loads(response.data)
        now = time.monotonic()
        for pod in listed["items"]:
            self._seen(pod, now)
        return str(listed["metadata"]["resourceVersion"])

    def _seen(self, pod: dict[str, Any], now: float) -> None:
        if not (pod.get("spec") or {}).get("nodeName"):
            return
        name = pod["metadata"]["name"]
        with self._cond:
            if name in self.bound:
                return
            self.bound[name] = now
            first = len(self.bound) == 1
            self._cond.notify_all()
        if first:
            self.on_first()

    def _run(self) -> None:
        """Watch until stopped; when the server ends the watch or sends an ERROR (its history
        is gone), list again and watch from there, as an informer does."""
        try:
            while not self._stopped:
                self._watch()
                if not self._stopped:
                    self._rv = self._list()
        except Exception as e:  # noqa: BLE001 -- a run whose watch broke is failed, not lost
            if not self._stopped:
                with self._cond:
                    self.error = f"watch failed: {e}"
                    self._cond.notify_all()

    def _watch(self) -> None:
        self._response = self.core.list_namespaced_pod(
            self.namespace,
            watch=True,
            resource_version=self._rv,
            timeout_seconds=3600,
            _preload_content=False,
        )
        buffer = b""
        for chunk in self._response.stream(65536, decode_content=False):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED"):
                    self._seen(event["object"], time.monotonic())
                    self._rv = event["object"]["metadata"]["resourceVersion"]
                elif event.get("type") == "ERROR":
                    return

    def wait(self, timeout: float) -> int:
        """Wait up to ``timeout`` for a binding (or for all of them); how many are bound."""
        with self._cond:
            if len(self.bound) < self.expected and self.error is None:
                self._cond.wait(timeout)
            return len(self.bound)

    def stop(self) -> None:
        self._stopped = True
        response = self._response
        if response is not None:
            try:
                response.shutdown()  # wakes the blocked read
                response.release_conn()
            except Exception:  # noqa: BLE001 -- already closed
                pass
        self._thread.join(5)


# --- one run ---------------------------------------------------------------------------------


@dataclass
class Sample:
    """The scheduler process's CPU seconds and RSS at one moment."""

    at: float
    cpu_s: float | None
    rss_mib: float | None


def sample(pid: int | None) -> Sample:
    now = time.monotonic()
    if pid is None:
        return Sample(now, None, None)
    return Sample(now, cpu_seconds(pid), rss_mib(pid))


def run_once(
    contender: Contender,
    nodes: int,
    pods: int,
    target: Target,
    *,
    seed: int = 1,
    stall_timeout: float = 60.0,
    profile: str | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """One run of SchedulingBasic for ``contender``: a dict for the results file."""
    run: dict[str, Any] = {"scheduler": contender.name, "nodes": nodes, "pods": pods, "ok": False}
    problems: list[str] = []
    with api_server(target) as server:
        run["apiserver_ready_s"] = server.ready_s
        core = client.CoreV1Api(server.api_client)
        scenario = Scenario(server.api_client, SCENARIO_NAME, say=lambda line: None)
        if not target.embedded:
            scenario.cleanup()  # nodes a crashed earlier run left behind
        scenario.__enter__()  # the run's namespace
        try:
            run["create_nodes_s"] = create_nodes(core, nodes)
            run["create_pods_s"] = create_pods(
                core, scenario.namespace, pods, contender.scheduler_name
            )
            say(
                f"{label(contender.name)}, {nodes} nodes x {pods} pods: created in "
                f"{run['create_nodes_s']:.1f}s + {run['create_pods_s']:.1f}s; scheduling"
            )
            server_cpu_before = cpu_seconds(server.pid) if server.pid else None
            profile_to = None
            if profile and contender.step:
                profile_to = os.path.join(profile, f"step{contender.step}-{nodes}x{pods}.txt")
                run["profile"] = profile_to
            outcome = schedule_and_watch(
                contender,
                server,
                core,
                scenario.namespace,
                pods,
                seed,
                stall_timeout,
                profile_to,
                run,
            )
            if outcome != "ok":
                problems.append(outcome)
            server_cpu_after = cpu_seconds(server.pid) if server.pid else None
            existing, bound = bound_pods(core, scenario.namespace)
            if server.pid:
                run["apiserver_peak_rss_mib"] = peak_rss_mib(server.pid)
            if server_cpu_before is not None and server_cpu_after is not None:
                run["apiserver_cpu_s"] = round(server_cpu_after - server_cpu_before, 2)
        finally:
            if not target.embedded:  # an embedded server is thrown away with its objects
                scenario.cleanup()
    run["bound"] = bound
    if existing != pods or bound != pods:
        problems.append(f"{bound} of {pods} pods bound ({existing} exist)")
    run["ok"] = not problems
    run["failure"] = "; ".join(problems) or None
    return run


def schedule_and_watch(
    contender: Contender,
    server: Server,
    core: client.CoreV1Api,
    namespace: str,
    pods: int,
    seed: int,
    stall_timeout: float,
    profile_to: str | None,
    run: dict[str, Any],
) -> str:
    """Start the scheduler, wait until the watch has seen every pod bound, stop it; fill in
    ``run``'s figures and return "ok" or what went wrong."""
    samples: dict[str, Sample] = {}
    proc: subprocess.Popen[bytes] | None = None
    pid_box: list[int | None] = [None]

    def first_binding() -> None:
        samples["first"] = sample(pid_box[0])

    watch = BindingWatch(core, namespace, pods, on_first=first_binding)
    watch.start()
    with tempfile.TemporaryDirectory(prefix="minisched-bench-") as tmp:
        argv = contender.argv(server, seed, namespace, tmp)
        stdout_path, stderr_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        outcome = "ok"
        started, peak = time.monotonic(), None
        try:
            if argv is not None:
                if profile_to:
                    argv = py_spy_command(profile_to) + argv
                with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
                    # cwd: a directory of its own, so that the scheduler imports what is
                    # installed (or on $PYTHONPATH), as a user's would.
                    proc = subprocess.Popen(
                        argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=tmp
                    )
                pid_box[0] = scheduler_pid(proc, bool(profile_to))
            outcome = wait_for_bindings(watch, proc, pods, stall_timeout)
            samples["last"] = sample(pid_box[0])
            peak = peak_rss_mib(pid_box[0]) if pid_box[0] else None
        finally:
            watch.stop()
            if proc is not None:
                returncode = stop_process(proc, pid_box[0])
                # Ours exit 0 on SIGTERM; kube-scheduler exits 1 ("finished without leader
                # elect") when leader election is off, so only a step's status is checked.
                ours = contender.step is not None
                if ours and returncode not in (0, -signal.SIGTERM) and outcome == "ok":
                    outcome = f"scheduler exited with status {returncode}"
        logs = {
            "stdout_lines": count_lines(stdout_path),
            "stderr_lines": count_lines(stderr_path),
        }
        if outcome != "ok":
            kept = tempfile.mkdtemp(prefix="minisched-bench-failed-")
            shutil.copy(stdout_path, kept)
            shutil.copy(stderr_path, kept)
            outcome += f" (its stdout and stderr are in {kept}): " + tail(stderr_path)
    times = sorted(watch.bound.values())
    run.update(logs)
    run.update(figures(times, samples, started, peak))
    return outcome


def wait_for_bindings(
    watch: BindingWatch, proc: subprocess.Popen[bytes] | None, pods: int, stall_timeout: float
) -> str:
    """Wait until every pod is bound; give up when nothing was bound for ``stall_timeout``."""
    last_count, last_progress = -1, time.monotonic()
    while True:
        count = watch.wait(1.0)
        if count >= pods:
            return "ok"
        if watch.error:
            return watch.error
        if count != last_count:
            last_count, last_progress = count, time.monotonic()
        if proc is not None and proc.poll() is not None:
            if watch.wait(0.5) >= pods:  # a binder exits once it has bound every pod
                return "ok"
            return f"scheduler exited with status {proc.returncode}"
        if time.monotonic() - last_progress > stall_timeout:
            return f"stalled: no binding for {stall_timeout:.0f}s"


def scheduler_pid(proc: subprocess.Popen[bytes], profiled: bool) -> int:
    """The scheduler's pid: the child's, or under py-spy, py-spy's child once it exists."""
    if not profiled:
        return proc.pid
    for _ in range(100):
        try:
            with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                children = f.read().split()
        except OSError:
            break
        if children:
            return int(children[0])
        time.sleep(0.05)  # py-spy starts its child at once; this is a measurement, not a test
    return proc.pid


def count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 16), b""))


def tail(path: str, size: int = 1500) -> str:
    """The end of a log, after its first fatal error or traceback if it has one."""
    with open(path, "rb") as f:
        text = f.read().decode(errors="replace")
    for marker in ("Fatal Python error", "Traceback (most recent call last)"):
        if marker in text:
            return text[text.index(marker) :][:size].strip()
    return text[-size:].strip()


def figures(
    times: list[float], samples: dict[str, Sample], started: float, peak: float | None
) -> dict[str, Any]:
    """Throughput from the first binding to the last, and the scheduler's CPU and RSS."""
    out: dict[str, Any] = {}
    if not times:
        return out
    window = times[-1] - times[0]
    bound = len(times)
    # n bindings span n - 1 intervals between the first and the last.
    out["window_s"] = round(window, 3)
    out["pods_per_s"] = round((bound - 1) / window, 1) if window > 0 and bound > 1 else None
    out["ms_per_pod"] = round(1000 * window / (bound - 1), 3) if bound > 1 else None
    out["first_binding_s"] = round(times[0] - started, 3)
    first, last = samples.get("first"), samples.get("last")
    if first and last and first.cpu_s is not None and last.cpu_s is not None:
        cpu = last.cpu_s - first.cpu_s
        out["scheduler_cpu_s"] = round(cpu, 2)
        out["cpu_ms_per_pod"] = round(1000 * cpu / (bound - 1), 3) if bound > 1 else None
    if last and last.cpu_s is not None:
        out["scheduler_cpu_total_s"] = round(last.cpu_s, 2)
    # "Start": at the first binding, once the scheduler has listed the cluster; at its spawn
    # a process has next to nothing resident.
    if first:
        out["scheduler_rss_start_mib"] = first.rss_mib
    if last:
        out["scheduler_rss_end_mib"] = last.rss_mib
    out["scheduler_peak_rss_mib"] = peak
    return out


def py_spy_command(output: str) -> list[str]:
    """``py-spy record`` writing collapsed stacks of every thread to ``output``.

    py-spy is not a project dependency: ``pip install py-spy``, or point ``$PY_SPY`` at it.
    Sampling costs the scheduler a little CPU: do not compare profiled runs with unprofiled
    ones.
    """
    py_spy = os.environ.get("PY_SPY") or shutil.which("py-spy")
    if not py_spy:
        here = os.path.join(os.path.dirname(sys.executable), "py-spy")
        py_spy = here if os.access(here, os.X_OK) else None
    if not py_spy:
        raise SystemExit("--profile needs py-spy: pip install py-spy, or set $PY_SPY")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    # --gil: only the thread holding the GIL is sampled, so waiting on sockets and locks is left
    # out and the profile shows where the Python CPU time goes.
    return [
        py_spy,
        "record",
        "--format",
        "raw",
        "--rate",
        "200",
        "--threads",
        "--gil",
        "-o",
        os.path.abspath(output),
        "--",
    ]


SUMMARISED = (
    "pods_per_s",
    "ms_per_pod",
    "scheduler_cpu_s",
    "cpu_ms_per_pod",
    "scheduler_rss_start_mib",
    "scheduler_rss_end_mib",
    "scheduler_peak_rss_mib",
    "apiserver_peak_rss_mib",
    "apiserver_cpu_s",
    "create_nodes_s",
    "create_pods_s",
    "first_binding_s",
    "apiserver_ready_s",
    "stdout_lines",
    "stderr_lines",
)


def summarise_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One workload's figures over its repeats: medians over the runs that bound every pod.

    A failed run is never averaged in; a workload with any failed run is failed.
    """
    good = [r for r in runs if r["ok"]]
    summary: dict[str, Any] = {
        "runs": len(runs),
        "failed_runs": len(runs) - len(good),
        "ok": bool(runs) and len(good) == len(runs),
        "all_pods_per_s": [r.get("pods_per_s") for r in good],
    }
    for key in SUMMARISED:
        values = [r[key] for r in good if r.get(key) is not None]
        summary[key] = round(statistics.median(values), 3) if values else None
    return summary


def run_workloads(
    contenders: list[Contender],
    nodes: int,
    pods: int,
    target: Target,
    *,
    repeats: int = 1,
    seed: int = 1,
    stall_timeout: float = 60.0,
    profile: str | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> list[dict[str, Any]]:
    """``repeats`` runs of one workload for each contender, interleaved (A B, then B A, ...:
    drift on a shared machine falls on both), and a summary per contender."""
    runs: dict[str, list[dict[str, Any]]] = {c.name: [] for c in contenders}
    for i in range(repeats):
        order = contenders if i % 2 == 0 else contenders[::-1]
        for contender in order:
            if contender.step == 0 and i > 0:
                continue  # the binder is a reference: once is enough
            r = run_once(
                contender,
                nodes,
                pods,
                target,
                seed=seed + i,
                stall_timeout=stall_timeout,
                profile=profile,
                say=say,
            )
            if not r["ok"]:
                say(f"{label(contender.name)}, {nodes} nodes x {pods} pods: FAILED: {r['failure']}")
            runs[contender.name].append(r)
    return [
        {
            "scheduler": c.name,
            "step": c.step,
            "nodes": nodes,
            "pods": pods,
            "summary": summarise_runs(runs[c.name]),
            "runs": runs[c.name],
        }
        for c in contenders
    ]
