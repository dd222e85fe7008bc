#!/usr/bin/env python3
"""The same NodeNumber three ways, measured: a Python plugin, a WebAssembly guest, an extender.

One pod's scoring over N nodes (default 10), in this process, with no API server:

- **Python**: step 17's NodeNumber plugin (``plugins/nodenumber.py``): PreScore, then Score
  per node, then NormalizeScore.
- **wasm**: the project's NodeNumber guest (``guests/nodenumber/nodenumber.wat``) in step 17's
  wasm plugin: PreFilter (where the guest resets its per-cycle state), PreScore, then Score per
  node; each call crosses into the guest, which asks the host for the pod (protobuf) and the
  node's name. With ``--upstream-guest PATH`` also kube-scheduler-wasm-extension's TinyGo
  ``examples/nodenumber/main.wasm`` (not part of the repository: bring your own copy).
- **extender**: step 15's HTTPExtender calling minisched's sample extender on 127.0.0.1: one
  ``prioritize`` call with the pod and the N nodes as JSON.

It prints the median of ``--repeats`` rounds (each round scores one pod ``--pods`` times) per
pod, and the one-off cost of loading each guest. docs/step17-wasm.md quotes its output.

Run it with minisched's environment: ``.nox/minisched/bin/python hack/measure-nodenumber.py``.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import step_module  # noqa: E402
from tests.fakes import make_node, make_pod  # noqa: E402
from tests.wasm_util import FakeHandle  # noqa: E402

STEP = 17
GUEST = ROOT / "guests" / "nodenumber" / "nodenumber.wat"


def per_pod(score_one_pod: Callable[[], None], pods: int, repeats: int) -> float:
    """The median time to score one pod, in microseconds."""
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(pods):
            score_one_pod()
        rounds.append((time.perf_counter() - start) / pods)
    return statistics.median(rounds) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--upstream-guest", type=Path, default=None)
    args = parser.parse_args()
    logging.disable(logging.INFO)  # the guests' log lines are not what is measured

    nodes = [make_node(f"node{i}") for i in range(args.nodes)]
    names = [n.metadata.name for n in nodes]
    pod = make_pod("pod8")
    cycle_state = step_module(STEP, "cycle_state")
    rows: list[tuple[str, float, float | None]] = []

    nodenumber = step_module(STEP, "plugins.nodenumber")
    python_plugin = nodenumber.new(None, FakeHandle(nodes=nodes))

    def python_pod() -> None:
        state = cycle_state.CycleState()
        python_plugin.pre_score(state, pod, nodes)
        scores = [python_plugin.score(state, pod, name)[0] for name in names]
        assert scores[8 % len(scores)] == 10 or len(scores) <= 8

    rows.append(("Python plugin", per_pod(python_pod, args.pods, args.repeats), None))

    wasm = step_module(STEP, "plugins.wasm")
    guests = [("wasm guest (guests/nodenumber, WAT)", GUEST)]
    if args.upstream_guest is not None:
        guests.append(("wasm guest (upstream TinyGo)", args.upstream_guest))
    for label, path in guests:
        start = time.perf_counter()
        plugin = wasm.new({"guestURL": f"file://{path.resolve()}"}, FakeHandle(nodes=nodes))
        load = time.perf_counter() - start

        def wasm_pod(plugin: object = plugin) -> None:
            state = cycle_state.CycleState()
            plugin.pre_filter(state, pod)  # type: ignore[attr-defined]
            plugin.pre_score(state, pod, nodes)  # type: ignore[attr-defined]
            for name in names:
                plugin.score(state, pod, name)  # type: ignore[attr-defined]

        rows.append((label, per_pod(wasm_pod, args.pods, args.repeats), load * 1e3))

    from minisched import sample_extender

    config = step_module(STEP, "config")
    extender = step_module(STEP, "extender")
    server = sample_extender.serve(0)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        http = extender.new_http_extender(
            config.Extender(url_prefix=url, prioritize_verb="prioritize", weight=1)
        )

        def extender_pod() -> None:
            http.prioritize(pod, nodes)

        rows.append(
            ("extender (HTTP, JSON)", per_pod(extender_pod, args.pods // 4, args.repeats), None)
        )
    finally:
        server.shutdown()
        server.server_close()

    print(f"NodeNumber over {args.nodes} nodes, per pod (median of {args.repeats} rounds):")
    for label, micros, load in rows:
        loaded = f"   (loaded in {load:.0f} ms)" if load is not None else ""
        print(f"  {label:40} {micros:9.0f} us{loaded}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
