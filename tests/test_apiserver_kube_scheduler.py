"""What a real kube-scheduler needs from the embedded server (issue 15's stretch).

Its informers list and watch resources the server otherwise has no use for (storage, apps,
policy, resource.k8s.io and some core ones); they are served as empty read-only collections,
and events.k8s.io/v1 Events can be posted. The last test runs the real binary from
``~/.cache/realk8s/bin`` against the server (skipped when it is not built here).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
from kubernetes import client, config, watch

from minisched.apiserver.registry import GROUPS, STUB_CORE
from minisched.apiserver.serving import Server
from tests.apiserver_util import start_server

KUBE_SCHEDULER = (
    Path(os.environ.get("REALK8S_DIR", os.path.expanduser("~/.cache/realk8s")))
    / "bin"
    / "kube-scheduler"
)

# What kube-scheduler v1.36's informers list and watch, besides pods, nodes and namespaces.
INFORMED = [
    "/api/v1/persistentvolumes",
    "/api/v1/persistentvolumeclaims",
    "/api/v1/services",
    "/api/v1/replicationcontrollers",
    "/apis/apps/v1/replicasets",
    "/apis/apps/v1/statefulsets",
    "/apis/policy/v1/poddisruptionbudgets",
    "/apis/storage.k8s.io/v1/csinodes",
    "/apis/storage.k8s.io/v1/csidrivers",
    "/apis/storage.k8s.io/v1/csistoragecapacities",
    "/apis/storage.k8s.io/v1/storageclasses",
    "/apis/storage.k8s.io/v1/volumeattachments",
    "/apis/resource.k8s.io/v1/resourceclaims",
    "/apis/resource.k8s.io/v1/resourceslices",
    "/apis/resource.k8s.io/v1/deviceclasses",
]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server(port=0, seed=3).start_in_thread()
    yield srv
    srv.stop_thread()


def _get(server: Server, path: str, **fields: str) -> urllib3.BaseHTTPResponse:
    return urllib3.request(
        "GET",
        server.url + path,
        fields=fields or None,
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=10,
    )


@pytest.mark.parametrize("path", INFORMED)
def test_informed_resources_list_and_watch_empty(server: Server, path: str) -> None:
    r = _get(server, path)
    assert r.status == 200, r.data[:300]
    body = json.loads(r.data)
    group_version = (
        path.split("/")[2] if path.startswith("/api/") else "/".join(path.split("/")[2:4])
    )
    assert body["apiVersion"] == group_version and body["items"] == []
    assert body["kind"].endswith("List")
    rv = body["metadata"]["resourceVersion"]
    # A watch from the list's version, as a reflector does: accepted (a stream of JSON).
    w = urllib3.request(
        "GET",
        server.url + path,
        fields={"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true"},
        headers={"Authorization": f"Bearer {server.token}"},
        preload_content=False,
        timeout=10,
    )
    assert w.status == 200 and w.headers["Content-Type"] == "application/json"
    w.shutdown()  # end the stream without reading it to its end
    w.close()
    assert _get(server, path + "-nope").status == 404


def test_a_stub_watch_ends_empty(server: Server) -> None:
    w = _get(server, "/apis/storage.k8s.io/v1/csinodes", watch="1", timeoutSeconds="1")
    assert w.status == 200 and w.data == b""


def test_stubs_are_in_discovery_and_read_only(server: Server) -> None:
    r = _get(server, "/apis")
    names = [g["name"] for g in json.loads(r.data)["groups"]]
    assert set(GROUPS) <= set(names)
    core = {e["name"] for e in json.loads(_get(server, "/api/v1").data)["resources"]}
    assert {s.name for s in STUB_CORE} <= core
    post = urllib3.request(
        "POST",
        server.url + "/apis/apps/v1/namespaces/default/replicasets",
        body=b"{}",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    assert post.status == 405 and json.loads(post.data)["reason"] == "MethodNotAllowed"


def test_events_k8s_io_create_is_kept_apart_from_core_events(server: Server) -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "i",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p"},
        "note": "Successfully assigned default/p to n1",
        "type": "Normal",
    }
    r = urllib3.request(
        "POST",
        server.url + "/apis/events.k8s.io/v1/namespaces/default/events",
        body=json.dumps(event).encode(),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    assert r.status == 201, r.data[:300]
    created = json.loads(r.data)
    assert created["apiVersion"] == "events.k8s.io/v1" and created["note"] == event["note"]
    listed = json.loads(_get(server, "/apis/events.k8s.io/v1/namespaces/default/events").data)
    assert [e["metadata"]["name"] for e in listed["items"]] == ["p.1"]
    core = json.loads(_get(server, "/api/v1/namespaces/default/events").data)
    assert core["items"] == []


@pytest.mark.skipif(
    not os.access(KUBE_SCHEDULER, os.X_OK),
    reason=f"no real kube-scheduler at {KUBE_SCHEDULER} (see ../shared/realk8s)",
)
def test_real_kube_scheduler_binds_a_pod(tmp_path: Path) -> None:
    """The unmodified kube-scheduler binary schedules against the embedded server (TLS),
    sending its Bindings and Events as protobuf (its default); ``--leader-elect=false``, as no
    Leases are served."""
    proc = start_server("--tls", "--kubeconfig", str(tmp_path / "kubeconfig"))
    scheduler = None
    try:
        cfg = client.Configuration()
        config.load_kube_config(config_file=proc.kubeconfig, client_configuration=cfg)
        core = client.CoreV1Api(client.ApiClient(cfg))
        capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
        core.create_node(
            {
                "metadata": {"name": "n1"},
                "status": {
                    "capacity": capacity,
                    "allocatable": capacity,
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        core.create_namespaced_pod("default", pod)
        scheduler = subprocess.Popen(
            [
                str(KUBE_SCHEDULER),
                "--kubeconfig",
                proc.kubeconfig,
                "--leader-elect=false",
                "--secure-port=0",
                "--bind-address=127.0.0.1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "kube-scheduler.log", "wb"),  # noqa: SIM115
        )
        bound = threading.Event()
        w = watch.Watch()
        for ev in w.stream(
            core.list_namespaced_pod,
            "default",
            field_selector="metadata.name=p",
            timeout_seconds=60,
        ):
            if ev["object"].spec.node_name == "n1":
                bound.set()
                w.stop()
        assert bound.is_set(), (tmp_path / "kube-scheduler.log").read_text(errors="replace")[-3000:]
        # The scheduler records its event after the binding, from client-go's event broadcaster
        # in the background: wait for it (a read right after the binding could find none).
        reasons: list[str] = []
        w = watch.Watch()
        events = client.EventsV1Api(client.ApiClient(cfg))
        for ev in w.stream(events.list_namespaced_event, "default", timeout_seconds=30):
            reasons.append(ev["object"].reason)
            if ev["object"].reason == "Scheduled":
                w.stop()
        log = (tmp_path / "kube-scheduler.log").read_text(errors="replace")
        assert reasons == ["Scheduled"], log[-3000:]
    finally:
        if scheduler is not None:
            scheduler.terminate()
            scheduler.wait(15)
        assert proc.stop() == 0, proc.stderr


def _varint(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _field(number: int, value: bytes | str | int) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version) + _field(2, kind)
    return b"k8s\x00" + _field(1, type_meta) + _field(2, raw)


def _post_protobuf(server: Server, path: str, body: bytes) -> urllib3.BaseHTTPResponse:
    return urllib3.request(
        "POST",
        server.url + path,
        body=body,
        headers={
            "Authorization": f"Bearer {server.token}",
            "Content-Type": "application/vnd.kubernetes.protobuf",
            "Accept": "application/vnd.kubernetes.protobuf, */*",
        },
    )


def test_protobuf_bodies_of_namespace_binding_and_event(server: Server) -> None:
    """What client-go sends by default (kubectl create namespace, kube-scheduler's bind and
    events) is read; other protobuf bodies are still a 415."""
    labels = _field(11, _field(1, "team") + _field(2, "a"))
    ns = _envelope("v1", "Namespace", _field(1, _field(1, "proto-ns") + labels))
    r = _post_protobuf(server, "/api/v1/namespaces", ns)
    assert r.status == 201, r.data[:300]
    assert json.loads(r.data)["metadata"]["labels"] == {
        "team": "a",
        "kubernetes.io/metadata.name": "proto-ns",
    }
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    created = urllib3.request(
        "POST",
        server.url + "/api/v1/namespaces/proto-ns/pods",
        body=json.dumps(pod).encode(),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    assert created.status == 201
    target = _field(1, "Node") + _field(3, "n1")
    binding = _envelope("v1", "Binding", _field(1, _field(1, "p")) + _field(2, target))
    r = _post_protobuf(server, "/api/v1/namespaces/proto-ns/pods/p/binding", binding)
    assert r.status == 201, r.data[:300]
    bound = json.loads(_get(server, "/api/v1/namespaces/proto-ns/pods/p").data)
    assert bound["spec"]["nodeName"] == "n1"
    event_time = _field(1, 1767225600) + _field(2, 123456000)  # 2026-01-01T00:00:00.123456Z
    event = _envelope(
        "events.k8s.io/v1",
        "Event",
        _field(1, _field(1, "p.1"))
        + _field(2, event_time)
        + _field(4, "default-scheduler")
        + _field(5, "i")
        + _field(6, "Binding")
        + _field(7, "Scheduled")
        + _field(8, _field(1, "Pod") + _field(2, "proto-ns") + _field(3, "p"))
        + _field(10, "Successfully assigned proto-ns/p to n1")
        + _field(11, "Normal"),
    )
    r = _post_protobuf(server, "/apis/events.k8s.io/v1/namespaces/proto-ns/events", event)
    assert r.status == 201, r.data[:300]
    stored = json.loads(r.data)
    assert stored["eventTime"] == "2026-01-01T00:00:00.123456Z"
    assert stored["regarding"] == {"kind": "Pod", "namespace": "proto-ns", "name": "p"}
    node = _envelope("v1", "Node", _field(1, _field(1, "proto-node")))
    assert _post_protobuf(server, "/api/v1/nodes", node).status == 415
    assert _post_protobuf(server, "/api/v1/namespaces", b"not protobuf").status == 415


def test_a_protobuf_delete_options_body_is_read(server: Server) -> None:
    """A real kube-scheduler deletes preemption's victims with client-go's default protobuf
    DeleteOptions body: before it was read, every such delete was a 415 and no preemption by
    kube-scheduler ever completed on the embedded server."""
    pod = {"metadata": {"name": "victim"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    created = urllib3.request(
        "POST",
        server.url + "/api/v1/namespaces/default/pods",
        body=json.dumps(pod).encode(),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    assert created.status == 201
    options = _envelope("meta.k8s.io/v1", "DeleteOptions", _field(1, 0) + _field(4, "Background"))
    r = urllib3.request(
        "DELETE",
        server.url + "/api/v1/namespaces/default/pods/victim",
        body=options,
        headers={
            "Authorization": f"Bearer {server.token}",
            "Content-Type": "application/vnd.kubernetes.protobuf",
        },
    )
    assert r.status == 200, r.data[:300]
    assert _get(server, "/api/v1/namespaces/default/pods/victim").status == 404
