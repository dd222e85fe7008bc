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


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
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
            if name == "stepN":  # the placeholder: every step has its session
                assert {f"step{s.number}" for s in steps.STEPS} <= sessions
                continue
            assert name in sessions, f"{doc.name} mentions nox -s {name}, which does not exist"


# --- The shape of a chapter ------------------------------------------------------------------

# Every chapter has these sections, as "## " headings, in this order.
CHAPTER_SECTIONS = (
    "Goal",
    "Run it",
    "Walkthrough",
    "What changed",
    "Upstream",
    "Simplifications",
    "Exercises",
)
HEADING = re.compile(r"^## (.+?)\s*$", re.MULTILINE)
TAG = re.compile(r"(Simplified|Not implemented):")


def sections(text: str) -> dict[str, str]:
    """Each "## " heading's title -> the text up to the next "## " heading."""
    # A "## " inside a code block is not a heading: blank the blocks out to find headings.
    masked = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    marks = list(HEADING.finditer(masked))
    return {
        m.group(1): text[m.end() : marks[i + 1].start() if i + 1 < len(marks) else len(text)]
        for i, m in enumerate(marks)
    }


@pytest.mark.parametrize("step", steps.built(), ids=lambda s: f"step{s.number}")
def test_every_chapter_has_the_handout_sections_in_order(step: steps.Step) -> None:
    if not step.chapter.is_file():
        pytest.skip("no chapter yet (test_every_built_step_has_a_chapter fails)")
    titles = list(sections(step.chapter.read_text()))
    wanted = [t for t in titles if t in CHAPTER_SECTIONS]
    assert wanted == list(CHAPTER_SECTIONS), f"{step.chapter.name} has sections {titles}"


@pytest.mark.parametrize("step", steps.built(), ids=lambda s: f"step{s.number}")
def test_every_chapter_quotes_its_step(step: steps.Step) -> None:
    """ "What changed" quotes the stored diff (step 1: the step's code), so it stays true."""
    if not step.chapter.is_file():
        pytest.skip("no chapter yet")
    quoted = {path for path, _ in quotes(step.chapter)}
    if step.number == 1:
        assert any(p.startswith("steps/step1/") for p in quoted), "step 1 quotes no code"
    else:
        diff = f"docs/diffs/step{step.number - 1}-step{step.number}.diff"
        assert diff in quoted, f"{step.chapter.name} does not quote {diff}"


@pytest.mark.parametrize("step", steps.built(), ids=lambda s: f"step{s.number}")
def test_every_chapter_shows_both_ways_to_run_it_on_a_real_cluster(step: steps.Step) -> None:
    if not step.chapter.is_file():
        pytest.skip("no chapter yet")
    run_it = sections(step.chapter.read_text()).get("Run it", "")
    assert f"nox -s step{step.number} -- --kubeconfig" in run_it
    assert f"python -m steps.step{step.number} --kubeconfig" in run_it


def _tagged_files(step: steps.Step) -> set[str]:
    """The step's files where the step adds a ``Simplified:`` or ``Not implemented:`` tag."""
    if step.number == 1:
        return {
            str(p.relative_to(ROOT))
            for p in sorted(step.directory.rglob("*.py"))
            if TAG.search(p.read_text())
        }
    from minisched import stepdiff

    found, current = set(), ""
    for line in stepdiff.step_diff(step.number - 1, step.number).splitlines():
        if line.startswith("+++ "):
            current = line[4:].strip()
        elif line.startswith("+") and TAG.search(line):
            found.add(current)
    return found


@pytest.mark.parametrize("step", steps.built(), ids=lambda s: f"step{s.number}")
def test_the_simplifications_section_covers_every_file_the_step_simplifies(
    step: steps.Step,
) -> None:
    """A ``Simplified:``/``Not implemented:`` tag added by the step is owed a word in the
    chapter: its file is named in "Simplifications"."""
    if not step.chapter.is_file():
        pytest.skip("no chapter yet")
    text = sections(step.chapter.read_text()).get("Simplifications", "")
    missing = sorted(f for f in _tagged_files(step) if f not in text)
    assert missing == [], f"{step.chapter.name}: Simplifications does not mention {missing}"


# --- Links -----------------------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")
UPSTREAM = "https://github.com/kubernetes/kubernetes/"
PINNED = re.compile(r"^https://github\.com/kubernetes/kubernetes/(blob|tree)/v1\.23\.\d+/\S+$")


def slug(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def links(doc: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", doc.read_text()))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    """Links to files resolve; a chapter of a step not built yet may be linked already."""
    unbuilt = {s.chapter for s in steps.STEPS if not s.built}
    broken = []
    for target in links(doc):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve()
        if not path.exists() and path not in unbuilt:
            broken.append(target)
        elif anchor and path.suffix == ".md" and path.exists():
            if anchor not in {slug(title) for title in sections(path.read_text())}:
                broken.append(target)
    assert broken == [], f"{doc.name} links to missing files: {broken}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_upstream_links_are_pinned_to_a_v1_23_tag_without_line_numbers(doc: Path) -> None:
    bad = [
        url
        for url in re.findall(
            r"https://github\.com/kubernetes/kubernetes/[^\s)>\]]*", doc.read_text()
        )
        if not PINNED.match(url) or re.search(r"#L\d", url)
    ]
    assert bad == [], f"{doc.name}: unpinned or line-numbered upstream links {bad}"


# --- Commands --------------------------------------------------------------------------------

MODULE = re.compile(r"python3? -m ([\w.]+)")
FLAGS = re.compile(
    r"(nox -s step\d+ --|python3? -m (?:minisched\.runner|steps\.step\w+))([^`\n#]*)"
)


def test_every_python_module_the_docs_run_exists() -> None:
    """``python -m X`` in a doc: X is importable (steps only once they are built)."""
    import importlib.util

    built = {s.package for s in steps.built()}
    for doc in DOCS:
        for module in MODULE.findall(doc.read_text()):
            if module.startswith("steps.step") and module not in built:
                continue  # a later step: its chapter is written when it is built
            if module in {"pip", "nox", "pytest"}:
                continue
            spec = importlib.util.find_spec(module)
            assert spec is not None, f"{doc.name}: python -m {module}: no such module"
            if spec.submodule_search_locations is not None:  # a package runs its __main__
                main = importlib.util.find_spec(f"{module}.__main__")
                assert main is not None, f"{doc.name}: python -m {module}: no __main__"


def test_every_flag_the_docs_pass_to_a_step_is_accepted() -> None:
    """``nox -s stepN -- --flag`` and ``python -m steps.stepN --flag``: the flag exists."""
    import subprocess
    import sys

    def help_text(module: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0 and "--kubeconfig" in done.stdout, done.stderr
        return done.stdout

    runner_help = help_text("minisched.runner")
    scheduler_help = help_text(steps.built()[0].package)
    for doc in DOCS:
        for m in FLAGS.finditer(doc.read_text()):
            wanted = scheduler_help if "steps.step" in m.group(1) else runner_help
            for flag in re.findall(r"(?<![\w-])(--?[a-z][-\w]*)", m.group(2)):
                assert flag in wanted, f"{doc.name}: `{m.group(0).strip()}` passes unknown {flag}"


def test_every_hack_script_the_docs_mention_exists_and_is_executable() -> None:
    import os

    for doc in DOCS:
        for script in set(re.findall(r"\bhack/[\w.-]+\.sh\b", doc.read_text())):
            path = ROOT / script
            assert path.is_file(), f"{doc.name} mentions {script}, which does not exist"
            assert os.access(path, os.X_OK), f"{script} is not executable"
