"""Watches under stress: clients that stall, read slowly, disconnect or fall behind.

Functional bounds, not a benchmark: every wait has a generous timeout, and nothing sleeps to
synchronise. A stalled client is a raw socket that simply stops reading (with a small receive
buffer, so the server soon has to hold data for it).

- 50 stalled watchers (40 never read, 10 read their first bytes and stop) and 20 that hang up
  in the middle of the stream block neither the writes nor a healthy watcher: 1000 writes
  complete and the healthy watcher receives every event;
- a watcher whose queue overflows is ended by the server (its client must relist), and the
  store forgets it;
- an informer whose handler blocks falls behind, the server ends its watch, the history
  window moves past its resourceVersion: the informer gets 410, relists, and ends with the
  right store.
"""

from __future__ import annotations

import functools
import json
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client

from minisched.apiserver.serving import Server
from minisched.informer import Informer, ResourceEventHandler
from tests.fakes import count_lists

TIMEOUT = 30.0
WRITES = 1000
# An annotation that makes each event big enough that a stalled reader soon fills every
# buffer between the server and it (the kernel's send buffer on loopback grows to 4 MiB):
# 1000 events of 8 KiB are twice that.
PAD = "x" * 8192


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server(port=0, seed=5, watcher_queue=100, watch_history=200).start_in_thread()
    yield srv
    srv.stop_thread()


def _watch_socket(server: Server, path: str, rcvbuf: int | None = 4096) -> socket.socket:
    """Open a watch on a raw socket and send the request; nothing is read."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect
    sock.settimeout(TIMEOUT)
    sock.connect((server.host, server.port))
    request = (
        f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}\r\n"
        "Accept: application/json\r\n\r\n"
    )
    sock.sendall(request.encode())
    return sock


def _hang_up(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0), as a killed client does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class HealthyWatcher(threading.Thread):
    """Reads a watch stream as fast as it comes and counts the ADDED pods."""

    def __init__(self, server: Server, path: str, expected: int) -> None:
        super().__init__(name="healthy-watcher", daemon=True)
        self.sock = _watch_socket(server, path, rcvbuf=None)
        self.expected = expected
        self.added: set[str] = set()
        self.ready = threading.Event()  # the response headers arrived: the watch is open

    def run(self) -> None:
        buffer = b""
        while len(self.added) < self.expected:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return
            buffer += chunk
            if not self.ready.is_set() and b"\r\n\r\n" in buffer:
                buffer = buffer.split(b"\r\n\r\n", 1)[1]
                self.ready.set()
            # Chunked framing: pick the JSON lines out, ignoring the chunk-size lines.
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                line = line.strip()
                if line.startswith(b"{"):
                    event = json.loads(line)
                    if event["type"] == "ADDED":
                        self.added.add(event["object"]["metadata"]["name"])

    def close(self) -> None:
        self.sock.close()


def _pod(name: str, pad: str = PAD) -> bytes:
    return json.dumps(
        {
            "metadata": {"name": name, "annotations": {"pad": pad}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    ).encode()


def _wait_watchers(server: Server, count: int) -> None:
    """Every watch is registered in the store once its response headers were sent; our raw
    sockets cannot tell, so ask the server's loop (no sleeping: each call is a round trip)."""
    for _ in range(10_000):
        if server.call(server.store.watcher_count) >= count:
            return
    raise AssertionError("watchers did not register")


def test_stalled_and_vanishing_watchers_block_neither_writes_nor_other_watchers(
    server: Server,
) -> None:
    path = "/api/v1/namespaces/default/pods?watch=true"
    healthy = HealthyWatcher(server, path, WRITES)
    healthy.start()
    never_read = [_watch_socket(server, path) for _ in range(40)]
    slow = [_watch_socket(server, path) for _ in range(10)]
    for sock in slow:
        sock.recv(1)  # a slow reader: a byte, then nothing more
    vanishing = [_watch_socket(server, path) for _ in range(20)]
    _wait_watchers(server, 71)
    assert healthy.ready.wait(TIMEOUT)

    http = urllib3.PoolManager()
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    try:
        for i in range(WRITES):
            r = http.request(
                "POST",
                server.url + "/api/v1/namespaces/default/pods",
                body=_pod(f"p{i:04d}"),
                headers=headers,
                timeout=TIMEOUT,
            )
            assert r.status == 201, r.data[:200]
            if i == WRITES // 5:
                for sock in vanishing:  # hang up in the middle of the stream
                    _hang_up(sock)
        healthy.join(TIMEOUT)
        assert len(healthy.added) == WRITES
        # The stalled watchers fell more than their queue (100 events) behind: the server
        # ended them and forgot them; only the healthy one is left.
        assert server.call(server.store.watcher_count) == 1
        # The server still answers, at once.
        r = http.request("GET", server.url + "/readyz", timeout=5)
        assert r.status == 200
    finally:
        http.clear()
        healthy.close()
        for sock in never_read + slow:
            _hang_up(sock)


def test_a_watcher_that_fell_behind_is_ended_so_its_client_relists(server: Server) -> None:
    """The stream of a watcher that overflowed its queue ends (it is not left hanging), with
    fewer events than were written: its client must watch again (and relist on 410)."""
    path = "/api/v1/namespaces/default/pods?watch=true"
    stalled = _watch_socket(server, path)
    _wait_watchers(server, 1)
    http = urllib3.PoolManager()
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    for i in range(1000):
        r = http.request(
            "POST",
            server.url + "/api/v1/namespaces/default/pods",
            body=_pod(f"q{i:04d}"),
            headers=headers,
            timeout=TIMEOUT,
        )
        assert r.status == 201
    http.clear()
    assert server.call(server.store.watcher_count) == 0  # ended and forgotten
    # Now read: what was buffered, then the end of the chunked stream.
    data = b""
    while chunk := stalled.recv(1 << 20):
        data += chunk
        if data.endswith(b"0\r\n\r\n"):
            break
    stalled.close()
    assert data.endswith(b"0\r\n\r\n"), data[-200:]
    received = data.count(b'"type":"ADDED"')
    assert 0 < received < 1000


def test_an_informer_that_fell_behind_gets_410_relists_and_ends_right(server: Server) -> None:
    conf = client.Configuration(host=server.url)
    conf.api_key = {"authorization": f"Bearer {server.token}"}
    api_client = client.ApiClient(conf)
    core = client.CoreV1Api(api_client)
    gate = threading.Event()
    blocked = threading.Event()

    def on_add(pod: Any) -> None:
        if pod.metadata.name == "first":
            blocked.set()
            gate.wait(TIMEOUT)  # the informer stops reading while we write

    informer: Informer[client.V1Pod] = Informer(
        functools.partial(core.list_namespaced_pod, "default"), client.V1Pod
    )
    informer.add_event_handler(ResourceEventHandler(on_add=on_add))
    lists = count_lists(informer)
    informer.start()
    try:
        assert informer.wait_for_cache_sync(TIMEOUT)
        core.create_namespaced_pod("default", json.loads(_pod("first")))
        assert blocked.wait(TIMEOUT)
        # 1500 big writes (36 MiB of events): more than the socket buffers (a reading
        # client's receive buffer may grow to 32 MiB), the watcher's queue (100) and the
        # history (200) hold. Half the pods are deleted again, so the store must be right.
        http = urllib3.PoolManager()
        headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
        base = server.url + "/api/v1/namespaces/default/pods"
        for i in range(1000):
            r = http.request("POST", base, body=_pod(f"r{i:04d}", PAD * 3), headers=headers)
            assert r.status == 201
            if i % 2:
                r = http.request("DELETE", f"{base}/r{i:04d}", headers=headers)
                assert r.status == 200
        http.clear()
        assert server.call(server.store.watcher_count) == 0  # its watch was ended
        relists = lists.lists
        gate.set()
        expected = {"default/first"} | {f"default/r{i:04d}" for i in range(0, 1000, 2)}
        assert informer.store.wait_until(
            lambda items: set(items) == expected and lists.lists > relists, TIMEOUT
        ), (lists.lists, len(informer.store.list_keys()))
    finally:
        gate.set()
        informer.stop()
        api_client.close()
