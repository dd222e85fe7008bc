"""The baseline binder: ``python -m minisched.bench.binder --kubeconfig PATH``.

Upstream counterpart: none; it is the issue's "30-line sequential Python binder", the ceiling
for one Python thread making one bind request per pod against the same API server, measured
side by side with the steps (it is shown as scheduler "binder").

No informer, no queue, no filtering, no scoring: one List of the namespace's pods with
``schedulerName: minisched`` that have no node and one of the nodes, then one bind request per
pod, round robin; it exits when it has bound them all.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from kubernetes import client

from minisched import cluster
from minisched.scenario import SCHEDULER_NAME


def bind_all(
    core: client.CoreV1Api,
    namespace: str,
    node_selector: str | None,
    scheduler_name: str = SCHEDULER_NAME,
) -> int:
    """Bind every pending pod that asks for ``scheduler_name``; how many were bound."""
    nodes = json.loads(core.list_node(label_selector=node_selector, _preload_content=False).data)
    names = [n["metadata"]["name"] for n in nodes["items"]]
    pods = json.loads(core.list_namespaced_pod(namespace, _preload_content=False).data)["items"]
    pending = [
        p
        for p in pods
        if p["spec"].get("schedulerName") == scheduler_name and not p["spec"].get("nodeName")
    ]
    if not names:
        return 0
    for i, pod in enumerate(pending):
        meta = pod["metadata"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "target": {"kind": "Node", "name": names[i % len(names)]},
        }
        response = core.create_namespaced_pod_binding(
            meta["name"], meta["namespace"], binding, _preload_content=False
        )
        response.data  # noqa: B018 -- reading the body releases the connection
    return len(pending)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minisched.bench.binder", description=__doc__)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--context", default=None)
    p.add_argument("--namespace", required=True)
    p.add_argument("--node-selector", default=None)
    p.add_argument(
        "--scheduler-name",
        default=SCHEDULER_NAME,
        help="bind the pods that ask for this scheduler (default minisched; the bench's smoke "
        "test plays the default-scheduler with it)",
    )
    p.add_argument("--seed", type=int, default=1, help="ignored: the binder has no choices")
    args = p.parse_args(argv)
    try:
        with cluster.connect(args.kubeconfig, args.context) as c:
            core = client.CoreV1Api(c.api_client)
            bound = bind_all(core, args.namespace, args.node_selector, args.scheduler_name)
    except cluster.ClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"bound {bound} pods")
    return 0


if __name__ == "__main__":
    sys.exit(main())
