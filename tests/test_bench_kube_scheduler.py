"""``--kube-scheduler PATH``: the real kube-scheduler as the bench's default-scheduler, and as
the scheduler of a step's scenario (``python -m minisched.runner N --kube-scheduler PATH``).

Upstream counterpart: scheduler_perf's ``KubeSchedulerConfiguration`` (qps/burst 5000, no
leader election) for the generated configuration.

The first tests check the configuration, the kubeconfig and the bad input without the binary;
the last three run the binary from ``~/.cache/realk8s/bin`` (skipped when it is not built here)
against the embedded server. Timings are never asserted.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from minisched import runner
from minisched.bench import kube_scheduler, results
from minisched.bench.__main__ import main as bench_main
from minisched.bench.scheduler import Server, kube_scheduler_contender

KUBE_SCHEDULER = (
    Path(os.environ.get("REALK8S_DIR", os.path.expanduser("~/.cache/realk8s")))
    / "bin"
    / "kube-scheduler"
)
needs_binary = pytest.mark.skipif(
    not os.access(KUBE_SCHEDULER, os.X_OK),
    reason=f"no real kube-scheduler at {KUBE_SCHEDULER} (see ../shared/realk8s)",
)

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [
        {"name": "a", "cluster": {"server": "https://a", "certificate-authority": "ca.crt"}},
        {"name": "b", "cluster": {"server": "https://b"}},
    ],
    "users": [{"name": "u", "user": {"client-key": "keys/u.key", "token": "t"}}],
    "contexts": [
        {"name": "ctx-a", "context": {"cluster": "a", "user": "u"}},
        {"name": "ctx-b", "context": {"cluster": "b", "user": "u"}},
    ],
    "current-context": "ctx-a",
}


def test_the_generated_configuration(tmp_path: Path) -> None:
    """scheduler_perf's client settings, no leader election, one profile for the pods'
    scheduler name; percentageOfNodesToScore only when asked for (unset: adaptive)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    argv = kube_scheduler.command(
        "/bin/kube-scheduler", str(tmp_path), str(kubeconfig), None, "minisched", None
    )
    assert argv[:3] == ["/bin/kube-scheduler", "--config", str(tmp_path / "kube-scheduler.yaml")]
    assert kube_scheduler.secure_port(argv) > 0 and "--bind-address=127.0.0.1" in argv
    cfg = yaml.safe_load((tmp_path / "kube-scheduler.yaml").read_text())
    assert cfg == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 5000, "burst": 5000},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "minisched"}],
    }
    assert kube_scheduler.config("k", "default-scheduler", 70)["percentageOfNodesToScore"] == 70
    assert "adaptive" in kube_scheduler.describe("minisched", None)
    assert "percentageOfNodesToScore 70" in kube_scheduler.describe("minisched", 70)


def test_a_context_gets_a_kubeconfig_of_its_own(tmp_path: Path) -> None:
    """clientConnection has no context field: with --context, a copy whose current context is
    that one, its relative file paths made absolute (client-go reads them relative to the
    original)."""
    original = tmp_path / "home" / "config"
    original.parent.mkdir()
    original.write_text(yaml.safe_dump(KUBECONFIG))
    assert kube_scheduler.kubeconfig_for(str(original), None, str(tmp_path)) == str(original)
    out = tmp_path / "run"
    out.mkdir()
    copy = yaml.safe_load(
        Path(kube_scheduler.kubeconfig_for(str(original), "ctx-b", str(out))).read_text()
    )
    assert copy["current-context"] == "ctx-b"
    assert copy["clusters"][0]["cluster"]["certificate-authority"] == str(
        original.parent / "ca.crt"
    )
    assert copy["users"][0]["user"] == {
        "client-key": str(original.parent / "keys/u.key"),
        "token": "t",
    }
    assert yaml.safe_load(original.read_text()) == KUBECONFIG  # the original is untouched


def test_the_bench_contender_writes_its_configuration_per_run(tmp_path: Path) -> None:
    """Each run has a fresh API server, so the configuration is written at the run's start,
    naming that server's kubeconfig; the pods and the profile are default-scheduler's."""
    contender = kube_scheduler_contender("/bin/kube-scheduler", 100)
    assert contender.scheduler_name == "default-scheduler"
    server = Server(str(tmp_path / "kubeconfig"), None, None, None, None)  # type: ignore[arg-type]
    argv = contender.argv(server, 1, "ns", str(tmp_path))
    assert argv is not None and argv[0] == "/bin/kube-scheduler"
    cfg = yaml.safe_load(Path(argv[2]).read_text())
    assert cfg["clientConnection"]["kubeconfig"] == str(tmp_path / "kubeconfig")
    assert cfg["profiles"] == [{"schedulerName": "default-scheduler"}]
    assert cfg["percentageOfNodesToScore"] == 100


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kube-scheduler", "/no/such/kube-scheduler"], "no such file"),
        (["--kube-scheduler", "{tmp}/plain-file"], "not executable"),
        (["--kube-scheduler", "{tmp}"], "is a directory"),
        (["--kube-scheduler-percentage", "50"], "goes with --kube-scheduler"),
        (["--kube-scheduler-plugins", "default"], "goes with --kube-scheduler"),
        (["--kube-scheduler", "/bin/true", "--kube-scheduler-percentage", "101"], "between 0"),
        (
            ["--kube-scheduler", "/bin/true", "--default-scheduler-command", "x"],
            "give one of them",
        ),
    ],
)
def test_bench_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (tmp_path / "plain-file").write_text("")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert bench_main([*argv, "--quick", "--out", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and message in out, out
    assert not list(tmp_path.glob("bench-*.json"))


def test_runner_bad_path_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["3", "--kube-scheduler", "/no/such/kube-scheduler"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --kube-scheduler /no/such/kube-scheduler: no such file\n"


@needs_binary
def test_bench_runs_a_step_and_kube_scheduler_side_by_side(tmp_path: Path) -> None:
    """``python -m minisched.bench --quick --steps 2 --kube-scheduler PATH``: the JSON holds the
    step's run and kube-scheduler's two (its defaults, and step 2's plugins only), every pod
    bound in each, and says how each was configured."""
    argv = [sys.executable, "-m", "minisched.bench", "--quick", "--steps", "2", "--nodes", "5"]
    argv += ["--no-baseline", "--no-apiserver", "--out", str(tmp_path)]
    done = subprocess.run(
        [*argv, "--kube-scheduler", str(KUBE_SCHEDULER)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Side by side with kube-scheduler" in done.stdout
    assert "percentageOfNodesToScore unset (adaptive" in done.stdout
    assert "kube-scheduler-same: kube-scheduler with step 2's plugins: PrioritySort," in done.stdout
    (path,) = tmp_path.glob("bench-*.json")
    data = json.loads(path.read_text())
    assert data["config"]["kube_scheduler"]["path"] == str(KUBE_SCHEDULER.resolve())
    assert data["config"]["tls"] is True
    workloads = data["workloads"]
    assert [w["scheduler"] for w in workloads] == [
        "step2",
        "default-scheduler",
        "kube-scheduler-same",
    ]
    for w in workloads:
        (run,) = w["runs"]
        assert w["summary"]["ok"] is True and run["bound"] == run["pods"] == 20
        assert run["scheduler_peak_rss_mib"] > 0


@needs_binary
def test_step3_scenario_scheduled_by_kube_scheduler() -> None:
    """Step 3's scenario with the binary scheduling its pods: every pod bound, to a node that
    is not cordoned (NodeNumber's preference for node8 is not kube-scheduler's)."""
    lines: list[str] = []
    bindings = kube_scheduler.run_scenario(3, str(KUBE_SCHEDULER), embedded=True, say=lines.append)
    assert set(bindings) == {"pod8", "pod1"}
    assert all(node in {f"node{i}" for i in range(5, 10)} for node in bindings.values()), bindings
    assert any(line.startswith("scheduled by the real kube-scheduler") for line in lines)
    assert any("NodeNumber" in line for line in lines)


@needs_binary
def test_step11_scenario_kube_scheduler_preempts_as_step11_does() -> None:
    """Step 11's story with the binary scheduling its pods: it preempts batch-c on north and
    binds payments there, as step 11 does (the victim's delete is a protobuf DeleteOptions,
    which the embedded server must read). The other pods go where step 11 puts them: each
    had one node with room when it came."""
    bindings = kube_scheduler.run_scenario(11, str(KUBE_SCHEDULER), embedded=True, say=print)
    # batch-c is gone: kube-scheduler's preemption deleted it (before the fix, every delete
    # was a 415 and batch-c stayed bound on north).
    assert "batch-c" not in bindings
    # payments goes to north, as in step 11. Once in one full-suite run on a busy machine it
    # was still waiting when the scenario gave up: kube-scheduler had not requeued it after the
    # victim's delete (its own queueing, which the embedded server cannot hurry).
    assert bindings.pop("payments") in ("north", None)
    assert bindings == {
        "batch-a": "east",
        "batch-b": "east",
        "api": "west",
        "web": "north",
        "ledger": "south",
    }


@needs_binary
def test_runner_flag_binds_every_pod_of_step2(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m minisched.runner 2 --kube-scheduler PATH``: the bindings table has no pending
    pod (the tolerant pod may take a cordoned node: it tolerates the cordon)."""
    assert runner.main(["2", "--embedded", "--kube-scheduler", str(KUBE_SCHEDULER)]) == 0
    out = capsys.readouterr().out
    assert "where kube-scheduler bound each pod" in out
    assert "(pending)" not in out
    assert "pod1" in out and "pod-tolerant" in out


def test_the_target_line_says_how_kube_scheduler_was_configured() -> None:
    """The step-8 target is set against percentageOfNodesToScore 100: a run with another
    setting says so, and how to get the target's."""

    def workload(name: str, step: int | None, pods_per_s: float) -> dict[str, object]:
        summary = {"ok": True, "pods_per_s": pods_per_s}
        return {"scheduler": name, "step": step, "nodes": 500, "pods": 1000, "summary": summary}

    data = {
        "config": {"kube_scheduler": {"path": "/k", "percentage_of_nodes_to_score": None}},
        "workloads": [workload("step8", 8, 100.0), workload("default-scheduler", None, 400.0)],
    }
    (line,) = results.targets(data)
    assert "0.25 x" in line and "this run's kube-scheduler: percentageOfNodesToScore unset" in line
    data["config"]["kube_scheduler"]["percentage_of_nodes_to_score"] = 100  # type: ignore[index]
    (line,) = results.targets(data)
    assert "this run's" not in line
    assert "Side by side with kube-scheduler /k" in str(results.side_by_side_table(data).title)  # type: ignore[union-attr]


def test_the_bench_does_not_import_the_runner() -> None:
    """The runner imports the bench's ``main_scenario`` (``--kube-scheduler``); the bench
    imports what it shares with the runner from the modules both read (minisched/steps.py,
    minisched/cli.py), never the runner back. Before, the two imported each other."""
    bench = Path(kube_scheduler.__file__).parent
    importers = []
    for path in sorted(bench.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "minisched.runner" for n in names):
                importers.append(path.name)
    assert importers == []
