"""HTTPExtender: a scheduler extender, an outside process the scheduler asks over HTTP.

Upstream, at v1.23.10 (as kubernetes-sigs/scheduler-plugins v0.23.10 vendors it):
pkg/scheduler/extender.go (HTTPExtender, NewHTTPExtender, makeTransport, send, Filter,
Prioritize, Bind, ProcessPreemption and the victims' conversions), k8s.io/kube-scheduler's
extender/v1/types.go (the wire types), client-go's transport.TLSConfigFor (what tlsConfig
means), and pkg/scheduler/factory.go (Configurator.create: ``new_extenders``).

An extender is configured by the file's ``extenders:`` (``config.Extender``). Each call is one
HTTP POST of a JSON body to ``<urlPrefix>/<verb>``; the answer is JSON too:

- filter: the pod and the nodes that passed the Filter plugins (whole, or only their names
  when the extender is nodeCacheCapable); the answer names the nodes that pass, and why the
  others failed (FailedNodes: preemption may help; FailedAndUnresolvableNodes: it cannot).
- prioritize: the same arguments; the answer is a score, 0..MAX_EXTENDER_PRIORITY, per node.
- preempt: the pod and the victims preemption chose on each candidate node; the answer is the
  victims the extender agrees to, maybe on fewer nodes.
- bind: the pod's name, namespace and UID, and the node: the extender binds the pod itself.

The wire format is Go's encoding/json of the extender/v1 types, which have no json tags: the
keys are the Go field names (``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ``Host``,
``Score``, ...), and a reply's keys are matched case-insensitively, as Go's decoder matches
them; unknown keys are ignored; a value of the wrong type is Go's ``json: cannot unmarshal
...`` error. Pods and nodes are written as the API writes them (the client's serialization,
times as metav1.Time writes them), and a reply's nodes read back with the client's models.

Surprising, and ported: an extender's ``Error`` is used as a format string (upstream:
fmt.Errorf(result.Error)), so ``100%`` reads ``100%!(NOVERB)``; a non-nodeCacheCapable
extender that answers only NodeNames filters every node out (its Nodes are read, and are
none); the victims lose their PodDisruptionBudget count both ways (NumPDBViolations is neither
sent in MetaVictims nor read back: every node the extender returns counts 0 violations; v1.24
fixed it); a Go ``%v`` of a MetaPod pointer (``&{uid}``) is in the "claims to preempt" error.

Differs from upstream: the text of a transport error is Go's for a refused connection and a
timeout, Python's for the others (TLS, DNS: ``_reason``); the text of a reply
that is not JSON is Go's for an empty body (``EOF``), a truncated one (``unexpected EOF``) and
a bad first character, Python's json module's otherwise; a bad certificate, key or CA is
Go's text while no PEM block is found, Python's ssl module's past that. Differs from upstream:
a null victims entry in a preempt reply is an error here; upstream dereferences it and panics.
Differs from upstream: Go always writes some empty structs (``"status":{}``, ``"resources":{}``,
``"creationTimestamp":null``); the client's serialization leaves them out (a reader that
decodes into the API types sees the same object).
Not implemented: HTTP/2, proxies from the environment (HTTPS_PROXY: Go's transport honours
them, never for localhost) and redirects (Go's client follows them; here a 3xx is answered as
any status but 200 is). Simplified: httpTimeout bounds the connection and each read, where
Go's Client.Timeout bounds the whole exchange; a client certificate from files is read once,
where client-go rereads changed files.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import urllib3
from kubernetes.client import ApiClient, V1Node, V1Pod

from minisched.apimachinery import go_quote
from minisched.codec import json_kind

from . import config as schedconfig
from . import framework, preemption
from .framework import FailedNodesMap, NodeInfoLister

# How long a call may take when the configuration gives no httpTimeout, a Go duration as
# config.Extender.http_timeout holds it (upstream: DefaultExtenderTimeout).
DEFAULT_EXTENDER_TIMEOUT = "5s"


class ExtenderError(Exception):
    """A call to an extender failed; the text is upstream's error."""


# --- the transport (makeTransport, client-go's TLSConfigFor) -----------------------------------


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
    """The client certificate the extender may ask for. The ssl module loads a key pair from
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


def make_transport(cfg: schedconfig.Extender) -> urllib3.PoolManager:
    """The connection pool an extender is called through (upstream: makeTransport, then
    client-go's TLSConfigFor). ValueError with upstream's text for a TLS setting that cannot
    be used.

    enableHTTPS only means "skip verifying the server when no CA is given": whether TLS is
    used at all is the urlPrefix's scheme (an http:// prefix talks plain HTTP, whatever
    enableHTTPS says). With nothing TLS-related set, an https:// prefix verifies the server
    against the system's CAs.
    """
    tls = cfg.tls_config or schedconfig.ExtenderTLSConfig()
    insecure = tls.insecure
    if cfg.enable_https and not (tls.ca_file or tls.ca_data):
        insecure = True
    has_ca = bool(tls.ca_file or tls.ca_data)
    has_cert_auth = bool(tls.cert_data or tls.cert_file) and bool(tls.key_data or tls.key_file)
    # A pool per extender, sized as upstream's transport keeps idle connections per host
    # (utilnet.SetTransportDefaults: MaxIdleConnsPerHost 25), so parallel prioritize calls
    # reuse connections.
    pool_options: dict[str, Any] = {"maxsize": 25, "retries": False}
    if not (has_ca or has_cert_auth or insecure or tls.server_name):
        return urllib3.PoolManager(**pool_options)
    if has_ca and insecure:
        raise ValueError(
            "specifying a root certificates file with the insecure flag is not allowed"
        )
    # Every file set is read, in upstream's order, whatever is used of it (loadTLSFiles).
    ca_data = _data_from_slice_or_file(tls.ca_data, tls.ca_file)
    cert_data = _data_from_slice_or_file(tls.cert_data, tls.cert_file)
    key_data = _data_from_slice_or_file(tls.key_data, tls.key_file)
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
    if tls.server_name:
        # The name sent for SNI and checked in the server's certificate.
        pool_options["server_hostname"] = tls.server_name
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


# --- Go's fmt.Errorf(msg) with no arguments -----------------------------------------------------


def go_errorf(format_string: str) -> str:
    """What Go's fmt.Errorf makes of ``format_string`` given no arguments, as upstream uses
    an extender's Error: ``%%`` is ``%``, every other verb ``%!v(MISSING)``, a lone ``%`` at
    the end ``%!(NOVERB)`` (upstream: fmt's doPrintf, with its BADWIDTH, BADPREC and BADINDEX
    cases)."""
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


# --- the wire format: Go's encoding/json of the extender/v1 types ------------------------------


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
    """One client for every extender, made on first use: it only converts models (making one
    builds a connection pool nobody uses)."""
    global _api
    with _api_lock:
        if _api is None:
            _api = _Serializer()
        return _api


def _object_json(obj: V1Pod | V1Node) -> dict[str, Any]:
    """A pod or node as upstream sends it: the API's JSON without apiVersion and kind (the
    informers' objects carry none)."""
    out = _api_client().sanitize_for_serialization(obj)
    out.pop("apiVersion", None)
    out.pop("kind", None)
    return out


def _dumps(value: Any) -> bytes:
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


def _node_list_json(nodes: list[V1Node]) -> dict[str, Any]:
    """A v1.NodeList: its empty ListMeta, and null items for no node (a nil slice)."""
    return {"metadata": {}, "items": [_object_json(n) for n in nodes] or None}


class _Float(float):
    """A JSON number with a fraction or exponent, keeping its text for Go's errors."""

    text: str

    def __new__(cls, text: str) -> _Float:
        number = super().__new__(cls, text)
        number.text = text
        return number


# The types of the replies, for the decoder below: a Go type's name in errors, and its fields.
@dataclass(frozen=True)
class _Struct:
    name: str
    fields: tuple[tuple[str, Any], ...]

    @property
    def go_type(self) -> str:
        return f"v1.{self.name}"


@dataclass(frozen=True)
class _Slice:
    elem: Any
    go_type: str


@dataclass(frozen=True)
class _Map:
    elem: Any
    go_type: str


@dataclass(frozen=True)
class _Scalar:
    go_type: str  # "string" or "int64"


_STRING = _Scalar("string")
_INT64 = _Scalar("int64")
# A v1.Node, read with the client's models.
_NODE = _Scalar("v1.Node")
_NODE_LIST = _Struct(
    "NodeList",
    (("kind", _STRING), ("apiVersion", _STRING), ("items", _Slice(_NODE, "[]v1.Node"))),
)
_FAILED_NODES = _Map(_STRING, "v1.FailedNodesMap")
EXTENDER_FILTER_RESULT = _Struct(
    "ExtenderFilterResult",
    (
        ("Nodes", _NODE_LIST),
        ("NodeNames", _Slice(_STRING, "[]string")),
        ("FailedNodes", _FAILED_NODES),
        ("FailedAndUnresolvableNodes", _FAILED_NODES),
        ("Error", _STRING),
    ),
)
HOST_PRIORITY_LIST = _Slice(
    _Struct("HostPriority", (("Host", _STRING), ("Score", _INT64))), "v1.HostPriorityList"
)
EXTENDER_BINDING_RESULT = _Struct("ExtenderBindingResult", (("Error", _STRING),))
_META_POD = _Struct("MetaPod", (("UID", _STRING),))
_META_VICTIMS = _Struct(
    "MetaVictims",
    (("Pods", _Slice(_META_POD, "[]*v1.MetaPod")), ("NumPDBViolations", _INT64)),
)
EXTENDER_PREEMPTION_RESULT = _Struct(
    "ExtenderPreemptionResult",
    (("NodeNameToMetaVictims", _Map(_META_VICTIMS, "map[string]*v1.MetaVictims")),),
)


def _fold(key: str) -> str:
    """A key as Go's decoder compares it with a field name: ASCII case folded, and the two
    non-ASCII letters that fold to ASCII ones (the Kelvin sign, the long s) folded too."""
    return key.replace("\u212a", "k").replace("\u017f", "s").lower()


def _type_error(what: str, go_type: str, struct: str | None, path: list[str]) -> ExtenderError:
    where = f"Go struct field {struct}.{'.'.join(path)}" if struct else "Go value"
    return ExtenderError(f"json: cannot unmarshal {what} into {where} of type {go_type}")


def _decode(value: Any, typ: Any, struct: str | None = None, path: list[str] | None = None) -> Any:
    """``value`` read as Go's encoding/json reads it into ``typ``: a struct is a dict of the
    fields given (by their Go names), a null is None (the zero value), and the first value of
    the wrong type raises Go's error (the one Go's decoder returns)."""
    path = path or []
    if value is None:
        return None
    if isinstance(typ, _Struct):
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
            out[name] = _decode(item, exact[name], typ.name, [*path, name])
        return out
    if isinstance(typ, _Slice):
        if not isinstance(value, list):
            raise _type_error(json_kind(value), typ.go_type, struct, path)
        return [_decode(item, typ.elem, struct, path) for item in value]
    if isinstance(typ, _Map):
        if not isinstance(value, dict):
            raise _type_error(json_kind(value), typ.go_type, struct, path)
        # Go's decoder names no map key in its errors.
        return {k: _decode(v, typ.elem, struct, path) for k, v in value.items()}
    if typ is _NODE:
        if not isinstance(value, dict):
            raise _type_error(json_kind(value), typ.go_type, struct, path)
        try:
            return _api_client()._ApiClient__deserialize(value, "V1Node")
        except Exception as e:  # the client's models raise several kinds
            # Differs from upstream: the client's words for a node it cannot read.
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ExtenderError(
                f"json: cannot unmarshal into Go value of type v1.Node: {reason}"
            ) from e
    if typ is _STRING:
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


def _loads(body: bytes) -> Any:
    """The first JSON value of a reply, as Go's json.Decoder reads it (what follows it is
    not read). Errors: Go's ``EOF`` for an empty body, ``unexpected EOF`` for a truncated
    one, its words for a bad first character; Python's json module's otherwise."""
    text = body.decode("utf-8", errors="replace")
    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        raise ExtenderError("EOF")
    try:
        value, _ = json.JSONDecoder(parse_float=_Float).raw_decode(text, start)
    except json.JSONDecodeError as e:
        rest = text[e.pos :]
        if e.pos >= len(text) or any(word.startswith(rest) for word in ("true", "false", "null")):
            raise ExtenderError("unexpected EOF") from None
        if e.msg == "Expecting value" and e.pos == start:
            char = {"'": "'\\''", '"': "'\"'"}.get(text[e.pos], f"'{text[e.pos]}'")
            raise ExtenderError(
                f"invalid character {char} looking for beginning of value"
            ) from None
        raise ExtenderError(str(e)) from None
    return value


# --- HTTPExtender --------------------------------------------------------------------------------


@dataclass(eq=False)
class HTTPExtender:
    """An extender reached over HTTP (upstream: HTTPExtender); implements framework.Extender.

    Its methods raise ExtenderError (and, in ``process_preemption``, the node lister's error)
    with upstream's texts; ``new_http_extender`` builds one from the configuration.
    """

    extender_url: str = ""
    preempt_verb: str = ""
    filter_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    client: urllib3.PoolManager = field(
        default_factory=lambda: urllib3.PoolManager(retries=False), repr=False
    )
    # The whole call's time limit, in seconds; None for none (upstream: http.Client.Timeout).
    timeout: float | None = 5.0
    node_cache_capable: bool = False
    managed_resources: set[str] = field(default_factory=set)
    ignorable: bool = False

    def name(self) -> str:
        """The extender's URL prefix names it (upstream: Name)."""
        return self.extender_url

    def is_ignorable(self) -> bool:
        """Whether the scheduling goes on when this extender fails (upstream: IsIgnorable)."""
        return self.ignorable

    def supports_preemption(self) -> bool:
        """Upstream: SupportsPreemption: a preempt verb is set."""
        return bool(self.preempt_verb)

    def is_binder(self) -> bool:
        """Upstream: IsBinder: a bind verb is set."""
        return bool(self.bind_verb)

    def is_interested(self, pod: V1Pod) -> bool:
        """Whether the pod asks for one of the resources the extender manages, in a request
        or a limit of a container or an init container; an extender that manages none is
        interested in every pod (upstream: IsInterested)."""
        if not self.managed_resources:
            return True
        spec = pod.spec
        if spec is None:
            return False
        return self._has_managed_resources(spec.containers) or self._has_managed_resources(
            spec.init_containers
        )

    def _has_managed_resources(self, containers: list[Any] | None) -> bool:
        for container in containers or []:
            resources = container.resources
            if resources is None:
                continue
            for names in (resources.requests, resources.limits):
                if any(name in self.managed_resources for name in names or {}):
                    return True
        return False

    def _extender_args(self, pod: V1Pod, nodes: list[V1Node]) -> dict[str, Any]:
        """ExtenderArgs: the pod, and the nodes whole or (nodeCacheCapable) by name."""
        if self.node_cache_capable:
            return {
                "Pod": _object_json(pod),
                "Nodes": None,
                "NodeNames": [n.metadata.name for n in nodes],
            }
        return {"Pod": _object_json(pod), "Nodes": _node_list_json(nodes), "NodeNames": None}

    def filter(
        self, pod: V1Pod, nodes: list[V1Node]
    ) -> tuple[list[V1Node], FailedNodesMap, FailedNodesMap]:
        """The nodes the extender lets through, and the ones it failed with why: those a
        preemption may help, and those it cannot (upstream: Filter). No filter verb passes
        every node. A nodeCacheCapable extender's names are mapped back to the nodes given;
        a name not among them is an error. Otherwise the reply's Nodes are the result, read
        back from their JSON (so an extender that answers only names passes no node)."""
        if not self.filter_verb:
            return nodes, {}, {}
        from_node_name = {n.metadata.name: n for n in nodes}
        result = (
            _decode(
                self.send(self.filter_verb, self._extender_args(pod, nodes)), EXTENDER_FILTER_RESULT
            )
            or {}
        )
        if result.get("Error"):
            raise ExtenderError(go_errorf(result["Error"]))
        node_result: list[V1Node] = []
        names = result.get("NodeNames")
        node_list = result.get("Nodes")
        if self.node_cache_capable and names is not None:
            for name in names:
                name = name or ""
                if name not in from_node_name:
                    raise ExtenderError(
                        f"extender {go_quote(self.extender_url)} claims a filtered node "
                        f"{go_quote(name)} which is not found in the input node list"
                    )
                node_result.append(from_node_name[name])
        elif node_list is not None:
            node_result = [n or V1Node() for n in node_list.get("items") or []]
        return (
            node_result,
            _string_map(result.get("FailedNodes")),
            _string_map(result.get("FailedAndUnresolvableNodes")),
        )

    def prioritize(self, pod: V1Pod, nodes: list[V1Node]) -> tuple[list[tuple[str, int]], int]:
        """Each node's score from the extender, as (host, score) pairs, and the extender's
        weight (upstream: Prioritize). No prioritize verb scores every node 0 with weight 0.
        The scores are used as they come: neither checked nor clamped."""
        if not self.prioritize_verb:
            return [(n.metadata.name, 0) for n in nodes], 0
        result = _decode(
            self.send(self.prioritize_verb, self._extender_args(pod, nodes)), HOST_PRIORITY_LIST
        )
        priorities = [
            ((hp or {}).get("Host") or "", (hp or {}).get("Score") or 0) for hp in result or []
        ]
        return priorities, self.weight

    def bind(self, binding: Any) -> None:
        """Ask the extender to bind the pod (upstream: Bind); ``binding`` is a V1Binding: the
        pod's name, namespace and UID in its metadata, the node as its target."""
        if not self.is_binder():
            # Not expected: this extender would not have been chosen to bind.
            raise ExtenderError("unexpected empty bindVerb in extender")
        meta = binding.metadata
        args = {
            "PodName": meta.name or "",
            "PodNamespace": meta.namespace or "",
            "PodUID": meta.uid or "",
            "Node": binding.target.name or "",
        }
        result = _decode(self.send(self.bind_verb, args), EXTENDER_BINDING_RESULT) or {}
        if result.get("Error"):
            raise ExtenderError(go_errorf(result["Error"]))

    def process_preemption(
        self,
        pod: V1Pod,
        node_name_to_victims: dict[str, preemption.Victims],
        node_infos: NodeInfoLister,
    ) -> dict[str, preemption.Victims]:
        """The victims the extender agrees to, per node, maybe on fewer nodes (upstream:
        ProcessPreemption). Sent whole, or (nodeCacheCapable) as the victims' UIDs; the reply
        is always UIDs, turned back into the pods of ``node_infos``. The caller's map is left
        as it is."""
        if not self.supports_preemption():
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.extender_url} but run into "
                "ProcessPreemption"
            )
        args: dict[str, Any] = {"Pod": _object_json(pod)}
        if self.node_cache_capable:
            meta = convert_to_node_name_to_meta_victims(node_name_to_victims)
            args["NodeNameToVictims"] = None
            args["NodeNameToMetaVictims"] = dict(sorted(meta.items()))  # Go sorts map keys
        else:
            args["NodeNameToVictims"] = {
                node: {
                    "Pods": [_object_json(p) for p in victims.pods],
                    "NumPDBViolations": victims.num_pdb_violations,
                }
                for node, victims in sorted(node_name_to_victims.items())
            }
            args["NodeNameToMetaVictims"] = None
        result = _decode(self.send(self.preempt_verb, args), EXTENDER_PREEMPTION_RESULT) or {}
        meta_victims = result.get("NodeNameToMetaVictims") or {}
        for node, victims in meta_victims.items():
            # Differs from upstream: Go dereferences these nulls, and panics.
            if victims is None or None in (victims.get("Pods") or []):
                raise ExtenderError(
                    f"extender {self.extender_url} returned null victims for node {node}"
                )
        # Extender will always return NodeNameToMetaVictims (upstream's words).
        return self.convert_to_node_name_to_victims(meta_victims, node_infos)

    def convert_to_node_name_to_victims(
        self, node_name_to_meta_victims: dict[str, dict[str, Any]], node_infos: NodeInfoLister
    ) -> dict[str, preemption.Victims]:
        """MetaVictims, in their wire form (``{"Pods": [{"UID": uid}, ...],
        "NumPDBViolations": n}`` per node), back into Victims: each UID is looked up among the
        pods of that node (upstream: convertToNodeNameToVictims, convertPodUIDToPod). v1.23
        drops NumPDBViolations: every node's count is 0. Raises the lister's error for an
        unknown node, and ExtenderError for a pod not on its node."""
        out: dict[str, preemption.Victims] = {}
        for node_name, meta_victims in node_name_to_meta_victims.items():
            node_info = node_infos.get(node_name)
            victims = preemption.Victims(pods=[])
            for meta_pod in meta_victims.get("Pods") or []:
                uid = meta_pod.get("UID") or ""
                victims.pods.append(self._convert_pod_uid_to_pod(uid, node_info))
            out[node_name] = victims
        return out

    def _convert_pod_uid_to_pod(self, uid: str, node_info: framework.NodeInfo) -> V1Pod:
        """The pod with that UID on the node (upstream: convertPodUIDToPod); an error means
        the extender's cache and the scheduler's disagree."""
        for pod in node_info.pods:
            if pod.metadata.uid == uid:
                return pod
        node = node_info.node()
        node_name = node.metadata.name if node is not None else ""
        # Upstream prints the *MetaPod with %v: &{<uid>}.
        raise ExtenderError(
            f"extender: {self.extender_url} claims to preempt pod (UID: &{{{uid}}}) on node: "
            f"{node_name}, but the pod is not found on that node"
        )

    def send(self, action: str, args: dict[str, Any]) -> Any:
        """POST ``args`` as JSON to ``<urlPrefix>/<action>`` and return the reply's JSON value
        (upstream: send). Anything but 200 is an error, and so is a reply that is not JSON."""
        url = self.extender_url.rstrip("/") + "/" + action
        body = _dumps(args)
        try:
            resp = self.client.request(
                "POST",
                url,
                body=body,
                headers={"Content-Type": "application/json"},
                timeout=urllib3.Timeout(total=self.timeout),
                retries=False,
                redirect=False,
                preload_content=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise ExtenderError(f"Post {go_quote(url)}: {_transport_error(e, url)}") from e
        try:
            if resp.status != 200:
                # Upstream closes the body unread: the connection is not reused.
                resp.close()
                raise ExtenderError(
                    f"failed {action} with extender at URL {url}, code {resp.status}"
                )
            try:
                data = resp.read()
            except (urllib3.exceptions.HTTPError, OSError) as e:
                if _is_timeout(e):
                    raise ExtenderError(
                        "context deadline exceeded (Client.Timeout or context cancellation "
                        "while reading body)"
                    ) from e
                raise ExtenderError(_reason(e)) from e
        finally:
            resp.release_conn()
        return _loads(data)


def _string_map(value: dict[str, Any] | None) -> FailedNodesMap:
    """A FailedNodesMap: a null value is the empty string, Go's zero value."""
    return {k: v or "" for k, v in (value or {}).items()}


def _causes(e: BaseException) -> list[BaseException]:
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


def _is_timeout(e: BaseException) -> bool:
    # urllib3's NewConnectionError is a ConnectTimeoutError too (for compatibility's sake),
    # whatever the connection's failure.
    return any(
        isinstance(c, (urllib3.exceptions.TimeoutError, TimeoutError))
        and not isinstance(c, urllib3.exceptions.NewConnectionError)
        for c in _causes(e)
    )


def _reason(e: BaseException) -> str:
    """A short reason for a failed exchange, from the innermost error that says it best:
    the certificate check's message, else the operating system's (Differs from upstream:
    Python's words, where Go prints its own, e.g. "x509: certificate signed by unknown
    authority")."""
    causes = _causes(e)
    for c in causes:
        if isinstance(c, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {c.verify_message}"
    for c in causes:
        if isinstance(c, OSError) and c.strerror:
            return c.strerror[:1].lower() + c.strerror[1:]
    lines = str(e).splitlines()
    return lines[0] if lines else type(e).__name__


def _transport_error(e: BaseException, url: str) -> str:
    """Why a request got no answer, in Go's words for a timeout and a refused connection;
    Python's reason otherwise (Differs from upstream)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"unsupported protocol scheme {go_quote(parts.scheme)}"
    if any(isinstance(c, ConnectionRefusedError) for c in _causes(e)):
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname or ""
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return f"dial tcp {address}: connect: connection refused"
    if _is_timeout(e):
        return "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    return _reason(e)


def convert_to_node_name_to_meta_victims(
    node_name_to_victims: dict[str, preemption.Victims],
) -> dict[str, dict[str, Any]]:
    """Victims as MetaVictims, in their wire form: each pod by its UID, ``{"Pods": [{"UID":
    uid}, ...], "NumPDBViolations": 0}`` (upstream: convertToNodeNameToMetaVictims). v1.23
    leaves NumPDBViolations out: always 0."""
    return {
        node: {
            "Pods": [{"UID": p.metadata.uid or ""} for p in victims.pods],
            "NumPDBViolations": 0,
        }
        for node, victims in node_name_to_victims.items()
    }


# --- building them (NewHTTPExtender, Configurator.create) -----------------------------------------


def new_http_extender(cfg: schedconfig.Extender) -> HTTPExtender:
    """An HTTPExtender for one configured extender (upstream: NewHTTPExtender). As upstream,
    a zero httpTimeout is set to DEFAULT_EXTENDER_TIMEOUT in ``cfg`` itself (so the written
    configuration shows it); a negative one, which nothing refuses, is no time limit at all
    (Go's http.Client sets a deadline only for a positive Timeout). ValueError with upstream's
    text for TLS settings that cannot be used (an unreadable file, a CA with insecure, a bad
    certificate)."""
    if schedconfig.parse_duration(cfg.http_timeout) == 0:
        cfg.http_timeout = DEFAULT_EXTENDER_TIMEOUT
    timeout_ns = schedconfig.parse_duration(cfg.http_timeout)
    return HTTPExtender(
        extender_url=cfg.url_prefix,
        preempt_verb=cfg.preempt_verb,
        filter_verb=cfg.filter_verb,
        prioritize_verb=cfg.prioritize_verb,
        bind_verb=cfg.bind_verb,
        weight=cfg.weight,
        client=make_transport(cfg),
        timeout=timeout_ns / 1e9 if timeout_ns > 0 else None,
        node_cache_capable=cfg.node_cache_capable,
        managed_resources={r.name for r in cfg.managed_resources},
        ignorable=cfg.ignorable,
    )


def new_extenders(cfg: schedconfig.KubeSchedulerConfiguration) -> list[framework.Extender]:
    """The scheduler's extenders, in the configuration's order but with the ignorable ones
    moved to the end (keeping their order), and every profile's NodeResourcesFit args told to
    ignore the resources the extenders take over (upstream: the start of Configurator.create,
    before the profiles are built; both change ``cfg``). ValueError with upstream's text,
    without scheduler.New's "couldn't create scheduler: " prefix.

    The ignored resources change nothing visible here: NodeResourcesFit counts no extended
    resource (framework.Resource has no ScalarResources), so it never refused a pod for one.
    """
    extenders: list[framework.Extender] = []
    ignorable: list[framework.Extender] = []
    for ext_cfg in cfg.extenders:
        ext = new_http_extender(ext_cfg)
        (ignorable if ext.is_ignorable() else extenders).append(ext)
    extenders += ignorable
    schedconfig.set_extender_ignored_resources(cfg.profiles, cfg.extenders)
    return extenders
