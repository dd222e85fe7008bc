"""``--kube-scheduler-plugins``: kube-scheduler configured with exactly a step's plugins (issue 37).

Upstream counterpart: a ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``)
whose profile enables plugins through ``plugins.multiPoint`` and disables ``*``, as
``pkg/scheduler/apis/config/v1`` reads it; the plugin order and weights are those of
``getDefaultPlugins``.

The plugins are read from the step's framework, built offline; the bench's options, tables and
target lines are checked with fabricated results (no cluster, no scheduler started). The last
test runs the real binary with ``--write-config-to`` (it builds the profile and exits without
connecting), skipped when ``~/.cache/realk8s/bin/kube-scheduler`` is not built here.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from minisched.bench import __main__ as bench
from minisched.bench import kube_scheduler, results
from minisched.bench.scheduler import Contender, Server, kube_scheduler_contender

KUBE_SCHEDULER = (
    Path(os.environ.get("REALK8S_DIR", os.path.expanduser("~/.cache/realk8s")))
    / "bin"
    / "kube-scheduler"
)

# Step 18 with no configuration, as kube-scheduler is to run it: upstream's default order and
# weights, restricted to the plugins step 18 has.
STEP18 = [
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("DefaultBinder", None),
]
# Step 12: no TaintToleration, NodeAffinity nor NodeResourcesBalancedAllocation yet.
STEP12 = [
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeResourcesFit", 1),
    ("DefaultPreemption", None),
    ("DefaultBinder", None),
]
STEP18_MULTI_POINT = {
    "enabled": [
        {"name": "PrioritySort"},
        {"name": "NodeUnschedulable"},
        {"name": "TaintToleration", "weight": 3},
        {"name": "NodeAffinity", "weight": 2},
        {"name": "NodeResourcesFit", "weight": 1},
        {"name": "DefaultPreemption"},
        {"name": "NodeResourcesBalancedAllocation", "weight": 1},
        {"name": "DefaultBinder"},
    ],
    "disabled": [{"name": "*"}],
}


# --- the plugins of a step -------------------------------------------------------------------


def test_step18_plugins_and_weights() -> None:
    plugins = kube_scheduler.step_plugins(18)
    assert plugins.step == 18
    assert plugins.enabled == STEP18
    assert plugins.left_out == [] and plugins.added == []
    assert "none left out" in plugins.note()


def test_step18_configuration_enables_exactly_those(tmp_path: Path) -> None:
    """multiPoint names them in order, with a weight only on the Score plugins, and disables
    ``*`` (v1: queueSort and bind too, hence PrioritySort and DefaultBinder in the list)."""
    plugins = kube_scheduler.step_plugins(18)
    cfg = kube_scheduler.config("kc", "default-scheduler", None, plugins.enabled)
    assert cfg["profiles"] == [
        {"schedulerName": "default-scheduler", "plugins": {"multiPoint": STEP18_MULTI_POINT}}
    ]
    # Without plugins: the defaults, as before.
    assert kube_scheduler.config("kc", "default-scheduler", None)["profiles"] == [
        {"schedulerName": "default-scheduler"}
    ]


def test_step12_leaves_out_the_teaching_plugins() -> None:
    """Step 12's framework is built otherwise (no profiles, one framework): the same reading
    works, and NodeNumber and FlakyBinder, which kube-scheduler lacks, are left out and named."""
    plugins = kube_scheduler.step_plugins(12)
    assert plugins.enabled == STEP12
    assert plugins.left_out == ["NodeNumber", "FlakyBinder"]
    assert plugins.added == []
    assert plugins.note().endswith(
        "every other disabled; left out (kube-scheduler has no such plugin): NodeNumber, "
        "FlakyBinder"
    )


def test_step13_scores_with_upstreams_weights() -> None:
    plugins = kube_scheduler.step_plugins(13)
    assert plugins.enabled == STEP18
    assert plugins.left_out == ["NodeNumber", "FlakyBinder"]


def test_an_early_step_gets_a_queue_sort_and_a_binder() -> None:
    """Step 3 keeps a FIFO queue and binds in the scheduler: kube-scheduler refuses a profile
    without a QueueSort and a Bind plugin, so PrioritySort and DefaultBinder are added, and
    said so."""
    plugins = kube_scheduler.step_plugins(3)
    assert plugins.enabled == [
        ("PrioritySort", None),
        ("NodeUnschedulable", None),
        ("DefaultBinder", None),
    ]
    assert plugins.left_out == ["NodeNumber"]
    assert plugins.added == ["PrioritySort", "DefaultBinder"]
    assert "added (kube-scheduler needs them): PrioritySort, DefaultBinder" in plugins.note()


def test_step1_has_no_plugins() -> None:
    with pytest.raises(kube_scheduler.KubeSchedulerError, match="step 1 has no framework"):
        kube_scheduler.step_plugins(1)


def test_the_same_plugins_contender_writes_them_per_run(tmp_path: Path) -> None:
    """Its own results key; the pods and the profile stay default-scheduler's."""
    contender = kube_scheduler_contender("/bin/kube-scheduler", 50, kube_scheduler.step_plugins(18))
    assert contender.name == "kube-scheduler-same" == results.SAME_PLUGINS
    assert contender.scheduler_name == "default-scheduler"
    server = Server(str(tmp_path / "kubeconfig"), None, None, None, None)  # type: ignore[arg-type]
    argv = contender.argv(server, 1, "ns", str(tmp_path))
    assert argv is not None
    cfg = yaml.safe_load(Path(argv[2]).read_text())
    assert cfg["profiles"][0]["plugins"] == {"multiPoint": STEP18_MULTI_POINT}
    assert cfg["percentageOfNodesToScore"] == 50


# --- the options -----------------------------------------------------------------------------


def contenders_of(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], dict[str, Any]]:
    """The bench's contenders for ``argv``, nothing run (run_workloads is replaced), and the
    results file."""
    seen: list[Contender] = []

    def run_workloads(contenders: list[Contender], *args: Any, **kwargs: Any) -> list[Any]:
        seen[:] = contenders
        return []

    monkeypatch.setattr(bench, "run_workloads", run_workloads)
    monkeypatch.setattr(kube_scheduler, "version", lambda path: "Kubernetes v1.36.2")
    argv = [*argv, "--kube-scheduler", "/bin/true", "--no-apiserver", "--no-baseline"]
    assert bench.main([*argv, "--quick", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("bench-*.json")
    return [c.name for c in seen], json.loads(path.read_text())


@pytest.mark.parametrize(
    ("mode", "names"),
    [
        ([], ["step12", "step18", "default-scheduler", "kube-scheduler-same"]),
        (
            ["--kube-scheduler-plugins", "both"],
            ["step12", "step18", "default-scheduler", "kube-scheduler-same"],
        ),
        (["--kube-scheduler-plugins", "default"], ["step12", "step18", "default-scheduler"]),
        (["--kube-scheduler-plugins", "same"], ["step12", "step18", "kube-scheduler-same"]),
    ],
)
def test_which_kube_scheduler_configurations_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: list[str],
    names: list[str],
) -> None:
    """Both by default, interleaved with the steps in one run; the plugins are the highest
    step's (18, not 12), kept in the results and named in a note."""
    got, data = contenders_of(["--steps", "12", "18", *mode], tmp_path, monkeypatch)
    assert got == names
    kube = data["config"]["kube_scheduler"]
    assert kube["plugins"] == (mode[1] if mode else "both")
    out = capsys.readouterr().out
    if "kube-scheduler-same" in names:
        assert kube["same_plugins"]["step"] == 18
        assert [p["name"] for p in kube["same_plugins"]["enabled"]] == [n for n, _ in STEP18]
        assert "kube-scheduler-same: kube-scheduler with step 18's plugins: PrioritySort," in out
    else:
        assert kube["same_plugins"] is None
        assert "kube-scheduler-same" not in out


def test_both_with_a_step_without_plugins_runs_the_defaults_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    got, data = contenders_of(["--steps", "1"], tmp_path, monkeypatch)
    assert got == ["step1", "default-scheduler"]
    assert "kube-scheduler with a step's plugins not run: step 1 has no framework" in " ".join(
        data["notes"]
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kube-scheduler-plugins", "same"], "error: --kube-scheduler-plugins goes with --kube"),
        (
            ["--kube-scheduler", "/bin/true", "--kube-scheduler-plugins", "same", "--steps", "1"],
            "error: --kube-scheduler-plugins same: step 1 has no framework",
        ),
    ],
)
def test_bad_plugins_option_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert bench.main([*argv, "--quick", "--out", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith(message), out
    assert not list(tmp_path.glob("bench-*.json"))


def test_help_says_how() -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--help"])
    assert "--kube-scheduler-plugins" in (bench.__doc__ or "")
    assert "--kubeconfig $REALK8S_RUN/admin.kubeconfig" in bench.EPILOG


# --- tables and targets ----------------------------------------------------------------------


def workload(name: str, step: int | None, nodes: int, pods_s: float, cpu: float, rss: float) -> Any:
    summary = {
        "ok": True,
        "runs": 1,
        "pods_per_s": pods_s,
        "cpu_ms_per_pod": cpu,
        "scheduler_peak_rss_mib": rss,
    }
    return {"scheduler": name, "step": step, "nodes": nodes, "pods": 1000, "summary": summary}


def fabricated() -> dict[str, Any]:
    """Step 18 against kube-scheduler at its defaults and with step 18's plugins, at 500 and
    5000 nodes."""
    same = {"step": 18, "enabled": [], "left_out": [], "added": []}
    kube = {"path": "/k", "percentage_of_nodes_to_score": None, "same_plugins": same}
    return {
        "config": {"kube_scheduler": kube},
        "notes": [],
        "workloads": [
            workload("step18", 18, 500, 250.0, 4.0, 120.0),
            workload("default-scheduler", None, 500, 400.0, 2.0, 80.0),
            workload("kube-scheduler-same", None, 500, 300.0, 1.6, 75.0),
            workload("step18", 18, 5000, 100.0, 10.0, 300.0),
            workload("default-scheduler", None, 5000, 80.0, 12.0, 150.0),
            workload("kube-scheduler-same", None, 5000, 125.0, 8.0, 200.0),
        ],
    }


def test_side_by_side_against_each_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    table = results.side_by_side_table(fabricated())
    assert table is not None
    Console(width=250).print(table)
    lines = capsys.readouterr().out.splitlines()
    rows = [[c.strip() for c in line.split("│")] for line in lines if line.startswith("│")]
    assert len(rows) == 4, lines
    # pods/s, CPU ms/pod, RSS peak: the step's, kube-scheduler's, the ratio.
    expected = [
        ("500", "kube-scheduler (defaults)", "0.62x", "2.00x", "1.50x"),
        ("500", "kube-scheduler (step 18's plugins)", "0.83x", "2.50x", "1.60x"),
        ("5000", "kube-scheduler (defaults)", "1.25x", "0.83x", "2.00x"),
        ("5000", "kube-scheduler (step 18's plugins)", "0.80x", "1.25x", "1.50x"),
    ]
    for cells, (nodes, who, *ratios) in zip(rows, expected, strict=True):
        assert cells[1] == "18" and cells[2] == nodes and cells[4] == who, cells
        assert [cells[7], cells[10], cells[13]] == ratios, cells


def test_workloads_table_labels_both(capsys: pytest.CaptureFixture[str]) -> None:
    Console(width=250).print(results.workloads_table(fabricated()))
    out = capsys.readouterr().out
    assert "kube-scheduler (step 18's plugins)" in out
    assert "kube-scheduler (defaults)" in out


def test_issue37_target_lines() -> None:
    assert results.targets(fabricated()) == [
        "step 18 at 500 nodes: 250 pods/s = 0.83 x kube-scheduler with step 18's plugins "
        "(target >= 1.0)",
        "step 18 at 500 nodes: peak RSS 120 MiB = 1.60 x that of kube-scheduler with step "
        "18's plugins, 75 MiB (target <= 1.5x)",
        "step 18 at 500 nodes: peak RSS 120 MiB = 1.50 x that of kube-scheduler at its "
        "defaults, 80 MiB (target <= 1.5x)",
        "step 18 at 5000 nodes: 100 pods/s = 0.80 x kube-scheduler with step 18's plugins "
        "(target >= 1.0)",
        "step 18 at 5000 nodes: peak RSS 300 MiB = 1.50 x that of kube-scheduler with step "
        "18's plugins, 200 MiB (target <= 1.5x)",
        "step 18 at 5000 nodes: 100 pods/s = 1.25 x kube-scheduler at its defaults (target >= 1.0)",
        "step 18 at 5000 nodes: peak RSS 300 MiB = 2.00 x that of kube-scheduler at its "
        "defaults, 150 MiB (target <= 1.5x)",
    ]


def test_older_steps_get_no_issue37_lines() -> None:
    data = fabricated()
    for w in data["workloads"]:
        if w["step"]:
            w["scheduler"], w["step"] = "step17", 17
    assert not [line for line in results.targets(data) if "kube-scheduler with" in line]


# --- the real binary -------------------------------------------------------------------------


@pytest.mark.parametrize(("step", "expected"), [(18, STEP18), (12, STEP12)])
def test_kube_scheduler_accepts_the_configuration(
    tmp_path: Path, step: int, expected: list[tuple[str, int | None]]
) -> None:
    """``kube-scheduler --config FILE --write-config-to OUT`` builds the profile (an unknown
    plugin fails it) and writes the effective configuration without connecting: its profile
    enables exactly the step's plugins, with their weights, every other disabled."""
    if not os.access(KUBE_SCHEDULER, os.X_OK):
        pytest.skip(f"no real kube-scheduler at {KUBE_SCHEDULER} (see ../shared/realk8s)")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    plugins = kube_scheduler.step_plugins(step)
    assert plugins.enabled == expected
    cfg = kube_scheduler.write_config(
        str(tmp_path), str(kubeconfig), None, "default-scheduler", None, plugins.enabled
    )
    out = tmp_path / "effective.yaml"
    done = subprocess.run(
        [str(KUBE_SCHEDULER), "--config", cfg, "--write-config-to", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (profile,) = yaml.safe_load(out.read_text())["profiles"]
    multi_point = profile["plugins"]["multiPoint"]
    # The effective configuration spells every weight out (0: a plugin that does not score).
    assert [(p["name"], p["weight"] or None) for p in multi_point["enabled"]] == expected
    assert [p["name"] for p in multi_point["disabled"]] == ["*"]
    others = {k: v for k, v in profile["plugins"].items() if k != "multiPoint"}
    assert all(v == {} for v in others.values()), others
