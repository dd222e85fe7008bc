"""The protobuf bodies the embedded server reads (``minisched/apiserver/protobuf.py``).

The bodies are written by hand here (``tests/test_apiserver_kube_scheduler.py``'s encoder),
independently of the library the server parses them with.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import urllib3

from minisched.apiserver import protobuf
from minisched.apiserver.serving import Server
from tests.test_apiserver_kube_scheduler import _envelope, _field, _varint

NAMESPACE = _envelope("v1", "Namespace", _field(1, _field(1, "garbled-ns")))


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server(port=0, seed=3).start_in_thread()
    yield srv
    srv.stop_thread()


def test_every_declared_field_reads_as_kubernetes_json() -> None:
    """int64 stays a number (negative ones too), Time and MicroTime are RFC 3339 strings,
    maps are objects, repeated fields are lists, nested messages are objects."""
    owner = _field(1, "ReplicaSet") + _field(3, "rs") + _field(6, 1) + _field(7, 0)
    meta = (
        _field(1, "p.1")
        + _field(7, 3)
        + _field(8, _field(1, 1767225600))
        + _field(10, (1 << 64) - 30)  # int64 -30: ten bytes of two's complement
        + _field(11, _field(1, "team") + _field(2, "a"))
        + _field(11, _field(1, "tier") + _field(2, ""))
        + _field(13, owner)
        + _field(14, "f1")
        + _field(14, "f2")
    )
    series = _field(1, 4) + _field(2, _field(1, 1767225601) + _field(2, 5000))
    event = _field(1, meta) + _field(3, series) + _field(12, _field(1, "kubelet"))
    assert protobuf.decode(_envelope("events.k8s.io/v1", "Event", event)) == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {
            "name": "p.1",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": -30,
            "labels": {"team": "a", "tier": ""},
            "ownerReferences": [
                {
                    "kind": "ReplicaSet",
                    "name": "rs",
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
            "finalizers": ["f1", "f2"],
        },
        "series": {"count": 4, "lastObservedTime": "2026-01-01T00:00:01.000005Z"},
        "deprecatedSource": {"component": "kubelet"},
    }
    options = _field(2, _field(1, "u1")) + _field(5, "All") + _field(3, 1)
    assert protobuf.decode(_envelope("meta.k8s.io/v1", "DeleteOptions", options)) == {
        "kind": "DeleteOptions",
        "apiVersion": "meta.k8s.io/v1",
        "preconditions": {"uid": "u1"},
        "dryRun": ["All"],
        "orphanDependents": True,
    }


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(NAMESPACE[:-3], id="truncated"),
        pytest.param(NAMESPACE[:6], id="truncated-in-the-envelope"),
        pytest.param(b"k8s\x00" + _field(1, "v1")[:-1] + _varint(200), id="length-past-the-end"),
        pytest.param(b"k8s\x00\x0f\x01", id="invalid-wire-type"),
        pytest.param(b"k8s\x00" + b"\xff" * 11, id="varint-too-long"),
        pytest.param(
            _envelope("v1", "Namespace", _field(1, _field(1, b"ns\xff"))), id="invalid-utf8"
        ),
        pytest.param(
            _envelope("v1", "Namespace", _field(1, _field(11, _field(1, b"\xfe") + _field(2, "")))),
            id="invalid-utf8-label",
        ),
        pytest.param(
            _envelope("v1", "Namespace", _field(1, _field(8, _field(1, 1 << 40)))),
            id="time-past-year-9999",
        ),
    ],
)
def test_a_garbled_protobuf_body_is_a_415_status(server: Server, body: bytes) -> None:
    """A body the server cannot read is the client's error, answered with a Status (never a
    traceback or a 500), as for any other media type it cannot read."""
    r = urllib3.request(
        "POST",
        server.url + "/api/v1/namespaces",
        body=body,
        headers={
            "Authorization": f"Bearer {server.token}",
            "Content-Type": "application/vnd.kubernetes.protobuf",
        },
    )
    assert r.status == 415, r.data[:300]
    status = json.loads(r.data)
    assert (status["kind"], status["code"], status["reason"]) == (
        "Status",
        415,
        "UnsupportedMediaType",
    )
