"""HTTP front end: routing, authentication, content negotiation, handlers and watch streams.

The process around it (the listening socket, the event loop, a thread for in-process use) is
``serving.py``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/endpoints`` (``installer.go`` for which verbs each
path serves, ``handlers/{get,create,update,patch,delete,watch}.go``,
``handlers/negotiation`` for Accept and Content-Type), ``pkg/server/filters`` (authentication
first, the request body limit, ``/healthz``, ``/livez``, ``/readyz``) and
``staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go`` (bookmarks, timeouts).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import random
import ssl
import traceback
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from . import crd, discovery, errors, httpd, openapi, patch, table
from .errors import ApiError
from .registry import CUSTOM_RESOURCE_DEFINITIONS, GROUPS, RESOURCES, Registry, Resource
from .selectors import Selector, crd_field_getters
from .store import BOOKMARK, ERROR, Expired, Watcher, dumps, encode_event

JSON = dict[str, Any]
log = logging.getLogger("minisched.apiserver")

MAX_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's default --max-request-body-bytes (3 MiB)
MAX_JSON_DEPTH = 100  # deeper documents are rejected before anything walks them
PUBLIC_PATHS = ("/healthz", "/livez", "/readyz", "/version")
JSON_TYPE = "application/json"
WRITE_TYPES = (JSON_TYPE, "")
PATCH_TYPES = (patch.JSON_PATCH, patch.MERGE_PATCH, patch.STRATEGIC_MERGE_PATCH)


# --------------------------------------------------------------------------------------------
# Request parsing helpers
# --------------------------------------------------------------------------------------------


@dataclass
class Route:
    """What a URL names: a resource, maybe a namespace, object name and subresource."""

    resource: Resource | None  # None for the bindings collection
    namespace: str | None
    name: str | None = None
    subresource: str = ""
    watch_prefix: bool = False  # legacy /api/v1/watch/... paths


def _watch_and_namespace(parts: list[str]) -> tuple[bool, str | None, list[str]]:
    """A path's legacy ``watch/`` prefix and ``namespaces/{ns}/`` scope, and the rest."""
    watch = False
    if parts and parts[0] == "watch":
        watch, parts = True, parts[1:]
    namespace: str | None = None
    if len(parts) >= 3 and parts[0] == "namespaces":
        namespace, parts = parts[1], parts[2:]
    return watch, namespace, parts


def parse_api_path(parts: list[str], resources: dict[str, Resource] = RESOURCES) -> Route:
    """Parse the segments after ``/api/v1`` (or ``/apis/{group}/{version}`` with that
    version's ``resources``); raise 404 for anything we do not serve."""
    watch, namespace, parts = _watch_and_namespace(parts)
    if not parts or not all(parts):
        raise errors.unknown_path()
    name = parts[0]
    if namespace is not None and name == "bindings" and len(parts) == 1 and resources is RESOURCES:
        return Route(None, namespace)
    res = resources.get(name)
    if res is None or (namespace is not None and not res.namespaced):
        raise errors.unknown_path()
    if namespace is None and res.namespaced and len(parts) > 1:
        raise errors.unknown_path()  # /api/v1/pods/x: namespaced objects need a namespace
    if len(parts) == 1:
        return Route(res, namespace, watch_prefix=watch)
    if len(parts) == 2:
        return Route(res, namespace, parts[1], watch_prefix=watch)
    if len(parts) == 3:
        sub = parts[2]
        if (sub == "status" and res.has_status) or (sub == "binding" and res.name == "pods"):
            return Route(res, namespace, parts[1], sub)
    raise errors.unknown_path()


def parse_custom_path(parts: list[str], served: dict[str, Resource], method: str) -> Route | None:
    """Parse the segments after ``/apis/{group}/{version}`` for custom resources; None where
    the CRD handler leaves the request to Go's NotFound: an unknown resource, the wrong
    scope (a namespaced resource without a namespace is only listed and watched)."""
    watch, namespace, parts = _watch_and_namespace(parts)
    if not parts or not all(parts) or len(parts) > 3:
        return None
    res = served.get(parts[0])
    if res is None or (namespace is not None and not res.namespaced):
        return None
    if namespace is None and res.namespaced and (len(parts) > 1 or method != "GET"):
        return None
    if len(parts) == 1:
        return Route(res, namespace, watch_prefix=watch)
    if len(parts) == 2:
        return Route(res, namespace, parts[1], watch_prefix=watch)
    if parts[2] == "status" and res.has_status:
        return Route(res, namespace, parts[1], "status")
    # Any other subresource: NotFound for the object's name, as the CRD handler answers.
    raise errors.not_found(res.name, parts[1], res.group)


@dataclass
class Negotiated:
    """The representation a client asked for in Accept."""

    table: bool = False
    include_object: str = "Metadata"


def negotiate(accept: str, *, allow_table: bool, stream: bool) -> Negotiated:
    """Pick JSON (optionally a Table) from an Accept header, or raise 406."""
    if not accept.strip():
        return Negotiated()
    for clause in accept.split(","):
        media, *raw_params = (p.strip() for p in clause.split(";"))
        params = dict(p.split("=", 1) for p in raw_params if "=" in p)
        media = media.lower()
        if media not in ("application/json", "application/*", "*/*"):
            continue
        as_kind = params.get("as")
        if as_kind is None:
            return Negotiated()
        if (
            as_kind == "Table"
            and allow_table
            and params.get("g") == "meta.k8s.io"
            and params.get("v") in ("v1", "v1beta1")
        ):
            return Negotiated(table=True)
    available = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
    if stream:
        available += [
            "application/json;stream=watch",
            "application/vnd.kubernetes.protobuf;stream=watch",
        ]
    raise errors.not_acceptable(available)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")) or value != value:
        raise ValueError("number out of range")
    return value


def _too_deep(doc: Any) -> bool:
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False


def parse_json(data: bytes, kind: str) -> Any:
    """Parse a request body; malformed input is a 400 like upstream's decoder error."""
    prefix = (
        f"the object provided is unrecognized (must be of type {kind}): "
        "couldn't get version/kind; json parse error: "
    )
    if not data.strip():
        raise errors.bad_request(prefix + "unexpected end of JSON input (<empty>)")
    try:
        doc = json.loads(data, parse_float=_finite_float, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise errors.bad_request(prefix + str(exc)) from None
    if _too_deep(doc):
        raise errors.bad_request(prefix + f"exceeded max depth of {MAX_JSON_DEPTH}")
    return doc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _int_param(query: Any, name: str) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(
            f'invalid value for {name}: strconv.ParseInt: parsing "{value}": invalid syntax'
        ) from None


def _bool_param(query: Any, name: str) -> bool:
    return str(query.get(name, "")).lower() in ("true", "1")


def _resource_version(text: str | None) -> int | None:
    """Parse a resourceVersion parameter ("" and None mean unset)."""
    if text is None or text == "":
        return None
    if not text.isdigit():
        raise errors.bad_request(
            f'invalid resource version: resourceVersion: Invalid value: "{text}": '
            f'strconv.ParseUint: parsing "{text}": invalid syntax'
        )
    return int(text)


_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


def request_target(request: httpd.Request) -> tuple[str, errors.RequestTarget]:
    """The verb and target RBAC judges, read from the path alone (before routing, as
    upstream's ``RequestInfoFactory.NewRequestInfo``): unknown resources are still resources."""
    path = request.path
    parts = [unquote(p) for p in request.raw_path.split("?", 1)[0].strip("/").split("/")]
    nonresource = (request.method.lower(), errors.RequestTarget(path))
    # /api/{version}/{resource}... or /apis/{group}/{version}/{resource}...
    if len(parts) < (3 if parts[0] == "api" else 4) or parts[0] not in ("api", "apis"):
        return nonresource
    group = ""
    rest = parts[1:]
    if parts[0] == "apis":
        group, rest = rest[0], rest[1:]
    rest = rest[1:]  # the version
    verb = _VERBS.get(request.method, "")
    if rest and rest[0] == "watch":
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if _bool_param(request.query, "watch") else "list"
        # A list or watch of one object by name is authorized (and refused) by that name.
        selected = request.query.get("fieldSelector", "")
        if selected.startswith("metadata.name=") and "," not in selected:
            name = selected.split("=", 1)[1]
    elif not name and verb == "delete":
        verb = "deletecollection"
    target = errors.RequestTarget(path, resource, group, namespace, name, sub)
    return verb, target


def json_response(body: JSON, status: int = 200, content_type: str = JSON_TYPE) -> httpd.Response:
    return httpd.Response(dumps(body) + b"\n", status, content_type)


def aggregated_discovery_version(accept: str) -> str | None:
    """The apidiscovery version (v2 or v2beta1) of the first Accept clause asking for an
    ``APIGroupDiscoveryList``; None when the client wants the legacy documents."""
    for clause in accept.split(","):
        media, *raw = (p.strip() for p in clause.split(";"))
        params = dict(p.split("=", 1) for p in raw if "=" in p)
        if media.lower() not in ("application/json", "application/*", "*/*"):
            continue
        if params.get("as") != "APIGroupDiscoveryList":
            return None  # a plain JSON clause listed first wins
        if params.get("g") == "apidiscovery.k8s.io" and params.get("v") in ("v2", "v2beta1"):
            return params["v"]
    return None


def _page_not_found() -> httpd.Response:
    """Go's ``http.NotFound``: what kube-apiserver answers for a group it does not serve."""
    return httpd.Response.text("404 page not found\n", 404)


def http_error(status: int, message: str) -> httpd.Response:
    """The answer to bytes that are not an HTTP/1.x request (``httpd.BadRequest``).

    Differs from upstream: Go's net/http writes a plain-text ``400 Bad Request``; a Status keeps
    every answer one a Kubernetes client can read.
    """
    body = errors.status_body(400, "BadRequest", f"malformed HTTP request: {message}")
    body["code"] = status
    return json_response(body, status)


def _list_options_errors(query: Any, watching: bool) -> list[errors.FieldError]:
    """``ValidateListOptions`` (apimachinery ``internalversion/validation``): the checks on
    sendInitialEvents and resourceVersionMatch. A sendInitialEvents that is present counts
    as set, whatever its value (upstream's conversion leaves a bad value set)."""
    send_initial = "sendInitialEvents" in query
    match = query.get("resourceVersionMatch", "")
    errs: list[errors.FieldError] = []
    if not watching:
        if match and not query.get("resourceVersion"):
            errs.append(
                errors.FieldError(
                    "Forbidden",
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if send_initial:
            errs.append(
                errors.FieldError(
                    "Forbidden", "sendInitialEvents", "sendInitialEvents is forbidden for list"
                )
            )
        return errs
    if send_initial and match != "NotOlderThan":
        errs.append(
            errors.FieldError(
                "Forbidden",
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if match:
        if not send_initial:
            errs.append(
                errors.FieldError(
                    "Forbidden",
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != "NotOlderThan":
            errs.append(
                errors.FieldError(
                    "Unsupported",
                    "resourceVersionMatch",
                    'supported values: "NotOlderThan"',
                    match,
                )
            )
        if query.get("continue"):
            errs.append(
                errors.FieldError(
                    "Forbidden",
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    return errs


def _field_validation(query: Any, options_kind: str) -> str:
    """The ``fieldValidation`` parameter of a write, checked as upstream's
    ``ValidateCreateOptions`` (and Update, Patch) check it."""
    value = query.get("fieldValidation", "")
    if value not in ("", "Ignore", "Strict", "Warn"):
        raise errors.invalid(
            options_kind,
            "",
            [
                errors.FieldError(
                    "Unsupported",
                    "fieldValidation",
                    'supported values: "", "Ignore", "Strict", "Warn"',
                    value,
                )
            ],
            group="meta.k8s.io",
            name_in_details=False,
        )
    return value


def _custom_patch_type(request: httpd.Request) -> str:
    """The patch types a custom resource takes: JSON and merge patches; no strategic merge
    patch (there is no Go struct to read patch strategies from). Server-side apply is not
    implemented here, for any resource."""
    media = request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    if media in (patch.JSON_PATCH, patch.MERGE_PATCH):
        return media
    if media == patch.APPLY_PATCH:
        raise errors.unsupported_patch_type()
    raise ApiError(
        errors.status_body(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            f"{patch.JSON_PATCH}, {patch.MERGE_PATCH}, {patch.APPLY_PATCH}",
        )
    )


def selector_for(res: Resource, query: Any) -> Selector:
    """The label and field selectors of a request; a custom resource's field labels are its
    name (and namespace) and the CRD's selectableFields."""
    getters = crd_field_getters(res.custom) if res.custom is not None else None
    return Selector.parse(res.name, query.get("labelSelector"), query.get("fieldSelector"), getters)


def _invalid_list_options(errs: list[errors.FieldError]) -> ApiError:
    return errors.invalid("ListOptions", "", errs, group="meta.k8s.io", name_in_details=False)


# --------------------------------------------------------------------------------------------
# Bookmarks
# --------------------------------------------------------------------------------------------


def bookmark_object(
    kind: str, rv: int, initial_events_end: bool = False, api_version: str = "v1"
) -> JSON:
    """What an empty Go object of ``kind`` serializes to, carrying only a resourceVersion."""
    meta: JSON = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj: JSON = {"kind": kind, "apiVersion": api_version, "metadata": meta}
    if kind == "Pod":
        obj.update(spec={"containers": None}, status={})
    elif kind == "Node":
        obj.update(
            spec={},
            status={
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                "nodeInfo": {
                    k: ""
                    for k in (
                        "machineID systemUUID bootID kernelVersion osImage "
                        "containerRuntimeVersion kubeletVersion kubeProxyVersion "
                        "operatingSystem architecture"
                    ).split()
                },
            },
        )
    elif kind == "Namespace":
        obj.update(spec={}, status={})
    elif kind == "Event":
        obj.update(
            involvedObject={},
            source={},
            firstTimestamp=None,
            lastTimestamp=None,
            eventTime=None,
            reportingComponent="",
            reportingInstance="",
        )
    return obj


# --------------------------------------------------------------------------------------------
# The application
# --------------------------------------------------------------------------------------------


class ApiServer:
    """Request handling on top of a :class:`Registry`. One instance per server."""

    def __init__(
        self,
        registry: Registry,
        token: str,
        *,
        server_address: str = "127.0.0.1:0",
        max_body_bytes: int = MAX_BODY_BYTES,
        bookmark_interval: float = 60.0,
        test_endpoints: bool = False,
    ) -> None:
        self.registry = registry
        self.store = registry.store
        self.token = token
        self.server_address = server_address
        self.max_body_bytes = max_body_bytes
        self.bookmark_interval = bookmark_interval
        self.test_endpoints = test_endpoints
        self.shutting_down = False
        self._groups_cache: tuple[int, discovery.Groups] | None = None

    # ---- entry point ------------------------------------------------------------------------

    async def handle(self, request: httpd.Request) -> httpd.Response | httpd.StreamResponse:
        """Every request comes through here; every failure leaves as a Status body."""
        try:
            return await self._dispatch(request)
        except ApiError as exc:
            return json_response(exc.body, exc.status)
        except (asyncio.CancelledError, ConnectionError, ssl.SSLError, httpd.BadRequest):
            # The client left (a reset, or over TLS an alert or a broken record from a client
            # torn down mid-read), or sent a body that is not HTTP: httpd ends or answers the
            # connection. Neither is a bug of this server, so no traceback.
            raise
        except Exception as exc:  # a bug: never let a traceback reach the client
            log.error(
                "unexpected error on %s %s:\n%s",
                request.method,
                request.path,
                traceback.format_exc(),
            )
            body = errors.status_body(
                400, "BadRequest", f"the request could not be processed: {type(exc).__name__}"
            )
            return json_response(body, 400)

    def _authenticate(self, request: httpd.Request) -> None:
        header = request.headers.get("Authorization")
        if header is None:
            # Anonymous auth is on, as in the recorded server: no token means the user
            # system:anonymous, whom RBAC lets read only the public paths.
            if request.path in PUBLIC_PATHS:
                return
            verb, target = request_target(request)
            raise errors.rbac_forbidden("system:anonymous", verb, target)
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode(), self.token.encode()
        ):
            raise errors.unauthorized()

    async def _read_body(self, request: httpd.Request) -> bytes:
        """Read the whole body (always drained, so keep-alive connections stay usable), at most
        ``max_body_bytes``; more is a 413."""
        try:
            return await request.read(self.max_body_bytes)
        except httpd.BodyTooLarge:
            raise errors.too_large(self.max_body_bytes) from None

    async def _dispatch(self, request: httpd.Request) -> httpd.Response | httpd.StreamResponse:
        body = await self._read_body(request)
        self._authenticate(request)
        path = request.path.rstrip("/") or "/"
        method = request.method
        if path in ("/healthz", "/livez", "/readyz"):
            if method != "GET":
                raise errors.method_not_allowed()
            ok = not self.shutting_down
            return httpd.Response.text("ok" if ok else "shutting down", 200 if ok else 503)
        accept = request.headers.get("Accept", "")
        if path in ("/version", "/api", "/apis", "/api/v1"):
            if method != "GET":
                raise errors.method_not_allowed()
            agg = aggregated_discovery_version(accept) if path in ("/api", "/apis") else None
            if agg is not None:
                return json_response(
                    discovery.aggregated(path == "/api", agg, self._groups()),
                    content_type=f"application/json;g=apidiscovery.k8s.io;v={agg};"
                    "as=APIGroupDiscoveryList",
                )
            negotiate(accept, allow_table=False, stream=False)
            if path == "/version":
                return json_response(discovery.version_info())
            if path == "/api":
                return json_response(discovery.api_versions(self.server_address))
            if path == "/apis":
                return json_response(discovery.api_groups(self._groups()))
            return json_response(discovery.api_resource_list())
        if path == "/openapi/v3" or path.startswith("/openapi/v3/"):
            if method != "GET":
                raise errors.method_not_allowed()
            if path == "/openapi/v3":
                return json_response(openapi.index(self._groups()))
            if path == "/openapi/v3/api/v1":
                return json_response(openapi.core_v1())
            _, _, gv = path.partition("/openapi/v3/apis/")
            doc = openapi.group_version(*gv.split("/", 1), self._groups()) if "/" in gv else None
            if doc is None:
                return _page_not_found()
            return json_response(doc)
        if path == "/minisched/compact" and self.test_endpoints and method == "POST":
            self.store.compact()
            return json_response(errors.success(200))
        if path.startswith("/apis/"):
            return await self._serve_group(request, method, body, accept)
        if not path.startswith(("/api/", "/version/")):
            # Outside the API's handlers Go's mux answers, in plain text.
            return _page_not_found()
        if not path.startswith("/api/v1/"):
            raise errors.unknown_path()
        parts = [unquote(p) for p in request.raw_path.split("?", 1)[0].rstrip("/").split("/")[3:]]
        route = parse_api_path(parts)
        return await self._serve_route(request, route, method, body, accept)

    async def _serve_group(
        self, request: httpd.Request, method: str, body: bytes, accept: str
    ) -> httpd.Response | httpd.StreamResponse:
        """``/apis/{group}[/{version}[/...]]``: discovery of a group, or its resources."""
        raw = request.raw_path.split("?", 1)[0].rstrip("/")
        parts = [unquote(p) for p in raw.split("/")[2:]]
        group = parts[0]
        builtin = GROUPS.get(group)
        if builtin is None:
            # The CRD handler: what it does not serve goes to Go's plain-text NotFound.
            return await self._serve_custom(request, parts, method, body, accept)
        if len(parts) <= 2:
            if method != "GET":
                raise errors.method_not_allowed()
            listed = self._groups()
            if len(parts) == 1:
                negotiate(accept, allow_table=False, stream=False)
                return json_response(discovery.api_group(group, listed))
            if parts[1] not in listed[group]:
                raise errors.unknown_path()
            negotiate(accept, allow_table=False, stream=False)
            return json_response(discovery.group_resource_list(group, parts[1], listed))
        served = builtin.get(parts[1])
        rest = parts[3:] if parts[2] == "watch" else parts[2:]
        if len(rest) >= 3 and rest[0] == "namespaces":
            rest = rest[2:]
        resource = rest[0] if rest else ""
        if served is None or resource not in served:
            # Not a built-in resource: maybe one a CRD added to this group.
            custom = self.registry.custom_groups().get(group, {}).get(parts[1], {})
            if resource in custom:
                return await self._serve_custom(request, parts, method, body, accept)
        if served is None:
            raise errors.unknown_path()
        route = parse_api_path(parts[2:], served)
        return await self._serve_route(request, route, method, body, accept)

    def _groups(self) -> discovery.Groups:
        """The groups under /apis: built-in, then those of the established CRDs (computed
        again only when a CRD changed)."""
        version = self.store.last_change(CUSTOM_RESOURCE_DEFINITIONS.store_key)
        if self._groups_cache is None or self._groups_cache[0] != version:
            self._groups_cache = (version, discovery.merged(self.registry.discovery_groups()))
        return self._groups_cache[1]

    async def _serve_custom(
        self, request: httpd.Request, parts: list[str], method: str, body: bytes, accept: str
    ) -> httpd.Response | httpd.StreamResponse:
        """A group that CRDs make the server serve (``customresource_handler.go``)."""
        group = parts[0]
        if len(parts) <= 2:
            listed = self._groups()
            if group not in listed or (len(parts) == 2 and parts[1] not in listed[group]):
                return _page_not_found()
            if method != "GET":
                raise errors.method_not_allowed()
            negotiate(accept, allow_table=False, stream=False)
            if len(parts) == 1:
                return json_response(discovery.api_group(group, listed))
            return json_response(discovery.group_resource_list(group, parts[1], listed))
        served = self.registry.custom_groups().get(group, {}).get(parts[1])
        route = parse_custom_path(parts[2:], served or {}, method)
        if route is None:
            return _page_not_found()
        return await self._serve_route(request, route, method, body, accept)

    # ---- routing to verbs -------------------------------------------------------------------

    async def _serve_route(
        self, request: httpd.Request, route: Route, method: str, body: bytes, accept: str
    ) -> httpd.Response | httpd.StreamResponse:
        res, query = route.resource, request.query
        if res is None:  # POST namespaces/{ns}/bindings
            return self._bind(request, route, method, body, accept)
        # A CRD being deleted lists fewer verbs; its handler still takes creates (to refuse
        # them with a 403).
        verbs = crd.VERBS if res.custom is not None else res.verbs
        if route.name is None:
            # A collection. Without a namespace, namespaced resources only list and watch.
            cluster_wide_namespaced = res.namespaced and route.namespace is None
            if method == "GET" and ("list" in verbs):
                watching = route.watch_prefix or _bool_param(query, "watch")
                wanted = negotiate(accept, allow_table=True, stream=watching)
                option_errors = _list_options_errors(query, watching)
                if option_errors:
                    raise _invalid_list_options(option_errors)
                if watching:
                    return await self._watch(request, res, route.namespace, wanted)
                return self._list(res, route.namespace, query, wanted)
            if method == "POST" and not cluster_wide_namespaced and "create" in verbs:
                validation = _field_validation(query, "CreateOptions")
                doc = self._create_body(request, body, res.kind)
                negotiate(accept, allow_table=False, stream=False)
                self._reject_dry_run(query)
                obj = self.registry.create(
                    res, route.namespace, doc, field_validation=validation, raw=body
                )
                return json_response(obj, 201)
            if method == "DELETE" and not cluster_wide_namespaced and "deletecollection" in verbs:
                negotiate(accept, allow_table=False, stream=False)
                selector = selector_for(res, query)
                options = self._delete_options(request, query, body)
                self._reject_dry_run(options)
                return json_response(
                    self.registry.delete_collection(res, route.namespace, selector, options)
                )
            raise errors.method_not_allowed()
        name = route.name
        if route.subresource == "binding":
            return self._bind(request, route, method, body, accept)
        sub = route.subresource
        if method == "GET":
            wanted = negotiate(accept, allow_table=not sub, stream=False)
            rv = _resource_version(query.get("resourceVersion"))
            if rv is not None and rv > self.store.rv:
                raise errors.too_large_resource_version(rv, self.store.rv)
            obj = self.registry.present(res, self.registry._existing(res, route.namespace, name))
            if wanted.table:
                return json_response(
                    table.to_table(
                        res.name,
                        [obj],
                        obj["metadata"]["resourceVersion"],
                        include_object=query.get("includeObject", "Metadata"),
                        custom=res.custom,
                    )
                )
            return json_response(obj)
        if method == "PUT":
            validation = _field_validation(query, "UpdateOptions")
            self._check_content_type(request, WRITE_TYPES)
            negotiate(accept, allow_table=False, stream=False)
            self._reject_dry_run(query)
            doc = parse_json(body, res.kind)
            obj = self.registry.update(
                res, route.namespace, name, doc, sub, field_validation=validation, raw=body
            )
            return json_response(obj)
        if method == "PATCH":
            if res.custom is not None:
                patch_type = _custom_patch_type(request)
            else:
                patch_type = self._check_content_type(request, PATCH_TYPES, patch=True)
            validation = _field_validation(query, "PatchOptions")
            negotiate(accept, allow_table=False, stream=False)
            self._reject_dry_run(query)
            patch_doc = parse_json(body, res.kind)
            obj = self.registry.patch(
                res, route.namespace, name, patch_type, patch_doc, sub, field_validation=validation
            )
            return json_response(obj)
        if method == "DELETE" and not sub:
            negotiate(accept, allow_table=False, stream=False)
            options = self._delete_options(request, query, body)
            if options.get("dryRun"):
                self.registry._existing(res, route.namespace, name)  # a 404 comes first
            self._reject_dry_run(options)
            answer, _ = self.registry.delete(res, route.namespace, name, options)
            return json_response(answer)
        raise errors.method_not_allowed()

    def _bind(
        self, request: httpd.Request, route: Route, method: str, body: bytes, accept: str
    ) -> httpd.Response:
        """``pods/{name}/binding`` and the legacy ``bindings`` collection: POST only."""
        if method != "POST":
            raise errors.method_not_allowed()
        binding = self._create_body(request, body, "Binding")
        negotiate(accept, allow_table=False, stream=False)
        return json_response(self.registry.bind(route.namespace or "", route.name, binding), 201)

    def _create_body(self, request: httpd.Request, body: bytes, kind: str) -> Any:
        """A create's body as JSON: a JSON body, or one of the protobuf bodies that clients
        send by default (see ``protobuf.py``); any other media type is a 415."""
        raw = request.headers.get("Content-Type", "")
        if raw.split(";", 1)[0].strip().lower() == "application/vnd.kubernetes.protobuf":
            from . import protobuf  # on first use: start-up stays fast

            try:
                return protobuf.decode(body)
            except protobuf.ProtobufError:
                raise errors.unsupported_media_type(raw) from None
        self._check_content_type(request, WRITE_TYPES)
        return parse_json(body, kind)

    @staticmethod
    def _reject_dry_run(query: Any) -> None:
        if query.get("dryRun"):
            raise errors.bad_request("dryRun is not supported by the minisched API server")

    @staticmethod
    def _check_content_type(
        request: httpd.Request, allowed: tuple[str, ...], patch: bool = False
    ) -> str:
        raw = request.headers.get("Content-Type", "")
        media = raw.split(";", 1)[0].strip().lower()
        if media in allowed:
            return media
        if patch:
            raise errors.unsupported_patch_type()
        raise errors.unsupported_media_type(raw)

    def _delete_options(self, request: httpd.Request, query: Any, body: bytes) -> JSON:
        """The DeleteOptions of a DELETE, validated before any lookup (as upstream's handler
        does: invalid options are a 422 even for an object that does not exist)."""
        options: JSON = {}
        if body.strip():
            from .registry import decode

            # A real kube-scheduler deletes preemption's victims with a protobuf DeleteOptions.
            options = decode("DeleteOptions", self._create_body(request, body, "DeleteOptions"))
        grace = _int_param(query, "gracePeriodSeconds")
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        if "dryRun" in query:
            options["dryRun"] = [query["dryRun"]]
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        if "orphanDependents" in query:
            options["orphanDependents"] = _bool_param(query, "orphanDependents")
        errs = []
        dry_run = options.get("dryRun") or []
        if any(v != "All" for v in dry_run):
            errs.append(
                errors.FieldError("Unsupported", "dryRun", 'supported values: "All"', dry_run)
            )
        policy = options.get("propagationPolicy")
        if policy is not None and options.get("orphanDependents") is not None:
            errs.append(
                errors.FieldError(
                    "Invalid",
                    "propagationPolicy",
                    "orphanDependents and deletionPropagation cannot be both set",
                    policy,
                )
            )
        elif policy is not None and policy not in ("Foreground", "Background", "Orphan"):
            errs.append(
                errors.FieldError(
                    "Unsupported",
                    "propagationPolicy",
                    'supported values: "Foreground", "Background", "Orphan", "nil"',
                    policy,
                )
            )
        if errs:
            raise errors.invalid(
                "DeleteOptions", "", errs, group="meta.k8s.io", name_in_details=False
            )
        return options

    # ---- list -------------------------------------------------------------------------------

    def _list(
        self, res: Resource, namespace: str | None, query: Any, wanted: Negotiated
    ) -> httpd.Response:
        selector = selector_for(res, query)
        rv_text = query.get("resourceVersion")
        match = query.get("resourceVersionMatch", "")
        if match and not rv_text:
            raise errors.invalid(
                "ListOptions",
                "",
                [
                    errors.FieldError(
                        "Forbidden",
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    )
                ],
                group="meta.k8s.io",
                name_in_details=False,
            )
        if match not in ("", "Exact", "NotOlderThan"):
            raise errors.bad_request(f"unsupported resourceVersionMatch: {match}")
        rv = _resource_version(rv_text)
        limit = _int_param(query, "limit") or 0
        list_rv = self.store.rv
        if match == "Exact" and rv is not None:
            try:
                items = self.store.list_at(res.store_key, namespace, selector, rv)
            except Expired:
                raise errors.expired(
                    "The resourceVersion for the provided list is too old."
                ) from None
            list_rv = rv
        else:
            if rv is not None and rv > self.store.rv:
                raise errors.too_large_resource_version(rv, self.store.rv)
            items = self.store.list(res.store_key, namespace, selector)
        # Paging: resourceVersion=0 ignores limit (served from the cache upstream).
        # Simplified: a continue token resumes after a key in the *current* state, not in a
        # snapshot taken at the first page's resourceVersion.
        token = query.get("continue")
        if token:
            after = _decode_continue(token)
            items = [o for o in items if _sort_key(o) > after]
        remaining = 0
        next_token = ""
        if limit > 0 and rv != 0 and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            next_token = _encode_continue(_sort_key(items[-1]), list_rv)
        if wanted.table:
            body = table.to_table(
                res.name,
                [self.registry.present(res, o) for o in items],
                str(list_rv),
                include_object=query.get("includeObject", "Metadata"),
                custom=res.custom,
            )
        else:
            body = self.registry.list_body(res, items, list_rv)
        if next_token:
            body["metadata"]["continue"] = next_token
            body["metadata"]["remainingItemCount"] = remaining
        return json_response(body)

    # ---- watch ------------------------------------------------------------------------------

    async def _watch(
        self, request: httpd.Request, res: Resource, namespace: str | None, wanted: Negotiated
    ) -> httpd.Response | httpd.StreamResponse:
        query = request.query
        selector = selector_for(res, query)
        rv = _resource_version(query.get("resourceVersion"))
        timeout = _int_param(query, "timeoutSeconds")
        if timeout is None or timeout <= 0:
            # Upstream: a random duration between --min-request-timeout (1800 s) and twice it.
            timeout = int(1800 * (1 + random.random()))
        bookmarks = _bool_param(query, "allowWatchBookmarks")
        send_initial = query.get("sendInitialEvents")
        from_rv: int | None = rv if rv else None
        if send_initial == "true":
            from_rv = None
        elif send_initial == "false" and rv in (None, 0):
            from_rv = self.store.rv
        # Register before the first await, so no commit can slip between the initial state and
        # the live events.
        start_rv = self.store.rv
        try:
            initial, watcher = self.store.watch(res.store_key, namespace, selector, from_rv)
        except Expired:
            watcher = None
            if res.watch_from_storage:
                message = "The resourceVersion for the provided watch is too old."
            else:
                message = f"too old resource version: {from_rv} ({self.store.history_start})"
            initial = [(ERROR, errors.status_body(410, "Expired", message))]
        response = httpd.StreamResponse(request, 200, JSON_TYPE)
        try:
            await response.prepare()
            writer = _WatchWriter(
                response, res, wanted, query.get("includeObject", "Metadata"), self.registry
            )
            lines = [writer.encode(t, obj) for t, obj in initial]
            if watcher is not None and bookmarks and from_rv is None:
                lines.append(
                    encode_event(
                        BOOKMARK, bookmark_object(res.kind, start_rv, True, res.api_version)
                    )
                )
            if lines:
                await response.write(b"".join(lines))
            if watcher is not None:
                await self._stream(request, watcher, writer, res, timeout, bookmarks, start_rv)
            await response.write_eof()
        except (ConnectionError, ssl.SSLError) as exc:
            # A client that goes away is how most watches end (a scheduler's Ctrl-C ends all
            # of its watches at once). Over TLS it is often not a clean close: a client that
            # tears its connection down mid-read leaves an alert (TLSV1_ALERT_DECODE_ERROR) or
            # a broken record, which the ssl module raises as SSLError, not ConnectionError.
            # Upstream's watch handler just returns; here one debug line (--log-level DEBUG).
            log.debug("watch of %s ended: the client left (%s)", res.name, exc)
        finally:
            if watcher is not None:
                self.store.stop_watch(watcher)
        return response

    async def _stream(
        self,
        request: httpd.Request,
        watcher: Watcher,
        writer: _WatchWriter,
        res: Resource,
        timeout: int,
        bookmarks: bool,
        start_rv: int,
    ) -> None:
        """Send queued events until the timeout, the client leaves, or the watcher is ended.

        Bookmarks: one about 2 s before the timeout, and one every ``bookmark_interval`` as a
        heartbeat, each only when the resourceVersion moved past what this watcher was sent.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        timeout_bookmark = deadline - 2 if bookmarks else None
        next_heartbeat = loop.time() + self.bookmark_interval
        sent_rv = start_rv
        while not watcher.ended:
            now = loop.time()
            if now >= deadline:
                return
            wake = min(deadline, next_heartbeat, now + 1.0)
            if timeout_bookmark is not None:
                wake = min(wake, max(timeout_bookmark, now))
            await watcher.wait(wake - now)
            items = watcher.take_all()
            if items:
                await writer.response.write(
                    b"".join(writer.encode_event(ev, t, use_prev) for ev, t, use_prev in items)
                )
                sent_rv = max(sent_rv, items[-1][0].rv)
            now = loop.time()
            due_timeout = timeout_bookmark is not None and now >= timeout_bookmark
            due_heartbeat = now >= next_heartbeat
            if (due_timeout or due_heartbeat) and bookmarks and watcher.pending() == 0:
                current = self.store.rv
                if current > sent_rv:
                    await writer.response.write(
                        encode_event(
                            BOOKMARK,
                            bookmark_object(res.kind, current, api_version=res.api_version),
                        )
                    )
                    sent_rv = current
            if due_timeout:
                timeout_bookmark = None
            if due_heartbeat:
                next_heartbeat = now + self.bookmark_interval
            transport = request.transport
            if transport is None or transport.is_closing():
                return


class _WatchWriter:
    """Encodes watch events for one stream: shared JSON lines, or a Table per event."""

    def __init__(
        self,
        response: httpd.StreamResponse,
        res: Resource,
        wanted: Negotiated,
        include: str,
        registry: Registry,
    ) -> None:
        self.response = response
        self.res = res
        self.wanted = wanted
        self.include = include
        self.registry = registry
        self.first_table = True
        # A custom resource watched at a version other than the one it is stored in: each
        # object shows that version's apiVersion, so lines cannot be shared.
        kind = res.custom
        self.shared = kind is None or kind.version == kind.storage_version

    def encode(self, event_type: str, obj: JSON) -> bytes:
        if event_type in (BOOKMARK, ERROR):
            return encode_event(event_type, obj)
        obj = self.registry.present(self.res, obj)
        if not self.wanted.table:
            return encode_event(event_type, obj)
        rendered = table.to_table(
            self.res.name,
            [obj],
            obj["metadata"]["resourceVersion"],
            include_object=self.include,
            with_columns=self.first_table,
            custom=self.res.custom,
        )
        self.first_table = False
        return encode_event(event_type, rendered)

    def encode_event(self, ev: Any, event_type: str, use_prev: bool) -> bytes:
        if not self.wanted.table and self.shared:
            return ev.line(event_type, use_prev)  # encoded once, shared by all watchers
        return self.encode(event_type, ev.payload(use_prev))


def _sort_key(obj: JSON) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or ''}/{meta['name']}"


def _encode_continue(after: str, rv: int) -> str:
    import base64

    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": after}).encode()).decode()


def _decode_continue(token: str) -> str:
    import base64

    try:
        doc = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(doc["start"])
    except (ValueError, KeyError, TypeError):
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion "
            "(version meta.k8s.io/v1)"
        ) from None
