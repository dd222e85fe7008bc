"""Step 9: a pod is assumed on a node, its binding fails, and the cache forgets it.

node2 and node3 each take one pod (``status.allocatable.pods`` is 1; the MaxPods plugin
counts the pods the cache holds on a node). pod2 and pod12 both end in 2, so NodeNumber
prefers node2 for both.

- pod2 is scheduled first: node2. It is *assumed* there, and waits 2 s on Permit.
- pod12's cycle starts at once. Its snapshot already counts pod2 on node2, though pod2 is not
  bound: MaxPods rejects node2 ("Too many pods") and pod12 goes to node3.
- pod2 is annotated ``minisched.io/flaky-bind``: the FlakyBinder plugin refuses its first
  binding. Unreserve runs, the cache forgets pod2, node2 is free again, and pod2 goes back to
  the queue (podBackoffQ, 1 s).
- Its second attempt finds node2 free; FlakyBinder skips it, DefaultBinder binds it.

Run: ``nox -s step9``, or ``nox -s step9 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step9.py [ARGS]`` does the same.
"""

from __future__ import annotations

from minisched.scenario import Scenario

FLAKY_BIND = "minisched.io/flaky-bind"


def run(s: Scenario) -> dict[str, str | None]:
    nodes = ["node2", "node3"]
    for name in nodes:
        s.create_node(name, pods=1)
    s.scheduler_has_seen("node", nodes)
    s.create_pod("pod2", annotations={FLAKY_BIND: "true"})
    # pod12 must be scheduled while pod2 waits its 2 s on Permit, assumed on node2.
    s.create_pod("pod12")
    # 2 s on Permit, the refused binding, 1 to 2 s of backoff and flush, 2 s on Permit.
    bindings = s.wait_for_bindings(timeout=max(s.timeout, 20.0))
    if bindings == {"pod2": "node2", "pod12": "node3"}:
        s.say(
            "scenario: pod12 went to node3 because node2 held pod2, assumed and not yet bound; "
            "pod2's refused binding was forgotten, and its retry found node2 free"
        )
    return bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["9", *sys.argv[1:]]))
