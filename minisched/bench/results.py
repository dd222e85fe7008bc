"""The results of one benchmark run: a JSON file, rich tables, targets and ``--compare``.

Upstream counterpart: scheduler_perf's ``dataItems`` JSON (``BenchmarkPerfScheduling_*.json``,
one entry per workload with labels and the SchedulingThroughput Average/Perc50/Perc90/Perc99)
and the perf-dash pages that compare runs.

The file is ``<out>/bench-YYYYmmdd-HHMMSS.json``::

    {"schema": 2, "started": ..., "machine": {...}, "config": {...}, "notes": [...],
     "apiserver": {...} | null,
     "workloads": [{"scheduler": "step8", "step": 8, "nodes": 500, "pods": 1000,
                    "summary": {...}, "runs": [...]}]}

``scheduler`` is ``stepN``, ``binder`` (the baseline, ``minisched.bench.binder``: the ceiling
for one Python thread making one bind request per pod), ``default-scheduler`` (the cluster's
own, with ``--with-default-scheduler``, or kube-scheduler at its defaults, with
``--kube-scheduler``) or ``kube-scheduler-same`` (kube-scheduler with only the plugins of the
step named in ``config.kube_scheduler.same_plugins``).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

SCHEMA = 2
DEFAULT_SCHEDULER = "default-scheduler"
# kube-scheduler with a step's plugins only (kube_scheduler.SAME_PLUGINS; not imported, so that
# reading results needs neither the client nor the steps).
SAME_PLUGINS = "kube-scheduler-same"

TARGET_FRACTION = 0.8  # step 8 reaches at least 0.8x the default-scheduler's pods/s
# Step 12 at 5000 nodes reaches at least 0.5x kube-scheduler's pods/s at its defaults (issue 19).
SAMPLING_TARGET_FRACTION = 0.5
SAMPLING_TARGET_NODES = 5000
MAX_RSS_RATIO = 2.0  # step 8's peak RSS is at most 2x the default-scheduler's
MAX_COST_GROWTH = 10.0  # per-pod cost at 5000 nodes at most 10x that at 500
# kube-apiserver v1.36.2 + etcd on this kind of machine: /readyz about 2.1 s after its start
# (shared/realk8s up.sh); the embedded server is to be at least 10x faster to start.
KUBE_APISERVER_READY_S = 2.1
MIN_READY_SPEEDUP = 10.0
# Issue 37, from step 18 on: pods/s at least kube-scheduler's with the step's plugins at 500 and
# 5000 nodes, and at least its defaults' at 5000; peak RSS at most 1.5x kube-scheduler's.
SPEED_TARGET_STEP = 18
SPEED_TARGET_FRACTION = 1.0
SAME_PLUGINS_TARGET_NODES = (500, 5000)
DEFAULTS_TARGET_NODES = (5000,)
SPEED_MAX_RSS_RATIO = 1.5


def new(config: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "config": config,
        "notes": notes,
        "apiserver": None,
        "workloads": [],
    }


def write(results: dict[str, Any], out_dir: str) -> Path:
    """Write the results as ``<out_dir>/bench-<time>.json``; the path."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = Path(out_dir) / f"bench-{stamp}.json"
    n = 1
    while path.exists():
        n += 1
        path = Path(out_dir) / f"bench-{stamp}-{n}.json"
    path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return path


def load(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    if data.get("schema") != SCHEMA:
        raise SystemExit(f"{path}: not a minisched bench result (schema {data.get('schema')})")
    return data


# --- tables ----------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _same_plugins_of(results: dict[str, Any] | None) -> str:
    """``step 18's plugins``: whose plugins the run's kube-scheduler-same ran with."""
    kube = ((results or {}).get("config") or {}).get("kube_scheduler") or {}
    step = (kube.get("same_plugins") or {}).get("step")
    return f"step {step}'s plugins" if step else "a step's plugins"


def scheduler_label(name: str, results: dict[str, Any] | None = None) -> str:
    """``step8`` is shown as ``8``; ``binder`` as it is; ``default-scheduler`` as it is, or
    ``kube-scheduler (defaults)`` when the run's ``results`` say it was the kube-scheduler
    binary; ``kube-scheduler-same`` as ``kube-scheduler (step 18's plugins)``."""
    if name.startswith("step"):
        return name[len("step") :]
    if name == SAME_PLUGINS:
        return f"kube-scheduler ({_same_plugins_of(results)})"
    if name == DEFAULT_SCHEDULER and ((results or {}).get("config") or {}).get("kube_scheduler"):
        return "kube-scheduler (defaults)"
    return name


def against(name: str, results: dict[str, Any]) -> str:
    """The other scheduler as a target line names it: ``kube-scheduler with step 18's
    plugins``, ``kube-scheduler at its defaults``, ``the default-scheduler``."""
    if name == SAME_PLUGINS:
        return f"kube-scheduler with {_same_plugins_of(results)}"
    if scheduler_label(name, results) == "kube-scheduler (defaults)":
        return "kube-scheduler at its defaults"
    return f"the {name}"


COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("pods/s", "pods_per_s", 1),
    ("ms/pod", "ms_per_pod", 2),
    ("CPU s", "scheduler_cpu_s", 2),
    ("CPU ms/pod", "cpu_ms_per_pod", 2),
    ("RSS start", "scheduler_rss_start_mib", 0),
    ("RSS end", "scheduler_rss_end_mib", 0),
    ("RSS peak", "scheduler_peak_rss_mib", 0),
    ("API RSS", "apiserver_peak_rss_mib", 0),
    ("API CPU s", "apiserver_cpu_s", 2),
    ("setup s", "setup_s", 1),
    ("log lines", "log_lines", 0),
)
TABLE_NOTE = (
    "CPU: the scheduler process's CPU seconds from the first binding to the last; RSS (MiB) of "
    "the scheduler process when it started, at the last binding, and its peak; API RSS: the "
    "embedded API server's peak; API CPU: its CPU seconds while the scheduler ran; setup: "
    "seconds to create the nodes and pods; log lines: what the scheduler wrote to stdout and "
    "stderr"
)


def workloads_table(results: dict[str, Any]) -> Table:
    table = Table(
        title="Scheduler workloads (SchedulingBasic)", title_justify="left", caption=TABLE_NOTE
    )
    table.add_column("scheduler", justify="right", no_wrap=True)
    for header in ("nodes", "pods"):
        table.add_column(header, justify="right")
    for header, _, _ in COLUMNS:
        table.add_column(header, justify="right")
    table.add_column("result")
    for w in results["workloads"]:
        s = w["summary"]
        setup = None
        if s.get("create_nodes_s") is not None and s.get("create_pods_s") is not None:
            setup = s["create_nodes_s"] + s["create_pods_s"]
        log_lines = None
        if s.get("stdout_lines") is not None and s.get("stderr_lines") is not None:
            log_lines = int(s["stdout_lines"] + s["stderr_lines"])
        values = {**s, "setup_s": setup, "log_lines": log_lines}
        cells = [_fmt(values.get(key), digits) for _, key, digits in COLUMNS]
        if s["ok"]:
            outcome = "ok"
            if s["runs"] > 1:
                each = ", ".join(_fmt(v, 0) for v in s.get("all_pods_per_s") or [])
                outcome += f" (median of {s['runs']}: {each})"
        else:
            failures = [r.get("failure") or "" for r in w["runs"] if not r["ok"]]
            outcome = f"[red]FAILED[/red] {s['failed_runs']}/{s['runs']}: {failures[0][:80]}"
        name = scheduler_label(w["scheduler"], results)
        table.add_row(name, str(w["nodes"]), str(w["pods"]), *cells, outcome)
    return table


def _throughput_line(w: dict[str, Any], d: dict[str, Any], target: str) -> list[str]:
    """The step's pods/s against the default-scheduler's, as a target line (none if either
    is missing)."""
    mine, theirs = w["summary"].get("pods_per_s"), d["summary"].get("pods_per_s")
    if not (mine and theirs):
        return []
    return [
        f"step {w['step']} at {w['nodes']} nodes: {mine:.0f} pods/s = {mine / theirs:.2f} x "
        f"the default-scheduler's {theirs:.0f} (target >= {target})"
    ]


def _pairs(
    results: dict[str, Any], others: tuple[str, ...] = (DEFAULT_SCHEDULER,)
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(step workload, other workload) of the same size, both ok: each step against each of
    ``others`` (the default-scheduler, kube-scheduler with the step's plugins), in that
    order."""
    by_size = {
        (w["scheduler"], w["nodes"], w["pods"]): w
        for w in results["workloads"]
        if w["scheduler"] in others and w["summary"]["ok"]
    }
    pairs = []
    for w in results["workloads"]:
        if not (w.get("step") and w["summary"]["ok"]):
            continue
        for name in others:
            other = by_size.get((name, w["nodes"], w["pods"]))
            if other is not None:
                pairs.append((w, other))
    return pairs


SIDE_BY_SIDE = (
    ("pods/s", "pods_per_s", 0),
    ("CPU ms/pod", "cpu_ms_per_pod", 2),
    ("RSS peak", "scheduler_peak_rss_mib", 0),
)


def side_by_side_table(results: dict[str, Any]) -> Table | None:
    """Each step next to each other scheduler on the same workload (the default-scheduler,
    kube-scheduler with the step's plugins), one row per pair, with their ratios."""
    pairs = _pairs(results, (DEFAULT_SCHEDULER, SAME_PLUGINS))
    if not pairs:
        return None
    kube = (results.get("config") or {}).get("kube_scheduler")
    who = f"kube-scheduler {kube['path']}" if kube else "the cluster's default-scheduler"
    title = f"Side by side with {who} (same API server, interleaved)"
    table = Table(title=title, title_justify="left", caption="ratio: the step's / the other's")
    for header in ("step", "nodes", "pods"):
        table.add_column(header, justify="right")
    table.add_column("against", no_wrap=True)
    for header, _, _ in SIDE_BY_SIDE:
        table.add_column(f"step {header}", justify="right")
        table.add_column(f"its {header}", justify="right")
        table.add_column("ratio", justify="right")
    for w, d in pairs:
        cells = []
        for _, key, digits in SIDE_BY_SIDE:
            a, b = w["summary"].get(key), d["summary"].get(key)
            cells += [_fmt(a, digits), _fmt(b, digits), _ratio(a, b)]
        who = scheduler_label(d["scheduler"], results)
        table.add_row(scheduler_label(w["scheduler"]), str(w["nodes"]), str(w["pods"]), who, *cells)
    return table


def apiserver_table(results: dict[str, Any]) -> Table:
    a = results["apiserver"] or {}
    table = Table(title="Embedded API server alone", title_justify="left")
    table.add_column("what")
    table.add_column("value", justify="right")
    ready = a.get("start_to_ready_s") or {}
    if ready:
        table.add_row("start-to-ready (median)", f"{1000 * ready['median']:.0f} ms")
    if a.get("creates_per_s") is not None:
        table.add_row(
            f"creates/s (1 client thread, {a.get('pods')} pods)", _fmt(a["creates_per_s"], 0)
        )
    if a.get("binds_per_s") is not None:
        table.add_row(f"binds/s (1 client thread, {a.get('pods')} pods)", _fmt(a["binds_per_s"], 0))
    for watchers in (1, 50):
        lat = a.get(f"watch_latency_ms_{watchers}")
        if lat:
            table.add_row(
                f"watch-event latency, {watchers} watcher(s)",
                f"p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms",
            )
    return table


def _summary(results: dict[str, Any], scheduler: str, nodes: int) -> dict[str, Any] | None:
    for w in results["workloads"]:
        if w["scheduler"] == scheduler and w["nodes"] == nodes and w["summary"]["ok"]:
            return w["summary"]
    return None


def targets(results: dict[str, Any]) -> list[str]:
    """The issue's targets, as ratios measured in this run; lines to print."""
    lines = []
    kube = (results.get("config") or {}).get("kube_scheduler")
    this_run = ""
    if kube and kube.get("percentage_of_nodes_to_score") != 100:
        pct = kube.get("percentage_of_nodes_to_score")
        this_run = (
            "; this run's kube-scheduler: percentageOfNodesToScore "
            f"{'unset (adaptive)' if pct is None else pct}, --kube-scheduler-percentage 100 "
            "for the target's"
        )
    for w, d in _pairs(results):
        mine, theirs = w["summary"], d["summary"]
        if w.get("step") == 12 and w["nodes"] == SAMPLING_TARGET_NODES:
            target = f"{SAMPLING_TARGET_FRACTION} against kube-scheduler at its defaults"
            lines += _throughput_line(w, d, target)
        if w.get("step") != 8:
            continue
        target = f"{TARGET_FRACTION} against kube-scheduler with percentageOfNodesToScore 100"
        lines += _throughput_line(w, d, target + this_run)
        if mine.get("scheduler_peak_rss_mib") and theirs.get("scheduler_peak_rss_mib"):
            ratio = mine["scheduler_peak_rss_mib"] / theirs["scheduler_peak_rss_mib"]
            lines.append(
                f"step 8 at {w['nodes']} nodes: peak RSS {mine['scheduler_peak_rss_mib']:.0f} MiB "
                f"= {ratio:.2f} x the default-scheduler's (target <= {MAX_RSS_RATIO:.0f}x)"
            )
    lines += _speed_targets(results)
    names = sorted({w["scheduler"] for w in results["workloads"] if w.get("step")})
    for name in names:
        small, large = _summary(results, name, 500), _summary(results, name, 5000)
        if small and large and small.get("ms_per_pod") and large.get("ms_per_pod"):
            growth = large["ms_per_pod"] / small["ms_per_pod"]
            cpu = ""
            if small.get("cpu_ms_per_pod") and large.get("cpu_ms_per_pod"):
                cpu = f", CPU {large['cpu_ms_per_pod'] / small['cpu_ms_per_pod']:.1f}x"
            lines.append(
                f"step {scheduler_label(name)}: per-pod cost at 5000 nodes = {growth:.1f}x that "
                f"at 500{cpu} (target <= {MAX_COST_GROWTH:.0f}x)"
            )
    ready = ((results.get("apiserver") or {}).get("start_to_ready_s") or {}).get("median")
    if ready is not None:
        lines.append(
            f"embedded API server ready in {1000 * ready:.0f} ms = "
            f"{KUBE_APISERVER_READY_S / ready:.0f}x faster than kube-apiserver's "
            f"{1000 * KUBE_APISERVER_READY_S:.0f} ms (target >= {MIN_READY_SPEEDUP:.0f}x)"
        )
    return lines


def _speed_targets(results: dict[str, Any]) -> list[str]:
    """Issue 37's targets for step 18 and later: pods/s against kube-scheduler with the step's
    plugins (500 and 5000 nodes) and at its defaults (5000 nodes), and peak RSS against
    kube-scheduler's in either configuration, at those node counts."""
    lines = []
    for w, d in _pairs(results, (SAME_PLUGINS, DEFAULT_SCHEDULER)):
        if (w.get("step") or 0) < SPEED_TARGET_STEP:
            continue
        step, nodes, other = w["step"], w["nodes"], against(d["scheduler"], results)
        mine, theirs = w["summary"], d["summary"]
        same = d["scheduler"] == SAME_PLUGINS
        wanted = SAME_PLUGINS_TARGET_NODES if same else DEFAULTS_TARGET_NODES
        if nodes in wanted and mine.get("pods_per_s") and theirs.get("pods_per_s"):
            ratio = mine["pods_per_s"] / theirs["pods_per_s"]
            lines.append(
                f"step {step} at {nodes} nodes: {mine['pods_per_s']:.0f} pods/s = {ratio:.2f} x "
                f"{other} (target >= {SPEED_TARGET_FRACTION:.1f})"
            )
        rss, their_rss = mine.get("scheduler_peak_rss_mib"), theirs.get("scheduler_peak_rss_mib")
        if nodes in (*SAME_PLUGINS_TARGET_NODES, *DEFAULTS_TARGET_NODES) and rss and their_rss:
            lines.append(
                f"step {step} at {nodes} nodes: peak RSS {rss:.0f} MiB = {rss / their_rss:.2f} x "
                f"that of {other}, {their_rss:.0f} MiB (target <= {SPEED_MAX_RSS_RATIO}x)"
            )
    return lines


def print_results(results: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    if results["workloads"]:
        console.print(workloads_table(results))
        side_by_side = side_by_side_table(results)
        if side_by_side is not None:
            console.print(side_by_side)
    if results.get("apiserver"):
        console.print(apiserver_table(results))
    for note in results.get("notes", []):
        console.print(f"note: {note}", highlight=False)
    for line in targets(results):
        console.print(f"target: {line}", highlight=False)


# --- --compare -------------------------------------------------------------------------------

COMPARED = (
    ("pods/s", "pods_per_s"),
    ("CPU ms/pod", "cpu_ms_per_pod"),
    ("RSS end", "scheduler_rss_end_mib"),
    ("RSS peak", "scheduler_peak_rss_mib"),
    ("apiserver RSS", "apiserver_peak_rss_mib"),
)


def _ratio(new: Any, old: Any) -> str:
    if not new or not old:
        return "-"
    return f"{new / old:.2f}x"


def compare_table(results: dict[str, Any], earlier: dict[str, Any], name: str) -> Table:
    """Ratios this run / the earlier run, per workload both have (higher pods/s is better;
    lower everything else)."""
    table = Table(title=f"This run / {name}", title_justify="left")
    for header in ("scheduler", "nodes", "pods"):
        table.add_column(header, justify="right")
    for header, _ in COMPARED:
        table.add_column(header, justify="right")
    before = {(w["scheduler"], w["nodes"], w["pods"]): w["summary"] for w in earlier["workloads"]}
    for w in results["workloads"]:
        old = before.get((w["scheduler"], w["nodes"], w["pods"]))
        if old is None:
            continue
        new = w["summary"]
        cells = [_ratio(new.get(key), old.get(key)) for _, key in COMPARED]
        name = scheduler_label(w["scheduler"], results)
        table.add_row(name, str(w["nodes"]), str(w["pods"]), *cells)
    return table


def compare_apiserver_table(results: dict[str, Any], earlier: dict[str, Any], name: str) -> Table:
    """The API server's figures, this run / the earlier run."""
    a, b = results.get("apiserver") or {}, earlier.get("apiserver") or {}
    table = Table(title=f"Embedded API server, this run / {name}", title_justify="left")
    table.add_column("what")
    table.add_column("ratio", justify="right")
    ready_a = (a.get("start_to_ready_s") or {}).get("median")
    ready_b = (b.get("start_to_ready_s") or {}).get("median")
    table.add_row("start-to-ready", _ratio(ready_a, ready_b))
    table.add_row("creates/s", _ratio(a.get("creates_per_s"), b.get("creates_per_s")))
    table.add_row("binds/s", _ratio(a.get("binds_per_s"), b.get("binds_per_s")))
    for watchers in (1, 50):
        la, lb = a.get(f"watch_latency_ms_{watchers}"), b.get(f"watch_latency_ms_{watchers}")
        if la and lb:
            table.add_row(f"watch p50, {watchers} watcher(s)", _ratio(la["p50"], lb["p50"]))
            table.add_row(f"watch p99, {watchers} watcher(s)", _ratio(la["p99"], lb["p99"]))
    return table
