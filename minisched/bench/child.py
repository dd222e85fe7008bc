"""The scheduler under test, in a process of its own, timing itself through the Recorder.

Upstream counterpart: scheduler_perf runs the scheduler in the test binary and reads
``scheduler_schedule_attempts_total`` and the e2e latency histograms; here the step's scheduler
runs unmodified in this child (``python -m minisched.bench.child``), so that the CPU seconds and
peak RSS it reports are its own and not the harness's.

Timings come from the ``Recorder`` that every step already calls (``minisched.report``): the
first ``attempt`` of a pod starts its latency and its ``bound`` ends it. No step is changed for
the benchmark. ``time.monotonic`` is the system-wide CLOCK_MONOTONIC, so the parent can line the
child's times up with its own.

The child exits once every pod of the benchmark namespace is bound, when no pod has been bound
for ``--stall-timeout`` seconds, or when the scheduler thread dies; it then writes one JSON
document to ``--result``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from typing import Any

from kubernetes import client

from minisched import cluster, steps
from minisched.runner import new_scheduler

from .proc import self_usage

log = logging.getLogger(__name__)


class TimingRecorder:
    """Keeps, per pod of one namespace, the time of its first attempt and of its binding.

    ``record`` is called from the scheduling thread, binding threads and informer threads, and
    for every node of every pod (``score``), so it does as little as it can: one dict lookup
    for the events it ignores. ``_lock`` guards the counters and ``done``.
    """

    def __init__(self, namespace: str, expected: int) -> None:
        self.prefix = f"{namespace}/"
        self.expected = expected
        self.first_attempt: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.attempts = 0
        self.errors: list[str] = []
        self.unschedulable = 0
        self.cpu_at_first_bind: float | None = None
        self.cpu_at_last_bind: float | None = None
        self.done = threading.Event()
        self.progress = threading.Condition()
        self._lock = threading.Lock()
        self._handlers = {
            "attempt": self._attempt,
            "bound": self._bound,
            "error": self._error,
            "unschedulable": self._unschedulable,
        }

    def record(self, event: str, /, **fields: Any) -> None:
        handler = self._handlers.get(event)
        if handler is not None:
            pod = str(fields.get("pod", ""))
            if pod.startswith(self.prefix):
                handler(pod, fields)

    def _attempt(self, pod: str, fields: dict[str, Any]) -> None:
        now = time.monotonic()
        with self._lock:
            self.attempts += 1
            self.first_attempt.setdefault(pod, now)

    def _bound(self, pod: str, fields: dict[str, Any]) -> None:
        now = time.monotonic()
        cpu = time.process_time()  # every thread of this process
        with self._lock:
            if pod in self.bound:
                return
            self.bound[pod] = now
            if self.cpu_at_first_bind is None:
                self.cpu_at_first_bind = cpu
            self.cpu_at_last_bind = cpu
            if len(self.bound) >= self.expected:
                self.done.set()
        with self.progress:
            self.progress.notify_all()

    def _error(self, pod: str, fields: dict[str, Any]) -> None:
        with self._lock:
            if len(self.errors) < 20:
                self.errors.append(f"{pod}: {fields.get('message', '')}")

    def _unschedulable(self, pod: str, fields: dict[str, Any]) -> None:
        with self._lock:
            self.unschedulable += 1


def sequential_binder(api_client: Any, args: argparse.Namespace, recorder: TimingRecorder) -> str:
    """The baseline (``--step 0``): no informer, no queue, no filtering, no scoring; one List of
    the namespace's pods and of the nodes, then one bind request per pod, round robin.

    It is the issue's "30-line sequential Python binder": the ceiling for one Python thread
    making one bind request per pod against this API server, measured side by side.
    """
    core = client.CoreV1Api(api_client)
    nodes = [n.metadata.name for n in core.list_node(label_selector=args.node_selector).items]
    pods = [p for p in core.list_namespaced_pod(args.namespace).items if not p.spec.node_name]
    if not nodes:
        return "no nodes"
    for i, pod in enumerate(pods):
        key = f"{args.namespace}/{pod.metadata.name}"
        recorder.record("attempt", pod=key)
        binding = client.V1Binding(
            metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace=args.namespace),
            target=client.V1ObjectReference(kind="Node", name=nodes[i % len(nodes)]),
        )
        response = core.create_namespaced_pod_binding(
            pod.metadata.name, args.namespace, binding, _preload_content=False
        )
        response.data  # noqa: B018 -- reading the body releases the connection
        recorder.record("bound", pod=key, node=nodes[i % len(nodes)])
    return "ok" if recorder.done.is_set() else f"bound {len(recorder.bound)} of {args.pods}"


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    recorder = TimingRecorder(args.namespace, args.pods)
    outcome = "ok"
    if args.step == 0:
        with cluster.connect(args.kubeconfig, args.context) as c:
            synced = time.monotonic()
            outcome = sequential_binder(c.api_client, args, recorder)
            finished = time.monotonic()
        return result(recorder, outcome, started, synced, finished)
    with cluster.connect(args.kubeconfig, args.context) as c:
        scheduler = new_scheduler(
            steps.get(args.step),
            c.api_client,
            seed=args.seed,
            recorder=recorder,
            node_selector=args.node_selector,
        )
        crashed: list[str] = []

        def run_scheduler() -> None:
            try:
                scheduler.run()
            except Exception:
                crashed.append(traceback.format_exc(limit=5))

        thread = threading.Thread(target=run_scheduler, name="scheduler", daemon=True)
        thread.start()
        informers = (scheduler.pod_informer, scheduler.node_informer)
        for informer in informers:
            informer.wait_for_cache_sync(args.stall_timeout)
        synced = time.monotonic()
        # Wait for every binding; give up when nothing was bound for stall_timeout seconds.
        last_count, last_progress = -1, time.monotonic()
        while not recorder.done.is_set():
            with recorder.progress:
                recorder.progress.wait(1.0)
            count = len(recorder.bound)
            if count != last_count:
                last_count, last_progress = count, time.monotonic()
            if not thread.is_alive():
                outcome = "scheduler exited: " + (crashed[0] if crashed else "run() returned")
                break
            if time.monotonic() - last_progress > args.stall_timeout:
                outcome = f"stalled: no binding for {args.stall_timeout:.0f}s"
                break
        finished = time.monotonic()
        scheduler.stop()
        thread.join(5)
    return result(recorder, outcome, started, synced, finished)


def result(
    recorder: TimingRecorder, outcome: str, started: float, synced: float, finished: float
) -> dict[str, Any]:
    """What the parent reads: times (CLOCK_MONOTONIC), latencies, CPU and peak RSS."""
    cpu_total, peak_rss = self_usage()
    cpu_window = None
    if recorder.cpu_at_first_bind is not None and recorder.cpu_at_last_bind is not None:
        cpu_window = recorder.cpu_at_last_bind - recorder.cpu_at_first_bind
    latencies = [
        recorder.bound[pod] - recorder.first_attempt[pod]
        for pod in recorder.bound
        if pod in recorder.first_attempt
    ]
    return {
        "outcome": outcome,
        "started": started,
        "synced": synced,
        "finished": finished,
        "first_bind": min(recorder.bound.values(), default=None),
        "last_bind": max(recorder.bound.values(), default=None),
        "bound": len(recorder.bound),
        "attempts": recorder.attempts,
        "unschedulable": recorder.unschedulable,
        "errors": recorder.errors,
        "latencies": latencies,
        "cpu_window_s": cpu_window,
        "cpu_total_s": cpu_total,
        "peak_rss_mib": peak_rss,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minisched.bench.child", description=__doc__)
    p.add_argument("--step", type=int, required=True, help="0: the baseline sequential binder")
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--context", default=None)
    p.add_argument("--namespace", required=True, help="the benchmark's pods live here")
    p.add_argument("--pods", type=int, required=True, help="how many bindings to wait for")
    p.add_argument("--node-selector", default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--stall-timeout", type=float, default=60.0)
    p.add_argument("--result", required=True, help="where to write the JSON result")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    result = run(args)
    with open(args.result, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
