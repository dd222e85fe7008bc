"""Step 1: ten nodes, three pods; each pod lands on a node chosen at random (seeded).

Run: ``nox -s step1``, or ``nox -s step1 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step1.py [ARGS]`` does the same.
"""

from __future__ import annotations

from minisched.scenario import Scenario


def run(s: Scenario) -> dict[str, str | None]:
    nodes = [f"node{i}" for i in range(10)]
    for name in nodes:
        s.create_node(name)
    s.scheduler_has_seen("node", nodes)
    for name in ("pod1", "pod2", "pod3"):
        s.create_pod(name)
    return s.wait_for_bindings()


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["1", *sys.argv[1:]]))
