"""The API server over HTTP: every error path, access rules, limits and the process contract."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3

from minisched.apiserver.serving import Server
from tests.apiserver_util import REPO, start_server

POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server(port=0, seed=3, max_body_bytes=64 * 1024).start_in_thread()
    yield srv
    srv.stop_thread()


@pytest.fixture(scope="module")
def http() -> Iterator[urllib3.PoolManager]:
    pool = urllib3.PoolManager()
    yield pool
    pool.clear()


def call(
    server: Server,
    http: urllib3.PoolManager,
    method: str,
    path: str,
    body: Any = None,
    content_type: str | None = "application/json",
    headers: dict[str, str] | None = None,
    token: str | None = "",
) -> urllib3.BaseHTTPResponse:
    all_headers = {"Accept": "application/json", **(headers or {})}
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token or server.token}"
    if content_type:
        all_headers["Content-Type"] = content_type
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    return http.request(method, server.url + path, body=data, headers=all_headers, timeout=10)


PODS = "/api/v1/namespaces/default/pods"
P = PODS + "/p"
J = "application/json"

# (name, method, path, body, content type, extra headers, status, reason)
MALFORMED: list[tuple[str, str, str, Any, str | None, dict[str, str], int, str]] = [
    ("broken json", "POST", PODS, b'{"kind": "Pod"', J, {}, 400, "BadRequest"),
    ("empty body", "POST", PODS, b"", J, {}, 400, "BadRequest"),
    ("json array", "POST", PODS, [1, 2], J, {}, 400, "BadRequest"),
    ("json string", "POST", PODS, "pod", J, {}, 400, "BadRequest"),
    ("invalid utf-8", "POST", PODS, b'{"a": "\xff\xfe"}', J, {}, 400, "BadRequest"),
    ("NaN", "POST", PODS, b'{"metadata": NaN}', J, {}, 400, "BadRequest"),
    ("huge number", "POST", PODS, b'{"spec": {"priority": 1e999}}', J, {}, 400, "BadRequest"),
    ("deep nesting", "POST", PODS, b"[" * 5000 + b"]" * 5000, J, {}, 400, "BadRequest"),
    (
        "wrong kind",
        "POST",
        PODS,
        {**POD, "kind": "Node", "apiVersion": "v1"},
        J,
        {},
        400,
        "BadRequest",
    ),
    (
        "unknown kind",
        "POST",
        PODS,
        {**POD, "kind": "Foo", "apiVersion": "v1"},
        J,
        {},
        400,
        "BadRequest",
    ),
    (
        "wrong apiVersion",
        "POST",
        PODS,
        {**POD, "kind": "Pod", "apiVersion": "apps/v1"},
        J,
        {},
        400,
        "BadRequest",
    ),
    (
        "wrong field type",
        "POST",
        PODS,
        {"metadata": {"name": "p", "labels": {"a": 1}}, "spec": POD["spec"]},
        J,
        {},
        400,
        "BadRequest",
    ),
    (
        "bad quantity",
        "POST",
        "/api/v1/nodes",
        {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "lots"}}},
        J,
        {},
        400,
        "BadRequest",
    ),
    (
        "namespace mismatch",
        "POST",
        PODS,
        {"metadata": {"name": "p", "namespace": "x"}, "spec": POD["spec"]},
        J,
        {},
        400,
        "BadRequest",
    ),
    (
        "invalid name",
        "POST",
        PODS,
        {"metadata": {"name": "Bad_Name"}, "spec": POD["spec"]},
        J,
        {},
        422,
        "Invalid",
    ),
    ("no containers", "POST", PODS, {"metadata": {"name": "p"}, "spec": {}}, J, {}, 422, "Invalid"),
    ("missing namespace", "POST", "/api/v1/namespaces/nope/pods", POD, J, {}, 404, "NotFound"),
    ("text/plain", "POST", PODS, POD, "text/plain", {}, 415, "UnsupportedMediaType"),
    ("yaml body", "POST", PODS, POD, "application/yaml", {}, 415, "UnsupportedMediaType"),
    (
        "apply patch",
        "PATCH",
        P,
        POD,
        "application/apply-patch+yaml",
        {},
        415,
        "UnsupportedMediaType",
    ),
    (
        "json patch not a list",
        "PATCH",
        P,
        {"op": "add"},
        "application/json-patch+json",
        {},
        400,
        "BadRequest",
    ),
    (
        "json patch fails",
        "PATCH",
        P,
        [{"op": "remove", "path": "/x"}],
        "application/json-patch+json",
        {},
        422,
        "Invalid",
    ),
    ("merge patch list", "PATCH", P, [1], "application/merge-patch+json", {}, 400, "BadRequest"),
    (
        "patch changes name",
        "PATCH",
        P,
        {"metadata": {"name": "q"}},
        "application/merge-patch+json",
        {},
        400,
        "BadRequest",
    ),
    (
        "patch immutable",
        "PATCH",
        P,
        {"spec": {"schedulerName": "x"}},
        "application/merge-patch+json",
        {},
        422,
        "Invalid",
    ),
    (
        "stale update",
        "PUT",
        P,
        {"metadata": {"name": "p", "resourceVersion": "1"}, "spec": POD["spec"]},
        J,
        {},
        409,
        "Conflict",
    ),
    (
        "update name mismatch",
        "PUT",
        P,
        {"metadata": {"name": "q"}, "spec": POD["spec"]},
        J,
        {},
        400,
        "BadRequest",
    ),
    (
        "update missing",
        "PUT",
        PODS + "/nope",
        {"metadata": {"name": "nope"}, "spec": POD["spec"]},
        J,
        {},
        404,
        "NotFound",
    ),
    ("duplicate", "POST", PODS, POD, J, {}, 409, "AlreadyExists"),
    (
        "bind missing pod",
        "POST",
        PODS + "/nope/binding",
        {"metadata": {"name": "nope"}, "target": {"name": "n"}},
        J,
        {},
        400,
        "BadRequest",
    ),
    (
        "bind empty target",
        "POST",
        P + "/binding",
        {"metadata": {"name": "p"}, "target": {"name": ""}},
        J,
        {},
        422,
        "Invalid",
    ),
    (
        "bind wrong body",
        "POST",
        "/api/v1/namespaces/default/bindings",
        {"kind": "Pod", "apiVersion": "v1"},
        J,
        {},
        400,
        "BadRequest",
    ),
    ("delete options garbage", "DELETE", P, b"{nope", J, {}, 400, "BadRequest"),
    (
        "grace not a number",
        "DELETE",
        P + "?gracePeriodSeconds=x",
        None,
        None,
        {},
        400,
        "BadRequest",
    ),
    ("unknown path", "GET", "/api/v1/namespaces/default/foos", None, None, {}, 404, "NotFound"),
    (
        "unknown version of a group",
        "GET",
        "/apis/scheduling.k8s.io/v9",
        None,
        None,
        {},
        404,
        "NotFound",
    ),
    ("pod without namespace", "GET", "/api/v1/pods/p", None, None, {}, 404, "NotFound"),
    ("put collection", "PUT", PODS, POD, J, {}, 405, "MethodNotAllowed"),
    ("post object", "POST", P, POD, J, {}, 405, "MethodNotAllowed"),
    ("delete namespaces", "DELETE", "/api/v1/namespaces", None, None, {}, 405, "MethodNotAllowed"),
    ("post cluster pods", "POST", "/api/v1/pods", POD, J, {}, 405, "MethodNotAllowed"),
    ("get binding", "GET", P + "/binding", None, None, {}, 405, "MethodNotAllowed"),
    ("not acceptable", "GET", PODS, None, None, {"Accept": "text/html"}, 406, "NotAcceptable"),
    (
        "bad label selector",
        "GET",
        "/api/v1/pods?labelSelector=a%20in%20b",
        None,
        None,
        {},
        400,
        "BadRequest",
    ),
    (
        "bad field selector",
        "GET",
        "/api/v1/pods?fieldSelector=spec.foo%3Dx",
        None,
        None,
        {},
        400,
        "BadRequest",
    ),
    (
        "bad resourceVersion",
        "GET",
        "/api/v1/pods?resourceVersion=abc",
        None,
        None,
        {},
        400,
        "BadRequest",
    ),
    (
        "future resourceVersion",
        "GET",
        "/api/v1/pods?resourceVersion=999999",
        None,
        None,
        {},
        504,
        "Timeout",
    ),
    (
        "match without version",
        "GET",
        "/api/v1/pods?resourceVersionMatch=Exact",
        None,
        None,
        {},
        422,
        "Invalid",
    ),
    (
        "bad timeout",
        "GET",
        "/api/v1/pods?watch=true&timeoutSeconds=x",
        None,
        None,
        {},
        400,
        "BadRequest",
    ),
    ("bad continue", "GET", "/api/v1/pods?limit=1&continue=%%%", None, None, {}, 400, "BadRequest"),
    ("dry run", "DELETE", P + "?dryRun=All", None, None, {}, 400, "BadRequest"),
    (
        "too large",
        "POST",
        PODS,
        b"{" + b" " * (80 * 1024) + b"}",
        J,
        {},
        413,
        "RequestEntityTooLarge",
    ),
    (
        "delete default namespace",
        "DELETE",
        "/api/v1/namespaces/default",
        None,
        None,
        {},
        403,
        "Forbidden",
    ),
]


def test_setup_pod(server: Server, http: urllib3.PoolManager) -> None:
    """The malformed requests below address this pod (created once for the module)."""
    r = call(server, http, "POST", "/api/v1/namespaces/default/pods", POD)
    assert r.status in (201, 409)


@pytest.mark.parametrize(
    ("method", "path", "body", "ctype", "headers", "status", "reason"),
    [pytest.param(*m[1:], id=m[0]) for m in MALFORMED],
)
def test_malformed_requests(
    server: Server,
    http: urllib3.PoolManager,
    method: str,
    path: str,
    body: Any,
    ctype: str | None,
    headers: dict[str, str],
    status: int,
    reason: str,
) -> None:
    call(server, http, "POST", "/api/v1/namespaces/default/pods", POD)  # exists (or 409)
    rv_before = server.call(lambda: server.store.rv)
    snapshot = server.call(lambda: json.dumps(server.store.list("pods", None)))
    if path.endswith("/nope/binding"):
        status, reason = 404, "NotFound"  # URL name and body name agree: the pod is missing
    r = call(server, http, method, path, body, ctype, headers)
    assert r.status == status, r.data[:300]
    assert r.headers["Content-Type"] == "application/json"
    answer = json.loads(r.data)
    assert answer["kind"] == "Status" and answer["status"] == "Failure"
    assert answer["reason"] == reason and answer["code"] == status
    assert server.call(lambda: server.store.rv) == rv_before
    assert server.call(lambda: json.dumps(server.store.list("pods", None))) == snapshot


@pytest.mark.parametrize(
    ("path", "token", "status"),
    [
        ("/api/v1/namespaces/default/pods", None, 403),
        ("/api/v1/namespaces/default/pods", "wrong", 401),
        ("/api", None, 403),
        ("/nope", None, 403),
        ("/version", "wrong", 401),
        ("/version", None, 200),
        ("/healthz", None, 200),
        ("/livez", None, 200),
        ("/readyz", None, 200),
        ("/api/v1/namespaces/default/pods", "", 200),
    ],
)
def test_access(
    server: Server, http: urllib3.PoolManager, path: str, token: str | None, status: int
) -> None:
    r = call(server, http, "GET", path, token=token, content_type=None)
    assert r.status == status
    if status == 401:  # a token the server does not know
        assert json.loads(r.data)["reason"] == "Unauthorized"
    if status == 403:  # no token: system:anonymous, whom RBAC refuses all but public paths
        answer = json.loads(r.data)
        assert answer["reason"] == "Forbidden"
        assert 'User "system:anonymous" cannot' in answer["message"]


def test_table_and_paging(server: Server, http: urllib3.PoolManager) -> None:
    for name in ("t1", "t2", "t3"):
        call(
            server,
            http,
            "POST",
            "/api/v1/nodes",
            {"metadata": {"name": name, "labels": {"t": "1"}}},
        )
    page = json.loads(call(server, http, "GET", "/api/v1/nodes?labelSelector=t%3D1&limit=2").data)
    assert [n["metadata"]["name"] for n in page["items"]] == ["t1", "t2"]
    assert page["metadata"]["remainingItemCount"] == 1
    rest = json.loads(
        call(
            server,
            http,
            "GET",
            f"/api/v1/nodes?labelSelector=t%3D1&limit=2&continue={page['metadata']['continue']}",
        ).data
    )
    assert [n["metadata"]["name"] for n in rest["items"]] == ["t3"]
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    tab = json.loads(
        call(
            server, http, "GET", "/api/v1/nodes?labelSelector=t%3D1", headers={"Accept": accept}
        ).data
    )
    assert tab["kind"] == "Table" and [r["cells"][0] for r in tab["rows"]] == ["t1", "t2", "t3"]


# ---- the process ------------------------------------------------------------------------------


def test_process_contract_kubeconfig_and_sigterm(tmp_path: Any) -> None:
    kubeconfig = tmp_path / "sub" / "kubeconfig"
    proc = start_server("--kubeconfig", str(kubeconfig))
    assert proc.url.startswith("http://127.0.0.1:")
    assert proc.kubeconfig == str(kubeconfig)
    assert stat.S_IMODE(os.stat(kubeconfig).st_mode) == 0o600
    text = kubeconfig.read_text()
    assert "current-context: minisched" in text and proc.url in text and proc.token in text
    assert proc.stop() == 0
    assert "Traceback" not in proc.stderr


def test_sigint_and_default_kubeconfig_is_removed() -> None:
    proc = start_server()
    assert os.path.exists(proc.kubeconfig)
    proc.proc.send_signal(2)
    assert proc.proc.wait(10) == 0
    assert not os.path.exists(proc.kubeconfig)
    assert "Traceback" not in proc.stderr


def test_exit_on_stdin_eof() -> None:
    proc = start_server("--exit-on-stdin-eof", stdin=subprocess.PIPE)
    assert proc.proc.stdin is not None
    proc.proc.stdin.close()
    assert proc.proc.wait(10) == 0


def test_non_loopback_host_is_refused_unless_allowed() -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "minisched.apiserver", "--host", "0.0.0.0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert refused.returncode == 2 and "non-loopback" in refused.stderr and not refused.stdout
    allowed = start_server("--host", "0.0.0.0", "--allow-non-loopback")
    assert allowed.stop() == 0
    assert "WARNING" in allowed.stderr


def test_watch_timeout_sends_a_bookmark_then_ends(
    server: Server, http: urllib3.PoolManager
) -> None:
    """About 2 s before timeoutSeconds a BOOKMARK carries the current resourceVersion (it moved
    past the last event sent); then the server ends the stream itself."""
    rv = json.loads(call(server, http, "GET", "/api/v1/nodes").data)["metadata"]["resourceVersion"]
    response = http.request(
        "GET",
        f"{server.url}/api/v1/nodes?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"
        "&timeoutSeconds=3&labelSelector=none%3Dnone",
        headers={"Authorization": f"Bearer {server.token}"},
        preload_content=False,
        timeout=urllib3.Timeout(read=10),
    )
    assert response.headers["Content-Type"] == "application/json"
    call(server, http, "POST", "/api/v1/nodes", {"metadata": {"name": "bookmark-mover"}})
    lines = [json.loads(line) for line in response.read().splitlines() if line.strip()]
    assert [e["type"] for e in lines] == ["BOOKMARK"]
    assert int(lines[0]["object"]["metadata"]["resourceVersion"]) > int(rv)
    assert lines[0]["object"]["kind"] == "Node"


def test_data_dir_keeps_objects_across_a_restart(tmp_path: Any) -> None:
    """--data-dir: objects and resourceVersions survive a kill; the watch history does not."""
    http = urllib3.PoolManager()
    first = start_server("--data-dir", str(tmp_path))
    auth = {"Authorization": f"Bearer {first.token}", "Content-Type": "application/json"}
    created = http.request(
        "POST",
        first.url + "/api/v1/nodes",
        body=json.dumps({"metadata": {"name": "kept"}}),
        headers=auth,
    )
    assert created.status == 201
    old_rv = int(json.loads(created.data)["metadata"]["resourceVersion"])
    first.proc.kill()
    first.proc.wait(10)
    second = start_server("--data-dir", str(tmp_path), token=first.token)
    try:
        listed = json.loads(http.request("GET", second.url + "/api/v1/nodes", headers=auth).data)
        assert [n["metadata"]["name"] for n in listed["items"]] == ["kept"]
        assert int(listed["metadata"]["resourceVersion"]) > old_rv
        watch = http.request(
            "GET", f"{second.url}/api/v1/nodes?watch=true&resourceVersion={old_rv}", headers=auth
        )
        (event,) = [json.loads(line) for line in watch.data.splitlines()]
        assert event["type"] == "ERROR" and event["object"]["code"] == 410
    finally:
        assert second.stop() == 0


@pytest.mark.parametrize(
    "path",
    ["/apis/batch/v1", "/apis/cf.example.com", "/apis/x/v1/foos", "/nope", "/healthz/nope"],
)
def test_unknown_group_is_go_mux_404(server: Server, http: urllib3.PoolManager, path: str) -> None:
    """kube-apiserver has no route for a group it does not serve, nor for a path outside
    ``/api``, ``/apis`` and ``/version``: Go's mux answers plain text (recorded in cases
    discovery-unknown-group and path-unknown-plain-text), not a Status."""
    r = call(server, http, "GET", path)
    assert r.status == 404
    assert r.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert r.data == b"404 page not found\n"


def test_terminating_namespace_refuses_new_content_then_goes(server: Server) -> None:
    """Between the DELETE's answer and the namespace controller's work (the next turn of the
    server's loop), the namespace is Terminating: NamespaceLifecycle refuses new content with
    upstream's 403; then contents and namespace are gone."""
    from minisched.apiserver.errors import ApiError
    from minisched.apiserver.registry import NAMESPACES, PODS

    registry = server.registry
    server.call(lambda: registry.create(NAMESPACES, None, {"metadata": {"name": "going"}}))
    server.call(lambda: registry.create(PODS, "going", json.loads(json.dumps(POD))))

    def delete_then_create() -> tuple[Any, Any]:
        answer, _ = registry.delete(NAMESPACES, None, "going", {})
        try:
            registry.create(
                PODS, "going", {**json.loads(json.dumps(POD)), "metadata": {"name": "q"}}
            )
        except ApiError as exc:
            return answer, exc.body
        return answer, None

    answer, refused = server.call(delete_then_create)
    assert answer["status"] == {"phase": "Terminating"}
    assert refused is not None and refused["code"] == 403, refused
    assert refused["message"] == (
        'pods "q" is forbidden: unable to create new content in namespace going because it is '
        "being terminated"
    )
    # The controller's turn has run once a later call gets the loop.
    assert server.call(lambda: server.store.get("namespaces", ("", "going"))) is None
    assert server.call(lambda: server.store.list("pods", "going")) == []
