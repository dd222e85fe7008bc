"""The embedded API server's HTTP/1.1 layer (minisched/apiserver/httpd.py, parsing with h11),
byte for byte on a socket: what net/http gives kube-apiserver's clients, and a Status for what
is not HTTP."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from minisched.apiserver.serving import Server

POD = b'{"metadata": {"name": "%s"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}'


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server(port=0, seed=3, max_body_bytes=4096).start_in_thread()
    yield srv
    srv.stop_thread()


def connect(server: Server) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=10)


def request(
    server: Server,
    method: str,
    path: str,
    body: bytes = b"",
    *,
    headers: tuple[str, ...] = (),
    version: str = "HTTP/1.1",
    length: bool = True,
) -> bytes:
    head = [f"{method} {path} {version}", "Host: x", f"Authorization: Bearer {server.token}"]
    head += list(headers)
    if length:
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join([*head, "", ""])).encode() + body


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One answer from the socket: status, headers (lower-case names), body (de-chunked)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before the head: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    status = int(status_line.split()[1])
    if status == 100:
        return status, headers, rest
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += sock.recv(65536)
            size_text, _, rest = rest.partition(b"\r\n")
            size = int(size_text, 16)
            while len(rest) < size + 2:
                rest += sock.recv(65536)
            body, rest = body + rest[:size], rest[size + 2 :]
            if size == 0:
                return status, headers, body
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        rest += sock.recv(65536)
    return status, headers, rest[:length]


def test_one_connection_serves_request_after_request(server: Server) -> None:
    """HTTP/1.1 keep-alive: three requests, three answers, one connection."""
    with connect(server) as sock:
        for _ in range(3):
            sock.sendall(request(server, "GET", "/api/v1/namespaces/default"))
            status, headers, body = read_answer(sock)
            assert status == 200 and json.loads(body)["kind"] == "Namespace"
            assert "connection" not in headers and headers["date"].endswith(" GMT")


def test_connection_close_and_http_1_0_close_after_the_answer(server: Server) -> None:
    for extra, version in (("Connection: close", "HTTP/1.1"), ("X-A: b", "HTTP/1.0")):
        with connect(server) as sock:
            sock.sendall(request(server, "GET", "/version", headers=(extra,), version=version))
            status, headers, _ = read_answer(sock)
            assert status == 200 and headers["connection"] == "close"
            assert sock.recv(1) == b""  # closed by the server


def test_http_1_0_keeps_no_connection_alive_and_its_watch_ends_with_the_connection(
    server: Server,
) -> None:
    """As Go's net/http: an HTTP/1.0 client gets no keep-alive even when it asks for it, and a
    watch as a plain stream (no chunked encoding in HTTP/1.0) that ends when the server closes."""
    with connect(server) as sock:
        sock.sendall(
            request(
                server, "GET", "/version", headers=("Connection: keep-alive",), version="HTTP/1.0"
            )
        )
        status, headers, _ = read_answer(sock)
        assert status == 200 and headers["connection"] == "close"
        assert sock.recv(1) == b""
    with connect(server) as sock:
        path = "/api/v1/nodes?watch=true&timeoutSeconds=1"
        sock.sendall(request(server, "GET", path, version="HTTP/1.0"))
        data = b""
        while chunk := sock.recv(65536):  # until the server closes the stream
            data += chunk
        head, _, _ = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200"), head
        assert b"transfer-encoding: chunked" not in head.lower()


def test_a_chunked_body_is_read(server: Server) -> None:
    """Transfer-Encoding: chunked, as clients send a body of unknown length (a chunk extension
    and a trailer included); the connection serves another request after it."""
    body = POD % b"chunked"
    chunks = b"5;ext=1\r\n" + body[:5] + b"\r\n" + b"%x\r\n" % (len(body) - 5) + body[5:]
    raw = request(
        server,
        "POST",
        "/api/v1/namespaces/default/pods",
        headers=("Content-Type: application/json", "Transfer-Encoding: chunked"),
        length=False,
    )
    with connect(server) as sock:
        sock.sendall(raw + chunks + b"\r\n0\r\nX-Trailer: t\r\n\r\n")
        status, _, answer = read_answer(sock)
        assert status == 201, answer
        assert json.loads(answer)["metadata"]["name"] == "chunked"
        sock.sendall(request(server, "GET", "/api/v1/namespaces/default/pods/chunked"))
        assert read_answer(sock)[0] == 200


def test_expect_100_continue_is_answered_before_the_body_is_sent(server: Server) -> None:
    """curl sends ``Expect: 100-continue`` for larger bodies and waits for the 100."""
    body = POD % b"expecting"
    with connect(server) as sock:
        sock.sendall(
            request(
                server,
                "POST",
                "/api/v1/namespaces/default/pods",
                headers=("Content-Type: application/json", "Expect: 100-continue"),
                length=False,
            )[:-2]
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        status, _, rest = read_answer(sock)
        assert status == 100 and rest == b""
        sock.sendall(body)
        status, _, answer = read_answer(sock)
        assert status == 201, answer


def test_a_body_over_the_limit_is_a_413_status_and_the_connection_closes(server: Server) -> None:
    for framing in ("length", "chunked"):
        body = POD % (b"x" * 5000)
        if framing == "length":
            raw = request(server, "POST", "/api/v1/namespaces/default/pods", body)
        else:
            raw = request(
                server,
                "POST",
                "/api/v1/namespaces/default/pods",
                headers=("Transfer-Encoding: chunked",),
                length=False,
            )
            raw += b"%x\r\n%b\r\n0\r\n\r\n" % (len(body), body)
        with connect(server) as sock:
            sock.sendall(raw)
            status, headers, answer = read_answer(sock)
            assert status == 413 and json.loads(answer)["reason"] == "RequestEntityTooLarge"
            assert headers["connection"] == "close"


def test_head_gets_the_headers_and_no_body(server: Server) -> None:
    """The answer to HEAD (here a 405: /version serves GET only) is its head alone: the next
    answer follows it at once."""
    with connect(server) as sock:
        sock.sendall(request(server, "HEAD", "/version") + request(server, "GET", "/version"))
        data = b""
        while not data.endswith(b"}\n"):
            data += sock.recv(65536)
    first, _, second = data.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 405 ") and b"Content-Length: " in first
    assert second.startswith(b"HTTP/1.1 200 OK")


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GET /version HTTP/1.1\r\nHost x\r\n\r\n", 400),  # no colon
        # HTTP/1.1 without Host: net/http's "missing required Host header", and h11's.
        (b"GET /version HTTP/1.1\r\nX-A: b\r\n\r\n", 400),
        (b"GET /ver sion HTTP/1.1\r\n\r\n", 400),  # four parts
        (b"GET /version HTTP/2.0\r\n\r\n", 505),
        (b"G(T /version HTTP/1.1\r\n\r\n", 400),  # not a token
        (b"GET /v\x01 HTTP/1.1\r\n\r\n", 400),  # a control byte in the target
        (b"GET /version HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        (b"GET /version HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
        (b"GET /version HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"POST /version HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"GET /version HTTP/1.1\r\nX: " + b"a" * (1 << 20) + b"\r\n\r\n", 431),
    ],
    ids=lambda v: v[:36].decode("latin-1") if isinstance(v, bytes) else str(v),
)
def test_what_is_not_http_gets_a_status_and_the_connection_closes(
    server: Server, raw: bytes, status: int
) -> None:
    with connect(server) as sock:
        sock.sendall(raw)
        got, headers, body = read_answer(sock)
        assert got == status and headers["content-type"] == "application/json"
        doc = json.loads(body)
        assert doc["kind"] == "Status" and doc["code"] == status, doc
        assert doc["message"].startswith("malformed HTTP request: "), doc
        assert sock.recv(1) == b""


def test_the_absolute_form_of_a_target_is_its_path(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(request(server, "GET", "http://127.0.0.1/version"))
        assert json.loads(read_answer(sock)[2])["major"] == "1"


def test_a_finished_watch_leaves_its_connection_usable(server: Server) -> None:
    """A watch that ends (timeoutSeconds) ends its chunked stream; the client may send its next
    request on the same connection, as urllib3 does when it reuses a pooled one."""
    with connect(server) as sock:
        sock.sendall(request(server, "GET", "/api/v1/nodes?watch=true&timeoutSeconds=1"))
        status, headers, _ = read_answer(sock)
        assert status == 200 and headers["transfer-encoding"] == "chunked"
        sock.sendall(request(server, "GET", "/version"))
        assert read_answer(sock)[0] == 200


def test_tls_serves_the_same(tmp_path: Path) -> None:
    """With a certificate: a TLS handshake, then HTTP/1.1 as above (no ALPN, so Go clients
    such as kubectl speak HTTP/1.1)."""
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        capture_output=True,
    )
    if made.returncode != 0:
        pytest.skip("openssl could not make a certificate")
    srv = Server(port=0, tls=(str(cert), str(key))).start_in_thread()
    try:
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        context.set_alpn_protocols(["h2", "http/1.1"])
        with context.wrap_socket(connect(srv), server_hostname="127.0.0.1") as sock:
            assert sock.selected_alpn_protocol() is None
            for _ in range(2):
                sock.sendall(request(srv, "GET", "/api/v1/namespaces/default"))
                status, _, body = read_answer(sock)
                assert status == 200 and json.loads(body)["kind"] == "Namespace"
    finally:
        srv.stop_thread()


def test_the_server_process_does_not_import_aiohttp() -> None:
    """Importing aiohttp was half of the server's start (220 of 400 ms, measured): the server
    needs nothing of it. (The --web page still uses it, in the scheduler's process.)"""
    script = (
        "import sys, minisched.apiserver.__main__\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiohttp', 'yarl')))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
