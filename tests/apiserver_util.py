"""Start and stop ``python -m minisched.apiserver`` as a subprocess (shared by the API server
tests; ``minisched.cluster`` follows the same process contract)."""

from __future__ import annotations

import os
import queue
import re
import secrets
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

READY = re.compile(r"^minisched-apiserver ready url=(\S+) kubeconfig=(\S+)$")
REPO = Path(__file__).resolve().parent.parent


@dataclass
class ServerProcess:
    """A running API server process and how to reach it."""

    proc: subprocess.Popen[bytes]
    url: str
    kubeconfig: str
    token: str
    stderr_lines: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then wait; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout)
            raise

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)


def start_server(
    *args: str,
    token: str | None = None,
    timeout: float = 15.0,
    env: dict[str, str] | None = None,
    stdin: int | None = subprocess.DEVNULL,
    own_token: bool = False,
) -> ServerProcess:
    """Spawn the server on a free port and wait for its ready line. With ``own_token`` no
    ``--token`` is passed (the server picks or keeps its own; read it from the kubeconfig)."""
    token = token or secrets.token_hex(16)
    cmd = [sys.executable, "-m", "minisched.apiserver", "--port", "0"]
    cmd += [*([] if own_token else ["--token", token]), *args]
    proc = subprocess.Popen(
        cmd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, **(env or {})},
    )
    lines: queue.Queue[str | None] = queue.Queue()
    stderr_lines: list[str] = []

    def pump_stdout() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.put(raw.decode(errors="replace"))
        lines.put(None)

    def pump_stderr() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            stderr_lines.append(raw.decode(errors="replace"))

    threading.Thread(target=pump_stdout, daemon=True).start()
    threading.Thread(target=pump_stderr, daemon=True).start()
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        proc.kill()
        raise RuntimeError(
            f"API server not ready after {timeout}s: {''.join(stderr_lines)}"
        ) from None
    match = READY.match((line or "").strip())
    if not match:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"unexpected first line {line!r}; stderr: {''.join(stderr_lines)}")
    if own_token:
        text = Path(match.group(2)).read_text()
        token = re.search(r'token: "([^"]+)"', text).group(1)  # type: ignore[union-attr]
    return ServerProcess(proc, match.group(1), match.group(2), token, stderr_lines)
