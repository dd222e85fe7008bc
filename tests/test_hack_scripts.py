"""The scripts in hack/ that the chapters tell learners to run still run against the steps as
they are. Only that they run and print what they print: never their timings."""

from __future__ import annotations

import subprocess
import sys

from minisched import steps

ROOT = steps.ROOT


def test_measure_parallel_filter_runs_and_prints_its_table() -> None:
    """docs/step12-sampling.md runs it and quotes its table (steps 11 and 12)."""
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "hack" / "measure-parallel-filter.py"),
            "--nodes",
            "50",
            "--repeats",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("Python ")
    assert lines[1].split() == ["wall", "CPU"]
    rows = [
        "Filter, all 50 nodes, one after the other",
        "Filter, all 50 nodes, 16 threads (chunks of 4)",
        "Filter, step 12: until 50 fit",
        "a whole cycle, step 11",
        "a whole cycle, step 12",
    ]
    assert [line[: len(row)] for line, row in zip(lines[2:], rows, strict=True)] == rows
    for line in lines[2:]:
        assert line.endswith(" ms") and line.count(" ms") == 2, line


def test_measure_nodenumber_runs_and_prints_its_table() -> None:
    """docs/step17-wasm.md runs it and quotes its table: the same NodeNumber as a Python
    plugin, a WebAssembly guest and an extender."""
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "hack" / "measure-nodenumber.py"),
            "--pods",
            "4",
            "--repeats",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "NodeNumber over 10 nodes, per pod (median of 1 rounds):"
    labels = [line.split("  ")[1] for line in lines[1:]]
    assert [label.strip() for label in labels] == [
        "Python plugin",
        "wasm guest (guests/nodenumber, WAT)",
        "extender (HTTP, JSON)",
    ]
