"""Ctrl-C stops everything: the scheduler, binding threads, the scenario's objects and the
embedded API server, promptly, leaving no process behind (10 s guard against a hang, not a
timing: tests never assert timings). An API server that dies mid-run ends the run with one
line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from minisched.informer import meta_namespace_key
from tests.conftest import built_steps, step_module
from tests.fakes import (
    add_nodes,
    add_pods,
    make_node,
    make_pod,
    new_framework,
    offline_scheduler,
    set_framework,
)
from tests.test_permit import FakePermit, join_binding_threads

linux = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")

# When to press Ctrl-C: once the scenario has created a pod (from step 5 on, pods then wait
# on Permit, so this lands in a permit wait or a binding cycle).
TRIGGER = "scenario: created pod"


def default_sigint() -> None:
    """Run in the child before exec: give it the default SIGINT disposition.

    A shell starts background jobs (``nox -s tests &``, ``nohup``, a CI runner's job) with
    SIGINT ignored, and an ignored disposition is inherited through exec: the runner would
    then never see the Ctrl-C these tests send. Python turns a default SIGINT into
    KeyboardInterrupt, as in a terminal.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_runner(step: int, marker: str, *args: str) -> subprocess.Popen[str]:
    """``python -m minisched.runner STEP [ARGS]``, its environment carrying ``marker``."""
    key, value = marker.split("=")
    return subprocess.Popen(
        [sys.executable, "-m", "minisched.runner", str(step), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, key: value},
        preexec_fn=default_sigint,
    )


def communicate(proc: subprocess.Popen[str], timeout: float = 10.0) -> tuple[str, str]:
    """``proc.communicate``, killing the runner if it has not ended in time: a failing test
    must not leave it running (one waited at its live page for an hour and a half)."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def read_until(proc: subprocess.Popen[str], trigger: str) -> list[str]:
    """The stdout lines up to the first one containing ``trigger``."""
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if trigger in line:
            return seen
    pytest.fail(f"never printed {trigger!r}:\n" + "".join(seen))


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


@linux
@pytest.mark.parametrize("step", built_steps(1), ids=lambda n: f"step{n}")
def test_ctrl_c_exits_and_leaves_nothing_behind(step: int) -> None:
    marker = f"MINISCHED_SHUTDOWN_TEST={uuid.uuid4()}"
    # --web: the run, once its story is told, waits for Ctrl-C with its live page up. Before
    # step 5 no pod waits on Permit and a story can end before the Ctrl-C below is sent; the
    # run must still be there to be interrupted.
    proc = start_runner(step, marker, "--web")
    seen = read_until(proc, TRIGGER)
    assert len(processes_with(marker)) >= 2  # the runner and its API server
    proc.send_signal(signal.SIGINT)
    rest, errors = communicate(proc)
    if proc.returncode == 0:
        # The story was over before the Ctrl-C arrived (no pod waits on Permit before step 5,
        # and some later stories are quick too): it closed the page, which is success
        # (test_ctrl_c_once_the_story_is_over_closes_the_page). The summary comes first.
        assert f"Step {step}: where each pod went" in rest, rest
    else:
        assert proc.returncode == 130, "".join(seen) + rest + errors
        assert "interrupted: " in rest
    assert "Traceback" not in errors, errors
    # The cleanup deleted the pods: none of them is reported as an error (from step 5 on,
    # they were waiting on Permit), and nothing failed to update a pod that was gone.
    assert not [line for line in rest.splitlines() if line.startswith("error ")], rest
    assert errors == "", errors
    assert_nothing_left(marker)


@linux
@pytest.mark.parametrize("step", built_steps(5, 5), ids=lambda n: f"step{n}")
def test_ctrl_c_before_the_story_is_over_is_interrupted(step: int) -> None:
    """The other side of a --web run's Ctrl-C: while a pod waits on Permit (8 s in step 5's
    story) the story is not over, and a Ctrl-C interrupts it: status 130."""
    marker = f"MINISCHED_SHUTDOWN_TEST={uuid.uuid4()}"
    proc = start_runner(step, marker, "--web")
    seen = read_until(proc, "Permit by NodeNumber (wait")
    proc.send_signal(signal.SIGINT)
    rest, errors = communicate(proc)
    assert proc.returncode == 130, "".join(seen) + rest + errors
    assert "where each pod went" not in rest
    assert rest.splitlines()[-1] == (
        "interrupted: scheduler, scenario objects and API server were shut down"
    )
    assert errors == "", errors
    assert_nothing_left(marker)


def assert_nothing_left(marker: str) -> None:
    """The runner and everything it started (its API server) have exited."""
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)  # sleep-ok: polling /proc for the child's exit; there is no event
    assert processes_with(marker) == []


@linux
@pytest.mark.parametrize("step", [1, *built_steps(5, 5)], ids=lambda n: f"step{n}")
def test_ctrl_c_once_the_story_is_over_closes_the_page(step: int) -> None:
    """The documented end of a ``--web`` run: the story told, the page says it stays until
    Ctrl-C; that Ctrl-C is success (status 0, so nox says "successful", not "interrupted"),
    and it still cleans everything up."""
    marker = f"MINISCHED_SHUTDOWN_TEST={uuid.uuid4()}"
    proc = start_runner(step, marker, "--web")
    seen = read_until(proc, "the live page stays at")
    proc.send_signal(signal.SIGINT)
    rest, errors = communicate(proc)
    assert proc.returncode == 0, "".join(seen) + rest + errors
    assert "interrupted" not in rest
    assert rest.splitlines()[-1] == (
        "page closed: scheduler, scenario objects and API server were shut down"
    )
    assert errors == "", errors
    assert_nothing_left(marker)


@linux
@pytest.mark.parametrize("step", built_steps(5, 5), ids=lambda n: f"step{n}")
def test_an_api_server_that_dies_mid_run_ends_it_in_one_line(step: int) -> None:
    marker = f"MINISCHED_SHUTDOWN_TEST={uuid.uuid4()}"
    proc = start_runner(step, marker)
    read_until(proc, TRIGGER)  # from step 5 on, the pod now waits on Permit
    server = [pid for pid in processes_with(marker) if pid != proc.pid]
    assert len(server) == 1
    os.kill(server[0], signal.SIGKILL)
    _, errors = communicate(proc)
    assert proc.returncode == 1
    assert "Traceback" not in errors, errors
    assert errors.splitlines() == [
        f"error: the embedded API server at {errors.split(' at ')[1].split()[0]} went away"
        " (killed by SIGKILL)"
    ], errors


# --- what a stop leaves in the report (offline: no server, no threads but the binding ones) ----


@pytest.mark.parametrize("step", built_steps(1), ids=lambda n: f"step{n}")
def test_a_queued_pod_that_is_deleted_leaves_the_queue_in_the_report(step: int) -> None:
    sched = offline_scheduler(step)
    pod = make_pod("pod1")
    sched.scheduling_queue.add(pod)
    sched.scheduling_queue.delete(pod)
    assert sched.recorder.of("queue")[-1]["queue"] == "none"


def _waiting(step: int) -> tuple[Any, Any]:
    """A scheduler whose one pod, in its synced informer cache, waits on Permit."""
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    plugin = FakePermit("Slow", fw.Status(fw.Code.WAIT), 10.0)
    set_framework(
        sched,
        new_framework(step, {"Slow": lambda a, h: plugin}, permit=["Slow"], clock=sched.clock),
    )
    add_nodes(sched, make_node("node1"))
    pod = make_pod("pod1")
    add_pods(sched, pod)
    sched.pod_informer._synced.set()
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.recorder.of("waiting")
    return sched, pod


@pytest.mark.parametrize("step", built_steps(5), ids=lambda n: f"step{n}")
def test_a_pod_the_cleanup_deleted_while_it_waited_is_no_error(step: int) -> None:
    sched, pod = _waiting(step)
    sched.pod_informer.store._pop(meta_namespace_key(pod))  # the cleanup deleted it
    sched.stop()
    join_binding_threads()
    assert sched.recorder.of("error") == []
    assert sched.recorder.of("queue")[-1]["queue"] == "none"  # it left the table
    assert [c for c in sched.client.calls if c[0] == "patch_namespaced_pod_status"] == []


@pytest.mark.parametrize("step", built_steps(5), ids=lambda n: f"step{n}")
def test_a_pod_waiting_when_the_scheduler_stops_stays_pending_without_an_error(step: int) -> None:
    sched, _ = _waiting(step)
    sched.stop()
    join_binding_threads()
    assert sched.recorder.of("error") == []
    assert sched.client.bindings == []
    assert [c for c in sched.client.calls if c[0] == "patch_namespaced_pod_status"] == []


def test_a_ctrl_c_turned_into_another_error_still_ends_as_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # pydantic-core turns a KeyboardInterrupt raised while it builds a validator into a
    # SchemaError; the run was still interrupted by the user, so it ends with 130, no traceback.
    from minisched import runner

    class SchemaError(Exception):
        pass

    def interrupted_inside_an_extension(*args: object, **kwargs: object) -> None:
        runner._sigint.set()
        raise SchemaError("Error building validator: KeyboardInterrupt")

    monkeypatch.setattr(runner, "_watch_sigint", lambda: None)
    monkeypatch.setattr(runner, "run_step", interrupted_inside_an_extension)
    monkeypatch.setattr(runner, "_sigint", threading.Event())
    assert runner.main(["1"]) == 130
    assert "interrupted" in capsys.readouterr().out
    # Without a Ctrl-C the same error is a bug, and it is not hidden.
    runner._sigint.clear()
    monkeypatch.setattr(runner, "run_step", lambda *a, **k: (_ for _ in ()).throw(SchemaError()))
    with pytest.raises(SchemaError):
        runner.main(["1"])
