"""The diff between two steps, as ``diff -ruN steps/stepA steps/stepB`` would print it.

Upstream counterpart: none; this is the repository's own tooling. The stored diffs in
``docs/diffs/stepM-stepN.diff`` (M: the built step before N, usually N-1) are made by
``python -m minisched.stepdiff --write`` (or ``hack/gen-diffs.sh``) and a test fails when one
is stale, so a fix made in one step but not carried forward to the next shows up as a change
in a diff nobody meant to change.

``nox -s diff -- 4 5`` prints one diff, coloured on a terminal.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path

from . import steps

ROOT = steps.ROOT
DIFFS = ROOT / "docs" / "diffs"


def _files(step_dir: Path) -> set[str]:
    return {
        str(p.relative_to(step_dir))
        for p in step_dir.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def step_diff(a: int, b: int) -> str:
    """The unified diff from step ``a`` to step ``b``; new files appear in full (-N)."""
    dir_a, dir_b = steps.get(a).directory, steps.get(b).directory
    out: list[str] = []
    for name in sorted(_files(dir_a) | _files(dir_b)):
        path_a, path_b = dir_a / name, dir_b / name
        lines_a = path_a.read_text().splitlines(keepends=True) if path_a.exists() else []
        lines_b = path_b.read_text().splitlines(keepends=True) if path_b.exists() else []
        if lines_a == lines_b:
            continue
        label_a = f"steps/step{a}/{name}"
        label_b = f"steps/step{b}/{name}"
        out.append(f"diff -ruN {label_a} {label_b}\n")
        for line in difflib.unified_diff(lines_a, lines_b, label_a, label_b, n=3):
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def stored_path(a: int, b: int) -> Path:
    return DIFFS / f"step{a}-step{b}.diff"


def consecutive_pairs() -> list[tuple[int, int]]:
    """(M, N) for every built step N but the first, M the built step before it (N-1, unless
    a step in between is not built yet)."""
    pairs = []
    for step in steps.built():
        before = steps.previous_built(step.number)
        if before is not None:
            pairs.append((before.number, step.number))
    return pairs


def write_all() -> list[Path]:
    """Regenerate every stored diff and remove those of pairs that are no longer consecutive;
    return the files written."""
    DIFFS.mkdir(parents=True, exist_ok=True)
    written = []
    for a, b in consecutive_pairs():
        path = stored_path(a, b)
        path.write_text(step_diff(a, b))
        written.append(path)
    for stale in set(DIFFS.glob("step*-step*.diff")) - set(written):
        stale.unlink()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minisched.stepdiff", description=__doc__)
    parser.add_argument("steps", nargs="*", type=int, help="two step numbers, e.g. 4 5")
    parser.add_argument("--write", action="store_true", help="regenerate docs/diffs/")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_all():
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    if len(args.steps) == 1:
        before = steps.previous_built(args.steps[0])
        args.steps = [before.number if before else args.steps[0] - 1, args.steps[0]]
    if len(args.steps) != 2:
        parser.error(
            "give two steps (e.g. 4 5), one step (its diff from the one before), or --write"
        )
    a, b = args.steps
    for n in (a, b):
        try:
            if not steps.get(n).built:
                parser.error(f"step {n} is not built yet")
        except ValueError as e:
            parser.error(str(e))
    text = step_diff(a, b)
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.syntax import Syntax

        Console().print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
