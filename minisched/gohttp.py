"""How a Go client of kube-scheduler talks HTTP and JSON, ported as far as the extender needs:
client-go's TLS configuration, net/http's error texts, encoding/json's decoding and its errors,
fmt.Errorf without arguments.

Upstream, at the versions kubernetes v1.23.10 vendors, and the Go standard library it is built
with:
- k8s.io/client-go's transport/transport.go (TLSConfigFor, loadTLSFiles, dataFromSliceOrFile,
  rootCertPool, createErrorParsingCAData) and k8s.io/apimachinery's pkg/util/net/http.go
  (SetTransportDefaults): ``new_transport``, with Go's crypto/tls (X509KeyPair's errors),
  crypto/x509 (CertPool.AppendCertsFromPEM) and encoding/pem (Decode) reading the
  certificates, keys and CAs;
- Go's net/http (client.go: the Client.Timeout texts) and net (the dial errors):
  ``transport_error``, ``body_error``;
- Go's encoding/json (encode.go: Marshal's compact, HTML-escaped output; stream.go:
  Decoder.Decode; decode.go: the case-insensitive field match and UnmarshalTypeError;
  scanner.go: the syntax errors): ``dumps``, ``loads``, ``decode`` and the schema types
  (``Struct``, ``Slice``, ``Map``, ``Scalar``) it decodes into; pods and nodes are written as
  k8s.io/api's types write them (``object_json``);
- Go's fmt (print.go: Errorf, doPrintf's bad-verb texts): ``go_errorf``.

kube-scheduler imports these as a library, as the steps import this module: which calls an
extender takes and what they carry (k8s.io/kube-scheduler's extender/v1 types, as schemas
built from the types here) is the steps' ``extender.py``, the lesson.

Differs from upstream: the text of a transport error is Go's for a refused connection and a
timeout, Python's for the others (TLS, DNS: ``error_reason``); the text of a reply that is not
JSON is Go's for an empty body (``EOF``), a truncated one (``unexpected EOF``) and a bad first
character, Python's json module's otherwise; a bad certificate, key or CA is Go's text while
no PEM block is found, Python's ssl module's past that.
Differs from upstream: Go always writes some empty structs (``"status":{}``, ``"resources":{}``,
``"creationTimestamp":null``); the client's serialization leaves them out (a reader that
decodes into the API types sees the same object).
Not implemented: HTTP/2, and proxies from the environment (HTTPS_PROXY: Go's transport honours
them, never for localhost). Simplified: a client certificate from files is read once, where
client-go rereads changed files.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import ssl
import tempfile
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import urllib3
from kubernetes.client import ApiClient, V1Node, V1Pod

from .apimachinery import go_quote
from .codec import DecodeError, json_kind

__all__ = [
    "INT64",
    "NODE",
    "NODE_LIST",
    "STRING",
    "DecodeError",
    "Map",
    "Scalar",
    "Slice",
    "Struct",
    "body_error",
    "causes",
    "decode",
    "dumps",
    "error_reason",
    "go_errorf",
    "is_timeout",
    "loads",
    "new_transport",
    "node_list_json",
    "object_json",
    "transport_error",
]


# --- the transport (client-go's TLSConfigFor, apimachinery's SetTransportDefaults) -------------


def _read_file(path: str) -> bytes:
    """A TLS file's bytes; ValueError with Go's text for one that cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except IsADirectoryError:
        raise ValueError(f"read {path}: is a directory") from None
    except OSError as e:
        reason = os.strerror(e.errno).lower() if e.errno else str(e)
        raise ValueError(f"open {path}: {reason}") from None


def _data_from_slice_or_file(data: bytes, path: str) -> bytes:
    """The bytes given, else the file's (upstream: dataFromSliceOrFile)."""
    if data:
        return data
    if path:
        return _read_file(path)
    return b""


_PEM_BLOCK = re.compile(rb"-----BEGIN ([^\r\n-]*)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


def _pem_blocks(data: bytes) -> list[tuple[str, bool, bytes]]:
    """The PEM blocks in ``data``: type, whether it has headers, body (still base64).
    Simplified: Go's pem.Decode, for well-formed blocks."""
    return [
        (m.group(1).decode(errors="replace"), b":" in m.group(2).split(b"\n\n")[0], m.group(2))
        for m in _PEM_BLOCK.finditer(data)
    ]


def _load_root_cas(context: ssl.SSLContext, ca_data: bytes) -> None:
    """Trust only the certificates in ``ca_data`` (upstream: rootCertPool, with
    AppendCertsFromPEM's leniency: the bad blocks are skipped while one is good, and
    createErrorParsingCAData's errors when none is)."""
    loaded = 0
    first_error: str | None = None
    for block_type, has_headers, body in _pem_blocks(ca_data):
        if block_type != "CERTIFICATE" or has_headers:
            continue
        pem = b"-----BEGIN CERTIFICATE-----\n" + body + b"-----END CERTIFICATE-----\n"
        try:
            context.load_verify_locations(cadata=pem.decode())
            loaded += 1
        except (ssl.SSLError, ValueError) as e:
            first_error = first_error or f"failed to parse certificate: {e}"
    if loaded:
        return
    if not _pem_blocks(ca_data):
        reason = "unable to parse bytes as PEM block"
    else:
        reason = first_error or "no valid certificate authority data seen"
    raise ValueError(f"unable to load root certificates: {reason}")


def _check_key_pair_pem(cert_data: bytes, key_data: bytes) -> None:
    """tls.X509KeyPair's errors while it looks for the PEM blocks (the parse errors past that
    are the ssl module's)."""
    cert_types = [t for t, _, _ in _pem_blocks(cert_data)]
    if "CERTIFICATE" not in cert_types:
        if not cert_types:
            raise ValueError("tls: failed to find any PEM data in certificate input")
        if len(cert_types) == 1 and cert_types[0].endswith("PRIVATE KEY"):
            raise ValueError(
                "tls: failed to find certificate PEM data in certificate input, but did find a "
                "private key; PEM inputs may have been switched"
            )
        raise ValueError(
            'tls: failed to find "CERTIFICATE" PEM block in certificate input after skipping '
            f"PEM blocks of the following types: [{' '.join(cert_types)}]"
        )
    key_types = [t for t, _, _ in _pem_blocks(key_data)]
    if not any(t == "PRIVATE KEY" or t.endswith(" PRIVATE KEY") for t in key_types):
        if not key_types:
            raise ValueError("tls: failed to find any PEM data in key input")
        if key_types == ["CERTIFICATE"]:
            raise ValueError(
                "tls: found a certificate rather than a key in the PEM for the private key"
            )
        raise ValueError(
            'tls: failed to find PEM block with type ending in "PRIVATE KEY" in key input after '
            f"skipping PEM blocks of the following types: [{' '.join(key_types)}]"
        )


def _load_client_cert(context: ssl.SSLContext, cert_data: bytes, key_data: bytes) -> None:
    """The client certificate the server may ask for. The ssl module loads a key pair from
    files only: both go to a private temporary directory, removed at once."""
    _check_key_pair_pem(cert_data, key_data)
    with tempfile.TemporaryDirectory(prefix="minisched-extender-") as tmp:
        cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        for path, data in ((cert_path, cert_data), (key_path, key_data)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(data)
        try:
            context.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as e:
            raise ValueError(f"tls: {e}") from None


def new_transport(
    *,
    insecure: bool = False,
    server_name: str = "",
    cert_file: str = "",
    key_file: str = "",
    ca_file: str = "",
    cert_data: bytes = b"",
    key_data: bytes = b"",
    ca_data: bytes = b"",
) -> urllib3.PoolManager:
    """The connection pool for a client with these TLS settings, as client-go's rest.Config
    holds them (upstream: TLSConfigFor, then an http.Transport with SetTransportDefaults).
    The ``*_data`` arguments are PEM bytes and win over the ``*_file`` ones. ValueError with
    upstream's text for settings that cannot be used: a CA with ``insecure``, a file that
    cannot be read, a bad certificate, key or CA.

    ``insecure`` skips verifying the server. Whether TLS is used at all is the URL's scheme;
    with nothing set, an https:// URL verifies the server against the system's CAs.
    ``server_name`` is the name sent for SNI and checked in the server's certificate.
    """
    has_ca = bool(ca_file or ca_data)
    has_cert_auth = bool(cert_data or cert_file) and bool(key_data or key_file)
    # Sized as upstream's transport keeps idle connections per host (SetTransportDefaults:
    # MaxIdleConnsPerHost 25), so parallel calls to one server reuse connections.
    pool_options: dict[str, Any] = {"maxsize": 25, "retries": False}
    if not (has_ca or has_cert_auth or insecure or server_name):
        return urllib3.PoolManager(**pool_options)
    if has_ca and insecure:
        raise ValueError(
            "specifying a root certificates file with the insecure flag is not allowed"
        )
    # Every file set is read, in upstream's order, whatever is used of it (loadTLSFiles).
    ca_data = _data_from_slice_or_file(ca_data, ca_file)
    cert_data = _data_from_slice_or_file(cert_data, cert_file)
    key_data = _data_from_slice_or_file(key_data, key_file)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2  # upstream: MinVersion TLS 1.2
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if has_ca:
        _load_root_cas(context, ca_data)
    else:
        context.load_default_certs()
    if has_cert_auth:
        _load_client_cert(context, cert_data, key_data)
    pool_options["ssl_context"] = context
    if server_name:
        pool_options["server_hostname"] = server_name
    pool = urllib3.PoolManager(**pool_options)
    if insecure:
        pool.pool_classes_by_scheme = {**pool.pool_classes_by_scheme, "https": _UnverifiedPool}
    return pool


class _UnverifiedConnection(urllib3.connection.HTTPSConnection):
    """A connection to a server the configuration says not to verify. Upstream skips the
    verification silently; urllib3 would warn (InsecureRequestWarning) on each connection,
    unless told that it is verified, which is what the flag means to it here."""

    def connect(self) -> None:
        super().connect()
        self.is_verified = True


class _UnverifiedPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _UnverifiedConnection


# --- net/http's errors ---------------------------------------------------------------------------


def causes(e: BaseException) -> list[BaseException]:
    """``e`` and the errors it wraps (urllib3's ``reason``, then Python's chaining)."""
    out: list[BaseException] = []
    todo: list[BaseException | None] = [e]
    while todo:
        cause = todo.pop(0)
        if cause is None or any(cause is c for c in out):
            continue
        out.append(cause)
        reason = getattr(cause, "reason", None)  # an ssl error's is a string
        todo += [reason if isinstance(reason, BaseException) else None]
        todo += [cause.__cause__, cause.__context__]
    return out


def is_timeout(e: BaseException) -> bool:
    """Whether ``e`` is, or wraps, a time limit running out."""
    # urllib3's NewConnectionError is a ConnectTimeoutError too (for compatibility's sake),
    # whatever the connection's failure.
    return any(
        isinstance(c, (urllib3.exceptions.TimeoutError, TimeoutError))
        and not isinstance(c, urllib3.exceptions.NewConnectionError)
        for c in causes(e)
    )


def error_reason(e: BaseException) -> str:
    """A short reason for a failed exchange, from the innermost error that says it best:
    the certificate check's message, else the operating system's (Differs from upstream:
    Python's words, where Go prints its own, e.g. "x509: certificate signed by unknown
    authority")."""
    found = causes(e)
    for c in found:
        if isinstance(c, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {c.verify_message}"
    for c in found:
        if isinstance(c, OSError) and c.strerror:
            return c.strerror[:1].lower() + c.strerror[1:]
    lines = str(e).splitlines()
    return lines[0] if lines else type(e).__name__


def transport_error(e: BaseException, url: str) -> str:
    """Why a request to ``url`` got no answer, in Go's words for a timeout and a refused
    connection; Python's reason otherwise (Differs from upstream). Go's client prefixes it
    with the method and the quoted URL (url.Error): the caller does."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"unsupported protocol scheme {go_quote(parts.scheme)}"
    if any(isinstance(c, ConnectionRefusedError) for c in causes(e)):
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname or ""
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return f"dial tcp {address}: connect: connection refused"
    if is_timeout(e):
        return "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    return error_reason(e)


def body_error(e: BaseException) -> str:
    """Why reading an answer's body failed: Go's words for the client's time limit running
    out, ``error_reason`` otherwise."""
    if is_timeout(e):
        return (
            "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
        )
    return error_reason(e)


# --- Go's fmt.Errorf(msg) with no arguments -----------------------------------------------------


def go_errorf(format_string: str) -> str:
    """What Go's fmt.Errorf makes of ``format_string`` given no arguments: ``%%`` is ``%``,
    every other verb ``%!v(MISSING)``, a lone ``%`` at the end ``%!(NOVERB)`` (upstream: fmt's
    doPrintf, with its BADWIDTH, BADPREC and BADINDEX cases)."""
    out: list[str] = []
    i, end = 0, len(format_string)

    def parse_num(i: int) -> tuple[bool, int]:
        start = i
        while i < end and format_string[i].isascii() and format_string[i].isdigit():
            i += 1
        return i > start, i

    def arg_number(i: int, good: bool) -> tuple[int, bool, bool]:
        """(new i, whether an index was found, good): with no arguments, any [n] is bad."""
        if i >= end or format_string[i] != "[":
            return i, False, good
        close = format_string.find("]", i + 1)
        if close < 0 or i + 3 > end:
            return i + 1, False, False
        is_num, after = parse_num(i + 1)
        return close + 1, is_num and after == close, False

    while i < end:
        percent = format_string.find("%", i)
        if percent < 0:
            out.append(format_string[i:])
            break
        out.append(format_string[i:percent])
        i = percent + 1
        if i >= end:
            out.append("%!(NOVERB)")
            break
        good = True
        while i < end and format_string[i] in "#0+- ":
            i += 1
        i, after_index, good = arg_number(i, good)
        if i < end and format_string[i] == "*":
            i += 1
            out.append("%!(BADWIDTH)")
            after_index = False
        else:
            is_num, i = parse_num(i)
            if after_index and is_num:
                good = False
        if i + 1 < end and format_string[i] == ".":
            i += 1
            if after_index:
                good = False
            i, after_index, good = arg_number(i, good)
            if i < end and format_string[i] == "*":
                i += 1
                out.append("%!(BADPREC)")
                after_index = False
            else:
                _, i = parse_num(i)
        if not after_index:
            i, after_index, good = arg_number(i, good)
        if i >= end:
            out.append("%!(NOVERB)")
            break
        verb = format_string[i]
        i += 1
        if verb == "%":
            out.append("%")
        elif not good:
            out.append(f"%!{verb}(BADINDEX)")
        else:
            out.append(f"%!{verb}(MISSING)")
    return "".join(out)


# --- encoding/json: writing ----------------------------------------------------------------------


class _Serializer(ApiClient):
    """The client's serialization of API objects, with times as metav1.Time writes them
    (RFC 3339 in UTC, to the second: "2024-01-02T03:04:05Z"; the client writes isoformat)."""

    def sanitize_for_serialization(self, obj: Any) -> Any:
        if isinstance(obj, datetime.datetime):
            if obj.tzinfo is not None:
                obj = obj.astimezone(datetime.timezone.utc)
            return obj.strftime("%Y-%m-%dT%H:%M:%SZ")
        return super().sanitize_for_serialization(obj)


_api_lock = threading.Lock()
_api: _Serializer | None = None


def _api_client() -> _Serializer:
    """One client for every caller, made on first use: it only converts models (making one
    builds a connection pool nobody uses)."""
    global _api
    with _api_lock:
        if _api is None:
            _api = _Serializer()
        return _api


def object_json(obj: V1Pod | V1Node) -> dict[str, Any]:
    """A pod or node as a Go client marshals the object it holds: the API's JSON without
    apiVersion and kind (the informers' objects carry none)."""
    out = _api_client().sanitize_for_serialization(obj)
    out.pop("apiVersion", None)
    out.pop("kind", None)
    return out


def node_list_json(nodes: list[V1Node]) -> dict[str, Any]:
    """A v1.NodeList: its empty ListMeta, and null items for no node (a nil slice)."""
    return {"metadata": {}, "items": [object_json(n) for n in nodes] or None}


def dumps(value: Any) -> bytes:
    """JSON as Go's json.Marshal writes it: compact, UTF-8, with <, >, & and the line
    separators escaped (they appear only inside strings, so replacing them is safe)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for ch, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, esc)
    return text.encode()


# --- encoding/json: reading ----------------------------------------------------------------------


class _Float(float):
    """A JSON number with a fraction or exponent, keeping its text for Go's errors."""

    text: str

    def __new__(cls, text: str) -> _Float:
        number = super().__new__(cls, text)
        number.text = text
        return number


def loads(body: bytes) -> Any:
    """The first JSON value of ``body``, as Go's json.Decoder reads it (what follows it is
    not read). DecodeError with Go's ``EOF`` for an empty body, ``unexpected EOF`` for a
    truncated one, its words for a bad first character; Python's json module's otherwise."""
    text = body.decode("utf-8", errors="replace")
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise DecodeError("EOF")
    try:
        value, _ = json.JSONDecoder(parse_float=_Float).raw_decode(text, start)
    except json.JSONDecodeError as e:
        rest = text[e.pos :]
        if e.pos >= len(text) or any(word.startswith(rest) for word in ("true", "false", "null")):
            raise DecodeError("unexpected EOF") from None
        if e.msg == "Expecting value" and e.pos == start:
            char = {"'": "'\\''", '"': "'\"'"}.get(text[e.pos], f"'{text[e.pos]}'")
            raise DecodeError(f"invalid character {char} looking for beginning of value") from None
        raise DecodeError(str(e)) from None
    return value


# The Go types a value is decoded into, for ``decode``: a type's name in Go's errors, and what
# it holds.
@dataclass(frozen=True)
class Struct:
    """A struct of a package imported as ``v1`` (k8s.io/api's core/v1, and
    k8s.io/kube-scheduler's extender/v1): its name, and its fields as (Go name, type) pairs."""

    name: str
    fields: tuple[tuple[str, Any], ...]

    @property
    def go_type(self) -> str:
        return f"v1.{self.name}"


@dataclass(frozen=True)
class Slice:
    """A slice of ``elem``; ``go_type`` is its name in errors (``[]string``)."""

    elem: Any
    go_type: str


@dataclass(frozen=True)
class Map:
    """A map from strings to ``elem``; ``go_type`` is its name in errors."""

    elem: Any
    go_type: str


@dataclass(frozen=True)
class Scalar:
    """One of the three leaf types below, by its Go name."""

    go_type: str


STRING = Scalar("string")
INT64 = Scalar("int64")
# A v1.Node, read with the client's models.
NODE = Scalar("v1.Node")
NODE_LIST = Struct(
    "NodeList",
    (("kind", STRING), ("apiVersion", STRING), ("items", Slice(NODE, "[]v1.Node"))),
)


def _fold(key: str) -> str:
    """A key as Go's decoder compares it with a field name: ASCII case folded, and the two
    non-ASCII letters that fold to ASCII ones (the Kelvin sign, the long s) folded too."""
    return key.replace("\u212a", "k").replace("\u017f", "s").lower()


def _type_error(what: str, go_type: str, struct: str | None, path: list[str]) -> DecodeError:
    where = f"Go struct field {struct}.{'.'.join(path)}" if struct else "Go value"
    return DecodeError(f"json: cannot unmarshal {what} into {where} of type {go_type}")


def decode(value: Any, typ: Any, struct: str | None = None, path: list[str] | None = None) -> Any:
    """``value`` (from ``loads``) read as Go's encoding/json reads it into ``typ``: a struct
    is a dict of the fields given (by their Go names, a key matched case-insensitively,
    unknown keys ignored), a null is None (the zero value), and the first value of the wrong
    type raises DecodeError with the error Go's decoder returns. ``struct`` and ``path`` are
    where the value is, for the error's text."""
    path = path or []
    if value is None:
        return None
    if isinstance(typ, Struct):
        if not isinstance(value, dict):
            raise _type_error(json_kind(value), typ.go_type, struct, path)
        out: dict[str, Any] = {}
        exact = dict(typ.fields)
        for key, item in value.items():
            name = (
                key
                if key in exact
                else next((n for n, _ in typ.fields if _fold(n) == _fold(key)), None)
            )
            if name is None:
                continue  # Go ignores unknown keys
            out[name] = decode(item, exact[name], typ.name, [*path, name])
        return out
    if isinstance(typ, Slice):
        if not isinstance(value, list):
            raise _type_error(json_kind(value), typ.go_type, struct, path)
        return [decode(item, typ.elem, struct, path) for item in value]
    if isinstance(typ, Map):
        if not isinstance(value, dict):
            raise _type_error(json_kind(value), typ.go_type, struct, path)
        # Go's decoder names no map key in its errors.
        return {k: decode(v, typ.elem, struct, path) for k, v in value.items()}
    if typ is NODE:
        if not isinstance(value, dict):
            raise _type_error(json_kind(value), typ.go_type, struct, path)
        try:
            return _api_client()._ApiClient__deserialize(value, "V1Node")
        except Exception as e:  # the client's models raise several kinds
            # Differs from upstream: the client's words for a node it cannot read.
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise DecodeError(
                f"json: cannot unmarshal into Go value of type v1.Node: {reason}"
            ) from e
    if typ is STRING:
        if isinstance(value, str):
            return value
        what = "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        raise _type_error(what or json_kind(value), typ.go_type, struct, path)
    # int64: an integer literal in range; anything else is Go's error.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _type_error(json_kind(value), typ.go_type, struct, path)
    if isinstance(value, float) or not -(2**63) <= value < 2**63:
        text = value.text if isinstance(value, _Float) else str(value)
        raise _type_error(f"number {text}", typ.go_type, struct, path)
    return value
