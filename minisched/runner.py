"""Run one step: cluster up, scheduler up, scenario, report, clean shutdown.

Upstream counterpart: ``cmd/kube-scheduler/app/server.go`` (``Run``: build the scheduler, start
informers, run until the context ends) plus the Go originals' ``main.go``, which starts etcd,
kube-apiserver, the scheduler and the scenario in one process.

Two entry points:

- ``python -m minisched.runner N [--seed S] [--kubeconfig P] [--context C] [-v]`` (what
  ``nox -s stepN`` and ``python scenarios/stepN.py`` call): runs step N's scheduler in a thread
  and ``scenarios/stepN.py`` against the embedded API server or the given cluster.
  ``--web`` also serves a live page of the run (minisched/web), up until Ctrl-C.
  ``--percentage-of-nodes-to-score N`` sets that scheduler setting, for the steps that have it
  (``minisched/cli.py``); the others refuse it in one line.
- ``scheduler_main(package)``, behind ``python -m steps.stepN``: the scheduler alone, like the
  kube-scheduler binary, until Ctrl-C.

Both apply the collector policy of ``minisched/gcpolicy.py``, and read of the step's Scheduler
only what ``minisched/steps.py`` states (``StepScheduler``, ``CountsRequests``).

Ctrl-C at any point stops the scheduler, cleans up the scenario's objects and stops the
embedded server; the process then exits with status 130 (interrupted). Except once a ``--web``
run's story is over: the page then waits for that Ctrl-C, which is how such a run ends, so the
status is 0.

Failures end a run with one line on stderr and a non-zero status, never a traceback: a step
that is not built (status 2, listing the ones that are), a kubeconfig that does not exist, an
API server that cannot be reached at the start, or one that goes away during the run (status
1). The scheduler alone instead outlives its API server, as kube-scheduler does: its informers
log one line when the server becomes unreachable and retry until it answers.
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
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import cluster, goroutine, steps
from .cli import (
    DEFAULT_SEED,
    PROG_ENV,
    BadConfiguration,
    NoSuchSetting,
    add_common_flags,
    cluster_of,
    has_setting,
    scheduler_options,
    setup_logging,
    step_configuration,
    write_config,
)
from .clock import Clock
from .gcpolicy import configure_gc, freeze_cache_once_listed
from .informer import CONNECTION_LOGGER
from .recorder import Recorder
from .report import NodeResources, Report
from .scenario import NODE_SELECTOR, Scenario
from .steps import CountsRequests, NoSuchStep, StepScheduler
from .web import WebError

if TYPE_CHECKING:
    from .web.server import WebPage

log = logging.getLogger(__name__)


@dataclass
class Result:
    """What a run produced: the final bindings and everything the report collected."""

    step: steps.Step
    bindings: dict[str, str | None]
    report: Report


def new_scheduler(
    step: steps.Step,
    api_client: Any,
    *,
    seed: int,
    recorder: Recorder,
    node_selector: str | None,
    clock: Clock | None = None,
    **options: Any,
) -> StepScheduler:
    """Build step N's Scheduler; every step takes the same keyword arguments. A setting or a
    configuration the step cannot build a scheduler from is a BadConfiguration (one line)."""
    module = importlib.import_module(f"{step.package}.scheduler")
    try:
        scheduler: StepScheduler = module.Scheduler(
            api_client,
            rng=random.Random(seed),
            clock=clock or Clock(),
            recorder=recorder,
            node_selector=node_selector,
            **options,
        )
    except ValueError as e:
        raise BadConfiguration(str(e)) from None
    return scheduler


# Where a scenario's CONFIG names the sample extender's URL (step 15 on); the runner starts
# the extender and writes its URL there.
EXTENDER_URL = "{extender}"
# What --write-config-to shows for it, the run not having started one.
EXTENDER_URL_SHOWN = "http://127.0.0.1:8888"
# Where a scenario's CONFIG names a file of this repository (step 17: the wasm guest's
# guestURL, file://{root}/guests/...): the runner writes the clone's root there.
ROOT_DIR = "{root}"


def scenario_config(step: steps.Step, extender_url: str = EXTENDER_URL_SHOWN) -> Any | None:
    """The configuration the step's scenario runs with (``CONFIG`` in ``scenarios/stepN.py``,
    from step 14), decoded and defaulted by the step; None without one."""
    text = getattr(importlib.import_module(step.scenario), "CONFIG", None)
    if text is None or not has_setting(step, "config"):
        return None
    text = text.replace(EXTENDER_URL, extender_url).replace(ROOT_DIR, str(steps.ROOT))
    return importlib.import_module(f"{step.package}.config").load_config(text)


def wants_extender(step: steps.Step) -> bool:
    """Whether the step's scenario runs with the sample extender."""
    return EXTENDER_URL in getattr(importlib.import_module(step.scenario), "CONFIG", "")


def configuration(step: steps.Step, args: argparse.Namespace) -> Any | None:
    """The configuration a run of the step uses: ``--config``'s, else its scenario's own,
    else None (the step's default). Prints what it does not apply, and which cluster it
    names, one line each."""
    cfg = step_configuration(step, args)
    if args.config is None:
        cfg = scenario_config(step) or cfg
    if cfg is not None and not args.write_config_to:
        for line in config_notes(step, args, cfg):
            print(f"config: {line}", file=sys.stderr)
    return cfg


def config_notes(step: steps.Step, args: argparse.Namespace, cfg: Any) -> list[str]:
    """What a run says of its configuration, one line each: which cluster it names (setting
    ``args.kubeconfig``), and each setting the step's scheduler does not apply."""
    module = importlib.import_module(f"{step.package}.scheduler")
    return cluster_of(args, cfg) + module.unapplied_settings(cfg)


def _cache_probe(scheduler: StepScheduler, c: cluster.Cluster, timeout: float = 10.0) -> Any:
    """A function that waits until the scheduler's informers hold the named objects.

    It looks up every half second whether the embedded server is still there: if it died, the
    cache never fills, and the run ends at once instead of after ``timeout``.
    """

    def wait(
        kind: str,
        names: Iterable[str],
        present: bool = True,
        versions: Mapping[str, str] | None = None,
    ) -> bool:
        """``present`` False: wait until the informers no longer hold them (deleted).
        ``versions``: name -> the resourceVersion the informer's copy must have reached."""
        informer = scheduler.node_informer if kind == "node" else scheduler.pod_informer
        wanted = set(names)
        deadline = time.monotonic() + timeout

        def seen(items: Any) -> bool:
            held = {key.rsplit("/", 1)[-1]: obj for key, obj in items.items()}
            if not present:
                return not (wanted & held.keys())
            return wanted <= held.keys() and all(
                version_reached(held[n].metadata.resource_version, v)
                for n, v in (versions or {}).items()
                if n in wanted
            )

        while (left := deadline - time.monotonic()) > 0:
            if informer.store.wait_until(seen, min(left, 0.5)):
                return True
            if c.server and c.server.process and c.server.process.poll() is not None:
                raise ServerGone(c.went_away())
        return False

    return wait


def version_reached(held: str | None, written: str) -> bool:
    """Whether an informer's copy, at resourceVersion ``held``, is the one written at
    ``written`` or a later one. Resource versions are opaque to clients, but etcd's revisions
    and the embedded server's counter are integers, and increase: compared as such. Anything
    else must match exactly."""
    try:
        return int(held or "") >= int(written)
    except ValueError:
        return held == written


def _wait_until_seen_deleted(
    scheduler: StepScheduler, namespace: str, timeout: float = 1.0
) -> None:
    """Wait until the scheduler's pod informer has seen the cleanup delete the scenario's pods,
    so the scheduler handles those deletes (a pod waiting on Permit ends as deleted) before it
    is stopped, and the report's last table shows where each pod really ended."""
    if namespace:
        prefix = f"{namespace}/"
        scheduler.pod_informer.store.wait_until(
            lambda items: not any(key.startswith(prefix) for key in items), timeout
        )


def _join_binding_threads(timeout: float = 1.0) -> None:
    """Wait for the binding cycles that ``stop()`` cut short (from step 5 on, they run on
    threads of their own, minisched.goroutine's) to record how they ended, before the report's
    last table."""
    goroutine.wait_for("binding ", timeout)


class ServerGone(cluster.ClusterError):
    """The API server stopped answering in the middle of a run."""


def run_step(
    number: int,
    *,
    seed: int = DEFAULT_SEED,
    kubeconfig: str | None = None,
    context: str | None = None,
    embedded: bool = False,
    report: Report | None = None,
    timeout: float = 30.0,
    page: WebPage | None = None,
    options: dict[str, Any] | None = None,
) -> Result:
    """Run step ``number``'s scheduler and scenario once and return the bindings.

    ``options`` are settings of the step's Scheduler (``scheduler_options``), such as
    ``percentage_of_nodes_to_score``.

    With a ``page`` (``--web``), the run is also served as a web page, which stays up after the
    scenario, its objects still in place, until Ctrl-C (or ``page.release()``).

    Raises NoSuchStep for a step that is not built, ClusterError when the API server cannot
    be reached, and ServerGone when it stops answering during the run.
    """
    step = steps.choose(number)
    scenario_module = importlib.import_module(step.scenario)
    options = dict(options or {})
    report = report or Report()
    with cluster.connect(kubeconfig, context, embedded=embedded) as c, _extender(step, c) as ext:
        if "config" not in options and ext is not None:
            options["config"] = scenario_config(step, ext.url)
        elif "config" not in options and (cfg := scenario_config(step)) is not None:
            options["config"] = cfg
        report.console.print(f"step {number}: {step.title} ({step.adds})", highlight=False)
        report.console.print(f"using the {c.describe()}, seed {seed}", highlight=False)
        # The custom resources the scenario uses (step 16: PodGroup) must be served before
        # the scheduler starts: its plugins list them as they are built.
        for manifest in getattr(scenario_module, "CRDS", ()):
            done = cluster.apply_crd(c.api_client, steps.ROOT / manifest)
            report.console.print(done, highlight=False)
        scheduler = new_scheduler(
            step,
            c.api_client,
            seed=seed,
            recorder=report,
            node_selector=NODE_SELECTOR,
            **(options or {}),
        )
        if page is not None:
            page.attach(report, scheduler, number)
            report.console.print(f"the live page: {page.start()}", highlight=False)
        thread = threading.Thread(target=scheduler.run, name="scheduler", daemon=True)
        with report:
            thread.start()
            freeze_cache_once_listed(scheduler, thread)
            scenario = Scenario(
                c.api_client,
                step.slug,
                timeout=timeout,
                wait_for_cache=_cache_probe(scheduler, c),
                report=report,
            )
            scenario.extender = ext
            reachable = True
            try:
                with scenario:
                    bindings = scenario_module.run(scenario)
                    # Before the cleanup empties the nodes.
                    nodes = _node_resources(scheduler)
                    if page is not None:
                        # Before the scenario deletes its objects: the room looks at the page.
                        _print_summary(report, number, bindings, nodes)
                        page.end("scenario over: the page stays until Ctrl-C")
                        # From here a Ctrl-C closes the page: the run succeeded (main, status 0).
                        # Set before the line that invites it, so a Ctrl-C sent after reading
                        # that line always counts as closing the page.
                        _story_over.set()
                        report.console.print(
                            f"the live page stays at {page.url} until Ctrl-C", highlight=False
                        )
                        page.hold(_sigint)
            except Exception as e:
                # The scenario's call failed, and so did its cleanup's (the error that reaches
                # here): one line, not urllib3's chain of four tracebacks.
                if not cluster.is_connection_error(e):
                    raise
                reachable = False
                left = "" if c.embedded else "; the scenario's objects may be left behind"
                raise ServerGone(c.went_away(e) + left) from None
            finally:
                if reachable:
                    _wait_until_seen_deleted(scheduler, scenario.namespace)
                scheduler.stop()
                thread.join(5)
                _join_binding_threads()
                if page is not None:
                    page.close()
    if page is None:
        _print_summary(report, number, bindings, nodes)
    return Result(step, bindings, report)


@contextmanager
def _extender(step: steps.Step, c: cluster.Cluster) -> Iterator[Any]:
    """The sample extender, on a free port, for a scenario that configures it (binding in the
    run's cluster); stopped with the run. None for the others."""
    if not wants_extender(step):
        yield None
        return
    from . import sample_extender

    server = sample_extender.serve(0, c.kubeconfig, c.context)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _node_resources(scheduler: StepScheduler) -> list[NodeResources]:
    """Each node's requested and allocatable, as the scheduler's cache counts them, for the
    steps that count requests (``CountsRequests``: from step 10, NodeResourcesFit)."""
    if not isinstance(scheduler, CountsRequests):
        return []
    return [
        NodeResources(
            node.metadata.name,
            len(info.pods),
            info.requested.milli_cpu,
            info.requested.memory,
            info.allocatable.allowed_pod_number,
            info.allocatable.milli_cpu,
            info.allocatable.memory,
        )
        for info in scheduler.node_infos()
        if (node := info.node()) is not None
    ]


def _print_summary(
    report: Report,
    number: int,
    bindings: dict[str, str | None],
    nodes: list[NodeResources],
) -> None:
    report.print(report.bindings_table(bindings, title=f"Step {number}: where each pod went"))
    if nodes:
        report.print(report.nodes_table(nodes))
    for pod in bindings:
        if report.has_decision(pod):
            report.print(report.why_this_node(pod))


def main(argv: Sequence[str] | None = None) -> int:
    prog = os.environ.get(PROG_ENV)
    parser = argparse.ArgumentParser(prog=prog or "python -m minisched.runner", description=__doc__)
    parser.add_argument(
        "step",
        # Through nox the session names the step: usage and --help leave the argument out.
        help=argparse.SUPPRESS
        if prog
        else "the step to run (" + ", ".join(str(s.number) for s in steps.built()) + ")",
    )
    add_common_flags(parser)
    parser.add_argument(
        "--kube-scheduler",
        metavar="PATH",
        help="run the scenario with the real kube-scheduler binary at PATH scheduling its pods "
        "instead of the step's scheduler (minisched/bench/kube_scheduler.py)",
    )
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    configure_gc()
    if args.kube_scheduler:
        from .bench.kube_scheduler import main_scenario

        return main_scenario(args)
    if args.verbose <= 0:
        # The informers' "cannot reach the API server" warning: the runner ends the run with
        # a line of its own when the server goes away, one is enough.
        logging.getLogger(CONNECTION_LOGGER).setLevel(logging.ERROR)
    try:
        step = steps.choose(args.step)
        options = scheduler_options(step, args)
        cfg = configuration(step, args)
    except (NoSuchStep, NoSuchSetting) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BadConfiguration as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.write_config_to:
        write_config(step, cfg, args.write_config_to)
        return 0
    if args.config is not None:
        options["config"] = cfg  # the scenario's own is loaded by run_step, with its extender
    _story_over.clear()
    _closed_page.clear()
    _watch_sigint()
    try:
        run_step(
            step.number,
            seed=args.seed,
            kubeconfig=args.kubeconfig,
            context=args.context,
            embedded=args.embedded,
            page=_page(args),
            options=options,
        )
    except KeyboardInterrupt:
        return _interrupted()
    except (cluster.ClusterError, WebError, BadConfiguration) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception:
        # A Ctrl-C that lands inside a C extension can come out as that extension's error:
        # pydantic-core, building a client model's validator on its first use, turns the
        # KeyboardInterrupt into a SchemaError. The run was interrupted all the same.
        if not _sigint.is_set():
            raise
        return _interrupted()
    return 0


def _interrupted() -> int:
    """The exit status of a run that a Ctrl-C ended (its cleanup done): 0 when that Ctrl-C
    closed a ``--web`` page whose story was over (the documented way to end such a run: nox
    then reports success, not "interrupted"), else 130, the shell's status for SIGINT."""
    if _closed_page.is_set():
        print("page closed: scheduler, scenario objects and API server were shut down")
        return 0
    print("interrupted: scheduler, scenario objects and API server were shut down")
    return 130


# Set by the SIGINT handler below: whether a Ctrl-C came, whatever exception it turned into.
_sigint = threading.Event()
# Set by run_step once a --web run's story is over and its page waits for Ctrl-C.
_story_over = threading.Event()
# Set by the SIGINT handler when the first Ctrl-C came after that: it closed the page.
_closed_page = threading.Event()


def _watch_sigint() -> None:
    """Note each Ctrl-C, then raise KeyboardInterrupt as Python's own handler does. Only when
    that handler is installed: a parent that set SIGINT to default or ignore keeps its choice."""

    def on_sigint(signum: int, frame: Any) -> None:
        # The handler runs between two bytecodes of the main thread, so _story_over is either
        # set or not for the whole of it: which Ctrl-C this is decides the exit status.
        if not _sigint.is_set() and _story_over.is_set():
            _closed_page.set()
        _sigint.set()
        signal.default_int_handler(signum, frame)

    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)
            sys.unraisablehook = _quiet_interrupts(sys.unraisablehook)


def _quiet_interrupts(hook: Any) -> Any:
    """An unraisable-exception hook that keeps a Ctrl-C quiet. A KeyboardInterrupt raised while
    the main thread finalizes something (a watch's generator closed by the collector) cannot
    propagate: Python prints it as "Exception ignored in: 'list_namespaced_pod'" with a
    traceback. The Ctrl-C is noted (``_sigint``) and the run still ends by it; the traceback
    would only frighten. Every other unraisable error goes to the previous hook."""

    def quiet(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            return
        hook(unraisable)

    return quiet


def scheduler_main(package: str, argv: Sequence[str] | None = None) -> int:
    """``python -m steps.stepN``: run that step's scheduler alone until Ctrl-C or SIGTERM."""
    number = int(package.rsplit("step", 1)[-1])
    parser = argparse.ArgumentParser(
        prog=os.environ.get(PROG_ENV) or f"python -m {package}",
        description=steps.get(number).adds,
    )
    add_common_flags(parser)
    parser.add_argument(
        "--node-selector",
        default=None,
        help="only consider nodes with these labels (default: every node, as kube-scheduler)",
    )
    args = parser.parse_args(argv)
    setup_logging(max(args.verbose, 1))
    configure_gc()
    step = steps.get(number)
    try:
        options = scheduler_options(step, args)
        cfg = step_configuration(step, args)
    except NoSuchSetting as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BadConfiguration as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.write_config_to:
        write_config(step, cfg, args.write_config_to)
        return 0
    if cfg is not None:
        for line in config_notes(step, args, cfg):
            log.warning("config: %s", line)
        options["config"] = cfg
    if not (args.kubeconfig or args.embedded or os.environ.get("KUBECONFIG")):
        parser.error(
            "which cluster? give --kubeconfig PATH (e.g. the one `nox -s apiserver` prints),"
            " or --embedded for a private embedded API server"
        )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        return _run_scheduler_alone(number, args, stop, options)
    except (cluster.ClusterError, WebError, BadConfiguration) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _run_scheduler_alone(
    number: int,
    args: argparse.Namespace,
    stop: threading.Event,
    options: dict[str, Any] | None = None,
) -> int:
    with cluster.connect(args.kubeconfig, args.context, embedded=args.embedded) as c:
        log.info("scheduling on the %s", c.describe())
        if c.embedded:
            log.info("its kubeconfig (plain HTTP, for the Python client): %s", c.kubeconfig)
        report = Report()
        scheduler = new_scheduler(
            steps.get(number),
            c.api_client,
            seed=args.seed,
            recorder=report,
            node_selector=args.node_selector,
            **(options or {}),
        )
        page = _page(args)
        if page is not None:
            page.attach(report, scheduler, number)
            report.console.print(f"the live page: {page.start()}", highlight=False)
        thread = threading.Thread(target=scheduler.run, name="scheduler", daemon=True)
        thread.start()
        freeze_cache_once_listed(scheduler, thread)
        try:
            while thread.is_alive() and not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            scheduler.stop()
            thread.join(5)
            if page is not None:
                page.close()
    return 0


def _page(args: argparse.Namespace) -> WebPage | None:
    """The live page ``--web`` (or ``--web-port``) asks for."""
    if not args.web and args.web_port is None:
        return None
    from .web.server import WebPage  # aiohttp is imported only for a run that uses it

    return WebPage(port=args.web_port or 0)


if __name__ == "__main__":
    sys.exit(main())
