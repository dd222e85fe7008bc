"""The repository's shape: the manifest matches the folders, steps stay independent and their
diffs readable, the stored diffs are current."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from minisched import stepdiff, steps

ROOT = steps.ROOT
STEP_DIRS = sorted((ROOT / "steps").glob("step*"), key=lambda p: int(p.name[4:]))


def test_the_manifest_names_every_step_folder_and_step1_is_built() -> None:
    """A later step may be built before the one ahead of it (it then grows from the last
    built step before it, ``steps.previous_built``), but every folder is in the manifest."""
    assert [p.name for p in STEP_DIRS] == [f"step{s.number}" for s in steps.built()]
    assert steps.built()[0].number == 1
    assert [s.number for s in steps.STEPS] == list(range(1, len(steps.STEPS) + 1))


def test_a_step_grows_from_the_last_built_step_before_it() -> None:
    numbers = [s.number for s in steps.built()]
    for before, after in zip(numbers, numbers[1:], strict=False):
        previous = steps.previous_built(after)
        assert previous is not None and previous.number == before
    assert steps.previous_built(1) is None


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


# --- Steps 1-12 teach v1.23, not speed (issue 28) --------------------------------------------

# Words of profiling and benchmarking, which belong in the bench and the chapters, not in a
# step's code or comments. "profile" alone is a scheduler word (a scheduling profile), and
# "pods/status" an API path: neither is matched.
SPEED_VOCABULARY = (
    r"py-spy",
    r"cachegrind",
    r"callgrind",
    r"perf stat",
    r"\binstructions\b",
    r"[µμ]s\b",  # microseconds, micro sign or Greek mu
    r"\bpods/s\b",
    r"\bCPU(?:'s)? cache",
    r"\bprofil(?:er|ers|ed|ing)\b",
    r"\bin-process\b",
    r"\bms of CPU\b",
)
SPEED_WORDS = re.compile("|".join(SPEED_VOCABULARY), re.IGNORECASE)

# A step differs from v1.23 to be faithful or to be readable, never to be faster: a
# "Differs from" mark whose sentence gives speed as its reason has no place in a step.
DIFFERS_MARK = re.compile(r"Differs from (?:upstream|v1\.23)")
SPEED_REASONS = re.compile(r"\bfaster\b|\bcheaper\b|\bcosts\b|\bcost of\b|\bslots\b", re.I)


def _differs_sentence(lines: list[str], start: int) -> str:
    """The sentence that begins at the mark on ``lines[start]``: up to its full stop, across
    the following lines of the same comment, or of the same docstring paragraph."""
    first = lines[start]
    mark = DIFFERS_MARK.search(first)
    assert mark is not None
    words = [first[mark.start() :]]
    comment = "#" in first[: mark.start()]
    for line in lines[start + 1 :]:
        text = line.strip()
        if comment != text.startswith("#"):
            break
        text = text.lstrip("#").strip()
        if not text or text.startswith(('"""', "'''")):
            break
        words.append(text)
    return re.split(r"\.(?=\s|$)|\"\"\"|'''", " ".join(words), maxsplit=1)[0]


def speed_hits(path: Path) -> list[str]:
    """Each line of ``path`` with profiler vocabulary or a speed-only Differs mark, as
    ``path:line: text``."""
    hits = []
    lines = path.read_text().splitlines()
    for n, line in enumerate(lines, 1):
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{n}"
        if SPEED_WORDS.search(line):
            hits.append(f"{where}: {line.strip()}")
        elif DIFFERS_MARK.search(line) and SPEED_REASONS.search(_differs_sentence(lines, n - 1)):
            hits.append(f"{where}: {line.strip()} [Differs mark justified by speed]")
    return hits


def test_speed_hits_finds_what_it_must_and_nothing_else(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "# Measured with py-spy: 2 µs per node, 900 pods/s, profiled in-process.\n"
        "x = 1  # fits in the CPU's cache; 12 ms of CPU; 3000 instructions\n"
        '"""Differs from v1.23: Score reads the request that\n'
        "PreScore computed, which is cheaper. Upstream computes it again.\n"
        '"""\n'
        "# Differs from upstream: a Status is a dataclass with slots.\n"
    )
    assert [hit.split(":")[1] for hit in speed_hits(bad)] == ["1", "2", "3", "6"]
    good = tmp_path / "good.py"
    good.write_text(
        "# The scheduling profile of the pod; PATCH pods/status; a profile's plugins.\n"
        "for attr in NodeInfo.__slots__:\n"
        "    pass\n"
        "# Differs from upstream: kube-scheduler exits here. Exiting costs the cluster its\n"
        "# scheduler: the cache's own copy is removed instead.\n"
    )
    assert speed_hits(good) == []


def test_steps_carry_no_profiler_vocabulary_nor_speed_only_differences() -> None:
    """Steps 1-12 teach kube-scheduler v1.23 and nothing else (issue 28): measurements and
    the tools that made them are the bench's and the chapters' business."""
    # The last step's feature is speed (issue 37): its code may say what each change bought.
    fast = {s.directory for s in steps.STEPS if s.slug == "fast"}
    sources = sorted(
        p for p in (ROOT / "steps").rglob("*.py") if not any(p.is_relative_to(d) for d in fast)
    )
    assert [hit for path in sources for hit in speed_hits(path)] == []


# The files a step drops on purpose: step 10's NodeResourcesFit replaces the teaching plugin
# MaxPods (upstream has none), as its chapter says.
DROPPED = {
    10: {Path("plugins/maxpods.py")},
}


def test_later_steps_keep_the_files_of_earlier_ones() -> None:
    for a, b in stepdiff.consecutive_pairs():
        dir_a, dir_b = steps.get(a).directory, steps.get(b).directory
        before = {p.relative_to(dir_a) for p in dir_a.rglob("*.py")}
        after = {p.relative_to(dir_b) for p in dir_b.rglob("*.py")}
        assert before - DROPPED.get(b, set()) <= after, f"step{b} drops {before - after}"


@pytest.mark.parametrize(
    "pair", stepdiff.consecutive_pairs(), ids=lambda p: f"step{p[0]}-step{p[1]}"
)
def test_stored_diff_is_current(pair: tuple[int, int]) -> None:
    a, b = pair
    stored = stepdiff.stored_path(a, b)
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


# --- Bytecode stays out of steps/ ------------------------------------------------------------


@functools.cache  # once: nox refuses (in future versions) a session registered twice
def load_noxfile() -> ModuleType:
    """noxfile.py as a module, without its import changing where this process writes bytecode."""
    saved = sys.pycache_prefix
    try:
        spec = importlib.util.spec_from_file_location("minisched_noxfile", ROOT / "noxfile.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.pycache_prefix = saved
    return module


def test_what_nox_runs_keeps_bytecode_where_the_machine_says_not_to(tmp_path: Path) -> None:
    """With PYTHONDONTWRITEBYTECODE=1 in the caller's environment (container images often set
    it), what a session runs still keeps its bytecode in nox's cache: otherwise every process
    compiles every module it imports again (the kubernetes client's 2000), seconds each."""
    nox_env = load_noxfile().session_env(str(Path(sys.executable).parent))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **nox_env}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)  # this test's own cache, empty
    script = "import sys; import minisched.rand; print(sys.flags.dont_write_bytecode)"
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True
    )
    assert out.stdout.strip() == "0"
    assert list(tmp_path.rglob("rand.cpython-*.pyc"))


def test_what_nox_runs_writes_no_bytecode_into_steps(tmp_path: Path) -> None:
    """A step imported with the environment nox gives every session leaves no __pycache__ in
    steps/, so `diff -ruN steps/step4 steps/step5` stays clean after `nox -s step4`. The steps
    and the runtime are copied, so a failure leaves the real tree clean."""
    for name in ("steps", "minisched"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    nox_env = load_noxfile().session_env(str(Path(sys.executable).parent))
    # As on most laptops: nothing in the caller's environment keeps bytecode away already.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTHONPATH")
    }
    env.update(nox_env)
    packages = [f"{s.package}.scheduler" for s in steps.built()]
    script = (
        "import importlib, sys\n"
        f"for name in {packages!r}:\n"
        "    assert importlib.import_module(name).__file__.startswith(sys.argv[1]), name\n"
    )
    try:
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            cwd=tmp_path,
            env=env,
            check=True,
            timeout=120,
        )
        assert sorted(tmp_path.glob("steps/**/__pycache__")) == []
    finally:
        if prefix := nox_env.get("PYTHONPYCACHEPREFIX"):
            shutil.rmtree(Path(prefix) / tmp_path.relative_to(tmp_path.anchor), ignore_errors=True)


def test_step_diff_ignores_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`nox -s diff` and the stored diffs skip __pycache__ and stray .pyc files."""
    dirs = {1: tmp_path / "a", 2: tmp_path / "b"}
    for n, d in dirs.items():
        (d / "__pycache__").mkdir(parents=True)
        (d / "x.py").write_text("x = 1\n")
        (d / "__pycache__" / "x.cpython-311.pyc").write_text(f"bytecode {n}\n")
    (dirs[2] / "__pycache__" / "y.cpython-311.pyc").write_text("bytecode\n")
    (dirs[2] / "stray.pyc").write_text("bytecode\n")
    monkeypatch.setattr(stepdiff.steps, "get", lambda n: SimpleNamespace(directory=dirs[n]))
    assert stepdiff.step_diff(1, 2) == ""
