"""Step 18: step 17's story, told by the fast scheduler: every pod goes where it went in step 17.

The run configures the scheduler with ``CONFIG`` below: the plugin ``wasm`` enabled under
``multiPoint``, as kube-scheduler-wasm-extension's own configurations enable it, its
``guestURL`` the project's NodeNumber guest (``guests/nodenumber/nodenumber.wat``, WebAssembly
text that wasmtime compiles as it loads). The guest does what step 3's Python NodeNumber does:
a node whose name ends in the pod's last digit scores 10, the others 0.

Ten nodes, node0..node9, 4 CPU each. The pods, each bound before the next is created:

- pod8 goes to node8: the guest scores it 10, every other node 0; every other plugin scores
  the ten empty nodes alike.
- pod3 goes to node3, pod5 to node5, the same way.
- web has no digit: the guest scores every node alike, and the other plugins choose among
  the nodes left empty.

Run: ``nox -s step18``, or ``nox -s step18 -- --seed N --kubeconfig PATH``. With minisched
installed (``pip install -e .``), ``python scenarios/step18.py [ARGS]`` does the same.
"""

from __future__ import annotations

from minisched.scenario import Scenario

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1beta3
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: minisched
  plugins:
    multiPoint:
      enabled:
      - name: wasm
  pluginConfig:
  - name: wasm
    args:
      guestURL: "file://{root}/guests/nodenumber/nodenumber.wat"
"""

NODES = [f"node{i}" for i in range(10)]
PODS = ["pod8", "pod3", "pod5", "web"]


def run(s: Scenario) -> dict[str, str | None]:
    for name in NODES:
        s.create_node(name, cpu="4", memory="16Gi")
    s.scheduler_has_seen("node", NODES)
    bindings: dict[str, str | None] = {}
    for name in PODS:
        s.create_pod(name)
        bindings |= s.wait_for_bindings([name])
    return bindings


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from minisched.runner import main

    sys.exit(main(["18", *sys.argv[1:]]))
