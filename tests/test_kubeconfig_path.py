"""The real-cluster path, tested in CI: the embedded server as a separate process, reached only
through a kubeconfig file, exactly as a kind cluster or any other cluster would be."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch

from minisched import steps
from minisched.cluster import EmbeddedServer
from minisched.scenario import SCENARIO_LABEL

TIMEOUT = 60


@pytest.fixture
def cluster() -> Iterator[tuple[EmbeddedServer, client.CoreV1Api]]:
    with EmbeddedServer() as server:
        api = config.new_client_from_config(config_file=server.kubeconfig)
        yield server, client.CoreV1Api(api)
        api.close()


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, **(env or {})},
    )


def leftovers(core: client.CoreV1Api) -> list[str]:
    """Scenario objects still alive: labelled nodes, pods, namespaces not being deleted."""
    found = [f"node/{n.metadata.name}" for n in core.list_node(label_selector=SCENARIO_LABEL).items]
    for ns in core.list_namespace(label_selector=SCENARIO_LABEL).items:
        if ns.status.phase != "Terminating":
            found.append(f"namespace/{ns.metadata.name}")
        found += [
            f"pod/{p.metadata.name}" for p in core.list_namespaced_pod(ns.metadata.name).items
        ]
    return found


def test_scenario_through_a_kubeconfig_uses_only_its_nodes_and_cleans_up(cluster) -> None:  # type: ignore[no-untyped-def]
    server, core = cluster
    # A node the scenario did not create, schedulable, with a digit at the end: the runner's
    # scheduler must not use it (it only considers nodes labelled minisched.io/scenario).
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="their-node9")))
    done = run("-m", "minisched.runner", "1", "--kubeconfig", server.kubeconfig)
    assert done.returncode == 0, done.stderr
    assert f"cluster at {server.url}" in done.stdout
    for pod in ("pod1", "pod2", "pod3"):
        assert f"/{pod} -> node" in done.stdout
    assert "their-node9" not in done.stdout
    assert leftovers(core) == []
    assert [n.metadata.name for n in core.list_node().items] == ["their-node9"]


def test_kubeconfig_from_the_environment(cluster) -> None:  # type: ignore[no-untyped-def]
    server, core = cluster
    done = run("-m", "minisched.runner", "1", env={"KUBECONFIG": server.kubeconfig})
    assert done.returncode == 0, done.stderr
    assert f"cluster at {server.url}" in done.stdout
    assert "using the cluster of $KUBECONFIG" in done.stderr
    assert leftovers(core) == []


def test_embedded_ignores_kubeconfig_from_the_environment(cluster) -> None:  # type: ignore[no-untyped-def]
    server, core = cluster
    done = run("-m", "minisched.runner", "1", "--embedded", env={"KUBECONFIG": server.kubeconfig})
    assert done.returncode == 0, done.stderr
    assert "embedded API server" in done.stdout
    assert core.list_namespace(label_selector=SCENARIO_LABEL).items == []


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed run printed (it must print exactly one)."""
    lines = (done.stdout + done.stderr).splitlines()
    assert len(lines) == 1, done.stdout + done.stderr
    return lines[0]


def test_a_missing_kubeconfig_says_the_file_is_missing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    missing = str(tmp_path / "nope")
    for program in ("minisched.runner", "steps.step1"):
        args = ["1"] if program == "minisched.runner" else []
        done = run("-m", program, *args, "--kubeconfig", missing)
        assert done.returncode == 1
        assert one_line(done) == f"error: --kubeconfig names {missing}: no such file"
        done = run("-m", program, *args, env={"KUBECONFIG": missing})
        assert done.returncode == 1
        assert f"$KUBECONFIG names {missing}: no such file" in one_line(done)


def test_a_malformed_kubeconfig_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "kubeconfig"
    bad.write_text("this: is not a kubeconfig\n")
    done = run("-m", "minisched.runner", "1", "--kubeconfig", str(bad))
    assert done.returncode == 1
    assert "cannot load kubeconfig" in one_line(done)


def dead_kubeconfig(tmp_path: Path) -> str:
    """A kubeconfig naming a port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "kubeconfig"
    path.write_text(
        f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
"""
    )
    return str(path)


def test_kubeconfig_naming_a_server_that_is_not_running_is_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # What step 1's exercise 3 leaves behind: KUBECONFIG exported, its server stopped since.
    env = {"KUBECONFIG": dead_kubeconfig(tmp_path)}
    for program in (["minisched.runner", "1"], ["steps.step1"]):
        done = run("-m", *program, env=env)
        assert done.returncode == 1
        line = one_line(done)
        assert line.startswith("error: cannot reach the API server at http://127.0.0.1:"), line
        assert "connection refused" in line and "$KUBECONFIG" in line


@pytest.mark.parametrize("step", ["0", "99", "-1", "abc"])
def test_a_step_that_is_not_built_lists_the_steps_that_are(step: str) -> None:
    built = ", ".join(str(s.number) for s in steps.built())
    done = run("-m", "minisched.runner", "--", step)
    assert done.returncode == 2
    assert one_line(done) == f"error: there is no step {step}; the steps are {built}"


@pytest.mark.parametrize("args", [["-s", "step99"], ["-s", "scheduler", "--", "99"]])
def test_nox_names_the_steps_for_a_step_that_does_not_exist(args: list[str]) -> None:
    built = ", ".join(str(s.number) for s in steps.built())
    done = subprocess.run(
        [sys.executable, "-m", "nox", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=steps.ROOT,
    )
    assert done.returncode == 1
    assert f"there is no step 99; the steps are {built}" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_scheduler_alone_binds_only_pods_that_ask_for_it(cluster) -> None:  # type: ignore[no-untyped-def]
    server, core = cluster
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="node0")))
    proc = subprocess.Popen(
        [sys.executable, "-m", "steps.step1", "--kubeconfig", server.kubeconfig],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for name, scheduler in (("theirs", "default-scheduler"), ("ours", "minisched")):
            core.create_namespaced_pod(
                "default",
                client.V1Pod(
                    metadata=client.V1ObjectMeta(name=name),
                    spec=client.V1PodSpec(
                        scheduler_name=scheduler,
                        containers=[client.V1Container(name="c", image="pause")],
                    ),
                ),
            )
        w = watch.Watch()
        bound = None
        for event in w.stream(
            core.list_namespaced_pod,
            "default",
            field_selector="metadata.name=ours",
            timeout_seconds=30,
        ):
            if event["object"].spec.node_name:
                bound = event["object"].spec.node_name
                w.stop()
        assert bound == "node0"
        assert core.read_namespaced_pod("theirs", "default").spec.node_name is None
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0, out
    assert "Traceback" not in out


def test_the_scheduler_alone_asks_which_cluster(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    done = subprocess.run(
        [sys.executable, "-m", "steps.step1"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2 and "which cluster?" in done.stderr
    done = run("-m", "steps.step1", "--kubeconfig", str(tmp_path / "nope"))
    assert done.returncode == 1
    assert "no such file" in done.stderr and "Traceback" not in done.stderr
