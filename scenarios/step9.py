"""Step 9: a pod is assumed on a node, its binding fails, and the cache forgets it.

node1 and node2 each take one pod (``status.allocatable.pods`` is 1; the MaxPods plugin
counts the pods the cache holds on a node). pod1 and pod11 both end in 1, so NodeNumber
prefers node1 for both.

- pod1 is scheduled first: node1. It is *assumed* there, and waits 1 s on Permit.
- pod11's cycle starts at once. Its snapshot already counts pod1 on node1, though pod1 is not
  bound: MaxPods rejects node1 ("Too many pods") and pod11 goes to node2.
- pod1 is annotated ``minisched.io/flaky-bind``: the FlakyBinder plugin refuses its first
  binding. Unreserve runs, the cache forgets pod1, node1 is free again, and pod1 goes back to
  the queue (podBackoffQ, 1 s).
- Its second attempt finds node1 free; FlakyBinder skips it, DefaultBinder binds it.

Run: ``nox -s step9`` or ``python scenarios/step9.py [--seed N] [--kubeconfig PATH]``.
"""

from __future__ import annotations

from minisched.scenario import Scenario

FLAKY_BIND = "minisched.io/flaky-bind"


def run(s: Scenario) -> dict[str, str | None]:
    nodes = ["node1", "node2"]
    for name in nodes:
        s.create_node(name, pods=1)
    s.scheduler_has_seen("node", nodes)
    s.create_pod("pod1", annotations={FLAKY_BIND: "true"})
    s.create_pod("pod11")
    # 1 s on Permit, the refused binding, 1 to 2 s of backoff and flush, 1 s on Permit.
    bindings = s.wait_for_bindings(timeout=max(s.timeout, 20.0))
    if bindings == {"pod1": "node1", "pod11": "node2"}:
        s.say(
            "scenario: pod11 went to node2 because node1 held pod1, assumed and not yet bound; "
            "pod1's refused binding was forgotten, and its retry found node1 free"
        )
    return bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["9", *sys.argv[1:]]))
