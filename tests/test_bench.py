"""Smoke test of ``nox -s bench`` (``python -m minisched.bench``) at tiny sizes.

Upstream counterpart: scheduler_perf's ``integration-test`` label, which runs every
performance workload at 5 or 10 nodes in ordinary CI so that the benchmark cannot rot.

Asserts the shape of the JSON and that every pod was bound; never a timing. The side-by-side
run against a real kube-scheduler is opt-in: it needs the real control plane of
``shared/realk8s`` (built, and ``$REALK8S_RUN`` naming an instance of one's own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from minisched.bench import results
from minisched.bench.__main__ import main
from minisched.bench.scheduler import node_name, pod_name

RUN_KEYS = {
    "scheduler",
    "nodes",
    "pods",
    "ok",
    "bound",
    "pods_per_s",
    "ms_per_pod",
    "scheduler_cpu_s",
    "scheduler_rss_start_mib",
    "scheduler_rss_end_mib",
    "scheduler_peak_rss_mib",
    "apiserver_peak_rss_mib",
    "create_nodes_s",
    "create_pods_s",
    "apiserver_ready_s",
    "stdout_lines",
    "stderr_lines",
}


@pytest.fixture(scope="module")
def bench_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    status = main(["--quick", "--steps", "1", "--nodes", "5", "--pods", "20", "--out", str(out)])
    assert status == 0
    (path,) = out.glob("bench-*.json")
    return path


def test_every_pod_is_bound(bench_file: Path) -> None:
    data = json.loads(bench_file.read_text())
    assert data["schema"] == results.SCHEMA
    assert [(w["scheduler"], w["nodes"], w["pods"]) for w in data["workloads"]] == [
        ("binder", 5, 20),  # the baseline binder
        ("step1", 5, 20),
    ]
    for workload in data["workloads"]:
        assert workload["summary"]["ok"] is True
        (run,) = workload["runs"]
        assert RUN_KEYS <= set(run)
        assert run["ok"] is True
        assert run["bound"] == run["pods"] == 20


def test_the_step_runs_as_users_run_it(bench_file: Path) -> None:
    """The figures are the scheduler process's own: python -m steps.step1 with its report on
    stdout and its log on stderr (one "Successfully bound" line per pod at least)."""
    step1 = json.loads(bench_file.read_text())["workloads"][1]
    (run,) = step1["runs"]
    assert run["stderr_lines"] >= 20
    assert run["stdout_lines"] >= 20  # the report's "bound" lines
    assert 0 < run["scheduler_rss_start_mib"] <= run["scheduler_peak_rss_mib"]
    assert run["scheduler_rss_end_mib"] <= run["scheduler_peak_rss_mib"]


def test_api_server_part(bench_file: Path) -> None:
    api = json.loads(bench_file.read_text())["apiserver"]
    assert set(api) >= {
        "start_to_ready_s",
        "creates_per_s",
        "binds_per_s",
        "watch_latency_ms_1",
        "watch_latency_ms_50",
    }
    assert api["watch_latency_ms_50"]["samples"] > 0


def test_compare_against_itself(bench_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = results.load(str(bench_file))
    results.print_results(data)
    from rich.console import Console

    console = Console(width=200)
    console.print(results.compare_table(data, data, bench_file.name))
    console.print(results.compare_apiserver_table(data, data, bench_file.name))
    out = capsys.readouterr().out
    assert "1.00x" in out
    assert "NodeNumber" in out  # the note on names that end in a letter


def test_names_end_in_a_letter() -> None:
    # NodeNumber reads the last character as a digit: a letter means it neither scores nor waits.
    assert not node_name(7)[-1].isdigit()
    assert not pod_name(7)[-1].isdigit()


def test_kubeconfig_path_cleans_up(tmp_path: Path) -> None:
    """--kubeconfig: the workload runs on "a real cluster" (here a server of its own), binds
    every pod to the benchmark's labelled nodes only, and leaves nothing behind."""
    from kubernetes import client, config

    from minisched.cluster import EmbeddedServer

    with EmbeddedServer() as server:
        api = config.new_client_from_config(config_file=server.kubeconfig)
        core = client.CoreV1Api(api)
        core.create_node({"metadata": {"name": "someone-elses-node"}})
        argv = ["--kubeconfig", server.kubeconfig, "--steps", "1", "--nodes", "3"]
        status = main([*argv, "--pods", "5", "--no-baseline", "--out", str(tmp_path)])
        assert status == 0
        (path,) = tmp_path.glob("bench-*.json")
        data = json.loads(path.read_text())
        assert data["apiserver"] is None  # the API server part measures the embedded one only
        (workload,) = data["workloads"]
        assert workload["summary"]["ok"] is True
        assert workload["runs"][0]["bound"] == 5
        assert [n.metadata.name for n in core.list_node().items] == ["someone-elses-node"]
        assert core.list_pod_for_all_namespaces().items == []
        api.close()


def test_with_default_scheduler_needs_a_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--with-default-scheduler", "--quick"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "needs --kubeconfig" in out


def test_with_default_scheduler_runs_both_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--with-default-scheduler: the same workload again with schedulerName default-scheduler,
    the command started once the pods exist (here the binder plays kube-scheduler), and both
    in one table with their ratio; the JSON holds both."""
    from minisched.cluster import EmbeddedServer

    stand_in = (
        f"{sys.executable} -m minisched.bench.binder --kubeconfig {{kubeconfig}} "
        "--namespace {namespace} --scheduler-name default-scheduler"
    )
    with EmbeddedServer() as server:
        argv = ["--kubeconfig", server.kubeconfig, "--steps", "1", "--nodes", "3", "--pods", "6"]
        argv += ["--no-baseline", "--out", str(tmp_path), "--with-default-scheduler"]
        status = main([*argv, "--default-scheduler-command", stand_in])
    assert status == 0
    out = capsys.readouterr().out
    assert "Side by side with the cluster's default-scheduler" in out
    assert "started by --default-scheduler-command" in out
    (path,) = tmp_path.glob("bench-*.json")
    data = json.loads(path.read_text())
    assert [w["scheduler"] for w in data["workloads"]] == ["step1", "default-scheduler"]
    for workload in data["workloads"]:
        assert workload["summary"]["ok"] is True
        assert workload["runs"][0]["bound"] == 6
    assert data["config"]["with_default_scheduler"] is True


REALK8S = Path(os.environ.get("REALK8S_DIR", Path.home() / ".cache" / "realk8s"))


def realk8s_scripts() -> Path | None:
    """shared/realk8s next to the project (or next to the worktrees' directory), or
    ``$REALK8S_SCRIPTS``."""
    root = Path(__file__).resolve().parents[1]
    candidates = [root.parent / "shared" / "realk8s", root.parent.parent / "shared" / "realk8s"]
    if os.environ.get("REALK8S_SCRIPTS"):
        candidates.insert(0, Path(os.environ["REALK8S_SCRIPTS"]))
    return next((c for c in candidates if (c / "up.sh").is_file()), None)


@pytest.fixture
def real_control_plane() -> Any:
    """A fresh real control plane (no scheduler) of the instance ``$REALK8S_RUN`` names."""
    scripts = realk8s_scripts()
    if not os.access(REALK8S / "bin" / "kube-apiserver", os.X_OK) or scripts is None:
        pytest.skip("real control plane not built on this machine (shared/realk8s)")
    if not os.environ.get("REALK8S_RUN"):
        pytest.skip("opt-in: set REALK8S_RUN and its *_PORT variables to an instance of your own")
    up = subprocess.run(
        [str(scripts / "up.sh"), "--fresh"], capture_output=True, text=True, timeout=90
    )
    assert up.returncode == 0, up.stderr[-2000:]
    yield up.stdout.strip().splitlines()[-1]
    subprocess.run([str(scripts / "down.sh"), "--wipe"], capture_output=True, timeout=60)


def test_side_by_side_with_the_real_kube_scheduler(
    real_control_plane: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Path(os.environ["REALK8S_RUN"])
    kube_scheduler = (
        f"{REALK8S / 'bin' / 'kube-scheduler'} --kubeconfig {run / 'scheduler.kubeconfig'} "
        "--leader-elect=false --secure-port=0"
    )
    argv = ["--kubeconfig", real_control_plane, "--steps", "8", "--nodes", "5", "--pods", "10"]
    argv += ["--no-baseline", "--out", str(tmp_path), "--with-default-scheduler"]
    assert main([*argv, "--default-scheduler-command", kube_scheduler]) == 0
    assert "Side by side" in capsys.readouterr().out
    (path,) = tmp_path.glob("bench-*.json")
    workloads = json.loads(path.read_text())["workloads"]
    assert [w["scheduler"] for w in workloads] == ["step8", "default-scheduler"]
    assert all(w["summary"]["ok"] and w["runs"][0]["bound"] == 10 for w in workloads)


def test_a_kubeconfig_that_cannot_be_used_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A wiped control plane leaves its kubeconfig path behind: one line, not a traceback.
    assert main(["--quick", "--kubeconfig", str(tmp_path / "gone.kubeconfig")]) == 2
    out = capsys.readouterr().out
    assert out == f"error: --kubeconfig names {tmp_path / 'gone.kubeconfig'}: no such file\n"
    empty = tmp_path / "empty.kubeconfig"
    empty.write_text("")
    assert main(["--quick", "--kubeconfig", str(empty)]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith(f"error: cannot load kubeconfig '{empty}'")
