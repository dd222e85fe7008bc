"""Run one step: cluster up, scheduler up, scenario, report, clean shutdown.

Upstream counterpart: ``cmd/kube-scheduler/app/server.go`` (``Run``: build the scheduler, start
informers, run until the context ends) plus the Go originals' ``main.go``, which starts etcd,
kube-apiserver, the scheduler and the scenario in one process.

Two entry points:

- ``python -m minisched.runner N [--seed S] [--kubeconfig P] [--context C] [-v]`` (what
  ``nox -s stepN`` and ``python scenarios/stepN.py`` call): runs step N's scheduler in a thread
  and ``scenarios/stepN.py`` against the embedded API server or the given cluster.
- ``scheduler_main(package)``, behind ``python -m steps.stepN``: the scheduler alone, like the
  kube-scheduler binary, until Ctrl-C.

Ctrl-C at any point stops the scheduler, cleans up the scenario's objects and stops the
embedded server; the process then exits with status 130.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import random
import signal
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import cluster, steps
from .clock import Clock
from .report import Recorder, Report
from .scenario import NODE_SELECTOR, Scenario

log = logging.getLogger(__name__)

DEFAULT_SEED = 1


@dataclass
class Result:
    """What a run produced: the final bindings and everything the report collected."""

    step: steps.Step
    bindings: dict[str, str | None]
    report: Report


def setup_logging(verbose: int) -> None:
    """klog-like lines on stderr: -v shows the scheduler's decisions, -vv the runtime's too."""
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(
        level=level,
        format="%(levelname).1s%(asctime)s.%(msecs)03d %(name)s] %(message)s",
        datefmt="%m%d %H:%M:%S",
        stream=sys.stderr,
        force=True,
    )
    logging.getLogger("urllib3").setLevel(logging.ERROR)


def new_scheduler(
    step: steps.Step,
    api_client: Any,
    *,
    seed: int,
    recorder: Recorder,
    node_selector: str | None,
    clock: Clock | None = None,
    **options: Any,
) -> Any:
    """Build step N's Scheduler; every step takes the same keyword arguments."""
    module = importlib.import_module(f"{step.package}.scheduler")
    return module.Scheduler(
        api_client,
        rng=random.Random(seed),
        clock=clock or Clock(),
        recorder=recorder,
        node_selector=node_selector,
        **options,
    )


def _cache_probe(scheduler: Any, timeout: float = 10.0) -> Any:
    """A function that waits until the scheduler's informers hold the named objects."""

    def wait(kind: str, names: Iterable[str]) -> bool:
        informer = scheduler.node_informer if kind == "node" else scheduler.pod_informer
        wanted = set(names)
        return informer.store.wait_until(
            lambda items: wanted <= {key.rsplit("/", 1)[-1] for key in items}, timeout
        )

    return wait


def run_step(
    number: int,
    *,
    seed: int = DEFAULT_SEED,
    kubeconfig: str | None = None,
    context: str | None = None,
    embedded: bool = False,
    report: Report | None = None,
    timeout: float = 30.0,
) -> Result:
    """Run step ``number``'s scheduler and scenario once and return the bindings."""
    step = steps.get(number)
    if not step.built:
        raise SystemExit(f"step {number} ({step.title}) is not built yet")
    scenario_module = importlib.import_module(step.scenario)
    report = report or Report()
    with cluster.connect(kubeconfig, context, embedded=embedded) as c:
        report.console.print(f"step {number}: {step.title} ({step.adds})", highlight=False)
        report.console.print(f"using the {c.describe()}, seed {seed}", highlight=False)
        scheduler = new_scheduler(
            step, c.api_client, seed=seed, recorder=report, node_selector=NODE_SELECTOR
        )
        thread = threading.Thread(target=scheduler.run, name="scheduler", daemon=True)
        with report:
            thread.start()
            try:
                with Scenario(
                    c.api_client,
                    step.slug,
                    timeout=timeout,
                    wait_for_cache=_cache_probe(scheduler),
                    report=report,
                ) as scenario:
                    bindings = scenario_module.run(scenario)
            finally:
                scheduler.stop()
                thread.join(5)
    result = Result(step, bindings, report)
    report.print(report.bindings_table(bindings, title=f"Step {number}: where each pod went"))
    for pod in bindings:
        if report.has_decision(pod):
            report.print(report.why_this_node(pod))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minisched.runner", description=__doc__)
    parser.add_argument("step", type=int, help="the step to run (1..8)")
    _add_common_flags(parser)
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    try:
        run_step(
            args.step,
            seed=args.seed,
            kubeconfig=args.kubeconfig,
            context=args.context,
            embedded=args.embedded,
        )
    except KeyboardInterrupt:
        print("interrupted: scheduler, scenario objects and API server were shut down")
        return 130
    except cluster.ClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def scheduler_main(package: str, argv: Sequence[str] | None = None) -> int:
    """``python -m steps.stepN``: run that step's scheduler alone until Ctrl-C or SIGTERM."""
    number = int(package.rsplit("step", 1)[-1])
    parser = argparse.ArgumentParser(
        prog=f"python -m {package}", description=steps.get(number).adds
    )
    _add_common_flags(parser)
    parser.add_argument(
        "--node-selector",
        default=None,
        help="only consider nodes with these labels (default: every node, as kube-scheduler)",
    )
    args = parser.parse_args(argv)
    setup_logging(max(args.verbose, 1))
    if not (args.kubeconfig or args.embedded or os.environ.get("KUBECONFIG")):
        parser.error(
            "which cluster? give --kubeconfig PATH (e.g. the one `nox -s apiserver` prints),"
            " or --embedded for a private embedded API server"
        )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        return _run_scheduler_alone(number, args, stop)
    except cluster.ClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _run_scheduler_alone(number: int, args: argparse.Namespace, stop: threading.Event) -> int:
    with cluster.connect(args.kubeconfig, args.context, embedded=args.embedded) as c:
        log.info("scheduling pods with schedulerName minisched on the %s", c.describe())
        if c.embedded:
            log.info("its kubeconfig (plain HTTP, for the Python client): %s", c.kubeconfig)
        scheduler = new_scheduler(
            steps.get(number),
            c.api_client,
            seed=args.seed,
            recorder=Report(),
            node_selector=args.node_selector,
        )
        thread = threading.Thread(target=scheduler.run, name="scheduler", daemon=True)
        thread.start()
        try:
            while thread.is_alive() and not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            scheduler.stop()
            thread.join(5)
    return 0


def _add_common_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (default 1)")
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="use this cluster instead of the embedded API server (default: $KUBECONFIG)",
    )
    parser.add_argument("--context", default=None, help="kubeconfig context to use")
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="use the embedded API server even when $KUBECONFIG is set",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v, -vv)")


if __name__ == "__main__":
    sys.exit(main())
