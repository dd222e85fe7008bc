"""What the command lines share: the runner's (``python -m minisched.runner N``), the scheduler
alone (``python -m steps.stepN``) and the bench's: their common flags, the scheduler settings
given as flags, and klog-like logging.

Upstream counterpart: ``cmd/kube-scheduler/app/options`` (the flags, and the
``KubeSchedulerConfiguration`` fields some of them set) and ``k8s.io/component-base/logs``
(``-v``).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import logging
import sys
from typing import Any

from . import steps

DEFAULT_SEED = 1

# What the user typed, when that was not ``python -m ...``: ``nox -s step5 --`` sets it to
# itself, so that a usage line or an argument error names the command the user can run again.
PROG_ENV = "MINISCHED_PROG"


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


class NoSuchSetting(ValueError):
    """A scheduler setting was given to a step that does not have it yet."""


# The scheduler settings the runner and the standalone scheduler take as flags: the keyword of
# a step's Scheduler -> its name in upstream's KubeSchedulerConfiguration. A step has a setting
# when its Scheduler takes the keyword; the earlier steps refuse the flag.
SETTINGS = {
    "percentage_of_nodes_to_score": "percentageOfNodesToScore",
}


def has_setting(step: steps.Step, keyword: str) -> bool:
    """Whether step ``step``'s Scheduler takes the setting ``keyword``."""
    module = importlib.import_module(f"{step.package}.scheduler")
    return keyword in inspect.signature(module.Scheduler).parameters


def scheduler_options(step: steps.Step, args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags, as keywords of the step's Scheduler; NoSuchSetting, in one
    line, for a setting the step does not have."""
    options: dict[str, Any] = {}
    for keyword, name in SETTINGS.items():
        value = getattr(args, keyword, None)
        if value is None:
            continue
        if not has_setting(step, keyword):
            having = [str(s.number) for s in steps.built() if has_setting(s, keyword)]
            raise NoSuchSetting(
                f"step {step.number} has no {name} setting (--{keyword.replace('_', '-')}); "
                f"the steps that have it: {', '.join(having) or 'none built yet'}"
            )
        options[keyword] = value
    return options


class BadConfiguration(ValueError):
    """The configuration file cannot be used (unreadable, undecodable, invalid, or naming a
    plugin the step does not have): the message is one line, the run ends with status 1."""

    def __init__(self, message: str) -> None:
        # Some of upstream's texts span lines (a duplicate key's "yaml: unmarshal errors:"
        # list) or quote the whole file (a missing kind): one line, and not a page of it.
        line = " ".join(message.split())
        super().__init__(line if len(line) <= 400 else line[:399] + "…")


def step_configuration(step: steps.Step, args: argparse.Namespace) -> Any | None:
    """The step's KubeSchedulerConfiguration as ``--config FILE`` gives it (decoded, defaulted
    and validated, as kube-scheduler does before it starts), or its default when only
    ``--write-config-to`` is given; None without either flag.

    NoSuchSetting for a step that reads no configuration file; BadConfiguration, in one line,
    for a file it cannot use (upstream: Options.Complete, loadConfigFromFile, Validate).
    """
    path = getattr(args, "config", None)
    if path is None and getattr(args, "write_config_to", None) is None:
        return None
    if not has_setting(step, "config"):
        having = [str(s.number) for s in steps.built() if has_setting(s, "config")]
        raise NoSuchSetting(
            f"step {step.number} reads no KubeSchedulerConfiguration (--config, "
            f"--write-config-to); the steps that do: {', '.join(having) or 'none built yet'}"
        )
    if path is None:
        return importlib.import_module(f"{step.package}.scheduler").default_configuration()
    config = importlib.import_module(f"{step.package}.config")
    validation = importlib.import_module(f"{step.package}.validation")
    try:
        cfg = config.load_config_from_file(path)
    except OSError as e:
        raise BadConfiguration(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise BadConfiguration(f"{path}: {e}") from None
    err = validation.validate_kube_scheduler_configuration(cfg)
    if err is not None:
        raise BadConfiguration(f"{path}: invalid KubeSchedulerConfiguration: {err}")
    _build_profiles(step, cfg, path)
    return cfg


def _build_profiles(step: steps.Step, cfg: Any, path: str) -> None:
    """Build each profile's framework once, offline, as kube-scheduler does before it writes
    the configuration or connects anywhere: a plugin that does not exist, or args a plugin
    refuses, is a BadConfiguration here rather than after the cluster is reached."""
    from .clock import Clock

    runtime = importlib.import_module(f"{step.package}.runtime")
    registry = importlib.import_module(f"{step.package}.plugins").new_registry()
    for profile in cfg.profiles:
        try:
            runtime.Framework(registry, profile, Clock())
        except ValueError as e:
            raise BadConfiguration(
                f"{path}: couldn't create scheduler: initializing profiles: creating profile "
                f"for scheduler name {profile.scheduler_name}: {e}"
            ) from None


def write_config(step: steps.Step, cfg: Any, to: str) -> None:
    """``--write-config-to``: the configuration, every default filled in, as YAML, to the file
    ``to`` (``-``: standard output), as kube-scheduler writes it."""
    text = importlib.import_module(f"{step.package}.config").encode_config(cfg)
    if to == "-":
        sys.stdout.write(text)
        return
    with open(to, "w", encoding="utf-8") as f:
        f.write(text)


def cluster_of(args: argparse.Namespace, cfg: Any | None) -> list[str]:
    """Which kubeconfig the run uses, kube-scheduler's way: ``--kubeconfig`` beside
    ``--config`` wins over the file's clientConnection.kubeconfig, which is used when no flag
    names one. Sets ``args.kubeconfig``; returns the one line that says what happened, if
    anything did."""
    from_file = cfg.client_connection.kubeconfig if cfg is not None else ""
    if not from_file:
        return []
    if getattr(args, "embedded", False):
        return [f"--embedded wins over clientConnection.kubeconfig {from_file} of the file"]
    if args.kubeconfig and args.kubeconfig != from_file:
        return [
            f"--kubeconfig {args.kubeconfig} wins over clientConnection.kubeconfig {from_file} "
            "of the configuration file"
        ]
    args.kubeconfig = from_file
    return [f"using clientConnection.kubeconfig {from_file} of the configuration file"]


def percentage(text: str) -> int:
    """0..100, checked as upstream validates the KubeSchedulerConfiguration."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(
            f"percentageOfNodesToScore: Invalid value: {value}: not in valid range [0-100]"
        )
    return value


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}")
    return int(text)


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of both the runner and the scheduler alone."""
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
    parser.add_argument(
        "--web",
        action="store_true",
        help="serve a live page of the nodes and queues on 127.0.0.1 (a free port, printed)",
    )
    parser.add_argument(
        "--web-port", type=_port, default=None, help="the page's port (implies --web)"
    )
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="a KubeSchedulerConfiguration file, as kube-scheduler's --config reads it"
        " (kubescheduler.config.k8s.io v1beta2, v1beta3 or v1); steps that have it",
    )
    parser.add_argument(
        "--write-config-to",
        default=None,
        metavar="FILE",
        help="write the configuration, with every default filled in, to FILE (- for standard"
        " output) and exit, as kube-scheduler does; steps that have it",
    )
    parser.add_argument(
        "--percentage-of-nodes-to-score",
        type=percentage,
        default=None,
        metavar="N",
        help="percentageOfNodesToScore, 0..100: Filter stops once this share of the nodes fits"
        " (default 0: adaptive, from 50%% down to 5%% as the cluster grows); steps that have it",
    )
