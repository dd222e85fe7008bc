"""A scheduler extender: the other end of the webhook step 15's scheduler (and kube-scheduler)
calls. Run it beside a scheduler: ``python -m minisched.sample_extender --port 8888``.

Upstream counterpart: none in kubernetes; the wire format is k8s.io/kube-scheduler's
extender/v1 (types.go) and the calls are pkg/scheduler/extender.go's. The well-known examples
(everpeace/k8s-scheduler-extender-example, Huang-Wei/sample-scheduler-extender) are Go; this one
is the standard library's HTTP server, the same decisions in a few dozen lines:

- ``POST /filter``: ExtenderArgs -> ExtenderFilterResult. A node labelled
  ``example.com/maintenance=true`` fails, with a reason a preemption cannot change
  (FailedAndUnresolvableNodes); the others pass. Answers names or whole nodes, as it was asked
  (``nodeCacheCapable``).
- ``POST /prioritize``: ExtenderArgs -> HostPriorityList: NodeNumber's rule, 10 (the extender
  maximum) for the node whose name ends in the pod's last digit, else 0.
- ``POST /bind``: ExtenderBindingArgs -> ExtenderBindingResult: it binds the pod itself, with
  the official client, as a binding extender must (``--kubeconfig``).
- ``POST /preempt``: ExtenderPreemptionArgs -> ExtenderPreemptionResult: agrees with every
  victim.

Keys are Go's field names (the extender/v1 types have no JSON tags). Every request is logged
on standard error, one line each; the first line on standard output is the URL to give as the
extender's ``urlPrefix``.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("sample-extender")

# A node with this label is under maintenance: the extender filters it out.
MAINTENANCE_LABEL = "example.com/maintenance"
MAX_EXTENDER_PRIORITY = 10


def last_digit(name: str) -> str | None:
    return name[-1] if name and name[-1].isdigit() else None


def node_names(args: dict[str, Any]) -> list[str]:
    """The node names of ExtenderArgs: ``NodeNames`` (nodeCacheCapable), else the Nodes'."""
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in (args.get("Nodes") or {}).get("items") or []]


def filter_nodes(args: dict[str, Any]) -> dict[str, Any]:
    """Upstream's ExtenderFilterResult for ExtenderArgs."""
    cache_capable = args.get("NodeNames") is not None
    nodes = (args.get("Nodes") or {}).get("items") or []
    labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in nodes}
    passed, unresolvable = [], {}
    for name in node_names(args):
        if labels.get(name, {}).get(MAINTENANCE_LABEL) == "true":
            unresolvable[name] = "node is under maintenance (sample extender)"
        else:
            passed.append(name)
    result: dict[str, Any] = {
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": unresolvable,
        "Error": "",
    }
    if cache_capable:
        result["NodeNames"] = passed
    else:
        result["Nodes"] = {"items": [n for n in nodes if n["metadata"]["name"] in passed]}
    return result


def prioritize(args: dict[str, Any]) -> list[dict[str, Any]]:
    """HostPriorityList: NodeNumber's rule on 0..MAX_EXTENDER_PRIORITY."""
    digit = last_digit(args["Pod"]["metadata"]["name"])
    return [
        {"Host": name, "Score": MAX_EXTENDER_PRIORITY if digit and last_digit(name) == digit else 0}
        for name in node_names(args)
    ]


class Handler(BaseHTTPRequestHandler):
    """One request: a verb as the path, a JSON body, a JSON answer."""

    server: ExtenderServer

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        try:
            args = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            answer = self.server.answer(verb, args)
        except (ValueError, KeyError, TypeError) as e:
            self.send_error(400, f"bad {verb} request: {e}")
            return
        if answer is None:
            self.send_error(404, f"no verb {verb}")
            return
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)


class ExtenderServer(ThreadingHTTPServer):
    """The extender: its verbs, and the client it binds with (None: it refuses to bind)."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        kubeconfig: str | None = None,
        context: str | None = None,
    ) -> None:
        super().__init__(address, Handler)
        self.kubeconfig, self.context = kubeconfig, context
        self._core: Any = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def answer(self, verb: str, args: dict[str, Any]) -> Any:
        if verb == "filter":
            return filter_nodes(args)
        if verb == "prioritize":
            return prioritize(args)
        if verb == "bind":
            return {"Error": self.bind(args)}
        if verb == "preempt":
            victims = args.get("NodeNameToMetaVictims") or {}
            return {"NodeNameToMetaVictims": victims}
        return None

    def bind(self, args: dict[str, Any]) -> str:
        """POST the pod's Binding, as kube-scheduler's DefaultBinder would; "" or the error."""
        from kubernetes import client, config  # only a binding extender needs the client

        if self.kubeconfig is None:
            return "the sample extender binds only with --kubeconfig"
        if self._core is None:
            api = config.new_client_from_config(self.kubeconfig, context=self.context)
            self._core = client.CoreV1Api(api)
        binding = client.V1Binding(
            metadata=client.V1ObjectMeta(
                name=args["PodName"], namespace=args["PodNamespace"], uid=args["PodUID"]
            ),
            target=client.V1ObjectReference(kind="Node", name=args["Node"]),
        )
        try:
            self._core.create_namespaced_binding(
                args["PodNamespace"], binding, _preload_content=False
            )
        except client.ApiException as e:
            return f"binding {args['PodNamespace']}/{args['PodName']}: {e.status} {e.reason}"
        return ""


def serve(
    port: int = 0, kubeconfig: str | None = None, context: str | None = None
) -> ExtenderServer:
    """Start the extender on 127.0.0.1 in a thread of its own; ``shutdown()`` stops it."""
    server = ExtenderServer(("127.0.0.1", port), kubeconfig, context)
    threading.Thread(target=server.serve_forever, name="sample-extender", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minisched.sample_extender", description=__doc__
    )
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    parser.add_argument("--kubeconfig", help="the cluster to bind pods in (the bind verb)")
    parser.add_argument("--context", help="the kubeconfig's context to use")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s] %(message)s", stream=sys.stderr)
    server = serve(args.port, args.kubeconfig, args.context)
    print(server.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
