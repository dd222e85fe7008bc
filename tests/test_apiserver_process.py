"""``python -m minisched.apiserver`` as a process: its identity across restarts (``--state-dir``),
``--tls`` without ``openssl``, and flags out of range (one clear line, no traceback)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client, config

from tests.apiserver_util import REPO, start_server

needs_openssl = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="no openssl on PATH: --tls cannot make a cert"
)


def _core(kubeconfig: str) -> client.CoreV1Api:
    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    return client.CoreV1Api(client.ApiClient(cfg))


@needs_openssl
def test_state_dir_keeps_identity_across_a_restart(tmp_path: Path) -> None:
    """A client made from the first start's kubeconfig still works after a restart: same
    certificate (its CA data), same token, same port; objects are kept with --data-dir."""
    state = tmp_path / "state"
    common = ("--tls", "--state-dir", str(state), "--data-dir", str(state / "data"))
    first = start_server(*common, "--kubeconfig", str(tmp_path / "a.kubeconfig"), own_token=True)
    try:
        port = first.url.rsplit(":", 1)[1]
        core = _core(first.kubeconfig)  # made before the restart, used after it
        core.create_node({"metadata": {"name": "n1"}})
        first_kubeconfig = Path(first.kubeconfig).read_text()
    finally:
        assert first.stop() == 0, first.stderr
    second = start_server(
        *common, "--port", port, "--kubeconfig", str(tmp_path / "b.kubeconfig"), own_token=True
    )
    try:
        assert second.url == first.url
        assert second.token == first.token
        assert Path(second.kubeconfig).read_text() == first_kubeconfig  # same CA data, token
        assert [n.metadata.name for n in core.list_node().items] == ["n1"]
    finally:
        assert second.stop() == 0, second.stderr
    key_mode = os.stat(state / "apiserver.key").st_mode & 0o777
    assert key_mode == 0o600 and os.stat(state / "token").st_mode & 0o777 == 0o600


@needs_openssl
def test_without_state_dir_every_start_is_a_new_identity(tmp_path: Path) -> None:
    """The contrast (and why --state-dir exists): two starts, two certificates."""
    texts = []
    for name in ("a", "b"):
        proc = start_server("--tls", "--kubeconfig", str(tmp_path / name), own_token=True)
        texts.append(Path(proc.kubeconfig).read_text())
        assert proc.stop() == 0
    assert texts[0] != texts[1]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minisched.apiserver", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_tls_without_openssl_says_so_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = _run("--port", "0", "--tls", env={"PATH": str(empty)})
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "openssl" in lines[0] and "not on PATH" in lines[0], done.stderr


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_port_out_of_range_is_one_line(port: str) -> None:
    done = _run("--port", port)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"--port must be between 0 and 65535 (0 picks a free port), not {port}"
    )


def test_token_file_is_the_token_clients_must_send(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    server = start_server(
        "--token-file", str(token_file), "--kubeconfig", str(tmp_path / "kc"), own_token=True
    )
    try:
        assert server.token == "s3cret-token"  # read back from the kubeconfig it wrote
        assert "s3cret-token" not in " ".join(str(a) for a in server.proc.args)
        _core(server.kubeconfig).list_node()  # accepted
    finally:
        assert server.stop() == 0, server.stderr


@pytest.mark.parametrize("content", [None, "", "\n"], ids=["missing", "empty", "blank"])
def test_a_token_file_without_a_token_is_one_line(tmp_path: Path, content: str | None) -> None:
    token_file = tmp_path / "token"
    if content is not None:
        token_file.write_text(content)
    done = _run("--port", "0", "--token-file", str(token_file))
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--token-file" in lines[0] and "Traceback" not in lines[0], (
        done.stderr
    )
