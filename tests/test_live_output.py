"""What a user sees: the live view in a real (pseudo-)terminal loses no line, and a run written to
a pipe reads like a terminal run.

A run under the live view prints every line above a table that rich redraws in place (cursor up,
erase line). Those escapes are replayed here on a minimal terminal screen, and the lines left on
it must be every line the report published, in order: a redraw that erased a line, or left a
stale table behind, would show. Steps 7 and 8 are the busiest (lines from the scheduling
thread, binding threads, informers and the scenario at once); each runs twice under a pty,
every other run with -v (log lines from every thread too). A plain run to a pipe must print,
the same way, every line it published, in order. Each run is compared with what it published
itself: two runs of a step may differ where their timing does (on a loaded machine a pod's
backoff can end before node5 arrives). A finished run leaves no empty queue table behind it;
one cut short with pods still queued leaves the table that says where they wait.
"""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from rich.console import Console

from minisched import steps
from minisched.report import Report

ROOT = steps.ROOT
RUNS = int(os.environ.get("MINISCHED_PTY_RUNS", "2"))  # pty runs per step
COLUMNS, LINES = 160, 50

# A step run under the live view (argv: step, file, verbosity), with every line the report
# publishes written to the file too (lines published after the story ends, the muted cleanup,
# are cut off).
DRIVER = """
import sys
from minisched import cli, runner
from minisched.report import Report

cli.setup_logging(int(sys.argv[3]))
report = Report()
published, cut = [], []
report.subscribe(lambda event, fields, line: line and published.append(line))
mute = report.mute
report.mute = lambda: (cut.append(len(published)), mute())
runner.run_step(int(sys.argv[1]), report=report)
with open(sys.argv[2], "w") as f:
    f.write("".join(line + "\\n" for line in published[: cut[0] if cut else None]))
"""

EVENT_LINE = re.compile(r"^(scenario: |queue |pending |waiting |bound |error |prescore )")
NAMESPACE = re.compile(r"minisched-[a-z]+-[a-z0-9]{5}")
TOKEN = re.compile(r"(\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r|\n)")


def screen(output: str) -> list[str]:
    """The rows a terminal shows (scrollback included) after writing ``output``.

    Enough of a VT100 for what rich writes: text, CR, LF, cursor up/down/column, erase line.
    """
    rows, row, col = [""], 0, 0
    for token in TOKEN.split(output):
        if not token:
            continue
        if token == "\n":
            row += 1
        elif token == "\r":
            col = 0
        elif token.startswith("\x1b["):
            arg, op = token[2:-1], token[-1]
            n = int(arg) if arg.isdigit() else None
            if op == "A":
                row = max(0, row - (n or 1))
            elif op == "B":
                row += n or 1
            elif op == "G":
                col = (n or 1) - 1
            elif op == "K":
                rows[row] = "" if n == 2 else rows[row][:col]
        elif not token.startswith("\x1b]"):
            line = rows[row].ljust(col)
            rows[row] = line[:col] + token + line[col + len(token) :]
            col += len(token)
        while row >= len(rows):
            rows.append("")
    return rows


def events(lines: list[str]) -> list[str]:
    """The report's and the scenario's lines, with the run's namespace name blanked."""
    return [NAMESPACE.sub("NS", line.rstrip()) for line in lines if EVENT_LINE.match(line)]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    # Under nox, bytecode goes to its cache (PYTHONPYCACHEPREFIX), away from the sources;
    # run otherwise, none is written beside them.
    if not env.get("PYTHONPYCACHEPREFIX"):
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return {**env, **extra}


def run_in_pty(step: int, tee: Path, verbose: int, timeout: float = 90.0) -> str:
    """Run ``step`` under the live view in a 160x50 pseudo-terminal; everything it wrote."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(step), str(tee), str(verbose)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=ROOT,
        env=_env(TERM="xterm-256color"),
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break  # timed out: the assertions below say so
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        rc = proc.wait(10)
    output = b"".join(chunks).decode("utf-8", "replace")
    assert rc == 0, f"step {step} under a pty exited {rc}:\n{output[-3000:]}"
    return output


def run_to_pipe(step: int, tee: Path | None = None) -> str:
    """Run ``step`` the way ``nox -s stepN > file`` does: stdout is a pipe, $COLUMNS unset."""
    argv = (
        ["-c", DRIVER, str(step), str(tee), "0"] if tee else ["-m", "minisched.runner", str(step)]
    )
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.timeout(240)
def test_the_live_view_shows_every_line_in_order(tmp_path: Path) -> None:
    jobs = [(step, i) for step in (7, 8) for i in range(RUNS)]
    with ThreadPoolExecutor(len(jobs)) as pool:
        # Every other run with -v: log lines from every thread print above the table too.
        live = {
            (step, i): pool.submit(run_in_pty, step, tmp_path / f"step{step}-{i}.txt", i % 2)
            for step, i in jobs
        }
        for (step, i), future in live.items():
            rows = screen(future.result())
            published = events((tmp_path / f"step{step}-{i}.txt").read_text().splitlines())
            assert events(rows) == published, f"step {step}, run {i}: the screen differs"
            assert len(published) > 20  # the whole story, up to its last line
            assert published[-1].startswith("scenario: ")
            # The cleanup emptied the queues: the finished run leaves no (empty) queue table.
            assert not any("Scheduling queue" in row for row in rows), "\n".join(rows[-12:])
            if i % 2:
                assert any('Add event for node node="node5"' in row for row in rows)


def test_a_run_to_a_pipe_prints_every_line_unwrapped(tmp_path: Path) -> None:
    output = run_to_pipe(3, tmp_path / "step3.txt").splitlines()
    assert events(output) == events((tmp_path / "step3.txt").read_text().splitlines())
    # Not wrapped at 80 columns: the title and the rows of the tables the chapters quote.
    assert output[0] == f"step 3: {steps.get(3).title} ({steps.get(3).adds})"
    assert len(output[0]) > 80
    row = "│ node0 │ NodeUnschedulable: node(s) were unschedulable │"
    assert any(line.startswith(row) for line in output), "\n".join(output)


# --- the end of a run ---------------------------------------------------------------------------


def live_report() -> tuple[Report, io.StringIO]:
    """A report whose live view draws on a terminal of COLUMNS columns, written to memory."""
    out = io.StringIO()
    console = Console(file=out, width=COLUMNS, force_terminal=True, color_system=None)
    return Report(console, live=True), out


def shown(out: io.StringIO) -> list[str]:
    """What the terminal shows, its trailing blank rows cut: a pty turns LF into CR LF."""
    rows = [row.rstrip() for row in screen(out.getvalue().replace("\n", "\r\n"))]
    while rows and not rows[-1]:
        rows.pop()
    return rows


def test_a_finished_run_leaves_no_empty_queue_table() -> None:
    """Once every pod has left the queues, the table would say nothing: it goes, and the lines
    above it stay, with what is printed next right below them."""
    report, out = live_report()
    with report:
        report.record("queue", pod="ns/pod1", queue="activeQ", event="PodAdd")
        report.record("bound", pod="ns/pod1", node="node1")
        assert "Scheduling queue" in out.getvalue()  # drawn while the run went on
    report.console.print("Step 1: where each pod went")
    assert shown(out) == [
        "queue    ns/pod1: -> activeQ (PodAdd)",
        "bound    ns/pod1 -> node1",
        "Step 1: where each pod went",
    ]


def test_a_run_that_ends_with_pods_queued_leaves_the_table_that_shows_them() -> None:
    """A run cut short (the API server gone before the cleanup) still has pods in the queues:
    the last table says where they wait."""
    report, out = live_report()
    with report:
        report.record("queue", pod="ns/pod1", queue="activeQ", event="PodAdd")
        report.record("queue", pod="ns/pod2", queue="unschedulableQ", event="PodAdd")
        report.record("bound", pod="ns/pod1", node="node1")
    rows = shown(out)
    assert sum("Scheduling queue" in row for row in rows) == 1
    assert rows[-2].split() == ["│", "│", "│", "pod2", "│", "│"]
