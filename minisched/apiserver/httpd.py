"""HTTP/1.1 on asyncio streams, parsed by h11: the part of an HTTP server the embedded API server
needs.

Upstream: Go's ``net/http`` server, which kube-apiserver serves with (``server.go``: reading a
request, ``Expect: 100-continue``, keep-alive, chunked watch responses; ``DefaultMaxHeaderBytes``).

h11 (the sans-IO HTTP/1.1 library under uvicorn and httpcore) parses and frames every message:
request lines, headers, bodies by ``Content-Length`` or chunked, keep-alive, ``100 Continue``,
chunked responses. This module only moves its bytes over asyncio streams (TLS by the ``ssl``
module) and turns its events into ``Request`` for the handler. Why not aiohttp, which the
``kubernetes`` client pulls in: importing it, client and all, was half of the server's start
(220 ms of 400 on a slow machine, measured); h11 imports in about 10 ms.

What a client gets, as from net/http:

- any method token reaches the handler (which answers 405 for those it does not serve);
- a request that is not HTTP/1.x (h11 refuses it, or a version other than 1.0 and 1.1) gets a
  Status (400, or h11's hint: 431 for a head over ``MAX_HEADER_BYTES``, 501 for a transfer
  coding other than chunked; 505 for the version) and the connection is closed. Differs from
  upstream: net/http writes plain text; a Status keeps every answer one a Kubernetes client can
  read;
- HTTP/1.1 connections stay open unless the client says ``Connection: close``; HTTP/1.0 ones
  close (h11 keeps no HTTP/1.0 connection alive); a body the handler did not read closes the
  connection;
- ``Expect: 100-continue`` is answered when the handler first reads the body.

Not implemented: HTTP/2 (TLS offers no ALPN protocol, so Go clients such as kubectl speak
HTTP/1.1, as they do to any server without h2), trailers (h11 reads and drops them), pipelining
beyond one request at a time (the next request is read after the answer is written).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from urllib.parse import parse_qsl, unquote

import h11

MAX_HEADER_BYTES = 1 << 20  # net/http's DefaultMaxHeaderBytes: the request line and headers
READ_SIZE = 65536
# Go's reason phrases where Python's differ (RFC 9110 renamed these two).
GO_REASONS = {413: b"Request Entity Too Large", 422: b"Unprocessable Entity"}


class BadRequest(Exception):
    """The bytes are not an HTTP/1.x request; ``status`` is what to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class BodyTooLarge(Exception):
    """The request's body is longer than the handler's limit (``Request.read``)."""


class Headers:
    """A request's headers, looked up without regard to case; the first of repeated ones."""

    __slots__ = ("_items",)

    def __init__(self, items: dict[str, str]) -> None:
        self._items = items  # lower-case name -> value

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._items.get(name.lower(), default)


class _Connection:
    """One client connection: h11's state machine and the streams its bytes travel on."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
        self.reader = reader
        self.writer = writer
        self.head_bytes = 0  # read of the request head being waited for

    def next_cycle(self) -> None:
        """The answer is written: wait for the next request."""
        self.h11.start_next_cycle()
        self.head_bytes = 0

    async def next_event(self) -> h11.Event | type[h11.PAUSED]:
        """h11's next event, reading as much as it needs; BadRequest for what is not HTTP."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise BadRequest(str(exc), exc.error_status_hint) from None
            if event is not h11.NEED_DATA:
                return event
            size = READ_SIZE
            in_head = self.h11.their_state is h11.IDLE
            if in_head:
                # h11 measures its buffer only when it needs more, so a head over the limit
                # that arrives in one read would pass: never give it more than the limit.
                size = min(size, MAX_HEADER_BYTES - self.head_bytes)
                if size <= 0:
                    raise BadRequest("request headers are too large", 431)
            data = await self.reader.read(size)  # b"": the client closed
            if in_head:
                self.head_bytes += len(data)
            self.h11.receive_data(data)

    def send(self, *events: h11.Event) -> None:
        # One write for the whole answer: written as two (head, then body), 1000 small POSTs
        # took 45 s instead of 3.5 s (a delayed ACK each; tests/test_apiserver_watch_stress).
        self.writer.write(b"".join([self.h11.send(event) or b"" for event in events]))


class Request:
    """One request: its head parsed, its body read on demand (``read``)."""

    def __init__(self, event: h11.Request, connection: _Connection) -> None:
        self.method = event.method.decode("ascii")
        target = event.target.decode("ascii")  # h11 allows visible ASCII only
        if not target.startswith("/"):
            # The absolute form (a client talking to a proxy): the path is what follows the host.
            scheme, sep, rest = target.partition("://")
            if not sep or scheme.lower() not in ("http", "https"):
                raise BadRequest(f"bad request target {target[:60]!r}")
            target = "/" + rest.partition("/")[2]
        self.raw_path = target  # the target as sent: path and query, still percent-encoded
        path, _, query_string = target.partition("?")
        self.path = unquote(path)
        # The first value of each parameter, as Go's url.Values.Get reads it; "+" is a space.
        self.query: dict[str, str] = {}
        for name, value in parse_qsl(query_string, keep_blank_values=True):
            self.query.setdefault(name, value)
        self.version = "HTTP/" + event.http_version.decode("ascii")
        items: dict[str, str] = {}
        for name, value in event.headers:
            items.setdefault(name.decode("ascii"), value.decode("latin-1"))
        self.headers = Headers(items)
        if "transfer-encoding" in items and "content-length" in items:
            # h11 lets Transfer-Encoding win; a request carrying both is how requests are
            # smuggled past a proxy, and net/http refuses it.
            raise BadRequest("both Transfer-Encoding and Content-Length")
        length = items.get("content-length")  # digits only: h11 checked
        # None: the body is chunked, or there is none.
        self.content_length = None if length is None else int(length)
        self.transport = connection.writer.transport
        self._connection = connection
        # Whether the body has been read to its end: otherwise the connection cannot serve
        # another request (its next bytes would be the rest of this body).
        self.body_consumed = False

    async def read(self, limit: int) -> bytes:
        """The whole body; BodyTooLarge when it is longer than ``limit`` bytes."""
        if self.body_consumed:
            return b""
        if self.content_length is not None and self.content_length > limit:
            raise BodyTooLarge()
        connection = self._connection
        if connection.h11.they_are_waiting_for_100_continue:
            connection.send(h11.InformationalResponse(status_code=100, headers=[]))
        data = bytearray()
        while True:
            event = await connection.next_event()
            if isinstance(event, h11.Data):
                data += event.data
                if len(data) > limit:
                    raise BodyTooLarge()
            elif isinstance(event, h11.EndOfMessage):
                self.body_consumed = True
                return bytes(data)
            else:  # the client closed the connection: h11 says so as an error or an event
                raise BadRequest("the body ended early")


_date_cache: tuple[int, str] = (0, "")


def _date() -> str:
    """The ``Date`` header's value, made once a second (net/http sends it on every answer)."""
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        stamp = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now))
        _date_cache = (now, stamp)
    return _date_cache[1]


def _head(status: int, headers: dict[str, str], close: bool) -> h11.Response:
    fields = [*headers.items(), ("Date", _date())]
    if close:  # h11 then ends the connection after this answer
        fields.append(("Connection", "close"))
    reason = GO_REASONS.get(status) or HTTPStatus(status).phrase.encode()
    return h11.Response(status_code=status, headers=fields, reason=reason)


class Response:
    """A whole answer: status, headers and body."""

    def __init__(
        self, body: bytes = b"", status: int = 200, content_type: str = "application/json"
    ) -> None:
        self.status = status
        self.body = body
        self.headers = {"Content-Type": content_type}

    @classmethod
    def text(cls, text: str, status: int = 200) -> Response:
        return cls(text.encode(), status, content_type="text/plain; charset=utf-8")

    def events(self, head_only: bool, close: bool) -> list[h11.Event]:
        """The answer as h11 events (to HEAD: the head alone, its Content-Length the body's)."""
        headers = {**self.headers, "Content-Length": str(len(self.body))}
        events: list[h11.Event] = [_head(self.status, headers, close)]
        if self.body and not head_only:
            events.append(h11.Data(data=self.body))
        events.append(h11.EndOfMessage())
        return events


class StreamResponse:
    """An answer written as it is made, in chunks (a watch): ``prepare``, ``write``...,
    ``write_eof``. The handler writes it all before it returns."""

    def __init__(self, request: Request, status: int = 200, content_type: str = "") -> None:
        self.status = status
        self.headers = {"Content-Type": content_type, "Transfer-Encoding": "chunked"}
        self._connection = request._connection
        # A body the handler did not read (it cannot be, once the stream has begun).
        self._close = not request.body_consumed
        self.finished = False

    async def prepare(self) -> None:
        self._connection.send(_head(self.status, self.headers, self._close))
        await self._connection.writer.drain()

    async def write(self, data: bytes) -> None:
        if data:
            self._connection.send(h11.Data(data=data))
            await self._connection.writer.drain()  # a client that does not read holds this only

    async def write_eof(self) -> None:
        self._connection.send(h11.EndOfMessage())
        await self._connection.writer.drain()
        self.finished = True


Handler = Callable[[Request], Awaitable["Response | StreamResponse"]]
# What to answer a request that is not HTTP: (status, message) -> a Response.
ErrorResponder = Callable[[int, str], Response]


class HttpServer:
    """Serves ``handler`` on a listening socket, one task per connection."""

    def __init__(self, handler: Handler, error_response: ErrorResponder) -> None:
        self.handler = handler
        self.error_response = error_response
        self._server: asyncio.AbstractServer | None = None
        # The connections' tasks, so that stop() can end them (guarded by running on the loop).
        self._connections: set[asyncio.Task[None]] = set()
        # The tasks running a handler just now: stop() gives these a moment to answer.
        self._busy: set[asyncio.Task[None]] = set()

    async def start(self, sock: socket.socket, ssl_context: ssl.SSLContext | None) -> None:
        self._server = await asyncio.start_server(self._serve, sock=sock, ssl=ssl_context)

    async def stop(self, timeout: float) -> None:
        """Stop listening, give the requests being answered ``timeout`` seconds, then close
        every connection."""
        if self._server is not None:
            self._server.close()
        if self._busy:
            await asyncio.wait(set(self._busy), timeout=timeout)
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(set(self._connections), timeout=timeout)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        connection = _Connection(reader, writer)
        try:
            while await self._one_request(task, connection):
                connection.next_cycle()
        except (ConnectionError, asyncio.CancelledError, ssl.SSLError, TimeoutError):
            pass  # the client left, or the server is stopping
        finally:
            self._connections.discard(task)
            self._busy.discard(task)
            writer.close()

    async def _refuse(self, connection: _Connection, exc: BadRequest) -> None:
        """Answer what is not HTTP with a Status, then the connection closes."""
        response = self.error_response(exc.status, exc.message)
        try:
            connection.send(*response.events(head_only=False, close=True))
        except h11.LocalProtocolError:
            return  # an answer had begun (a watch stream): nothing more can be said
        await connection.writer.drain()

    async def _one_request(self, task: asyncio.Task[None], connection: _Connection) -> bool:
        """Read one request, answer it; whether the connection serves another."""
        try:
            event = await connection.next_event()
            if not isinstance(event, h11.Request):
                return False  # the client closed the connection between requests
            if event.http_version not in (b"1.0", b"1.1"):
                raise BadRequest(f"unsupported protocol version {event.http_version!r}", 505)
            request = Request(event, connection)
        except BadRequest as exc:
            await self._refuse(connection, exc)
            return False
        if request.content_length == 0 or (
            request.content_length is None and request.headers.get("Transfer-Encoding") is None
        ):
            # No body: h11 ends the message without reading more.
            request.body_consumed = isinstance(connection.h11.next_event(), h11.EndOfMessage)
        self._busy.add(task)
        try:
            response = await self.handler(request)
        except BadRequest as exc:  # the body was malformed
            await self._refuse(connection, exc)
            return False
        finally:
            self._busy.discard(task)
        if not isinstance(response, StreamResponse):
            # The answer; a body the handler left unread closes the connection.
            head_only = request.method == "HEAD"
            connection.send(*response.events(head_only, close=not request.body_consumed))
            await connection.writer.drain()
        elif not response.finished:
            return False  # a stream the handler did not finish leaves the connection unusable
        # h11 knows whether the connection goes on: Connection: close, HTTP/1.0, our close.
        return connection.h11.our_state is h11.DONE and connection.h11.their_state is h11.DONE
