"""A thin REST client for the requests the scheduler makes once per pod.

Upstream counterpart: client-go's ``rest.RESTClient`` (``Post().Namespace().Resource().Body()
.Do()``), which its typed clients wrap at almost no cost, over Go's HTTP/2 transport.

The official Python client's typed calls are not thin: each one validates its arguments with
pydantic, asks the kubeconfig loader for the credentials again (its hook re-reads the proxy
settings from the environment on every request), serializes the body through the models, and
goes through urllib3, whose responses are parsed by ``http.client`` and its headers by the
``email`` package. Measured against kube-apiserver v1.36.2 over TLS, a POST took 0.6-0.9 ms of
CPU that way, and that is CPU the request's thread takes from the scheduling cycle, since every
thread shares the GIL. ``RESTClient`` sends the JSON body on a keep-alive HTTP/1.1 connection
of its own, with the client configuration's TLS settings, client certificate and authorization
header, and reads the answer itself: about 0.2 ms.

Simplified: only POST with a JSON body; anything else goes through the official client.
``CoreV1Api`` is the official client with the pod binding sent this way; the events
(minisched/events.py) are posted with ``RESTClient`` itself. Through a proxy (the kubeconfig's
``proxy-url``), or with a hostname to check other than the server's, the body goes through the
official client's urllib3 pool instead, the way it was sent before this module took over.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
import weakref
from typing import Any
from urllib.parse import quote, urlsplit

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import should_bypass_proxies

# How long the credentials read from the client's configuration are reused (seconds). The
# kubeconfig loader's hook refreshes a token that expires (exec plugins, OIDC) when it is
# asked; asking once a second instead of once a request keeps that working.
CREDENTIALS_TTL = 1.0

# Idle connections kept for the next requests: the binding threads of a burst each take one,
# and more than this are closed when their request is done.
MAX_IDLE_CONNECTIONS = 8

# Limits on an answer's head, as http.client has them.
_MAX_LINE = 65536
_MAX_HEADERS = 100


class RESTClient:
    """POSTs JSON bodies to the API server of an official ``ApiClient``.

    ``_lock`` guards the cached credentials, ``_auth`` and ``_auth_at``: the event thread and
    the binding threads post at the same time. The connections are shared by every
    ``RESTClient`` of the same ``ApiClient`` (see ``_connections_of``).
    """

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        self._lock = threading.Lock()
        self._auth: dict[str, str] = {}
        self._auth_at = float("-inf")
        self._connections = _connections_of(api_client)

    def post(self, path: str, body: Any) -> bytes:
        """POST ``body`` as JSON to ``path`` (``/api/v1/namespaces/ns/events``); the response
        body. An answer that is not 2xx raises ``ApiException`` with its status and body, as
        the official client does; an unreachable server raises ``OSError``."""
        headers = {
            **self.api_client.default_headers,
            "Content-Type": "application/json",
            "Accept": "application/json",
            **self._credentials(),
        }
        data = json.dumps(body).encode()
        if self._connections is None:
            status, reason, answer = self._post_with_urllib3(path, headers, data)
        else:
            status, reason, answer = self._connections.post(path, headers, data)
        if not 200 <= status <= 299:
            error = ApiException(status=status, reason=reason)
            error.body = answer.decode(errors="replace")
            raise error
        return answer

    def _post_with_urllib3(
        self, path: str, headers: dict[str, str], data: bytes
    ) -> tuple[int, str, bytes]:
        """The same POST through the official client's urllib3 pool (proxies and all)."""
        response = self.api_client.rest_client.pool_manager.urlopen(
            "POST",
            self.api_client.configuration.host + path,
            body=data,
            headers=headers,
            preload_content=False,
        )
        answer: bytes = response.data  # reading the whole body releases the connection
        return response.status, response.reason, answer

    def _credentials(self) -> dict[str, str]:
        """The authorization header of the client's configuration, refreshed at most once per
        ``CREDENTIALS_TTL``."""
        now = time.monotonic()
        with self._lock:
            if now - self._auth_at >= CREDENTIALS_TTL:
                settings = self.api_client.configuration.auth_settings()
                self._auth = {
                    s["key"]: s["value"]
                    for s in settings.values()
                    if s.get("in") == "header" and s.get("value")
                }
                self._auth_at = now
            return self._auth


# --- the connections -------------------------------------------------------------------------

# One set of connections per ApiClient, dropped (and closed) with it.
_pools: weakref.WeakKeyDictionary[client.ApiClient, Connections | None] = (
    weakref.WeakKeyDictionary()
)
_pools_lock = threading.Lock()


def _connections_of(api_client: client.ApiClient) -> Connections | None:
    """The connections to ``api_client``'s server; None where the urllib3 pool must be used."""
    with _pools_lock:
        if api_client not in _pools:
            connections = Connections.for_configuration(api_client.configuration)
            _pools[api_client] = connections
            if connections is not None:
                weakref.finalize(api_client, connections.close)
        return _pools[api_client]


class Connections:
    """Keep-alive HTTP/1.1 connections to one API server, each used by one request at a time.

    ``_lock`` guards ``_idle``, the connections no request is using.
    """

    def __init__(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        socket_options: list[tuple[int, int, int]] | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        self.socket_options = socket_options or []
        self.netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._lock = threading.Lock()
        self._idle: list[_Connection] = []

    @classmethod
    def for_configuration(cls, configuration: client.Configuration) -> Connections | None:
        """Connections with the configuration's TLS settings, as the official client's
        urllib3 pool has them; None for what this module leaves to that pool: a proxy, a
        hostname to check that is not the server's, a scheme other than http and https."""
        url = urlsplit(configuration.host)
        proxied = configuration.proxy and not should_bypass_proxies(
            configuration.host, configuration.no_proxy or ""
        )
        if proxied or url.scheme not in ("http", "https") or not url.hostname:
            return None
        if isinstance(configuration.assert_hostname, str):
            return None
        context = None
        if url.scheme == "https":
            context = ssl.create_default_context()
            if not configuration.verify_ssl:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            else:
                if configuration.ssl_ca_cert:
                    context.load_verify_locations(cafile=configuration.ssl_ca_cert)
                if configuration.ca_cert_data:
                    context.load_verify_locations(cadata=configuration.ca_cert_data)
                if configuration.assert_hostname is False:
                    context.check_hostname = False
            if configuration.cert_file:
                context.load_cert_chain(configuration.cert_file, configuration.key_file)
        port = url.port or (443 if url.scheme == "https" else 80)
        server_hostname = (configuration.tls_server_name or url.hostname) if context else None
        return cls(url.hostname, port, context, server_hostname, configuration.socket_options)

    def post(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        """Send the POST; its status, reason and body.

        A connection that sat idle may have been closed by the server meanwhile: when one
        fails before any byte of the answer came back, the request is sent once more on a new
        connection, as client-go's transport does for a connection the server closed while
        idle.
        """
        head = [f"POST {path} HTTP/1.1", f"Host: {self.netloc}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head.append(f"Content-Length: {len(body)}")
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        while True:
            reused = conn is not None
            if conn is None:
                conn = _Connection(self)
            try:
                answer = conn.exchange(request)
                break
            except BaseException as e:
                conn.close()
                if not (reused and isinstance(e, _NothingReceived)):
                    raise
                conn = None  # once more, on a new connection
        if answer.keep_alive:
            with self._lock:
                if len(self._idle) < MAX_IDLE_CONNECTIONS:
                    self._idle.append(conn)
                    conn = None
        if conn is not None:
            conn.close()
        return answer.status, answer.reason, answer.body

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _NothingReceived(ConnectionError):
    """The connection failed before the first byte of the answer."""


class _Answer:
    def __init__(self, status: int, reason: str, body: bytes, keep_alive: bool) -> None:
        self.status, self.reason, self.body, self.keep_alive = status, reason, body, keep_alive


class _Connection:
    """One connection: a request is written whole, and its answer read whole (the status
    line, the headers, a body of Content-Length bytes or in chunks)."""

    def __init__(self, connections: Connections) -> None:
        sock = socket.create_connection((connections.host, connections.port))
        try:
            # A request is written in one piece: no need to wait for an ACK (Nagle).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in connections.socket_options:
                sock.setsockopt(*option)
            if connections.ssl_context is not None:
                sock = connections.ssl_context.wrap_socket(
                    sock, server_hostname=connections.server_hostname
                )
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.file = sock.makefile("rb")

    def exchange(self, request: bytes) -> _Answer:
        try:
            self.sock.sendall(request)
            status_line = self.file.readline(_MAX_LINE + 1)
        except OSError as e:
            raise _NothingReceived(str(e)) from e
        if not status_line:
            raise _NothingReceived("the API server closed the connection")
        version, status, reason = _parse_status_line(status_line)
        headers: dict[str, str] = {}
        for _ in range(_MAX_HEADERS + 1):
            line = self.file.readline(_MAX_LINE + 1)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        else:
            raise http.client.HTTPException(f"more than {_MAX_HEADERS} headers")
        keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._read_chunks()
        elif "content-length" in headers:
            body = self._read_exactly(int(headers["content-length"]))
        else:
            body, keep_alive = self.file.read(), False  # the body ends with the connection
        return _Answer(status, reason, body, keep_alive)

    def _read_exactly(self, n: int) -> bytes:
        data = self.file.read(n)
        if len(data) < n:
            raise http.client.IncompleteRead(data, n - len(data))
        return data

    def _read_chunks(self) -> bytes:
        parts = []
        while True:
            size_line = self.file.readline(_MAX_LINE + 1).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise http.client.HTTPException(f"a bad chunk size: {size_line!r}") from None
            if size == 0:
                break
            parts.append(self._read_exactly(size))
            self._read_exactly(2)  # the CRLF after the chunk
        while self.file.readline(_MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return b"".join(parts)

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def _parse_status_line(line: bytes) -> tuple[str, int, str]:
    """``HTTP/1.1 201 Created``: the version, the status and the reason."""
    parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise http.client.BadStatusLine(line.decode("latin-1"))
    return parts[0], int(parts[1]), parts[2] if len(parts) > 2 else ""


class CoreV1Api(client.CoreV1Api):
    """The official core/v1 client, with the call the scheduler makes for every pod sent thin.

    ``create_namespaced_pod_binding(name, namespace, body, _preload_content=False)``, the way
    the steps bind, answers as the official call does (a response whose ``data`` is the body;
    ``ApiException`` when the server refuses) but posts through ``RESTClient``. Every other
    call, and a binding asked for in any other way, goes through the official client.
    """

    def __init__(self, api_client: client.ApiClient | None = None) -> None:
        super().__init__(api_client)
        self.rest = RESTClient(self.api_client)

    def create_namespaced_pod_binding(  # type: ignore[override]
        self, name: str, namespace: str, body: Any, **kwargs: Any
    ) -> Any:
        if kwargs != {"_preload_content": False}:
            return super().create_namespaced_pod_binding(name, namespace, body, **kwargs)
        path = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}/binding"
        return _Response(self.rest.post(path, self.api_client.sanitize_for_serialization(body)))


class _Response:
    """What ``_preload_content=False`` answers: the body, already read."""

    def __init__(self, data: bytes) -> None:
        self.data = data
