"""Smoke test of ``nox -s bench`` (``python -m minisched.bench``) at tiny sizes.

Upstream counterpart: scheduler_perf's ``integration-test`` label, which runs every
performance workload at 5 or 10 nodes in ordinary CI so that the benchmark cannot rot.

Asserts the shape of the JSON and that every pod was bound; never a timing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minisched.bench import results
from minisched.bench.__main__ import main
from minisched.bench.scheduler import node_name, percentile, pod_name

RUN_KEYS = {
    "step",
    "nodes",
    "pods",
    "ok",
    "bound",
    "pods_per_s",
    "ms_per_pod",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "scheduler_cpu_s",
    "scheduler_peak_rss_mib",
    "apiserver_peak_rss_mib",
    "create_nodes_s",
    "create_pods_s",
    "apiserver_ready_s",
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
    assert [(w["step"], w["nodes"], w["pods"]) for w in data["workloads"]] == [
        (0, 5, 20),  # the baseline binder
        (1, 5, 20),
    ]
    for workload in data["workloads"]:
        assert workload["summary"]["ok"] is True
        (run,) = workload["runs"]
        assert RUN_KEYS <= set(run)
        assert run["ok"] is True
        assert run["bound"] == run["pods"] == 20


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


def test_percentile() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 99) == 99.0


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
