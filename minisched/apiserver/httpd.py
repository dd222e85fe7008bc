"""HTTP/1.1 on asyncio streams: the part of an HTTP server the embedded API server needs.

Upstream: Go's ``net/http`` server, which kube-apiserver serves with (``server.go``: reading a
request, ``Expect: 100-continue``, keep-alive, chunked watch responses; ``DefaultMaxHeaderBytes``).

Why not a library: the server used aiohttp (which the ``kubernetes`` client pulls in), and
importing aiohttp, client and all, was half of the server's start, 220 ms of 400 on a slow
machine, measured. What is served here is small: one request at a time per connection, bodies
by ``Content-Length`` or chunked, whole responses or a chunked stream (watch), TLS by the
``ssl`` module.

What a client gets, as from net/http:

- any method token reaches the handler (which answers 405 for those it does not serve);
- a request that is not HTTP/1.x gets a ``400 BadRequest`` Status and the connection is closed.
  Differs from upstream: net/http writes a plain-text ``400 Bad Request``; a Status keeps every
  answer one a Kubernetes client can read;
- a head larger than ``MAX_HEADER_BYTES`` is a ``431``, also as a Status;
- HTTP/1.1 connections stay open unless the client says ``Connection: close``; HTTP/1.0 ones
  close unless it says ``keep-alive``; a body the handler did not read closes the connection;
- ``Expect: 100-continue`` is answered when the handler first reads the body.

Not implemented: HTTP/2 (TLS offers no ALPN protocol, so Go clients such as kubectl speak
HTTP/1.1, as they do to any server without h2), trailers, pipelining beyond one request at a
time (the next request is read after the answer is written, which is all clients do).
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qsl, unquote

MAX_HEADER_BYTES = 1 << 20  # net/http's DefaultMaxHeaderBytes: the request line and headers
# RFC 9110 token characters: what a method and a header name may be made of.
TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Bytes a request target may not hold: controls, space, DEL, and anything not ASCII (clients
# percent-encode those; Go's url.ParseRequestURI refuses control bytes too).
BAD_TARGET = re.compile(rb"[\x00-\x20\x7f-\xff]")
CHUNK_SIZE = re.compile(rb"[0-9a-fA-F]{1,16}")  # a chunk's size, in hex
REASONS = {
    100: "Continue",
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    409: "Conflict",
    410: "Gone",
    413: "Request Entity Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


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


class Request:
    """One request: its head parsed, its body read on demand (``read``)."""

    def __init__(
        self,
        method: str,
        raw_path: str,
        version: str,
        headers: Headers,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.method = method
        self.raw_path = raw_path  # the target as sent: path and query, still percent-encoded
        path, _, query_string = raw_path.partition("?")
        self.path = unquote(path)
        # The first value of each parameter, as Go's url.Values.Get reads it; "+" is a space.
        self.query: dict[str, str] = {}
        for name, value in parse_qsl(query_string, keep_blank_values=True):
            self.query.setdefault(name, value)
        self.version = version
        self.headers = headers
        self.transport = writer.transport
        self._reader = reader
        self._writer = writer
        # None: the body is chunked, or there is none (then body_consumed is already true).
        self.content_length: int | None = None
        encoding = headers.get("Transfer-Encoding")
        length = headers.get("Content-Length")
        if encoding is not None:
            if encoding.strip().lower() != "chunked":
                raise BadRequest(f"unsupported transfer encoding: {encoding!r}", 501)
            if length is not None:
                raise BadRequest("both Transfer-Encoding and Content-Length")
        elif length is not None:
            digits = length.strip()
            if not (digits.isascii() and digits.isdigit()):
                raise BadRequest(f"bad Content-Length {length!r}")
            self.content_length = int(digits)
        # Whether the body has been read to its end: otherwise the connection cannot serve
        # another request (its next bytes would be the rest of this body).
        self.body_consumed = encoding is None and not self.content_length
        self._continue_sent = False

    def keep_alive(self) -> bool:
        connection = (self.headers.get("Connection") or "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection

    async def read(self, limit: int) -> bytes:
        """The whole body; BodyTooLarge when it is longer than ``limit`` bytes."""
        if self.body_consumed:
            return b""
        if self.content_length is not None and self.content_length > limit:
            raise BodyTooLarge()
        if not self._continue_sent and (self.headers.get("Expect") or "").lower() == (
            "100-continue"
        ):
            self._continue_sent = True
            self._writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            if self.content_length is not None:
                data = await self._reader.readexactly(self.content_length)
            else:
                data = await self._read_chunked(limit)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            raise BadRequest("the body ended early or its chunks are malformed") from None
        self.body_consumed = True
        return data

    async def _read_chunked(self, limit: int) -> bytes:
        data = bytearray()
        while True:
            size_line = await self._reader.readuntil(b"\r\n")
            size_text = size_line[:-2].split(b";", 1)[0].strip()
            if not CHUNK_SIZE.fullmatch(size_text):
                raise BadRequest(f"bad chunk size {size_text[:20]!r}")
            size = int(size_text, 16)
            if size == 0:
                # Trailers (ignored), up to the empty line.
                while (await self._reader.readuntil(b"\r\n")) != b"\r\n":
                    pass
                return bytes(data)
            if len(data) + size > limit:
                raise BodyTooLarge()
            data += await self._reader.readexactly(size)
            if await self._reader.readexactly(2) != b"\r\n":
                raise BadRequest("a chunk does not end with CRLF")


_date_cache: tuple[int, bytes] = (0, b"")


def _date_header() -> bytes:
    """``Date: ...`` in HTTP's format, made once a second (net/http sends it on every answer)."""
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        stamp = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now))
        _date_cache = (now, f"Date: {stamp}\r\n".encode())
    return _date_cache[1]


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}\r\n"]
    lines += [f"{name}: {value}\r\n" for name, value in headers.items()]
    return "".join(lines).encode("latin-1") + _date_header() + b"\r\n"


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

    def encode(self, head_only: bool, close: bool) -> bytes:
        headers = {**self.headers, "Content-Length": str(len(self.body))}
        if close:
            headers["Connection"] = "close"
        head = _head(self.status, headers)
        return head if head_only else head + self.body


class StreamResponse:
    """An answer written as it is made, in chunks (a watch): ``prepare``, ``write``...,
    ``write_eof``. The handler writes it all before it returns."""

    def __init__(self, request: Request, status: int = 200, content_type: str = "") -> None:
        self.status = status
        self.headers = {"Content-Type": content_type, "Transfer-Encoding": "chunked"}
        self._writer = request._writer
        self.finished = False

    async def prepare(self) -> None:
        self._writer.write(_head(self.status, self.headers))
        await self._writer.drain()

    async def write(self, data: bytes) -> None:
        if data:
            self._writer.write(b"%x\r\n%b\r\n" % (len(data), data))
            await self._writer.drain()  # a client that does not read holds this stream only

    async def write_eof(self) -> None:
        self._writer.write(b"0\r\n\r\n")
        await self._writer.drain()
        self.finished = True


Handler = Callable[[Request], Awaitable["Response | StreamResponse"]]
# What to answer a request that is not HTTP: (status, message) -> a Response.
ErrorResponder = Callable[[int, str], Response]


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    """The request line and headers, without the final CRLF CRLF; None at a clean EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadRequest("the request ended before its headers did") from None
    except asyncio.LimitOverrunError:
        raise BadRequest("request headers are too large", 431) from None
    # Empty lines before a request line are allowed (RFC 9112 section 2.2).
    return head.lstrip(b"\r\n")[:-4]


def _parse_head(head: bytes) -> tuple[str, str, str, Headers]:
    request_line, *header_lines = head.split(b"\r\n")
    parts = request_line.split(b" ")
    if len(parts) != 3:
        raise BadRequest(f"bad request line {request_line[:60]!r}")
    method, target, version = parts
    if not TOKEN.fullmatch(method):
        raise BadRequest(f"bad method {method[:20]!r}")
    if version not in (b"HTTP/1.1", b"HTTP/1.0"):
        raise BadRequest(f"unsupported protocol version {version[:20]!r}", 505)
    if BAD_TARGET.search(target) or not target:
        raise BadRequest("bytes not allowed in a request target")
    if not target.startswith(b"/"):
        # The absolute form (a client talking to a proxy): the path is what follows the host.
        scheme, sep, rest = target.partition(b"://")
        if not sep or scheme.lower() not in (b"http", b"https"):
            raise BadRequest(f"bad request target {target[:60]!r}")
        target = b"/" + rest.partition(b"/")[2]
    items: dict[str, str] = {}
    for line in header_lines:
        name, colon, value = line.partition(b":")
        if not colon or not TOKEN.fullmatch(name):
            raise BadRequest(f"malformed header line {line[:60]!r}")
        value = value.strip(b" \t")
        if b"\n" in value or b"\r" in value or b"\x00" in value:
            raise BadRequest(f"bad value of header {name[:60]!r}")
        key = name.decode("ascii").lower()
        text = value.decode("latin-1")
        if key == "content-length" and key in items and items[key] != text:
            raise BadRequest("differing Content-Length headers")
        items.setdefault(key, text)
    return method.decode("ascii"), target.decode("ascii"), version.decode("ascii"), Headers(items)


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
        self._server = await asyncio.start_server(
            self._serve, sock=sock, ssl=ssl_context, limit=MAX_HEADER_BYTES
        )

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
        try:
            while await self._one_request(task, reader, writer):
                pass
        except (ConnectionError, asyncio.CancelledError, ssl.SSLError, TimeoutError):
            pass  # the client left, or the server is stopping
        finally:
            self._connections.discard(task)
            self._busy.discard(task)
            writer.close()

    async def _one_request(
        self, task: asyncio.Task[None], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Read one request, answer it; whether the connection serves another."""
        try:
            head = await _read_head(reader)
            if head is None:
                return False
            request = Request(*_parse_head(head), reader, writer)
        except BadRequest as exc:
            response = self.error_response(exc.status, exc.message)
            writer.write(response.encode(head_only=False, close=True))
            await writer.drain()
            return False
        self._busy.add(task)
        try:
            response = await self.handler(request)
        except BadRequest as exc:  # the body was malformed
            response = self.error_response(exc.status, exc.message)
            request.body_consumed = False
        finally:
            self._busy.discard(task)
        keep = request.keep_alive() and request.body_consumed
        if isinstance(response, StreamResponse):
            # Written by the handler; a stream it did not finish leaves the connection unusable.
            return keep and response.finished
        writer.write(response.encode(head_only=request.method == "HEAD", close=not keep))
        await writer.drain()
        return keep
