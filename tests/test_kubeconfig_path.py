"""The real-cluster path, tested in CI: the embedded server as a separate process, reached only
through a kubeconfig file, exactly as a kind cluster or any other cluster would be."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


class Lines:
    """A child's stderr, read line by line in a thread; ``_cond`` guards ``lines``."""

    def __init__(self, stream: Any) -> None:
        self._cond = threading.Condition()
        self.lines: list[str] = []
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()

    def wait_for(self, text: str, timeout: float = TIMEOUT) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: any(text in line for line in self.lines), timeout)

    def text(self) -> str:
        with self._cond:
            return "".join(self.lines)


class Hangup:
    """A listener on the dead server's port that accepts and closes every connection, so the
    test knows how often the scheduler tried to reconnect (``_cond`` guards ``accepted``)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen()
        self._cond = threading.Condition()
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            conn.close()
            with self._cond:
                self.accepted += 1
                self._cond.notify_all()

    def wait_for(self, count: int, timeout: float = TIMEOUT) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.accepted >= count, timeout)

    def close(self) -> None:
        self.sock.close()


def _wait_bound(core: client.CoreV1Api, name: str) -> str | None:
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_pod,
        "default",
        field_selector=f"metadata.name={name}",
        timeout_seconds=TIMEOUT,
    ):
        if event["object"].spec.node_name:
            w.stop()
            return event["object"].spec.node_name
    return None


def _pod(name: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            scheduler_name="minisched", containers=[client.V1Container(name="c", image="pause")]
        ),
    )


def test_the_scheduler_alone_outlives_its_api_server(tmp_path: Path) -> None:
    """Like kube-scheduler: it keeps running while the server is away, says so in one line
    (not one per informer per retry, no traceback), and schedules again once it is back.
    Step 5: its binding cycles run in threads of their own (every step shares the informers)."""
    step = 5
    with EmbeddedServer("--data-dir", str(tmp_path / "data")) as server:
        api = config.new_client_from_config(config_file=server.kubeconfig)
        core = client.CoreV1Api(api)
        core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="node0")))
        proc = subprocess.Popen(
            [sys.executable, "-m", f"steps.step{step}", "--kubeconfig", server.kubeconfig],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        stderr = Lines(proc.stderr)
        try:
            assert stderr.wait_for("informers synced"), stderr.text()
            core.create_namespaced_pod("default", _pod("before"))
            assert _wait_bound(core, "before") == "node0"

            assert server.process is not None
            server.process.kill()
            server.process.wait()
            server.process = None
            assert stderr.wait_for("cannot reach the API server at"), stderr.text()
            hangup = Hangup(server.port)
            try:
                # Both informers have retried at least twice more since the warning.
                assert hangup.wait_for(4, timeout=60), stderr.text()
            finally:
                hangup.close()
            assert proc.poll() is None, stderr.text()  # still running
            during = stderr.text()

            server.start()  # the same port, token and data dir
            core.create_namespaced_pod("default", _pod("after"))
            assert _wait_bound(core, "after") == "node0", stderr.text()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
            api.close()
    assert proc.returncode == 0
    assert during.count("cannot reach the API server") == 1, during
    assert "watch failed" not in during and "Traceback" not in stderr.text(), stderr.text()
    assert "answers again" in stderr.text()


def test_the_embedded_servers_token_is_not_on_its_command_line(cluster) -> None:  # type: ignore[no-untyped-def]
    """A command line is public (``ps`` shows it to every user of the machine): the token the
    child must accept reaches it in a file only this user can read, and still works."""
    server, core = cluster
    assert server.process is not None
    argv = [str(a) for a in server.process.args]  # type: ignore[union-attr]
    assert not [a for a in argv if server.token in a], argv
    proc_cmdline = Path(f"/proc/{server.process.pid}/cmdline")
    if proc_cmdline.exists():  # what ps reads, on Linux
        assert server.token.encode() not in proc_cmdline.read_bytes()
    token_file = Path(argv[argv.index("--token-file") + 1])
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert token_file.parent.stat().st_mode & 0o077 == 0  # and its directory is ours alone
    # The server took that token: the kubeconfig it wrote carries it, and a client using it
    # is let in.
    assert f'token: "{server.token}"' in Path(server.kubeconfig).read_text()
    core.list_node()
