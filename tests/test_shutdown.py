"""Ctrl-C stops everything: the scheduler, binding threads, the scenario's objects and the
embedded API server, within 2 s, leaving no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import built_steps

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")

# When to press Ctrl-C: once the scenario has created a pod (from step 5 on, pods then wait
# on Permit, so this lands in a permit wait or a binding cycle).
TRIGGER = "scenario: created pod"


def processes_with(marker: str) -> list[int]:
    """PIDs whose environment carries ``marker``: the runner and everything it started."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker.encode() in (proc / "environ").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("step", built_steps(1), ids=lambda n: f"step{n}")
def test_ctrl_c_exits_within_two_seconds_and_leaves_nothing_behind(step: int) -> None:
    marker = f"MINISCHED_SHUTDOWN_TEST={uuid.uuid4()}"
    key, value = marker.split("=")
    proc = subprocess.Popen(
        [sys.executable, "-m", "minisched.runner", str(step)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, key: value},
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if TRIGGER in line:
            break
    else:
        pytest.fail("the scenario never created a pod:\n" + "".join(seen))
    assert len(processes_with(marker)) >= 2  # the runner and its API server
    pressed = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=10)
    took = time.monotonic() - pressed
    assert proc.returncode == 130, "".join(seen) + rest
    assert "Traceback" not in rest, rest
    assert took < 2.0, f"shutdown took {took:.2f} s"
    deadline = time.monotonic() + 2
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)  # sleep-ok: polling /proc for the child's exit; there is no event
    assert processes_with(marker) == []
