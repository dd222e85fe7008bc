"""``python -m minisched.bench`` (``nox -s bench``): scheduler workloads and the API server alone.

Upstream counterpart: ``test/integration/scheduler_perf`` (``BenchmarkPerfScheduling``,
SchedulingBasic at 500 and 5000 nodes; metric SchedulingThroughput in pods/s).

    python -m minisched.bench [--steps 1 3 6 8 12] [--nodes 100 500 5000] [--pods 1000]
        [--repeats N] [--out DIR] [--compare FILE] [--kubeconfig PATH [--context C]
        [--with-default-scheduler [--default-scheduler-command CMD]]]
        [--kube-scheduler PATH [--kube-scheduler-percentage N]
        [--kube-scheduler-plugins {both,default,same}]]
        [--apiserver/--no-apiserver] [--baseline/--no-baseline] [--quick] [--profile DIR]
        [--percentage-of-nodes-to-score N]

Every (step, nodes, pods) workload runs ``--repeats`` times against a fresh embedded API server
(or the ``--kubeconfig`` cluster), each time with the step's scheduler started as users start
it, ``python -m steps.stepN --kubeconfig PATH``; the baseline binder (shown as "binder") runs
once per node count. ``--with-default-scheduler`` runs the same workload with the pods left to
the cluster's ``default-scheduler``, interleaved with the steps' runs, and prints both side by
side. ``--kube-scheduler PATH`` does the same with the kube-scheduler binary at PATH as the
default-scheduler, on the embedded server too (then served over TLS, for every run alike): a
KubeSchedulerConfiguration is generated for each run (``kube_scheduler.py``).

With ``--kube-scheduler`` kube-scheduler runs each workload in two configurations (issue 37),
interleaved with the steps: its full defaults (results key ``default-scheduler``, as before) and
exactly the plugins of the highest step run, with the same Score weights and every other plugin
disabled (key ``kube-scheduler-same``; the plugins are read from that step's framework, built
offline; those kube-scheduler lacks, such as NodeNumber, are left out and named in a note).
``--kube-scheduler-plugins default`` or ``same`` runs only one of them. Step 18 against both,
on the real control plane of ``shared/realk8s`` (``up.sh`` without ``--scheduler``, so that no
other scheduler runs)::

    nox -s bench -- --steps 18 --nodes 500 5000 --pods 1000 2000 \\
        --kubeconfig $REALK8S_RUN/admin.kubeconfig \\
        --kube-scheduler ~/.cache/realk8s/bin/kube-scheduler --no-baseline

Results go to ``<out>/bench-<time>.json`` and are printed as tables (each step side by side with
each kube-scheduler configuration), with the issue's targets as ratios.
These machines are noisy: compare ratios measured side by side (in one run, or ``--compare``
an earlier file), never absolute times.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubernetes import config
from rich.console import Console

from minisched import steps
from minisched.cli import has_setting, percentage

from . import kube_scheduler
from . import results as results_mod
from .scheduler import (
    MEASURE_NOTE,
    NAMING_NOTE,
    Target,
    default_scheduler_contender,
    kube_scheduler_contender,
    run_workloads,
    step_contender,
)

DEFAULT_STEPS = (1, 3, 6, 8, 12)
DEFAULT_NODES = (100, 500, 5000)
DEFAULT_PODS = (1000,)
QUICK_NODES = (5, 20)
QUICK_PODS = (20,)
# The API server part: full and --quick sizes (pods created and bound, process starts timed,
# events per watch-latency run).
APISERVER_SIZES = {"pods": 1000, "starts": 7, "events": 200}
APISERVER_QUICK_SIZES = {"pods": 20, "starts": 2, "events": 10}
# --kube-scheduler-plugins: which kube-scheduler configurations run.
PLUGIN_CHOICES = ("both", "default", "same")


# --help's last words: how to compare a step with the real kube-scheduler (issue 37).
EPILOG = """\
Against the real kube-scheduler, in both configurations (its defaults, and only the plugins of
the highest step run), on the real control plane of shared/realk8s started by up.sh without
--scheduler (so that no other scheduler takes the pods):

  nox -s bench -- --steps 18 --nodes 500 5000 --pods 1000 2000 \\
      --kubeconfig $REALK8S_RUN/admin.kubeconfig \\
      --kube-scheduler ~/.cache/realk8s/bin/kube-scheduler --no-baseline

Without --kubeconfig the workloads run on the embedded API server (served over TLS).
"""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m minisched.bench",
        description="A scheduler_perf-style benchmark of minisched's steps and API server.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--steps", type=int, nargs="+", help="steps to run (default 1 3 6 8 12, built)")
    p.add_argument("--nodes", type=int, nargs="+", help="node counts (default 100 500 5000)")
    p.add_argument("--pods", type=int, nargs="+", help="pod counts (default 1000)")
    p.add_argument("--repeats", type=int, default=1, help="runs per workload (median reported)")
    p.add_argument("--out", default="bench-results", help="where the JSON goes")
    p.add_argument("--compare", metavar="FILE", help="print ratios against an earlier run")
    p.add_argument(
        "--kubeconfig",
        help="run the workloads on this cluster (no API server part). $KUBECONFIG is ignored: "
        "a benchmark creates up to thousands of fake nodes, so a real cluster is named explicitly",
    )
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument(
        "--with-default-scheduler",
        action="store_true",
        help="with --kubeconfig: also run every workload with its pods left to the cluster's "
        "default-scheduler (schedulerName default-scheduler), and print both side by side",
    )
    p.add_argument(
        "--default-scheduler-command",
        metavar="CMD",
        help="start the default-scheduler with this command once the pods exist, and stop it "
        "(SIGTERM) after the run, as the steps' schedulers are started and stopped; {kubeconfig} "
        "is replaced by the cluster's kubeconfig. Without it the cluster's running "
        "default-scheduler is used, so its pods are scheduled while they are created",
    )
    p.add_argument(
        "--kube-scheduler",
        metavar="PATH",
        help="also run every workload with its pods left to the kube-scheduler binary at PATH "
        "(a generated configuration: one profile default-scheduler, qps/burst 5000, no leader "
        "election), started once the pods exist and stopped after; on the embedded server "
        "(served over TLS for every run) or with --kubeconfig. It runs twice per workload: "
        "with its default plugins and with the highest step's plugins only "
        "(--kube-scheduler-plugins)",
    )
    p.add_argument(
        "--kube-scheduler-percentage",
        type=int,
        metavar="N",
        help="with --kube-scheduler: its percentageOfNodesToScore (default unset: adaptive)",
    )
    p.add_argument(
        "--kube-scheduler-plugins",
        choices=PLUGIN_CHOICES,
        help="with --kube-scheduler: which configurations run: 'default' (its full default "
        "plugins, results key default-scheduler), 'same' (exactly the plugins of the highest "
        "step run, with its Score weights, every other disabled; key kube-scheduler-same; "
        "those kube-scheduler lacks, e.g. NodeNumber, are left out) or 'both' (the default)",
    )
    p.add_argument(
        "--apiserver",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure the embedded API server alone (default on; off with --kubeconfig)",
    )
    p.add_argument(
        "--baseline",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the sequential binder (the one-thread ceiling), once per node count",
    )
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--stall-timeout",
        type=float,
        default=60.0,
        help="a run fails when no pod is bound for this long (seconds)",
    )
    p.add_argument(
        "--percentage-of-nodes-to-score",
        type=percentage,
        metavar="N",
        help="give the steps that have the setting (12 on) this percentageOfNodesToScore "
        "(default: theirs, 0, adaptive); the default-scheduler keeps its own configuration",
    )
    p.add_argument(
        "--profile",
        metavar="DIR",
        help="run each scheduler under py-spy (pip install py-spy) and keep its stacks in DIR",
    )
    return p.parse_args(argv)


def _kubeconfig_problem(path: str, context: str | None) -> str:
    """Why the kubeconfig cannot be used, in one line; empty when it loads."""
    if not Path(path).expanduser().is_file():
        return f"--kubeconfig names {path}: no such file"
    try:
        config.new_client_from_config(config_file=path, context=context).close()
    except Exception as e:  # a malformed file, an unknown context
        return f"cannot load kubeconfig {path!r}: {e}"
    return ""


def _same_plugins(built: Sequence[int]) -> kube_scheduler.StepPlugins:
    """The plugins of the highest step run, for kube-scheduler's same-plugins configuration;
    KubeSchedulerError (one line) when there is no step, or it has no framework."""
    if not built:
        raise kube_scheduler.KubeSchedulerError("no step to take the plugins from")
    return kube_scheduler.step_plugins(max(built))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    kube_path = None
    try:
        if args.kube_scheduler:
            if args.default_scheduler_command:
                raise kube_scheduler.KubeSchedulerError(
                    "--kube-scheduler and --default-scheduler-command: give one of them"
                )
            kube_path = kube_scheduler.check_binary(args.kube_scheduler)
            args.with_default_scheduler = True
        elif args.kube_scheduler_percentage is not None:
            raise kube_scheduler.KubeSchedulerError(
                "--kube-scheduler-percentage goes with --kube-scheduler"
            )
        elif args.kube_scheduler_plugins is not None:
            raise kube_scheduler.KubeSchedulerError(
                "--kube-scheduler-plugins goes with --kube-scheduler"
            )
        kube_scheduler.check_percentage(args.kube_scheduler_percentage)
    except kube_scheduler.KubeSchedulerError as e:
        print(f"error: {e}")
        return 2
    if args.with_default_scheduler and not args.kubeconfig and not kube_path:
        print("error: --with-default-scheduler needs --kubeconfig (a cluster that runs one)")
        return 2
    if args.default_scheduler_command and not args.with_default_scheduler:
        print("error: --default-scheduler-command goes with --with-default-scheduler")
        return 2
    if args.kubeconfig:
        problem = _kubeconfig_problem(args.kubeconfig, args.context)
        if problem:
            print(f"error: {problem}")
            return 2
    # Piped output (nox logs, CI) gets a width that fits the workloads table.
    console = Console() if sys.stdout.isatty() else Console(width=160)
    target = Target(args.kubeconfig, args.context, tls=bool(kube_path) and not args.kubeconfig)
    wanted = args.steps or list(DEFAULT_STEPS)
    built = [n for n in wanted if 1 <= n <= len(steps.STEPS) and steps.get(n).built]
    notes = [NAMING_NOTE, MEASURE_NOTE]
    kube_config = None
    plugins_mode = args.kube_scheduler_plugins or "both"
    same_plugins = None
    if kube_path and plugins_mode != "default":
        try:
            same_plugins = _same_plugins(built)
        except kube_scheduler.KubeSchedulerError as e:
            if plugins_mode == "same":
                print(f"error: --kube-scheduler-plugins same: {e}")
                return 2
            notes.append(f"kube-scheduler with a step's plugins not run: {e}")
    if kube_path:
        pct = args.kube_scheduler_percentage
        kube_config = {
            "path": kube_path,
            "version": kube_scheduler.version(kube_path),
            "percentage_of_nodes_to_score": pct,
            "plugins": plugins_mode,
            "same_plugins": same_plugins.as_json() if same_plugins else None,
        }
        started = f"({kube_config['version']}), started once the pods existed and stopped after"
        if plugins_mode != "same":
            notes.append(
                f"default-scheduler: the real kube-scheduler {kube_path} {started} the run; "
                + kube_scheduler.describe("default-scheduler", pct)
            )
        if same_plugins is not None:
            notes.append(same_plugins.note())
            notes.append(
                f"{kube_scheduler.SAME_PLUGINS}: the same binary {started} the run; "
                + kube_scheduler.describe("default-scheduler", pct, same_plugins)
            )
        if target.tls:
            notes.append(
                "the embedded API server served HTTPS in every run (kube-scheduler sends its "
                "token only over TLS), the steps' and the binder's runs included"
            )
    elif args.with_default_scheduler and args.default_scheduler_command:
        notes.append(
            "default-scheduler: started by --default-scheduler-command once the pods existed, "
            f"stopped after the run: {args.default_scheduler_command}"
        )
    elif args.with_default_scheduler:
        notes.append(
            "default-scheduler: the one the cluster runs, as the cluster configures it (on a "
            "kind cluster: kind's kube-scheduler); it ran while the pods were created, so its "
            "throughput is at most their creation rate, and its CPU and RSS are not known"
        )
    for n in wanted:
        if n not in built:
            notes.append(f"step {n} skipped: not built")
    percentage = args.percentage_of_nodes_to_score
    sampling = [n for n in built if has_setting(steps.get(n), "percentage_of_nodes_to_score")]
    if percentage is not None:
        notes.append(
            f"percentageOfNodesToScore {percentage} for step(s) {sampling or 'none'} "
            "(--percentage-of-nodes-to-score)"
        )
    nodes = args.nodes or list(QUICK_NODES if args.quick else DEFAULT_NODES)
    pods = args.pods or list(QUICK_PODS if args.quick else DEFAULT_PODS)
    run_apiserver = args.apiserver and target.embedded
    config: dict[str, Any] = {
        "steps": built,
        "nodes": nodes,
        "pods": pods,
        "repeats": args.repeats,
        "seed": args.seed,
        "quick": args.quick,
        "target": "embedded" if target.embedded else f"{args.kubeconfig} ({args.context})",
        "with_default_scheduler": args.with_default_scheduler,
        "default_scheduler_command": args.default_scheduler_command,
        "kube_scheduler": kube_config,
        "tls": target.tls,
        "percentage_of_nodes_to_score": percentage,
    }
    results = results_mod.new(config, notes)

    def say(line: str) -> None:
        console.print(line, highlight=False)

    say(f"minisched bench: steps {built}, nodes {nodes}, pods {pods}, repeats {args.repeats}")
    contenders = [
        step_contender(step, percentage if step in sampling else None)
        for step in ([0] if args.baseline else []) + built
    ]
    if kube_path:
        pct = args.kube_scheduler_percentage
        if plugins_mode != "same":
            contenders.append(kube_scheduler_contender(kube_path, pct))
        if same_plugins is not None:
            say("note: " + same_plugins.note())
            contenders.append(kube_scheduler_contender(kube_path, pct, same_plugins))
    elif args.with_default_scheduler:
        contenders.append(default_scheduler_contender(args.default_scheduler_command))
    for p in pods:
        for n in nodes:
            results["workloads"] += run_workloads(
                contenders,
                n,
                p,
                target,
                repeats=args.repeats,
                seed=args.seed,
                stall_timeout=args.stall_timeout,
                profile=args.profile,
                say=say,
            )
    if run_apiserver:
        from . import apiserver

        sizes = APISERVER_QUICK_SIZES if args.quick else APISERVER_SIZES
        say(f"API server alone: {sizes}")
        results["apiserver"] = apiserver.measure(**sizes)

    path = results_mod.write(results, args.out)
    results_mod.print_results(results, console)
    if args.compare:
        earlier = results_mod.load(args.compare)
        console.print(results_mod.compare_table(results, earlier, args.compare))
        if results.get("apiserver") and earlier.get("apiserver"):
            console.print(results_mod.compare_apiserver_table(results, earlier, args.compare))
    say(f"results: {path}")
    failed = [w for w in results["workloads"] if not w["summary"]["ok"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
