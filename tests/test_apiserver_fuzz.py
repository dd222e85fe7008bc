"""Fuzzing the embedded API server over HTTP (hypothesis).

One in-process server answers random and malformed requests: paths with weird segments and
percent-encoding, query strings with garbage selectors and versions, every method, every
content type, and bodies that are broken JSON, invalid UTF-8, deeply nested, oversized, or
valid objects with a wrong JSON type in one field. The properties, checked on every request:

- never a 5xx (the one exception is upstream's ``504 Timeout`` for a read at a resourceVersion
  the server has not reached, which is the documented answer, not a crash);
- every failure is a ``v1 Status`` body whose ``code`` is the HTTP status;
- nothing reaches the handler's catch-all (it logs "unexpected error": that is a bug);

and after each test: the server still answers (``/readyz`` 200) and the store is consistent
(every list parses with the official client, every object has a name, uid and resourceVersion,
versions are unique and the history's versions strictly increase).

The examples are derandomized and bounded, so the file is repeatable and quick. The classic
cases have a table in ``test_apiserver_http.py``; the regression tests at the end pin the bugs
the fuzzer found.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from minisched.apiserver.serving import Server

MAX_BODY = 128 * 1024
SETTINGS = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")),
    derandomize=not os.environ.get("FUZZ_RANDOM"),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

FUZZED = {"requests": 0, "http_parser_errors": 0}  # reported at the end (pytest -s shows it)


class ErrorLog(logging.Handler):
    """Collects the server's ERROR records: its catch-all logs every unexpected exception."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server(port=0, seed=11, max_body_bytes=MAX_BODY).start_in_thread()
    yield srv
    srv.stop_thread()
    print(
        f"\nfuzz: {FUZZED['requests']} requests sent to one server, "
        f"{FUZZED['http_parser_errors']} refused by the HTTP parser or method check"
    )


@pytest.fixture
def error_log() -> Iterator[ErrorLog]:
    handler = ErrorLog()
    logger = logging.getLogger("minisched.apiserver")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


@pytest.fixture(scope="module")
def official(server: Server) -> Iterator[client.CoreV1Api]:
    conf = client.Configuration(host=server.url)
    conf.api_key = {"authorization": f"Bearer {server.token}"}
    api = client.ApiClient(conf)
    yield client.CoreV1Api(api)
    api.close()


# --------------------------------------------------------------------------------------------
# Sending raw requests
# --------------------------------------------------------------------------------------------


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def send(
    server: Server,
    method: str,
    target: str,
    body: bytes = b"",
    content_type: str | None = "application/json",
    accept: str | None = "application/json",
    token: bool = True,
) -> Answer:
    """One request on a fresh connection, written byte for byte (nothing normalises the path)."""
    head = [f"{method} {target} HTTP/1.1", f"Host: {server.host}:{server.port}"]
    if token:
        head.append(f"Authorization: Bearer {server.token}")
    if content_type is not None:
        head.append(f"Content-Type: {content_type}")
    if accept is not None:
        head.append(f"Accept: {accept}")
    head += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    raw = "\r\n".join(head).encode("utf-8", "surrogateescape") + body
    with socket.create_connection((server.host, server.port), timeout=30) as sock:
        sock.sendall(raw)
        resp = http.client.HTTPResponse(sock, method=method)
        resp.begin()
        data = resp.read()
        headers = {k.lower(): v for k, v in resp.getheaders()}
    FUZZED["requests"] += 1
    return Answer(resp.status, headers, data)


def check_answer(answer: Answer, method: str, error_log: ErrorLog) -> None:
    """The per-request properties (see the module docstring)."""
    unexpected, error_log.records[:] = list(error_log.records), []
    assert not unexpected, unexpected[-1]
    if answer.status >= 500:
        doc = json.loads(answer.body)
        assert answer.status == 504 and doc["reason"] == "Timeout", answer.body[:300]
        assert "Too large resource version" in doc["message"]
        return
    if method == "HEAD":
        return
    if answer.status == 404 and answer.body == b"404 page not found\n":
        # A group we do not serve: kube-apiserver has no route for it, and Go's mux answers
        # this plain text (recorded: case discovery-unknown-group).
        assert answer.headers.get("content-type") == "text/plain; charset=utf-8"
        return
    if answer.status >= 400:
        # Also what the HTTP layer (httpd, parsing with h11) refuses before any handler runs
        # (bytes not allowed in a URL: 400), and a method token no handler serves (405): a
        # Status, never text.
        assert answer.headers.get("content-type") == "application/json", answer.body[:300]
        doc = json.loads(answer.body)
        assert doc["kind"] == "Status" and doc["status"] == "Failure", doc
        assert doc["code"] == answer.status and doc["reason"], doc
        if answer.status == 405 or doc["message"].startswith("malformed HTTP request"):
            FUZZED["http_parser_errors"] += 1
    elif answer.headers.get("content-type") == "application/json":
        assert isinstance(json.loads(answer.body), dict)


def check_consistent(server: Server, official: client.CoreV1Api) -> None:
    """The server answers and its store is one the official client can read."""
    assert send(server, "GET", "/readyz", token=False).status == 200
    lists = [
        official.list_namespace(),
        official.list_node(),
        official.list_pod_for_all_namespaces(),
        official.list_event_for_all_namespaces(),
    ]
    seen_rvs: set[int] = set()
    seen_uids: set[str] = set()
    for result in lists:
        list_rv = int(result.metadata.resource_version)
        for item in result.items:
            meta = item.metadata
            assert meta.name and meta.uid and meta.resource_version, meta
            rv = int(meta.resource_version)
            assert rv <= list_rv and rv not in seen_rvs and meta.uid not in seen_uids
            seen_rvs.add(rv)
            seen_uids.add(meta.uid)
    history = server.call(lambda: [ev.rv for ev in server.store.history])
    assert all(a < b for a, b in zip(history, history[1:], strict=False))
    assert server.call(lambda: server.store.rv) >= max(seen_rvs)


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------

CONTAINERS = [{"name": "c", "image": "i:1"}]
TEMPLATES: dict[str, Any] = {
    "pod": {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "f", "labels": {"a": "b"}, "annotations": {"x": "y"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i:1",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "E", "value": "v"}],
                    "resources": {"requests": {"cpu": "1"}},
                }
            ],
            "nodeSelector": {"k": "v"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "schedulerName": "minisched",
            "priority": 1,
            "volumes": [{"name": "v", "emptyDir": {}}],
            "affinity": {"nodeAffinity": {}},
        },
        "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "True"}]},
    },
    "node": {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": "fn", "labels": {"a": "b"}},
        "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "4"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        },
    },
    "event": {
        "metadata": {"name": "fe"},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "R",
        "count": 1,
        "source": {"component": "x"},
    },
    "binding": {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n"}},
    "delete": {"kind": "DeleteOptions", "gracePeriodSeconds": 0, "preconditions": {"uid": "u"}},
    "merge": {"metadata": {"labels": {"a": "c"}}, "spec": {"activeDeadlineSeconds": 5}},
    "jsonpatch": [{"op": "replace", "path": "/metadata/labels", "value": {"a": "d"}}],
}

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON document, the document itself included."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc = json.loads(json.dumps(doc))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return doc


@st.composite
def mutated_documents(draw: st.DrawFn) -> Any:
    """A valid template with one field (or the whole) replaced by a random JSON value."""
    template = TEMPLATES[draw(st.sampled_from(sorted(TEMPLATES)))]
    path = draw(st.sampled_from(_paths(template)))
    value = draw(
        st.one_of(
            json_values,
            st.sampled_from([[], {}, "", "x", 1, 1.5, -1, True, None, [1], ["a"], {"a": 1}]),
        )
    )
    return _replace(template, path, value)


def _nested(depth: int, inside: bytes = b"") -> bytes:
    return b"[" * depth + inside + b"]" * depth


bodies = st.one_of(
    mutated_documents().map(lambda d: json.dumps(d).encode()),
    json_values.map(lambda d: json.dumps(d).encode()),
    # broken JSON: a valid document cut short, or with a byte flipped
    st.tuples(mutated_documents(), st.integers(0, 400)).map(
        lambda t: json.dumps(t[0]).encode()[: t[1]]
    ),
    st.binary(max_size=64),
    # invalid UTF-8 inside a string of a valid object
    st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00"]).map(
        lambda bad: (
            json.dumps(TEMPLATES["pod"]).replace('"f"', '"f\x01"').encode().replace(b"\x01", bad)
        )
    ),
    # deep nesting, bare or inside an object
    st.sampled_from([99, 100, 101, 1000, 100_000]).map(_nested),
    st.sampled_from([99, 100, 101, 50_000]).map(
        lambda d: (
            b'{"metadata": {"name": "deep", "labels": ' + b'{"a":' * d + b"1" + b"}" * d + b"}}"
        )
    ),
    # oversized
    st.sampled_from([MAX_BODY, MAX_BODY + 1, 3 * MAX_BODY]).map(
        lambda n: b'{"metadata": {"name": "' + b"a" * n + b'"}}'
    ),
    st.just(b""),
)

SEGMENTS = [
    "api",
    "v1",
    "namespaces",
    "default",
    "kube-system",
    "nope",
    "pods",
    "nodes",
    "events",
    "bindings",
    "binding",
    "status",
    "p",
    "n",
    "f",
    "fn",
    "",
    ".",
    "..",
    "%2F",
    "%2e%2e",
    "%",
    "%Z",
    "%zz",
    "%00",
    "%C3%28",
    "%FF%FE",
    "%E2%82%AC",
    "\u00fc",
    "a" * 300,
    "P",
    "p;x=1",
    "*",
]
PREFIXES = [
    "/api/v1",
    "/api/v1/namespaces/default",
    "/api",
    "/apis",
    "/version",
    "/readyz",
    "/healthz",
    "/openapi/v3",
    "/minisched/compact",
    "",
    "//",
]
segment = st.one_of(
    st.sampled_from(SEGMENTS),
    st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF), max_size=10).map(
        lambda s: quote(s, safe="%;:@!$&'()*+,=")
    ),
    st.binary(max_size=6).map(lambda b: "".join(f"%{x:02X}" for x in b)),
)
paths = st.builds(
    lambda prefix, segs: (prefix + "/" + "/".join(segs)) if segs else (prefix or "/"),
    st.sampled_from(PREFIXES),
    st.lists(segment, max_size=5),
)

QUERY_KEYS = [
    "labelSelector",
    "fieldSelector",
    "resourceVersion",
    "resourceVersionMatch",
    "limit",
    "continue",
    "gracePeriodSeconds",
    "dryRun",
    "includeObject",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "propagationPolicy",
    "fieldManager",
    "pretty",
]
selector_garbage = st.lists(
    st.sampled_from([*"ab1=!(),<>/ .-_%\\\t\n", " in ", " notin ", "spec.nodeName"]),
    max_size=12,
).map("".join)
query_values = st.one_of(
    selector_garbage,
    st.sampled_from(
        ["", "0", "1", "-1", "abc", "99999999999999999999", "1e3", "Exact", "NotOlderThan"]
    ),
    st.text(max_size=12),
    st.binary(max_size=6).map(lambda b: "".join(f"%{x:02X}" for x in b)),
)
queries = st.lists(st.tuples(st.sampled_from(QUERY_KEYS), query_values), max_size=4).map(
    lambda pairs: "&".join(f"{k}={quote(v, safe='%')}" for k, v in pairs)
)

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "FOO"]
CONTENT_TYPES = [
    "application/json",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/json; charset=latin-1",
    "APPLICATION/JSON",
    "text/plain",
    "application/vnd.kubernetes.protobuf",
    ";;;",
    "",
    None,
]
ACCEPTS = [
    "application/json",
    "application/json;as=Table;g=meta.k8s.io;v=v1",
    "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
    "application/json;as=Foo",
    "*/*",
    "text/html",
    "a;b;c=;=d,,,",
    "",
    None,
]

# Where a pod, node, binding and patch can land (the routes the server really serves).
TARGETS = [
    ("POST", "/api/v1/namespaces/default/pods"),
    ("POST", "/api/v1/nodes"),
    ("POST", "/api/v1/namespaces/default/events"),
    ("POST", "/api/v1/namespaces/default/pods/p/binding"),
    ("POST", "/api/v1/namespaces/default/bindings"),
    ("PUT", "/api/v1/namespaces/default/pods/p"),
    ("PUT", "/api/v1/namespaces/default/pods/p/status"),
    ("PUT", "/api/v1/nodes/n"),
    ("PUT", "/api/v1/nodes/n/status"),
    ("PATCH", "/api/v1/namespaces/default/pods/p"),
    ("PATCH", "/api/v1/namespaces/default/pods/p/status"),
    ("PATCH", "/api/v1/nodes/n"),
    ("PATCH", "/api/v1/nodes/n/status"),
    ("DELETE", "/api/v1/namespaces/default/pods/gone"),
    ("DELETE", "/api/v1/namespaces/default/events"),
]


def _ensure_base_objects(server: Server) -> None:
    """The pod ``p`` and node ``n`` that most fuzzed writes address (recreated if deleted)."""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": CONTAINERS}}
    for path, doc in (
        ("/api/v1/namespaces/default/pods", pod),
        ("/api/v1/nodes", {"metadata": {"name": "n"}}),
        ("/api/v1/namespaces/default/pods", {**pod, "metadata": {"name": "gone"}}),
    ):
        assert send(server, "POST", path, json.dumps(doc).encode()).status in (201, 409)


# --------------------------------------------------------------------------------------------
# The fuzz tests
# --------------------------------------------------------------------------------------------


def test_fuzz_paths_methods_and_queries(
    server: Server, official: client.CoreV1Api, error_log: ErrorLog
) -> None:
    """Random routes, methods, query strings, content types and Accept headers."""
    _ensure_base_objects(server)

    @SETTINGS
    @given(
        method=st.sampled_from(METHODS),
        path=paths,
        query=queries,
        body=st.one_of(st.just(b""), bodies),
        content_type=st.sampled_from(CONTENT_TYPES),
        accept=st.sampled_from(ACCEPTS),
    )
    def run(
        method: str, path: str, query: str, body: bytes, content_type: Any, accept: Any
    ) -> None:
        target = f"{path}?{query}" if query else path
        check_answer(send(server, method, target, body, content_type, accept), method, error_log)

    run()
    check_consistent(server, official)


def test_fuzz_bodies_on_real_routes(
    server: Server, official: client.CoreV1Api, error_log: ErrorLog
) -> None:
    """Every kind of body, in every content type, on the routes that read bodies."""

    @SETTINGS
    @given(
        target=st.sampled_from(TARGETS),
        body=bodies,
        content_type=st.sampled_from(CONTENT_TYPES),
    )
    def run(target: tuple[str, str], body: bytes, content_type: Any) -> None:
        _ensure_base_objects(server)
        method, path = target
        check_answer(send(server, method, path, body, content_type), method, error_log)

    run()
    check_consistent(server, official)


def test_fuzz_wrong_types_in_every_field(
    server: Server, official: client.CoreV1Api, error_log: ErrorLog
) -> None:
    """A valid object with one field of the wrong type, created, replaced and patched."""

    @SETTINGS
    @given(doc=mutated_documents(), how=st.sampled_from(["create", "put", "merge", "smp"]))
    def run(doc: Any, how: str) -> None:
        _ensure_base_objects(server)
        is_node = isinstance(doc, dict) and doc.get("kind") == "Node"
        base = "/api/v1/nodes" if is_node else "/api/v1/namespaces/default/pods"
        name = "n" if is_node else "p"
        body = json.dumps(doc).encode()
        if how == "create":
            answer, method = send(server, "POST", base, body), "POST"
        elif how == "put":
            if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
                doc = {**doc, "metadata": {**doc["metadata"], "name": name}}
            answer = send(server, "PUT", f"{base}/{name}", json.dumps(doc).encode())
            method = "PUT"
        else:
            ctype = (
                "application/merge-patch+json"
                if how == "merge"
                else "application/strategic-merge-patch+json"
            )
            answer, method = send(server, "PATCH", f"{base}/{name}", body, ctype), "PATCH"
        check_answer(answer, method, error_log)
        if answer.status < 300:
            # Whatever was stored must be readable by the official client at once.
            if is_node:
                official.read_node(name if how != "create" else doc["metadata"]["name"])
            else:
                official.list_namespaced_pod("default")

    run()
    check_consistent(server, official)


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FUZZ_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 9},
                "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]*$"},
                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                "tags": {"type": "array", "maxItems": 3, "items": {"type": "string"}},
                "res": {
                    "type": "object",
                    "additionalProperties": {
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "x-kubernetes-int-or-string": True,
                    },
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "when": {"type": "string", "format": "date-time", "nullable": True},
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"a": {"type": "integer", "default": 5}},
                },
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}
CRD_TEMPLATE = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "crdfuzzes.crdfuzz.example.com"},
    "spec": {
        "group": "crdfuzz.example.com",
        "names": {"kind": "Fuzz", "plural": "crdfuzzes", "shortNames": ["fz"]},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": FUZZ_SCHEMA},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "When", "type": "date", "jsonPath": ".spec.when"},
                ],
                "selectableFields": [{"jsonPath": ".spec.color"}],
            }
        ],
    },
}
CR_TEMPLATE = {
    "apiVersion": "fuzz.example.com/v1",
    "kind": "Fuzz",
    "metadata": {"name": "f", "labels": {"a": "b"}, "finalizers": []},
    "spec": {
        "size": 3,
        "name": "ab",
        "tags": ["x"],
        "res": {"cpu": "1", "n": 2},
        "free": {"k": [1, {"z": None}]},
        "when": "2024-01-01T00:00:00Z",
        "nested": {"a": 1},
    },
    "status": {"phase": "P"},
}


@st.composite
def mutations(draw: st.DrawFn, template: Any) -> Any:
    path = draw(st.sampled_from(_paths(template)))
    value = draw(
        st.one_of(
            json_values,
            st.sampled_from([[], {}, "", "x", 1, 1.5, -1, True, None, [1], ["a"], {"a": 1}]),
        )
    )
    return _replace(template, path, value)


def _served_path(crd: dict[str, Any]) -> str | None:
    """Where a created CRD's objects live (None: nothing to address)."""
    try:
        spec = crd["spec"]
        version = next(v["name"] for v in spec["versions"] if v.get("served"))
        scope = "namespaces/default/" if spec["scope"] == "Namespaced" else ""
        return f"/apis/{spec['group']}/{version}/{scope}{spec['names']['plural']}"
    except (KeyError, TypeError, StopIteration):
        return None


def test_fuzz_custom_resource_definitions(
    server: Server, official: client.CoreV1Api, error_log: ErrorLog
) -> None:
    """A CRD with one field of a random value; when it is accepted, an object of a random
    shape against its schema, its list and Table, then its deletion."""

    @SETTINGS
    @given(doc=mutations(CRD_TEMPLATE), obj=st.one_of(mutations(CR_TEMPLATE), json_values))
    def run(doc: Any, obj: Any) -> None:
        answer = send(server, "POST", CRDS, json.dumps(doc).encode())
        check_answer(answer, "POST", error_log)
        if answer.status != 201:
            return
        created = json.loads(answer.body)
        path = _served_path(created)
        if path is not None:
            if isinstance(obj, dict):  # of the fuzzed CRD's kind (the other test fuzzes these)
                kind = (created["spec"].get("names") or {}).get("kind")
                obj = {**obj, "apiVersion": path.split("/")[2] + "/" + path.split("/")[3]}
                obj["kind"] = kind
            body = json.dumps(obj).encode()
            check_answer(send(server, "POST", path, body), "POST", error_log)
            check_answer(send(server, "GET", path), "GET", error_log)
            table = "application/json;as=Table;v=v1;g=meta.k8s.io"
            check_answer(send(server, "GET", path, accept=table), "GET", error_log)
            if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
                # A finalizer would hold the object, and so the CRD's deletion.
                unhold = b'{"metadata":{"finalizers":null}}'
                name = obj["metadata"].get("name")
                if isinstance(name, str) and name:
                    target = f"{path}/{quote(name, safe='')}"
                    send(server, "PATCH", target, unhold, "application/merge-patch+json")
        name = created["metadata"]["name"]
        check_answer(send(server, "DELETE", f"{CRDS}/{name}"), "DELETE", error_log)

    run()
    check_consistent(server, official)


def test_fuzz_custom_resources(
    server: Server, official: client.CoreV1Api, error_log: ErrorLog
) -> None:
    """Objects of a fixed CRD with one field of a random value: created, replaced, patched
    (merge, JSON patch, through /status), listed with selectors and as a Table."""
    definition = json.loads(json.dumps(CRD_TEMPLATE))
    definition["metadata"]["name"] = "fuzzes.fuzz.example.com"
    definition["spec"].update(group="fuzz.example.com")
    definition["spec"]["names"].update(plural="fuzzes")
    assert send(server, "POST", CRDS, json.dumps(definition).encode()).status in (201, 409)
    base = "/apis/fuzz.example.com/v1/namespaces/default/fuzzes"

    @SETTINGS
    @given(
        doc=mutations(CR_TEMPLATE),
        how=st.sampled_from(["create", "put", "merge", "json", "status", "list"]),
    )
    def run(doc: Any, how: str) -> None:
        good = {**CR_TEMPLATE, "metadata": {"name": "f"}}
        assert send(server, "POST", base, json.dumps(good).encode()).status in (201, 409)
        current = json.loads(send(server, "GET", f"{base}/f").body)
        body = json.dumps(doc).encode()
        if how == "create":
            answer, method = send(server, "POST", base, body), "POST"
        elif how == "put":
            if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
                meta = {**doc["metadata"], "name": "f"}
                meta["resourceVersion"] = current["metadata"]["resourceVersion"]
                doc = {**doc, "metadata": meta}
            answer = send(server, "PUT", f"{base}/f", json.dumps(doc).encode())
            method = "PUT"
        elif how in ("merge", "status"):
            target = f"{base}/f" + ("/status" if how == "status" else "")
            ctype = "application/merge-patch+json"
            answer, method = send(server, "PATCH", target, body, ctype), "PATCH"
        elif how == "json":
            ops = [{"op": "replace", "path": "/spec", "value": doc}]
            ctype = "application/json-patch+json"
            answer = send(server, "PATCH", f"{base}/f", json.dumps(ops).encode(), ctype)
            method = "PATCH"
        else:
            query = f"?fieldSelector=spec.color%3D{quote(str(doc)[:20], safe='')}"
            answer, method = send(server, "GET", base + query), "GET"
        check_answer(answer, method, error_log)
        table = "application/json;as=Table;v=v1;g=meta.k8s.io"
        check_answer(send(server, "GET", base, accept=table), "GET", error_log)
        # Keep the fixture object deletable: no finalizer left behind.
        send(server, "PATCH", f"{base}/f", b'{"metadata":{"finalizers":null}}',
             "application/merge-patch+json")  # fmt: skip

    run()
    listed = send(server, "GET", base)
    assert listed.status == 200 and json.loads(listed.body)["kind"] == "FuzzList"
    check_consistent(server, official)


def test_fuzz_raw_http_garbage(
    server: Server, official: client.CoreV1Api, error_log: ErrorLog
) -> None:
    """Bytes that are barely HTTP: the server answers (a 4xx or closes) and keeps serving."""

    @settings(SETTINGS, max_examples=60)
    @given(
        line=st.one_of(
            st.binary(max_size=80),
            st.builds(
                lambda m, p: m + b" " + p + b" HTTP/1.1",
                st.sampled_from([b"GET", b"POST", b"G\x00T", b""]),
                st.binary(max_size=30),
            ),
        ),
        headers=st.lists(st.binary(max_size=30), max_size=3),
    )
    def run(line: bytes, headers: list[bytes]) -> None:
        raw = b"\r\n".join([line, *headers, b"Connection: close", b"", b""])
        with socket.create_connection((server.host, server.port), timeout=10) as sock:
            sock.sendall(raw)
            sock.shutdown(socket.SHUT_WR)
            first = b""
            while chunk := sock.recv(65536):
                first += chunk
        FUZZED["requests"] += 1
        if first.startswith(b"HTTP/1.1 "):
            status = int(first[9:12])
            assert status < 500 or status == 504, first[:300]
        assert not error_log.records, error_log.records[-1]

    run()
    check_consistent(server, official)


def test_fuzz_left_the_server_healthy(server: Server, official: client.CoreV1Api) -> None:
    """After everything above, ordinary use still works: create, bind, read, delete."""
    pod = {"metadata": {"name": "after-fuzz"}, "spec": {"containers": CONTAINERS}}
    official.create_namespaced_pod("default", pod)
    binding = {"metadata": {"name": "after-fuzz"}, "target": {"kind": "Node", "name": "n"}}
    answer = official.create_namespaced_binding("default", binding, _preload_content=False)
    assert answer.status == 201 and json.loads(answer.data)["status"] == "Success"
    assert official.read_namespaced_pod("after-fuzz", "default").spec.node_name == "n"
    official.delete_namespaced_pod("after-fuzz", "default", grace_period_seconds=0)
    check_consistent(server, official)


# --------------------------------------------------------------------------------------------
# Regression tests: the bugs the fuzzer found
# --------------------------------------------------------------------------------------------

POD_PATH = "/api/v1/namespaces/default/pods"


@pytest.mark.parametrize("path", ["/api/v1/%0A", "/api/v1/namespaces/default/pods/a%0Ab"])
def test_a_newline_in_the_path_is_still_routed(server: Server, path: str) -> None:
    """The catch-all route used ``.*``, which stops at a newline: aiohttp answered a plain
    text 404 before authentication. Now the API answers, with a Status (403 for
    system:anonymous without a token, as kube-apiserver with RBAC answers)."""
    answer = send(server, "GET", path)
    assert answer.status == 404 and json.loads(answer.body)["kind"] == "Status"
    assert send(server, "GET", path, token=False).status == 403


@pytest.mark.parametrize("method", ["FOO", "PROPFIND", "BREW"])
def test_unknown_method_is_a_405_status(server: Server, method: str) -> None:
    """aiohttp's parser (the server's HTTP layer until httpd) refused methods it did not know
    with a plain-text 400 before any handler ran (60 of 400 fuzzed requests got it);
    kube-apiserver answers a Status 405, and so does this server."""
    answer = send(server, method, "/api/v1/pods")
    assert answer.status == 405
    assert answer.headers.get("content-type") == "application/json"
    doc = json.loads(answer.body)
    assert doc["reason"] == "MethodNotAllowed" and doc["code"] == 405, doc


def test_malformed_header_is_a_400_status(server: Server) -> None:
    raw = b"GET /api/v1/pods HTTP/1.1\r\nHo st: x\r\nConnection: close\r\n\r\n"
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        sock.sendall(raw)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.split()[1] == b"400" and b"application/json" in head, data[:300]
    doc = json.loads(body)
    assert doc["kind"] == "Status" and doc["reason"] == "BadRequest", doc


@pytest.mark.parametrize(
    ("path", "doc"),
    [
        (
            POD_PATH,
            {"metadata": {"name": "r1"}, "spec": {"containers": CONTAINERS, "volumes": "x"}},
        ),
        (
            POD_PATH,
            {
                "metadata": {"name": "r2", "ownerReferences": [{}]},
                "spec": {"containers": CONTAINERS},
            },
        ),
        (
            POD_PATH,
            {
                "metadata": {"name": "r3"},
                "spec": {"containers": [{"name": "c", "image": "i", "ports": [{}]}]},
            },
        ),
        ("/api/v1/nodes", {"metadata": {"name": "r4"}, "spec": {"taints": [{}]}}),
        ("/api/v1/nodes", {"metadata": {"name": "r5"}, "status": {"addresses": [None]}}),
        (
            "/api/v1/namespaces/default/events",
            {"metadata": {"name": "r6"}, "involvedObject": {}, "series": "x"},
        ),
    ],
)
def test_objects_the_official_client_cannot_read_are_rejected(
    server: Server, official: client.CoreV1Api, path: str, doc: Any
) -> None:
    """Such an object used to be stored (201), and from then on every list and watch of its
    resource failed in the official client: every informer, the scheduler's, was stuck."""
    answer = send(server, "POST", path, json.dumps(doc).encode())
    assert answer.status == 400, answer.body
    assert "cannot be handled as a" in json.loads(answer.body)["message"]
    check_consistent(server, official)


def test_updates_the_official_client_cannot_read_are_rejected(
    server: Server, official: client.CoreV1Api
) -> None:
    _ensure_base_objects(server)
    patch = json.dumps({"spec": {"taints": [{"value": "no key, no effect"}]}}).encode()
    answer = send(server, "PATCH", "/api/v1/nodes/n", patch, "application/merge-patch+json")
    assert answer.status == 400, answer.body
    status = json.dumps({"status": {"conditions": [{"reason": "no type"}]}}).encode()
    path = f"{POD_PATH}/p/status"
    answer = send(server, "PATCH", path, status, "application/merge-patch+json")
    assert answer.status == 400, answer.body
    check_consistent(server, official)


@pytest.mark.parametrize(
    "doc",
    [
        {"metadata": None, "spec": {"containers": CONTAINERS}},
        {"metadata": {"name": "r7"}, "spec": None},
        {"metadata": {"name": "r8"}, "spec": {"containers": [None]}},
    ],
)
def test_nulls_decode_like_go_zero_values(server: Server, error_log: ErrorLog, doc: Any) -> None:
    """``null`` for a struct, or for an element of a list of structs, reached code that reads
    a dict (AttributeError, masked as a 400 by the catch-all). Now they decode as Go's zero
    values and fail validation like any missing field."""
    for method, path in (("POST", POD_PATH), ("PUT", f"{POD_PATH}/p")):
        answer = send(server, method, path, json.dumps(doc).encode())
        assert answer.status in (400, 422), answer.body
        assert not error_log.records, error_log.records[-1]
