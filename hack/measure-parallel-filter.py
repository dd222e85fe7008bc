#!/usr/bin/env python3
"""What 16 threads would buy step 12's Filter loop on this CPython, measured, not guessed.

Upstream runs Filter (and Score) on 16 goroutines. This times one scheduling cycle's Filter on
N nodes (default 5000) four ways, in wall time and in the process's CPU time, in this process,
with no API server (docs/step12-sampling.md quotes its output):

- every node, one after the other (what step 11 does);
- every node, on a ThreadPoolExecutor of 16 threads, in upstream's chunks (parallelize.Until:
  chunks of min(sqrt(n), n/16 + 1) nodes);
- step 12's search (find_nodes_that_fit_pod, its PreFilter included): from the start index
  until numFeasibleNodesToFind nodes fit;
- and a whole cycle (snapshot, PreFilter, Filter, PreScore, Score, select_host) of step 11
  (the step before) and of step 12.

Run it with minisched's environment: ``.nox/minisched/bin/python hack/measure-parallel-filter.py``
(``--nodes 500``, ``--repeats 20``).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubernetes import client  # noqa: E402

from tests.conftest import step_module  # noqa: E402
from tests.fakes import add_nodes, offline_scheduler  # noqa: E402

PARALLELISM = 16  # upstream's default parallelism


def chunk_size_for(n: int, parallelism: int) -> int:
    """Upstream's parallelize.chunkSizeFor."""
    s = int(math.sqrt(n))
    r = n // parallelism + 1
    return max(1, min(s, r))


def measure(fns: list[Callable[[], object]], repeats: int) -> list[tuple[float, float]]:
    """Each function's median wall time and median CPU time of the process, in ms. The
    functions take turns, so that a busy spell of the machine slows all of them alike."""
    for fn in fns:
        fn()  # warm up
    wall: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall[i].append(time.perf_counter() - t)
            cpu[i].append(time.process_time() - c)
    return [
        (1000 * statistics.median(w), 1000 * statistics.median(c))
        for w, c in zip(wall, cpu, strict=True)
    ]


def scheduler(step: int, nodes: int) -> object:
    sched = offline_scheduler(step)
    add_nodes(
        sched,
        *(
            client.V1Node(
                metadata=client.V1ObjectMeta(name=f"node-{i:05d}x", resource_version="1"),
                spec=client.V1NodeSpec(),
                status=client.V1NodeStatus(
                    allocatable={"cpu": "4", "memory": "32Gi", "pods": "110"}
                ),
            )
            for i in range(nodes)
        ),
    )
    return sched


def pod() -> client.V1Pod:
    requests = {"cpu": "100m", "memory": "500Mi"}
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name="pod-x", namespace="default", uid="uid-x"),
        spec=client.V1PodSpec(
            scheduler_name="minisched",
            containers=[
                client.V1Container(
                    name="c",
                    image="pause",
                    resources=client.V1ResourceRequirements(requests=requests),
                )
            ],
        ),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    print(f"Python {sys.version.split()[0]}, free-threaded build: {free_threaded}")

    sched = scheduler(12, args.nodes)
    one = step_module(12, "schedule_one")
    cycle_state = step_module(12, "cycle_state")
    fwk = sched.framework
    sched.cache.update_snapshot(sched.snapshot)
    nodes = sched.snapshot.node_infos().list()
    p = pod()
    state = cycle_state.CycleState()
    fwk.run_pre_filter_plugins(state, p)

    def check(node_info: object) -> bool:
        return fwk.run_filter_plugins(state, p, node_info).merge().is_success()

    def every_node() -> None:
        for node_info in nodes:
            check(node_info)

    size = chunk_size_for(len(nodes), PARALLELISM)
    chunks = [nodes[i : i + size] for i in range(0, len(nodes), size)]
    pool = ThreadPoolExecutor(PARALLELISM)

    def every_node_on_threads() -> None:
        def run(chunk: list[object]) -> None:
            for node_info in chunk:
                check(node_info)

        list(pool.map(run, chunks))

    def sampled() -> None:
        one.find_nodes_that_fit_pod(sched, fwk, cycle_state.CycleState(), p, nodes)

    to_find = one.num_feasible_nodes_to_find(0, len(nodes))
    names = [
        f"Filter, all {len(nodes)} nodes, one after the other",
        f"Filter, all {len(nodes)} nodes, {PARALLELISM} threads (chunks of {size})",
        f"Filter, step 12: until {to_find} fit",
    ]
    fns: list[Callable[[], object]] = [every_node, every_node_on_threads, sampled]
    for step in (11, 12):
        s = scheduler(step, args.nodes)
        schedule_pod = step_module(step, "schedule_one").schedule_pod
        cs = step_module(step, "cycle_state")

        def cycle(
            s: object = s, schedule_pod: Callable[..., str] = schedule_pod, cs: object = cs
        ) -> None:
            schedule_pod(s, s.framework, cs.CycleState(), p)

        names.append(f"a whole cycle, step {step}")
        fns.append(cycle)
    results = measure(fns, args.repeats)
    pool.shutdown()
    width = max(len(name) for name in names)
    print(f"{'':<{width}}  {'wall':>8}  {'CPU':>8}")
    for name, (wall, cpu) in zip(names, results, strict=True):
        print(f"{name:<{width}}  {wall:5.1f} ms  {cpu:5.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
