"""The informer against the embedded API server: list, watch, handler order, relist on 410,
reconnect after the server restarts, filtering handlers."""

from __future__ import annotations

import gc
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client, config

from minisched.cluster import EmbeddedServer
from minisched.gcpolicy import FREEZE_CACHE_SIZE
from minisched.informer import (
    CONNECTION_LOGGER,
    OUTAGE_REMINDER,
    DeletedFinalStateUnknown,
    FilteringResourceEventHandler,
    Informer,
    Outages,
    ResourceEventHandler,
    decode,
)
from tests.fakes import count_lists

TIMEOUT = 10.0


class Events:
    """Handler calls as (what, name) in order; ``_cond`` guards ``seen``."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.seen: list[tuple[str, str]] = []

    def handler(self, tag: str = "") -> ResourceEventHandler:
        return ResourceEventHandler(
            on_add=lambda o: self._add(tag + "add", o),
            on_update=lambda old, new: self._add(tag + "update", new),
            on_delete=lambda o: self._add(
                tag + ("delete-tombstone" if isinstance(o, DeletedFinalStateUnknown) else "delete"),
                o,
            ),
        )

    def _add(self, what: str, obj: Any) -> None:
        name = obj.key if isinstance(obj, DeletedFinalStateUnknown) else obj.metadata.name
        with self._cond:
            self.seen.append((what, name))
            self._cond.notify_all()

    def wait_for(self, item: tuple[str, str], timeout: float = TIMEOUT) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: item in self.seen, timeout)


def node(name: str, **labels: str) -> client.V1Node:
    return client.V1Node(metadata=client.V1ObjectMeta(name=name, labels=labels or None))


@pytest.fixture
def server() -> Iterator[EmbeddedServer]:
    with EmbeddedServer("--watch-history", "4") as s:
        yield s


@pytest.fixture
def core(server: EmbeddedServer) -> Iterator[client.CoreV1Api]:
    api = config.new_client_from_config(config_file=server.kubeconfig)
    yield client.CoreV1Api(api)
    api.close()


def start(core: client.CoreV1Api, *handlers: ResourceEventHandler, **kw: Any) -> Informer:
    inf: Informer = Informer(core.list_node, client.V1Node, **kw)
    for h in handlers:
        inf.add_event_handler(h)
    inf.start()
    assert inf.wait_for_cache_sync(TIMEOUT)
    return inf


def test_list_then_watch_calls_handlers_in_registration_order(core: client.CoreV1Api) -> None:
    core.create_node(node("a"))
    events = Events()
    inf = start(core, events.handler("first-"), events.handler("second-"))
    try:
        assert events.seen == [("first-add", "a"), ("second-add", "a")]
        core.patch_node("a", {"metadata": {"labels": {"x": "1"}}})
        core.delete_node("a")
        assert events.wait_for(("second-delete", "a"))
        assert events.seen[2:] == [
            ("first-update", "a"),
            ("second-update", "a"),
            ("first-delete", "a"),
            ("second-delete", "a"),
        ]
        assert inf.store.list() == []
    finally:
        inf.stop()


class _Stream:
    """A watch response that sends these lines, then ends."""

    def __init__(self, *lines: bytes) -> None:
        self.lines = lines

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        yield from self.lines

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


def test_listed_and_watched_objects_enter_the_cache_without_managed_fields() -> None:
    managed = [{"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1"}]

    def node_json(name: str) -> dict[str, Any]:
        meta = {"name": name, "resourceVersion": "1", "managedFields": managed}
        return {"kind": "Node", "metadata": meta, "spec": {"unschedulable": True}}

    listed = {"items": [node_json("listed")], "metadata": {"resourceVersion": "1"}}
    watched = {"type": "ADDED", "object": node_json("watched")}

    def list_func(**kw: Any) -> Any:
        if kw.get("watch"):
            return _Stream(json.dumps(watched).encode() + b"\n")
        return SimpleNamespace(data=json.dumps(listed).encode())

    inf: Informer = Informer(lambda **kw: list_func(**kw), client.V1Node)
    inf._list()
    inf._watch()
    for name in ("listed", "watched"):
        cached = inf.store.get_by_key(name)
        assert cached is not None
        assert cached.metadata.name == name
        assert cached.spec.unschedulable is True
        assert cached.metadata.managed_fields is None


def test_a_large_list_leaves_the_collector_to_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Freezing a large cache out of the collector's sight is the process's policy
    (minisched/gcpolicy.py, tests/test_gc.py), not something an informer does after its list."""
    froze: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: froze.append(True))
    size = 2 * FREEZE_CACHE_SIZE
    items = [{"kind": "Node", "metadata": {"name": f"n{i}"}} for i in range(size)]
    listed = {"items": items, "metadata": {"resourceVersion": "1"}}
    inf: Informer = Informer(
        lambda **kw: SimpleNamespace(data=json.dumps(listed).encode()), client.V1Node
    )
    inf._list()
    assert len(inf.store.list_keys()) == size
    assert froze == []


def test_decode_reads_the_api_names_as_from_dict_does() -> None:
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "default",
            "creationTimestamp": "2026-12-01T00:00:00Z",
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        },
        "spec": {
            "schedulerName": "minisched",
            "nodeName": "n1",
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
            "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 30}],
        },
        "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]},
    }
    expected = client.V1Pod.from_dict(json.loads(json.dumps(raw)))
    expected.metadata.managed_fields = None
    assert decode(client.V1Pod, raw) == expected
    assert expected.spec.tolerations[0].toleration_seconds == 30


def test_relists_when_its_version_fell_out_of_the_watch_history(core: client.CoreV1Api) -> None:
    events = Events()
    inf = start(core, events.handler())
    try:
        core.create_node(node("a"))
        assert events.wait_for(("add", "a"))
        # Pretend we slept through many changes: our version is older than the server's
        # history (4 events here), so the next watch must end in 410 and a relist.
        for i in range(6):
            core.create_node(node(f"filler{i}"))
        assert events.wait_for(("add", "filler5"))
        lists = count_lists(inf)
        inf.last_sync_resource_version = "1"
        inf._cut_watch()
        core.delete_node("a")
        assert inf.store.wait_until(lambda items: "a" not in items and lists.lists > 0, TIMEOUT)
        assert lists.lists == 1
        assert sorted(inf.store.list_keys()) == [f"filler{i}" for i in range(6)]
    finally:
        inf.stop()


def test_reconnects_and_relists_after_the_server_restarts(tmp_path: Path) -> None:
    # Like a real API server on etcd, the restarted server keeps its objects and its
    # resourceVersion, but not its watch history: our version is now "too old" (410).
    with EmbeddedServer("--data-dir", str(tmp_path)) as server:
        api = config.new_client_from_config(config_file=server.kubeconfig)
        core = client.CoreV1Api(api)
        core.create_node(node("before"))
        events = Events()
        inf = start(core, events.handler())
        try:
            lists = count_lists(inf)
            server.restart()
            core.create_node(node("after"))
            core.delete_node("before")
            assert events.wait_for(("add", "after"))
            assert events.wait_for(("delete-tombstone", "before")) or events.wait_for(
                ("delete", "before")
            )
            assert inf.store.list_keys() == ["after"]
            assert lists.lists > 0
        finally:
            inf.stop()
            api.close()


def test_filtering_handler_turns_entering_and_leaving_the_filter_into_add_and_delete(
    core: client.CoreV1Api,
) -> None:
    events = Events()
    inf = start(
        core,
        FilteringResourceEventHandler(
            lambda n: (n.metadata.labels or {}).get("pick") == "yes", events.handler()
        ),
    )
    try:
        core.create_node(node("n"))
        core.patch_node("n", {"metadata": {"labels": {"pick": "yes"}}})
        assert events.wait_for(("add", "n"))
        core.patch_node("n", {"metadata": {"labels": {"pick": "no"}}})
        assert events.wait_for(("delete", "n"))
        assert events.seen == [("add", "n"), ("delete", "n")]
    finally:
        inf.stop()


def test_label_selector_limits_what_the_informer_sees(core: client.CoreV1Api) -> None:
    core.create_node(node("mine", team="a"))
    core.create_node(node("theirs", team="b"))
    inf = start(core, label_selector="team=a")
    try:
        assert inf.store.list_keys() == ["mine"]
    finally:
        inf.stop()


def test_stop_interrupts_a_blocked_watch_promptly(core: client.CoreV1Api) -> None:
    inf = start(core)
    inf.stop(timeout=3)
    assert inf._thread is not None and not inf._thread.is_alive()


def test_an_outage_is_one_warning_for_every_informer_and_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    outages = Outages(now=lambda: now[0])
    refused = ConnectionRefusedError(111, "Connection refused")
    with caplog.at_level(logging.INFO, logger=CONNECTION_LOGGER):
        for _ in range(5):  # two informers, retrying
            outages.failed("https://api:6443", refused)
            outages.failed("https://api:6443", refused)
            now[0] += 1
        now[0] += OUTAGE_REMINDER
        outages.failed("https://api:6443", refused)  # a reminder, while it lasts
        outages.failed("https://api:6443", refused)
        outages.answered("https://api:6443")
        outages.answered("https://api:6443")  # the other informer: nothing more to say
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "cannot reach the API server at https://api:6443 (connection refused);"
            " retrying until it answers",
        ),
        (
            "WARNING",
            "still cannot reach the API server at https://api:6443 after 65 s"
            " (connection refused); retrying",
        ),
        ("INFO", "the API server at https://api:6443 answers again (after 65 s)"),
    ]


class _UnreadWatch:
    """A watch response whose stream still has events after the 410 that ends the watch."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        yield b'{"type": "ERROR", "object": {"code": 410, "message": "too old"}}\n'
        yield b'{"type": "ADDED", "object": {"metadata": {"name": "late"}}}\n'

    def close(self) -> None:
        self.calls.append("close")

    def release_conn(self) -> None:
        self.calls.append("release_conn")

    def shutdown(self) -> None:
        pass


def test_a_watch_left_unread_closes_its_connection_before_releasing_it() -> None:
    # Handed back to the pool with events still unread, the connection would give the next
    # request (the relist) this watch's leftovers, or block on them.
    watch = _UnreadWatch()
    lists: list[int] = []

    def list_func(**kw: Any) -> Any:
        if kw.get("watch"):
            return watch
        lists.append(1)
        return SimpleNamespace(data=b'{"items": [], "metadata": {"resourceVersion": "1"}}')

    inf: Informer = Informer(lambda **kw: list_func(**kw), client.V1Node)
    inf._list()
    assert inf._watch() is True  # the 410 ends the watch in a relist
    assert watch.calls == ["close", "release_conn"]
