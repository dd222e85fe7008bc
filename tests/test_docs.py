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
SCENARIOS = sorted((ROOT / "scenarios").glob("step*.py"))
HACK = sorted(p for p in (ROOT / "hack").iterdir() if p.is_file())
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


def scenario_docstring(path: Path) -> str:
    import ast

    return ast.get_docstring(ast.parse(path.read_text())) or ""


def command_texts() -> list[tuple[str, str]]:
    """Where a reader finds commands to run: the docs, the scenarios' docstrings and the hack
    scripts (what they run, and what they print for you to run next)."""
    return (
        [(p.name, p.read_text()) for p in DOCS]
        + [(str(p.relative_to(ROOT)), scenario_docstring(p)) for p in SCENARIOS]
        + [(str(p.relative_to(ROOT)), p.read_text()) for p in HACK]
    )


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
    for where, text in command_texts():
        for name in re.findall(r"nox -s ([\w-]+)", text):
            if name == "stepN":  # the placeholder: every step has its session
                assert {f"step{s.number}" for s in steps.STEPS} <= sessions
                continue
            assert name in sessions, f"{where} mentions nox -s {name}, which does not exist"


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
        before = steps.previous_built(step.number)
        assert before is not None
        diff = f"docs/diffs/step{before.number}-step{step.number}.diff"
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
    before = steps.previous_built(step.number)
    assert before is not None
    for line in stepdiff.step_diff(before.number, step.number).splitlines():
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
    r"(nox -s step\d+ --|nox -s scheduler -- (?:\d+|N)"
    r"|python3? -m (?:minisched\.runner|steps\.step\w+))([^`\n#]*)"
)


def test_every_python_module_the_docs_run_exists() -> None:
    """``python -m X`` in a doc: X is importable (steps only once they are built)."""
    import importlib.util

    built = {s.package for s in steps.built()}
    for where, text in command_texts():
        for module in MODULE.findall(text):
            if module.startswith("steps.step") and module not in built:
                continue  # a later step: its chapter is written when it is built
            if module in {"pip", "nox", "pytest", "venv"}:
                continue
            spec = importlib.util.find_spec(module)
            assert spec is not None, f"{where}: python -m {module}: no such module"
            if spec.submodule_search_locations is not None:  # a package runs its __main__
                main = importlib.util.find_spec(f"{module}.__main__")
                assert main is not None, f"{where}: python -m {module}: no __main__"


def test_every_flag_the_docs_pass_to_a_step_is_accepted() -> None:
    """``nox -s stepN -- --flag``, ``nox -s scheduler -- N --flag`` and ``python -m steps.stepN
    --flag``: the flag exists."""
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
    for where, text in command_texts():
        for m in FLAGS.finditer(text):
            scheduler = "steps.step" in m.group(1) or "scheduler" in m.group(1)
            wanted = scheduler_help if scheduler else runner_help
            for flag in re.findall(r"(?<![\w-])(--?[a-z][-\w]*)", m.group(2)):
                assert flag in wanted, f"{where}: `{m.group(0).strip()}` passes unknown {flag}"


def test_every_hack_script_the_docs_mention_exists_and_is_executable() -> None:
    import os

    for doc in DOCS:
        for script in set(re.findall(r"\bhack/[\w.-]+\.sh\b", doc.read_text())):
            path = ROOT / script
            assert path.is_file(), f"{doc.name} mentions {script}, which does not exist"
            assert os.access(path, os.X_OK), f"{script} is not executable"


# --- Commands that work on a fresh clone -----------------------------------------------------

# `python -m M ...` or `python scenarios/X.py ...`: what a reader types.
PYTHON_COMMAND = re.compile(r"python3? (?:-m ([\w.]+)|(scenarios/[\w.]+\.py))")
FENCED = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def commands_to_type() -> list[tuple[str, str, str]]:
    """(where, command, its context): the python commands a reader is told to run, each with
    the text around it that may say what to install first. In the docs: lines of shell blocks
    (the line is the context). In a scenario's docstring: its paragraph. In a hack script: the
    line (what the script runs, or prints for you to run next)."""
    found = []
    for doc in DOCS:
        for lang, block in FENCED.findall(doc.read_text()):
            if lang not in ("", "sh", "bash", "shell", "console"):
                continue
            for line in block.splitlines():
                found += [(doc.name, m.group(0), line) for m in PYTHON_COMMAND.finditer(line)]
    for path in SCENARIOS:
        for paragraph in scenario_docstring(path).split("\n\n"):
            for m in PYTHON_COMMAND.finditer(paragraph):
                found.append((str(path.relative_to(ROOT)), m.group(0), paragraph))
    for path in HACK:
        for line in path.read_text().splitlines():
            if not line.lstrip().startswith("#"):
                found += [
                    (str(path.relative_to(ROOT)), m.group(0), line)
                    for m in PYTHON_COMMAND.finditer(line)
                ]
    return found


def runs_on_a_fresh_clone(command: str) -> bool:
    """Whether ``command --help`` works from the repository root with nothing installed:
    ``python -S`` sees no site-packages, so neither minisched's dependencies nor the project."""
    import os
    import subprocess
    import sys

    m = PYTHON_COMMAND.match(command)
    assert m is not None
    target = ["-m", m.group(1)] if m.group(1) else [m.group(2)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-S", *target, "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode == 0


def test_every_python_command_runs_on_a_fresh_clone_or_says_what_to_install() -> None:
    """`python -m steps.step1` and `python scenarios/step2.py` need minisched's dependencies:
    printed without "install minisched first" they fail on a fresh clone, where `nox -s ...`
    works. (Prose may name a module; a command to type must work as shown.)"""
    commands = commands_to_type()
    assert any("minisched.stepdiff" in c for _, c, _ in commands)  # the scan finds commands
    fresh: dict[str, bool] = {}
    bad = []
    for where, command, context in commands:
        if "install" in context or command.split()[-1] in ("pip", "nox", "venv"):
            continue
        if command not in fresh:
            fresh[command] = runs_on_a_fresh_clone(command)
        if not fresh[command]:
            bad.append(f"{where}: {context.strip()}")
    assert bad == [], "needs minisched installed, and does not say so (use nox -s ...):\n" + (
        "\n".join(bad)
    )


def test_every_diff_of_two_steps_the_docs_show_leaves_out_pycache() -> None:
    """Running a step outside nox writes steps/*/__pycache__; a `diff -r` of two step folders
    must leave it out, or it prints "Binary files ... differ" and "Only in ..." lines."""
    command = re.compile(
        r"\bdiff -r\w*((?:\s+(?:-x\s*\S+|--exclude[= ]\S+))*)\s+steps/step[\w-]*/?\s"
    )
    shown = [
        (where, m.group(0).strip(), m.group(1))
        for where, text in command_texts()
        for m in command.finditer(text)
    ]
    assert any(where == "README.md" for where, _, _ in shown)  # the headline diff
    bad = [f"{where}: {cmd}" for where, cmd, excludes in shown if "__pycache__" not in excludes]
    assert bad == [], f"diff commands that do not exclude __pycache__: {bad}"


# --- Names of what the report prints ---------------------------------------------------------

REPORT_SOURCES = ("minisched/report.py", "minisched/runner.py")


def report_source() -> str:
    return "\n".join((ROOT / p).read_text() for p in REPORT_SOURCES)


def test_every_table_the_docs_name_is_one_the_report_prints() -> None:
    """A doc that says 'the "Why this node" table' names a title report.py or the runner
    prints (compared case-insensitively: prose may start it lower case)."""
    source = report_source().lower()
    named = {
        (doc.name, title)
        for doc in DOCS
        for title in re.findall(r'"([^"\n]{3,60})" tables?\b', FENCE.sub("", doc.read_text()))
    }
    named |= {
        (doc.name, title)
        for doc in DOCS
        for title in re.findall(r"where each pod went|Scheduling queue", doc.read_text())
    }
    assert any(title.startswith("Why") for _, title in named)  # the scan finds the names
    missing = sorted(
        f"{doc}: {title}"
        for doc, title in named
        if title.split(":")[0].lower() not in source  # "Why no node: pod1" is f"Why no node: {pod}"
    )
    assert missing == [], f"tables the report does not print: {missing}"


def final_bindings(text: str) -> dict[str, str]:
    """The chapter's "where each pod went" table: pod -> node, or "(pending)"."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "where each pod went" in line), None)
    rows: dict[str, str] = {}
    if start is None:
        return rows
    for line in lines[start + 1 :]:
        if line.startswith("└"):
            break
        cells = [c.strip() for c in line.strip("│").split("│")]
        if line.startswith("│") and len(cells) >= 2:
            rows[cells[0]] = cells[1]
    return rows


@pytest.mark.parametrize("step", steps.built(), ids=lambda s: f"step{s.number}")
def test_a_chapter_names_the_why_table_its_pods_get(step: steps.Step) -> None:
    """The report titles its table "Why this node: POD" for a bound pod and "Why no node: POD"
    for a pending one: a chapter whose pods all stay pending has no "Why this node" table."""
    if not step.chapter.is_file():
        pytest.skip("no chapter yet")
    assert "Why this node: {pod}" in report_source() and "Why no node: {pod}" in report_source()
    text = step.chapter.read_text()
    bindings = final_bindings(text)
    assert bindings, f"{step.chapter.name} shows no 'where each pod went' table"
    named = {t.lower() for t in re.findall(r'"(why (?:this|no) node)[^"]*"', text, re.I)}
    if "why this node" in named:
        assert any(n != "(pending)" for n in bindings.values()), (
            f'{step.chapter.name} names a "Why this node" table, but no pod is bound: "Why no node"'
        )
    if "why no node" in named:
        assert "(pending)" in bindings.values(), (
            f'{step.chapter.name} names a "Why no node" table, but every pod is bound'
        )


# --- Facts about the tooling -----------------------------------------------------------------


def test_the_docs_say_nox_shares_one_virtualenv() -> None:
    from tests.test_layout import load_noxfile

    noxfile = load_noxfile()
    venv = str(noxfile.VENV.relative_to(ROOT))
    assert noxfile.nox.options.default_venv_backend == "none"  # sessions make no venv of their own
    readme = (ROOT / "README.md").read_text()
    assert f"`{venv}`" in readme and "shared by every session" in readme
    per_session = re.compile(
        r"(virtualenv|virtual environment|venv)s?\b[^.]{0,40}\b(for|per) (each |every )?session"
        r"|(each|every) session'?s? own (virtualenv|virtual environment|venv)",
        re.IGNORECASE,
    )
    wrong = [
        f"{where}: {m.group(0)}"
        for where, text in command_texts()
        for m in per_session.finditer(" ".join(text.split()))
    ]
    assert wrong == [], f"nox makes one venv, {venv}, for every session: {wrong}"


def test_the_docs_do_not_say_that_creating_a_node_drops_its_status() -> None:
    """A real kube-apiserver keeps the status a Node is created with (a kubelet registers its
    Node that way; it is a Pod's create that resets status): the recorded exchange shows the
    posted capacity coming back. The docs once said the opposite."""
    import json

    cases = (ROOT / "tests" / "fixtures" / "conformance" / "cases.jsonl").read_text()
    case = next(
        c for c in map(json.loads, cases.splitlines()) if c["id"] == "node-create-duplicate-invalid"
    )
    create = case["steps"][0]
    assert create["request"]["method"] == "POST" and create["request"]["path"] == "/api/v1/nodes"
    sent = create["request"]["body"]["status"]["capacity"]
    assert create["response"]["body"]["status"]["capacity"] == sent
    claim = re.compile(r"\b(ignor|drop)\w*\W+status\W+(is\W+)?(ignored\W+)?on create", re.I)
    claim_passive = re.compile(r"\bstatus\W+is\W+(ignored|dropped)\W+on create", re.I)
    texts = command_texts() + [
        ("minisched/scenario.py", (ROOT / "minisched/scenario.py").read_text())
    ]
    wrong = [
        f"{where}: {m.group(0)}"
        for where, text in texts
        for pattern in (claim, claim_passive)
        for m in pattern.finditer(" ".join(text.split()))
    ]
    assert wrong == [], f"a Node's create keeps its status: {wrong}"


def test_the_kind_node_image_is_pinned_and_the_docs_state_its_timings() -> None:
    """real-clusters.md says what the control plane of `hack/kind-up.sh` does to fake Nodes and
    when: that holds for one Kubernetes version, so the image is pinned (with its digest) and
    the page names it. The node lifecycle controller's default grace period is 40 s up to
    v1.31 and 50 s from v1.32 (kubernetes#126287)."""
    config = (ROOT / "hack" / "kind-config.yaml").read_text()
    m = re.search(r"^\s*image: kindest/node:(v1\.(\d+)\.\d+)@sha256:[0-9a-f]{64}\s*$", config, re.M)
    assert m is not None, "hack/kind-config.yaml does not pin kindest/node:vX.Y.Z@sha256:..."
    tag, minor = m.group(1), int(m.group(2))
    page = " ".join((ROOT / "docs" / "real-clusters.md").read_text().split())
    assert f"`kindest/node:{tag}`" in page
    grace = 50 if minor >= 32 else 40
    assert f"NotReady after about {grace} s" in page
    assert f"finish well inside {grace} s" in page
    for doc in DOCS:
        for said in re.findall(r"about (\d+) s, taints", " ".join(doc.read_text().split())):
            assert int(said) == grace, f"{doc.name}: fake nodes go NotReady after {grace} s"
