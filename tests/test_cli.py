"""A usage line names what the user typed: ``nox -s step5 --`` through nox, ``python -m ...``
otherwise (argparse's ``prog``, which the noxfile passes in ``MINISCHED_PROG``).

Before, ``nox -s step5 -- --seed abc`` answered with ``usage: python -m minisched.runner ...
step``: a command the user never typed, with an argument nox had already given."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from minisched import steps

TIMEOUT = 60
PROG_ENV = "MINISCHED_PROG"  # set by the noxfile, read by minisched/cli.py


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """A command, without any MINISCHED_PROG of the caller's (a test run under nox)."""
    env = {k: v for k, v in os.environ.items() if k != PROG_ENV}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=steps.ROOT,
        env=env,
    )


def usage_and_error(text: str) -> tuple[str, str]:
    """The first line of argparse's usage and its error line (what nox printed before it, an
    install's warnings on a first run, is skipped)."""
    lines = text.strip().splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("usage: ")), 0)
    return lines[first], lines[-1]


@pytest.mark.parametrize(
    ("command", "prog"),
    [
        (["-m", "nox", "-s", "step5", "--", "--seed", "abc"], "nox -s step5 --"),
        (["-m", "nox", "-s", "scheduler", "--", "5", "--seed", "abc"], "nox -s scheduler -- 5"),
        (["-m", "minisched.runner", "5", "--seed", "abc"], "python -m minisched.runner"),
        (["-m", "steps.step5", "--seed", "abc"], "python -m steps.step5"),
    ],
    ids=["nox-step", "nox-scheduler", "runner", "scheduler-alone"],
)
def test_a_bad_argument_names_the_command_that_was_typed(command: list[str], prog: str) -> None:
    done = run(*command)
    # nox runs the program with its stderr sent to nox's stdout (nox's own lines: stderr).
    text = done.stdout if command[1] == "nox" else done.stderr
    usage, error = usage_and_error(text)
    assert usage.startswith(f"usage: {prog} [-h] "), text
    assert error == f"{prog}: error: argument --seed: invalid int value: 'abc'", text
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode != 0


def test_through_nox_the_usage_leaves_out_the_step_nox_already_gave() -> None:
    """``nox -s step5 -- --help``: no ``step`` argument to type; run directly, there is one."""
    through_nox = run("-m", "nox", "-s", "step5", "--", "--help")
    assert through_nox.returncode == 0, through_nox.stdout + through_nox.stderr
    direct = run("-m", "minisched.runner", "--help")
    assert direct.returncode == 0, direct.stderr

    def usage(text: str) -> str:
        return text.split("usage: ", 1)[1].split("\n\n", 1)[0]

    assert usage(through_nox.stdout).startswith("nox -s step5 -- [-h]")
    assert usage(through_nox.stdout).split()[-1] != "step", through_nox.stdout
    assert usage(direct.stdout).split()[-1] == "step", direct.stdout
