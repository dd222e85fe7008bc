"""The embedded Kubernetes API server (the part of a control plane a scheduler talks to).

Upstream: ``kube-apiserver`` with etcd (``k8s.io/apiserver``, ``pkg/registry/core``). It serves
the real REST API (discovery, legacy and aggregated; namespaces, nodes, pods with ``/status``
and ``/binding``, the legacy ``bindings`` endpoint, core/v1 events, ``scheduling.k8s.io/v1``
PriorityClasses with the Priority admission plugin, ``apiextensions.k8s.io/v1``
CustomResourceDefinitions and the custom resources they define) so the unmodified official
``kubernetes`` client, ``kubectl`` and a real ``kube-scheduler`` work against it. The recorded
exchanges in ``tests/fixtures/conformance`` are its specification.

Simplified: what kube-controller-manager's namespace controller does (empty a deleted
namespace, then remove it) the server does itself right after answering the DELETE. Not
implemented: the resources a kube-scheduler's informers watch besides pods, nodes and
namespaces (storage, apps, policy, resource.k8s.io, services, PVs, PVCs,
replicationcontrollers) are served as empty read-only collections; events.k8s.io/v1 Events
are stored as posted, apart from core/v1 Events. A kube-scheduler needs
``--leader-elect=false`` (no Leases).

Modules, in the order a request meets them:

- ``__main__``: the process (``python -m minisched.apiserver``): flags, kubeconfig, ready line,
  signals.
- ``httpd``: HTTP/1.1 on asyncio streams, parsed and framed by h11 (what Go's net/http does
  for kube-apiserver): requests, keep-alive, chunked bodies and watch streams, a Status for
  what is not HTTP.
- ``server``: authentication, routing, content negotiation, handlers, watch streams.
- ``serving``: the listening socket and the event loop; ``Server`` to run it in-process.
- ``registry``: what each verb does to each resource (create, update, patch, delete, bind),
  and the steps of the CRD controllers.
- ``crd``: CustomResourceDefinitions (defaults, validation, conditions) and custom resources
  (structural schemas: pruning, defaults, validation; printer columns).
- ``defaults`` and ``validation``: the fields the server fills in, and what it rejects.
- ``patch``: merge patch, JSON patch, strategic merge patch; ``protobuf``: the protobuf
  request bodies that clients send by default.
- ``selectors``: label and field selectors.
- ``store``: objects, the resourceVersion counter, watch history and fan-out.
- ``discovery``, ``table``, ``errors``: discovery documents, ``kubectl get`` tables, Status
  bodies.

Process contract (``minisched.cluster`` relies on it)::

    python -m minisched.apiserver [--host 127.0.0.1] [--port 0] [--kubeconfig PATH]
        [--token-file PATH] [--watch-history N] [--exit-on-stdin-eof] [--data-dir DIR] [--tls]
        [--state-dir DIR]

prints exactly one line ``minisched-apiserver ready url=http://127.0.0.1:PORT
kubeconfig=/abs/path`` on stdout when it accepts requests; logs go to stderr; SIGTERM and SIGINT
stop it with exit status 0. ``--data-dir`` keeps objects across restarts (the watch history is
lost, so old watches get 410, as after a real restart). ``--tls`` serves HTTPS with a
self-signed certificate (making it needs ``openssl``): kubectl sends its bearer token only over
TLS (kubernetes/kubectl#744), so kubectl needs it; the Python client works over either.
``--state-dir`` keeps the certificate and the token across restarts (``nox -s apiserver`` uses
``.nox/apiserver``), so clients of the old process keep working.

In-process API (tests, benchmark)::

    from minisched.apiserver.serving import Server
    server = Server(port=0).start_in_thread()   # server.url, server.token
    server.stop_thread()

Test-only flags: ``--fail-binding-fraction F`` (with ``--seed``) answers that fraction of
bindings with ``503 ServiceUnavailable``; ``--test-endpoints`` enables ``POST
/minisched/compact`` (forget the watch history, like an etcd compaction).

Not implemented: a kubelet (bound pods stay Pending; see DESIGN.md), server-side apply, dry run,
protobuf bodies (except the few that client-go sends by default, see ``protobuf.py``) and
YAML bodies, OpenAPI schemas (``openapi.py`` serves only what kubectl's
field-validation check reads).
"""
