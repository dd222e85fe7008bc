"""Read a py-spy profile (collapsed stacks) and print where the time went.

Upstream counterpart: none in scheduler_perf (Go benchmarks use ``go test -cpuprofile`` and
``go tool pprof -top``); this is a small ``pprof -top`` for ``py-spy record --format raw``.

``python -m minisched.bench.profile FILE [--top N] [--match TEXT]`` prints the functions with the
most samples on their own (self) and including their callees (total), as percentages of all
samples of the threads whose stacks contain ``--match`` (default: every thread).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Sequence

# py-spy frames look like "function (path/to/file.py:123)"; the line number is dropped so that
# one function is one row.
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^():]*)(?::\d+)?\)$")


def frame_name(frame: str) -> str:
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    path = m.group("file")
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{m.group('func')} ({path})"


def load(path: str, match: str | None = None) -> tuple[Counter[str], Counter[str], int]:
    """Self and total samples per function, and the number of samples."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    with open(path) as f:
        for line in f:
            stack, _, count_text = line.rstrip("\n").rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            if match and match not in stack:
                continue
            count = int(count_text)
            frames = [frame_name(fr) for fr in stack.split(";") if fr]
            if not frames:
                continue
            samples += count
            own[frames[-1]] += count
            for name in set(frames):
                total[name] += count
    return own, total, samples


def top(path: str, n: int = 25, match: str | None = None) -> str:
    """The report as text."""
    own, total, samples = load(path, match)
    if not samples:
        return "no samples"
    lines = [f"{samples} samples" + (f" in stacks containing {match!r}" if match else "")]
    for title, counter in (("self", own), ("total (with callees)", total)):
        lines.append(f"--- {title}")
        for name, count in counter.most_common(n):
            lines.append(f"{100 * count / samples:6.1f}%  {name}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minisched.bench.profile", description=__doc__)
    p.add_argument("file")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--match", default=None, help="only stacks containing this text")
    args = p.parse_args(argv)
    print(top(args.file, args.top, args.match))
    return 0


if __name__ == "__main__":
    sys.exit(main())
