"""The repository's shape: the manifest matches the folders, steps stay independent and their
diffs readable, the stored diffs are current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from minisched import stepdiff, steps

ROOT = steps.ROOT
STEP_DIRS = sorted((ROOT / "steps").glob("step*"), key=lambda p: int(p.name[4:]))


def test_the_manifest_names_every_step_folder_and_the_built_steps_are_a_prefix() -> None:
    assert [p.name for p in STEP_DIRS] == [f"step{s.number}" for s in steps.built()]
    numbers = [s.number for s in steps.built()]
    assert numbers == list(range(1, len(numbers) + 1))
    assert [s.number for s in steps.STEPS] == list(range(1, len(steps.STEPS) + 1))


@pytest.mark.parametrize("step_dir", STEP_DIRS, ids=lambda p: p.name)
def test_every_step_is_a_runnable_package_with_a_scenario(step_dir: Path) -> None:
    for name in ("__init__.py", "__main__.py", "scheduler.py", "schedule_one.py"):
        assert (step_dir / name).is_file(), name
    assert (ROOT / "scenarios" / f"{step_dir.name}.py").is_file()


def _step_sources() -> list[Path]:
    return [p for d in STEP_DIRS for p in d.rglob("*.py")]


def test_no_step_imports_another_or_names_a_step() -> None:
    offenders = []
    for path in _step_sources():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bsteps\.step\d|\bstep ?\d", line, re.IGNORECASE):
                if path.name == "__main__.py":
                    continue
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


def test_no_module_shadows_the_standard_library_queue() -> None:
    assert not list(ROOT.glob("steps/**/queue.py")) and not list(ROOT.glob("minisched/**/queue.py"))


def test_steps_never_import_rich() -> None:
    assert [
        p for p in _step_sources() if "import rich" in p.read_text() or "from rich" in p.read_text()
    ] == []


def test_later_steps_keep_the_files_of_earlier_ones() -> None:
    for a, b in stepdiff.consecutive_pairs():
        before = {p.relative_to(STEP_DIRS[a - 1]) for p in STEP_DIRS[a - 1].rglob("*.py")}
        after = {p.relative_to(STEP_DIRS[b - 1]) for p in STEP_DIRS[b - 1].rglob("*.py")}
        assert before <= after, f"step{b} drops {before - after}"


@pytest.mark.parametrize(
    "pair", stepdiff.consecutive_pairs(), ids=lambda p: f"step{p[0]}-step{p[1]}"
)
def test_stored_diff_is_current(pair: tuple[int, int]) -> None:
    a, b = pair
    stored = stepdiff.stored_path(b)
    assert stored.is_file(), f"missing {stored.relative_to(ROOT)}: run hack/gen-diffs.sh"
    assert stored.read_text() == stepdiff.step_diff(a, b), (
        f"{stored.relative_to(ROOT)} is stale: run hack/gen-diffs.sh and commit the result"
    )


def test_step_diff_shows_new_files_in_full_and_changed_lines() -> None:
    pairs = stepdiff.consecutive_pairs()
    if not pairs:
        pytest.skip("only one step is built")
    text = stepdiff.step_diff(*pairs[0])
    assert text.startswith("diff -ruN steps/step")
    assert "\n+++ steps/step" in text and "\n@@ " in text
