"""The docs stay true: every built step has a chapter, code quoted in a chapter matches the
source, and the commands the README and the chapters show exist.

Quoting convention (docs/README.md says the same): a fenced block whose first line is a
comment naming a file, e.g. ``# steps/step2/runtime.py`` or ``# docs/diffs/step1-step2.diff``,
is a quote; the rest of the block must appear in that file as one contiguous run of lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from minisched import steps

ROOT = steps.ROOT
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
SOURCE = re.compile(r"^(?:#|//)\s*((?:steps|minisched|scenarios|docs|hack|tests)/\S+)\s*$")


def quotes(doc: Path) -> list[tuple[str, list[str]]]:
    found = []
    for block in FENCE.findall(doc.read_text()):
        lines = block.splitlines()
        if lines and (m := SOURCE.match(lines[0])):
            found.append((m.group(1), lines[1:]))
    return found


@pytest.mark.parametrize("step", steps.built(), ids=lambda s: f"step{s.number}")
def test_every_built_step_has_a_chapter(step: steps.Step) -> None:
    assert step.chapter.is_file(), f"missing chapter {step.chapter.relative_to(ROOT)}"
    text = step.chapter.read_text()
    assert f"nox -s step{step.number}" in text


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_quoted_code_matches_the_source(doc: Path) -> None:
    for path, lines in quotes(doc):
        source = ROOT / path
        assert source.is_file(), f"{doc.name} quotes {path}, which does not exist"
        have = source.read_text().splitlines()
        n = len(lines)
        assert any(have[i : i + n] == lines for i in range(len(have) - n + 1)), (
            f"{doc.name}: the quote of {path} no longer matches the file"
        )


def test_readme_links_every_chapter_and_shows_the_quick_start() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pip install nox" in readme and "nox -s step1" in readme and "nox -s tests" in readme
    for step in steps.STEPS:
        assert f"({step.chapter.relative_to(ROOT)})" in readme


def test_every_nox_session_the_docs_mention_exists() -> None:
    import subprocess
    import sys

    listed = subprocess.run(
        [sys.executable, "-m", "nox", "--list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sessions = set(re.findall(r"^[*-] ([\w-]+)", listed, re.MULTILINE))
    for doc in DOCS:
        for name in re.findall(r"nox -s ([\w-]+)", doc.read_text()):
            assert name in sessions, f"{doc.name} mentions nox -s {name}, which does not exist"
