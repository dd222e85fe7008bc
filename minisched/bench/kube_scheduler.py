"""The real kube-scheduler binary as a contender: ``--kube-scheduler PATH`` (bench and runner).

Upstream counterpart: ``cmd/kube-scheduler`` started with ``--config`` (a
``KubeSchedulerConfiguration``, ``kubescheduler.config.k8s.io/v1``), as scheduler_perf's
``test/integration/scheduler_perf`` configures it: a client of ``qps: 5000, burst: 5000`` and
no leader election.

- ``python -m minisched.bench --kube-scheduler PATH``: every workload runs a second time with
  the pods (``schedulerName: default-scheduler``) left to the binary at PATH, started once they
  exist and stopped (SIGTERM) after, exactly as ``--with-default-scheduler
  --default-scheduler-command`` does, but with a generated configuration.
- ``python -m minisched.bench --kube-scheduler PATH`` also runs it a third time, with "the
  step's plugins" (``--kube-scheduler-plugins``, issue 37): the profile enables, through v1's
  ``plugins.multiPoint``, exactly the plugins the highest step's default profile runs, with
  their Score weights, and disables every other one (``disabled: [{name: "*"}]``). The plugins
  are read from that step's framework, built offline (``step_plugins``).
- ``python -m minisched.runner N --kube-scheduler PATH``: step N's scenario, with its pods
  (``schedulerName: minisched``) scheduled by the binary instead of step N's scheduler.

The embedded API server then serves HTTPS (``--tls``): client-go, like kubectl, sends its
bearer token only over TLS, and over plain HTTP kube-scheduler would get 401 on every call.

Differs from upstream: the configuration has one profile, named after the scheduler name the
pods ask for, with the default plugins or a step's; ``--secure-port`` is a port picked free
just before the start (another process may take it in between: the start then fails with one
line).
"""

from __future__ import annotations

import http.client
import importlib
import os
import random
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from minisched.clock import FakeClock

from .proc import stop_process

READY_TIMEOUT = 30.0  # seconds until its /readyz answers 200
# kube-scheduler's default when percentageOfNodesToScore is unset (pkg/scheduler/schedule_one.go,
# numFeasibleNodesToFind): every node below 100; else 50% - nodes/125, at least 5%, at least 100.
ADAPTIVE = "percentageOfNodesToScore unset (adaptive: 50% - nodes/125, min 5%, min 100 nodes)"
# Keys of a kubeconfig that name files, resolved against the kubeconfig's directory.
_FILE_KEYS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


class KubeSchedulerError(RuntimeError):
    """The binary cannot be used, or did not start; the message is one line."""


def check_binary(path: str) -> str:
    """The absolute path of an executable kube-scheduler; KubeSchedulerError in one line if
    ``path`` does not exist, is a directory or is not executable."""
    p = Path(path).expanduser()
    if not p.exists():
        raise KubeSchedulerError(f"--kube-scheduler {path}: no such file")
    if p.is_dir():
        raise KubeSchedulerError(f"--kube-scheduler {path}: is a directory, not the binary")
    if not os.access(p, os.X_OK):
        raise KubeSchedulerError(f"--kube-scheduler {path}: not executable (chmod +x?)")
    return str(p.resolve())


def check_percentage(value: int | None) -> None:
    if value is not None and not 0 <= value <= 100:
        raise KubeSchedulerError(f"--kube-scheduler-percentage {value}: not between 0 and 100")


def version(path: str) -> str:
    """What ``PATH --version`` says ("Kubernetes v1.36.2"), or "version unknown"."""
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "version unknown"
    return out or "version unknown"


def describe(
    scheduler_name: str, percentage: int | None, plugins: StepPlugins | None = None
) -> str:
    """How the binary is configured, for the output (one line)."""
    pct = ADAPTIVE if percentage is None else f"percentageOfNodesToScore {percentage}"
    which = "default plugins" if plugins is None else f"only step {plugins.step}'s plugins"
    return f"one profile {scheduler_name!r} ({which}), {pct}, qps/burst 5000, no leader election"


# --- "the step's plugins" (--kube-scheduler-plugins same) ------------------------------------

# The bench's result key for kube-scheduler run with a step's plugins; "default-scheduler" stays
# the key of kube-scheduler at its defaults, so older result files still compare.
SAME_PLUGINS = "kube-scheduler-same"

# kube-scheduler v1.36's plugins, in the order of its default profile's multiPoint (what
# ``kube-scheduler --write-config-to`` writes for a profile that names none). The step's
# plugins are listed in this order, as kube-scheduler's own default profile lists them; a
# step's plugin not named here is one the stock binary lacks (NodeNumber, FlakyBinder, MaxPods,
# Coscheduling, the wasm plugin) and is left out.
KUBE_PLUGINS: tuple[str, ...] = (
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "DefaultPreemption",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "DefaultBinder",
    "NodeDeclaredFeatures",
)

# The framework's list of plugins at each extension point, as the steps name them (steps 2 to
# 18 alike; a step that lacks a point simply has no such list).
FRAMEWORK_POINTS: tuple[str, ...] = (
    "queue_sort_plugins",
    "pre_filter_plugins",
    "filter_plugins",
    "post_filter_plugins",
    "pre_score_plugins",
    "score_plugins",
    "reserve_plugins",
    "permit_plugins",
    "pre_bind_plugins",
    "bind_plugins",
    "post_bind_plugins",
)


@dataclass
class StepPlugins:
    """The plugins of a step's default profile that kube-scheduler has, for its configuration.

    ``enabled``: (name, Score weight or None for a plugin that does not score), in
    KUBE_PLUGINS' order. ``left_out``: the step's plugins kube-scheduler does not have.
    ``added``: PrioritySort or DefaultBinder when the step has no QueueSort or Bind plugin
    (steps 2 to 5 keep a FIFO queue, steps up to 8 bind in the scheduler itself): kube-scheduler
    refuses a profile without them, and they do what those steps do.
    """

    step: int
    enabled: list[tuple[str, int | None]]
    left_out: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """``step 18's plugins: PrioritySort, TaintToleration (weight 3), ...``."""
        names = ", ".join(n if w is None else f"{n} (weight {w})" for n, w in self.enabled)
        return f"step {self.step}'s plugins: {names}"

    def note(self) -> str:
        """What the same-plugins contender is, with what was left out or added (one line)."""
        line = f"{SAME_PLUGINS}: kube-scheduler with {self.describe()}, every other disabled"
        if self.left_out:
            line += f"; left out (kube-scheduler has no such plugin): {', '.join(self.left_out)}"
        else:
            line += "; none left out (kube-scheduler has every one)"
        if self.added:
            line += f"; added (kube-scheduler needs them): {', '.join(self.added)}"
        return line

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "enabled": [{"name": n, "weight": w} for n, w in self.enabled],
            "left_out": self.left_out,
            "added": self.added,
        }


def step_plugins(step: int) -> StepPlugins:
    """The plugins of step ``step``'s default profile, read from its framework.

    The step's Scheduler is built offline, as the tests' ``offline_scheduler`` builds it (an
    ApiClient that never connects, a clock that never moves) and never started: what its
    framework enables at each extension point, and its Score weights, are what ``python -m
    steps.stepN`` runs with. Raises KubeSchedulerError (one line) for a step without a
    framework (step 1).
    """
    module = importlib.import_module(f"steps.step{step}.scheduler")
    api = client.ApiClient()
    try:
        sched = module.Scheduler(api, rng=random.Random(1), clock=FakeClock())
        profiles: dict[str, Any] = getattr(sched, "profiles", None) or {}
        # Steps 14 on keep a framework per profile; their default configuration has one.
        fwk = next(iter(profiles.values()), None) if profiles else getattr(sched, "framework", None)
        if fwk is None:
            raise KubeSchedulerError(f"step {step} has no framework: no plugins to give it")
        points = {a: [p.name() for p in getattr(fwk, a, None) or []] for a in FRAMEWORK_POINTS}
        weights: dict[str, int] = getattr(fwk, "score_plugin_weight", None) or {}
        for framework in profiles.values() or [fwk]:
            close = getattr(framework, "close", None)
            if close is not None:
                close()  # Coscheduling's PodGroup informer, in the steps that have it
    finally:
        api.close()
    seen: list[str] = []  # every plugin once, in the order the extension points meet them
    for names in points.values():
        seen += [n for n in names if n not in seen]
    kept = [n for n in KUBE_PLUGINS if n in seen]
    added = []
    if not any(n in kept for n in points["queue_sort_plugins"]):
        added.append("PrioritySort")  # with equal priorities, the FIFO order of steps 2 to 5
    if not any(n in kept for n in points["bind_plugins"]):
        added.append("DefaultBinder")  # the same POST of a Binding the scheduler made itself
    kept = [n for n in KUBE_PLUGINS if n in kept or n in added]
    # 0 or no weight means 1, as in the steps' and upstream's frameworks.
    enabled = [(n, (weights.get(n) or 1) if n in points["score_plugins"] else None) for n in kept]
    left_out = [n for n in seen if n not in KUBE_PLUGINS]
    return StepPlugins(step, enabled, left_out, added)


def profile_plugins(plugins: Sequence[tuple[str, int | None]]) -> dict[str, Any]:
    """A v1 profile's ``plugins`` running exactly ``plugins``: multiPoint enables each (with its
    weight when it scores) and disables ``*``, which in v1 also empties queueSort and bind: the
    list must name a QueueSort and a Bind plugin itself."""
    enabled = [{"name": n} if w is None else {"name": n, "weight": w} for n, w in plugins]
    return {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}}


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (for ``--secure-port``)."""
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def kubeconfig_for(kubeconfig: str, context: str | None, directory: str) -> str:
    """A kubeconfig whose current context is ``context``: ``clientConnection`` has no context
    field, so with one a copy is written to ``directory`` (its file paths made absolute, as
    client-go resolves them against the original's directory). Without one: ``kubeconfig``."""
    if context is None:
        return kubeconfig
    with open(kubeconfig, encoding="utf-8") as f:
        data: dict[str, Any] = yaml.safe_load(f) or {}
    base = Path(kubeconfig).resolve().parent
    for section, inner in (("clusters", "cluster"), ("users", "user")):
        for entry in data.get(section) or []:
            fields = entry.get(inner) or {}
            for key in _FILE_KEYS:
                if fields.get(key) and not os.path.isabs(fields[key]):
                    fields[key] = str(base / fields[key])
    data["current-context"] = context
    out = Path(directory) / "kube-scheduler.kubeconfig"
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    out.chmod(0o600)
    return str(out)


def config(
    kubeconfig: str,
    scheduler_name: str,
    percentage: int | None,
    plugins: Sequence[tuple[str, int | None]] | None = None,
) -> dict[str, Any]:
    """The KubeSchedulerConfiguration: scheduler_perf's client settings, no leader election
    (the embedded server serves no Leases), one profile for ``scheduler_name``: its default
    plugins, or only ``plugins`` (name, Score weight or None), in that order."""
    profile: dict[str, Any] = {"schedulerName": scheduler_name}
    if plugins is not None:
        profile["plugins"] = profile_plugins(plugins)
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig, "qps": 5000, "burst": 5000},
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }
    if percentage is not None:
        cfg["percentageOfNodesToScore"] = percentage
    return cfg


def write_config(
    directory: str,
    kubeconfig: str,
    context: str | None,
    scheduler_name: str,
    percentage: int | None,
    plugins: Sequence[tuple[str, int | None]] | None = None,
) -> str:
    """Write the configuration (and, with a context, its kubeconfig) to ``directory``."""
    kc = kubeconfig_for(str(Path(kubeconfig).resolve()), context, directory)
    path = Path(directory) / "kube-scheduler.yaml"
    text = yaml.safe_dump(config(kc, scheduler_name, percentage, plugins), sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return str(path)


def command(
    path: str,
    directory: str,
    kubeconfig: str,
    context: str | None,
    scheduler_name: str,
    percentage: int | None,
    plugins: Sequence[tuple[str, int | None]] | None = None,
) -> list[str]:
    """kube-scheduler's command line, its configuration written to ``directory``."""
    cfg = write_config(directory, kubeconfig, context, scheduler_name, percentage, plugins)
    return [path, "--config", cfg, f"--secure-port={free_port()}", "--bind-address=127.0.0.1"]


def secure_port(argv: Sequence[str]) -> int:
    return int(next(a for a in argv if a.startswith("--secure-port=")).split("=", 1)[1])


class Process:
    """kube-scheduler as a child process, for a scenario run: started, waited on until its
    ``/readyz`` answers (its informers have synced), stopped with SIGTERM.

    Its log goes to a file in a directory of its own; the last lines are shown if it fails.
    It runs in a session of its own, so a Ctrl-C in the terminal reaches only the runner,
    which stops it before the API server.
    """

    def __init__(
        self,
        path: str,
        kubeconfig: str,
        context: str | None,
        scheduler_name: str,
        percentage: int | None,
    ) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="minisched-kube-scheduler-")
        self.argv = command(path, self._dir.name, kubeconfig, context, scheduler_name, percentage)
        self.log_path = os.path.join(self._dir.name, "kube-scheduler.log")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, ready_timeout: float = READY_TIMEOUT) -> Process:
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._wait_ready(ready_timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        """Poll ``https://127.0.0.1:PORT/readyz`` (self-signed: not verified) until 200."""
        assert self.proc is not None
        port = secure_port(self.argv)
        # Its serving certificate is self-signed, made in memory at its start: not verified.
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise KubeSchedulerError(
                    f"kube-scheduler exited with status {self.proc.returncode}: {self.tail()}"
                )
            conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=2.0, context=ctx)
            try:
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass  # not listening yet
            finally:
                conn.close()
            time.sleep(0.1)  # polling a process's readiness endpoint, as kubelet probes do
        self.stop()
        raise KubeSchedulerError(f"kube-scheduler not ready after {timeout:.0f}s: {self.tail()}")

    def tail(self, lines: int = 3) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""
        errors = [ln for ln in text.splitlines() if ln[:1] in ("E", "F")] or text.splitlines()
        return " | ".join(errors[-lines:])[:600]

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL; its exit status. (It exits 1 on SIGTERM with leader
        election off, "finished without leader elect": that is its clean stop.)"""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        return stop_process(proc)

    def close(self) -> None:
        self.stop()
        self._dir.cleanup()

    def __enter__(self) -> Process:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- a scenario run by kube-scheduler (python -m minisched.runner N --kube-scheduler PATH) ------

STEP_PLUGINS_NOTE = (
    "kube-scheduler has none of the steps' teaching plugins (NodeNumber's scores, its "
    "Permit wait), so it may bind otherwise than step {n}: that is the comparison"
)


def api_server_view(
    core: client.CoreV1Api, namespace: Callable[[], str], timeout: float = 10.0
) -> Callable[..., bool]:
    """The scenario's ``wait_for_cache`` when the scheduler is another process: its cache
    cannot be asked, so wait until the API server's lists hold (or no longer hold) the names.

    Differs from upstream: none (upstream has no scenario); the consequence is that a pod may
    be scheduled before kube-scheduler's informer has seen the scenario's last node (it is then
    retried when the node arrives), so runs are not repeatable to the node as the steps' are.
    """

    def wait(
        kind: str,
        names: Iterable[str],
        present: bool = True,
        versions: Mapping[str, str] | None = None,
    ) -> bool:
        # versions (what the scenario last wrote) need no check here: the server's list
        # holds every write that has returned.
        wanted = set(names)
        deadline = time.monotonic() + timeout
        while True:
            if kind == "node":
                items = core.list_node().items
            else:
                items = core.list_namespaced_pod(namespace()).items
            held = {o.metadata.name for o in items}
            if (wanted <= held) if present else not (wanted & held):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)  # a create or delete shows in the next list; rarely reached

    return wait


def run_scenario(
    number: int,
    path: str,
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    embedded: bool = False,
    percentage: int | None = None,
    timeout: float = 30.0,
    say: Callable[[str], None] | None = None,
) -> dict[str, str | None]:
    """Step ``number``'s scenario with its pods scheduled by kube-scheduler at ``path``; the
    bindings. Raises NoSuchStep, ClusterError, KubeSchedulerError (each one line)."""
    import importlib

    from rich.console import Console
    from rich.table import Table

    from minisched import cluster, steps
    from minisched.scenario import SCHEDULER_NAME, Scenario

    step = steps.choose(number)
    console = Console(highlight=False) if sys.stdout.isatty() else Console(width=120)
    out = say or (lambda line: console.print(line, highlight=False))
    scenario_module = importlib.import_module(step.scenario)
    with cluster.connect(kubeconfig, context, embedded=embedded, embedded_args=("--tls",)) as c:
        out(f"step {number}'s scenario: {step.title}, scheduled by the real kube-scheduler")
        out(f"using the {c.describe()}")
        out(f"scheduled by: {path} ({version(path)})")
        out("its configuration: " + describe(SCHEDULER_NAME, percentage))
        if not c.embedded:
            out(
                "warning: kube-scheduler considers every node of the cluster, not only the "
                "scenario's: its pods may land on the cluster's own nodes"
            )
        core = client.CoreV1Api(c.api_client)
        with Process(path, c.kubeconfig, c.context, SCHEDULER_NAME, percentage):
            holder: list[Scenario] = []
            scenario = Scenario(
                c.api_client,
                step.slug,
                timeout=timeout,
                wait_for_cache=api_server_view(core, lambda: holder[0].namespace),
                say=out,
            )
            holder.append(scenario)
            try:
                with scenario:
                    bindings = scenario_module.run(scenario)
            except Exception as e:
                if not cluster.is_connection_error(e):
                    raise
                raise cluster.ClusterError(c.went_away(e)) from None
    out(f"Step {number}'s scenario: where kube-scheduler bound each pod")
    table = Table()
    table.add_column("pod")
    table.add_column("node")
    for pod, node in bindings.items():
        table.add_row(pod, node or "(pending)")
    console.print(table)
    out(f"scheduled by the real kube-scheduler ({path}), not step {number}'s scheduler")
    out("note: " + STEP_PLUGINS_NOTE.format(n=number))
    return bindings


def main_scenario(args: Any) -> int:
    """``python -m minisched.runner N --kube-scheduler PATH``: the runner's parsed ``args``;
    the exit status (2: bad input, 1: the cluster or kube-scheduler failed, 130: Ctrl-C)."""
    from minisched import cluster, steps

    try:
        path = check_binary(args.kube_scheduler)
        step = steps.choose(args.step)
        if args.web or args.web_port is not None:
            raise KubeSchedulerError("--web shows a step's scheduler; not with --kube-scheduler")
    except (KubeSchedulerError, steps.NoSuchStep) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        run_scenario(
            step.number,
            path,
            kubeconfig=args.kubeconfig,
            context=args.context,
            embedded=args.embedded,
        )
    except KeyboardInterrupt:
        print("interrupted: kube-scheduler, scenario objects and API server were shut down")
        return 130
    except (cluster.ClusterError, KubeSchedulerError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0
