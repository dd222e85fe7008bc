"""Scheduler workloads: scheduler_perf's SchedulingBasic for any step.

Upstream counterpart: ``test/integration/scheduler_perf`` (``BenchmarkPerfScheduling`` running
the SchedulingBasic test case: ``createNodes`` with ``node-default.yaml``, ``createPods`` with
``pod-default.yaml``, metric SchedulingThroughput).

One run of a workload:

1. an API server: a fresh embedded one (its start-to-ready time is kept), or the cluster of
   ``--kubeconfig``;
2. with no scheduler running, ``nodes`` Nodes (4 CPU, 32Gi, 110 pods, Ready; created, then
   their status written, as a kubelet would) and ``pods`` Pods (one pause container, requests =
   limits = 100m / 500Mi, ``schedulerName: minisched``) in a namespace of the run's own,
   created concurrently through the official client; creation is timed on its own;
3. the step's scheduler starts in a child process (``minisched.bench.child``) and runs until
   every pod is bound; throughput and latency are taken from the first binding to the last;
4. every pod is checked to be bound: a run that loses pods is *failed*, never averaged;
5. the namespace and the labelled nodes are deleted (a real cluster), or the server is stopped.

Node and pod names end in a letter, so the teaching plugin NodeNumber (steps 3+) scores every
node 0 and its Permit (steps 5+) lets every pod through at once: the benchmark measures
scheduling, not NodeNumber's sleeping.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config

from minisched.cluster import EmbeddedServer
from minisched.scenario import NODE_SELECTOR, SCENARIO_LABEL, SCHEDULER_NAME, Scenario

from .proc import cpu_seconds, peak_rss_mib

SCENARIO_NAME = "bench"
# Why the names look like this; printed with the results.
NAMING_NOTE = (
    "node and pod names end in a letter ('...x'): NodeNumber scores every node 0 and its "
    "Permit never waits"
)
LATENCY_NOTE = (
    "latency: the pod's first scheduling attempt to its binding, as the scheduler's Recorder "
    "saw them (attempt and bound events) in the scheduler process"
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

    @property
    def embedded(self) -> bool:
        return self.kubeconfig is None


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
        with EmbeddedServer() as embedded:
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


def pod_body(name: str) -> dict[str, Any]:
    """scheduler_perf's pod-default.yaml: one pause container, requests = limits."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {SCENARIO_LABEL: SCENARIO_NAME}},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
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


def create_pods(core: client.CoreV1Api, namespace: str, count: int) -> float:
    def create(i: int) -> None:
        core.create_namespaced_pod(namespace, pod_body(pod_name(i)), _preload_content=False).data  # noqa: B018

    return create_all(count, create)


def bound_pods(core: client.CoreV1Api, namespace: str) -> tuple[int, int]:
    """How many pods of the namespace exist, and how many of them have a node."""
    response = core.list_namespaced_pod(namespace, _preload_content=False)
    items = json.loads(response.data)["items"]
    return len(items), sum(1 for p in items if (p.get("spec") or {}).get("nodeName"))


# --- one run ---------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank percentile (q in 0..100) of ``values``, or None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n * q / 100)
    return ordered[int(min(rank, len(ordered))) - 1]


def run_once(
    step: int,
    nodes: int,
    pods: int,
    target: Target,
    *,
    seed: int = 1,
    stall_timeout: float = 60.0,
    profile: str | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """One run of SchedulingBasic for ``step``: a dict for the results file."""
    run: dict[str, Any] = {"step": step, "nodes": nodes, "pods": pods, "ok": False}
    with api_server(target) as server:
        run["apiserver_ready_s"] = server.ready_s
        core = client.CoreV1Api(server.api_client)
        scenario = Scenario(server.api_client, SCENARIO_NAME, say=lambda line: None)
        if not target.embedded:
            scenario.cleanup()  # nodes a crashed earlier run left behind
        scenario.__enter__()  # the run's namespace
        try:
            run["create_nodes_s"] = create_nodes(core, nodes)
            run["create_pods_s"] = create_pods(core, scenario.namespace, pods)
            say(
                f"step {step}, {nodes} nodes x {pods} pods: created in "
                f"{run['create_nodes_s']:.1f}s + {run['create_pods_s']:.1f}s; scheduling"
            )
            server_cpu_before = cpu_seconds(server.pid) if server.pid else None
            profile_to = None
            if profile:
                profile_to = os.path.join(profile, f"step{step}-{nodes}x{pods}-seed{seed}.txt")
            child = run_child(
                step, server, scenario.namespace, pods, seed, stall_timeout, profile_to
            )
            if profile_to:
                run["profile"] = profile_to
            server_cpu_after = cpu_seconds(server.pid) if server.pid else None
            existing, bound = bound_pods(core, scenario.namespace)
            if server.pid:
                run["apiserver_peak_rss_mib"] = peak_rss_mib(server.pid)
            if server_cpu_before is not None and server_cpu_after is not None:
                run["apiserver_cpu_s"] = round(server_cpu_after - server_cpu_before, 2)
        finally:
            if not target.embedded:  # an embedded server is thrown away with its objects
                scenario.cleanup()
    run.update(summarise(child, pods))
    run["bound"] = bound
    problems = []
    if child.get("outcome") != "ok":
        problems.append(str(child.get("outcome")))
    if existing != pods or bound != pods:
        problems.append(f"{bound} of {pods} pods bound ({existing} exist)")
    run["ok"] = not problems
    run["failure"] = "; ".join(problems) or None
    return run


def run_child(
    step: int,
    server: Server,
    namespace: str,
    pods: int,
    seed: int,
    stall_timeout: float,
    profile_to: str | None = None,
) -> dict[str, Any]:
    """Run the step's scheduler in ``minisched.bench.child`` until it has bound every pod.

    With ``profile_to``, the child runs under ``py-spy record`` (not a project dependency:
    ``pip install py-spy``, or point ``$PY_SPY`` at it) and its stacks are written there in
    the collapsed format that flamegraph.pl and speedscope read. Sampling costs the child a
    little CPU: do not compare profiled runs with unprofiled ones.
    """
    with tempfile.TemporaryDirectory(prefix="minisched-bench-") as tmp:
        result_path = os.path.join(tmp, "result.json")
        stderr_path = os.path.join(tmp, "stderr")
        cmd = [sys.executable, "-m", "minisched.bench.child", "--step", str(step)]
        cmd += ["--kubeconfig", server.kubeconfig, "--namespace", namespace]
        cmd += ["--pods", str(pods), "--seed", str(seed), "--stall-timeout", str(stall_timeout)]
        cmd += ["--node-selector", NODE_SELECTOR, "--result", result_path]
        if server.context:
            cmd += ["--context", server.context]
        if profile_to:
            cmd = py_spy_command(profile_to) + cmd
        with open(stderr_path, "w") as stderr:
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=stderr, check=False)
        with open(stderr_path) as f:
            tail = f.read()[-2000:]
        if proc.returncode != 0 or not os.path.exists(result_path):
            return {"outcome": f"scheduler process failed ({proc.returncode}): {tail}"}
        with open(result_path) as f:
            result: dict[str, Any] = json.load(f)
        if tail.strip():
            result["stderr"] = tail
        return result


def py_spy_command(output: str) -> list[str]:
    """``py-spy record`` writing collapsed stacks of every thread to ``output``."""
    py_spy = os.environ.get("PY_SPY") or shutil.which("py-spy")
    if not py_spy:
        raise SystemExit("--profile needs py-spy: pip install py-spy, or set $PY_SPY")
    os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
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
        output,
        "--",
    ]


def summarise(child: dict[str, Any], pods: int) -> dict[str, Any]:
    """The figures of one run, from what the child process reported."""
    out: dict[str, Any] = {}
    for key in ("attempts", "unschedulable", "errors", "stderr"):
        if child.get(key):
            out[key] = child[key]
    first, last = child.get("first_bind"), child.get("last_bind")
    if first is None or last is None:
        return out
    window = last - first
    bound = child.get("bound", 0)
    # n bindings span n - 1 intervals between the first and the last.
    out["window_s"] = round(window, 3)
    out["pods_per_s"] = round((bound - 1) / window, 1) if window > 0 and bound > 1 else None
    out["ms_per_pod"] = round(1000 * window / (bound - 1), 3) if bound > 1 else None
    out["startup_s"] = round(child["synced"] - child["started"], 3)
    latencies = child.get("latencies") or []
    for q in (50, 90, 99):
        value = percentile(latencies, q)
        out[f"latency_p{q}_ms"] = None if value is None else round(1000 * value, 2)
    cpu = child.get("cpu_window_s")
    out["scheduler_cpu_s"] = None if cpu is None else round(cpu, 2)
    out["scheduler_cpu_total_s"] = round(child.get("cpu_total_s", 0.0), 2)
    out["cpu_ms_per_pod"] = round(1000 * cpu / (bound - 1), 3) if cpu and bound > 1 else None
    out["scheduler_peak_rss_mib"] = child.get("peak_rss_mib")
    return out


def summarise_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One workload's figures over its repeats: medians over the runs that bound every pod.

    A failed run is never averaged in; a workload with any failed run is failed.
    """
    good = [r for r in runs if r["ok"]]
    summary: dict[str, Any] = {
        "runs": len(runs),
        "failed_runs": len(runs) - len(good),
        "ok": bool(runs) and len(good) == len(runs),
    }
    keys = (
        "pods_per_s",
        "ms_per_pod",
        "latency_p50_ms",
        "latency_p90_ms",
        "latency_p99_ms",
        "scheduler_cpu_s",
        "cpu_ms_per_pod",
        "scheduler_peak_rss_mib",
        "apiserver_peak_rss_mib",
        "apiserver_cpu_s",
        "create_nodes_s",
        "create_pods_s",
        "startup_s",
        "apiserver_ready_s",
    )
    for key in keys:
        values = [r[key] for r in good if r.get(key) is not None]
        summary[key] = round(statistics.median(values), 3) if values else None
    return summary


def run_workload(
    step: int,
    nodes: int,
    pods: int,
    target: Target,
    *,
    repeats: int = 1,
    seed: int = 1,
    stall_timeout: float = 60.0,
    profile: str | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """``repeats`` runs of one workload and their summary."""
    runs = [
        run_once(
            step,
            nodes,
            pods,
            target,
            seed=seed + i,
            stall_timeout=stall_timeout,
            profile=profile,
            say=say,
        )
        for i in range(repeats)
    ]
    for r in runs:
        if not r["ok"]:
            say(f"step {step}, {nodes} nodes x {pods} pods: FAILED: {r['failure']}")
    return {
        "step": step,
        "nodes": nodes,
        "pods": pods,
        "summary": summarise_runs(runs),
        "runs": runs,
    }
