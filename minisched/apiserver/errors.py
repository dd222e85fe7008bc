"""Failures as Kubernetes ``v1 Status`` bodies.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go`` (``NewNotFound``,
``NewConflict``, ``NewInvalid``, ...) and
``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/status.go``.

Every handler failure is raised as an :class:`ApiError`, which carries the exact ``Status`` body
that the real kube-apiserver sends (reason, code, message and details were checked against the
recorded conformance cases). The server turns it into a JSON response; nothing else may escape
a handler.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

JSON = dict[str, Any]


class ApiError(Exception):
    """An API failure: ``status`` is the HTTP code, ``body`` the ``v1 Status`` object."""

    def __init__(self, body: JSON) -> None:
        super().__init__(body.get("message", ""))
        self.body = body
        self.status = int(body.get("code") or 500)


def status_body(
    code: int | None,
    reason: str | None,
    message: str,
    details: JSON | None = None,
    *,
    success: bool = False,
) -> JSON:
    """Build a ``v1 Status``. ``details`` is omitted when None (upstream omits empty pointers)."""
    body: JSON = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if success else "Failure",
    }
    if message:
        body["message"] = message
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    if code is not None:
        body["code"] = code
    return body


def _details(name: str, kind: str, group: str = "") -> JSON:
    """``StatusDetails`` with upstream's omitempty rules (empty name/group are left out)."""
    details: JSON = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def _qualified(resource: str, group: str = "") -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        status_body(
            404,
            "NotFound",
            f'{_qualified(resource, group)} "{name}" not found',
            _details(name, resource, group),
        )
    )


def forbidden(resource: str, name: str, why: str, group: str = "") -> ApiError:
    """``NewForbidden``: "<resource> "<name>" is forbidden: <why>" (admission refusals)."""
    return ApiError(
        status_body(
            403,
            "Forbidden",
            f'{_qualified(resource, group)} "{name}" is forbidden: {why}',
            _details(name, resource, group),
        )
    )


def unknown_path() -> ApiError:
    """An unknown resource or path (upstream's NotFound for an unmatched route)."""
    return ApiError(
        status_body(404, "NotFound", "the server could not find the requested resource", {})
    )


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        status_body(
            409,
            "AlreadyExists",
            f'{_qualified(resource, group)} "{name}" already exists',
            _details(name, resource, group),
        )
    )


def conflict(resource: str, name: str, why: str, group: str = "") -> ApiError:
    """``NewConflict``: "Operation cannot be fulfilled on <resource> "<name>": <why>"."""
    return ApiError(
        status_body(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
            _details(name, resource, group),
        )
    )


STALE_OBJECT = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def bad_request(message: str) -> ApiError:
    return ApiError(status_body(400, "BadRequest", message))


def method_not_allowed() -> ApiError:
    return ApiError(
        status_body(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            {},
        )
    )


def not_acceptable(available: list[str]) -> ApiError:
    message = "406: Not Acceptable\n\nAvailable representations: " + ", ".join(available)
    return ApiError(status_body(406, "NotAcceptable", message, {}))


def unsupported_media_type(content_type: str) -> ApiError:
    del content_type  # upstream does not echo it
    return ApiError(
        status_body(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml, application/vnd.kubernetes.protobuf",
        )
    )


def unauthorized() -> ApiError:
    return ApiError(status_body(401, "Unauthorized", "Unauthorized"))


def rbac_forbidden(user: str, verb: str, target: RequestTarget) -> ApiError:
    """What RBAC's refusal looks like (``responsewriters.Forbidden`` + ``NewForbidden``)."""
    if target.resource is None:
        why = f'User "{user}" cannot {verb} path "{target.path}"'
        return ApiError(status_body(403, "Forbidden", f"forbidden: {why}", {}))
    resource = target.resource + (f"/{target.subresource}" if target.subresource else "")
    scope = f'in the namespace "{target.namespace}"' if target.namespace else "at the cluster scope"
    why = f'User "{user}" cannot {verb} resource "{resource}" in API group "{target.group}" {scope}'
    qualified = _qualified(target.resource, target.group)
    head = f'{qualified} "{target.name}"' if target.name else qualified
    return ApiError(
        status_body(
            403,
            "Forbidden",
            f"{head} is forbidden: {why}",
            _details(target.name, target.resource, target.group),
        )
    )


@dataclass(frozen=True)
class RequestTarget:
    """What a request names for authorization (upstream's ``RequestInfo``, cut down)."""

    path: str
    resource: str | None = None  # None: a non-resource path
    group: str = ""
    namespace: str = ""
    name: str = ""
    subresource: str = ""


def too_large(limit: int) -> ApiError:
    return ApiError(
        status_body(
            413,
            "RequestEntityTooLarge",
            f"Request entity too large: limit is {limit}",
        )
    )


def expired(message: str) -> ApiError:
    return ApiError(status_body(410, "Expired", message))


def too_large_resource_version(requested: int, current: int) -> ApiError:
    """A read at a resourceVersion the server has not reached yet (upstream waits, then 504)."""
    return ApiError(
        status_body(
            504,
            "Timeout",
            f"Timeout: Too large resource version: {requested}, current: {current}",
            {
                "causes": [
                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                ],
                "retryAfterSeconds": 1,
            },
        )
    )


def service_unavailable(message: str) -> ApiError:
    return ApiError(
        status_body(503, "ServiceUnavailable", message, {"retryAfterSeconds": 1}),
    )


class FieldError:
    """One validation failure (upstream ``field.Error``): a cause of a 422 Invalid."""

    def __init__(self, kind: str, field: str, detail: str = "", value: Any = None) -> None:
        # Required | Invalid | Duplicate | Forbidden | Unsupported, and for custom resources
        # TypeInvalid | TooLong | TooMany
        self.kind = kind
        self.field = field
        self.detail = detail
        self.value = value

    _REASONS = {
        "Required": "FieldValueRequired",
        "Invalid": "FieldValueInvalid",
        "Duplicate": "FieldValueDuplicate",
        "Forbidden": "FieldValueForbidden",
        "Unsupported": "FieldValueNotSupported",
        "TypeInvalid": "FieldValueTypeInvalid",
        "TooLong": "FieldValueTooLong",
        "TooMany": "FieldValueTooMany",
    }

    def cause_message(self) -> str:
        """The message without the field path, as in ``details.causes[].message``."""
        if self.kind == "Required":
            head = "Required value"
        elif self.kind == "Forbidden":
            head = "Forbidden"
        elif self.kind == "TooLong":  # field.TooLong never shows the value
            head = "Too long"
        elif self.kind == "TooMany":
            head = f"Too many: {_go_quote(self.value)}"
        elif self.kind == "Duplicate":
            return f"Duplicate value: {_go_quote(self.value)}"
        elif self.kind == "Unsupported":
            head = f"Unsupported value: {_go_quote(self.value)}"
        else:  # Invalid and TypeInvalid ("Invalid value" both)
            head = f"Invalid value: {_go_quote(self.value)}"
        return f"{head}: {self.detail}" if self.detail else head

    def cause(self) -> JSON:
        return {
            "reason": self._REASONS[self.kind],
            "message": self.cause_message(),
            "field": self.field,
        }

    def __str__(self) -> str:
        return f"{self.field}: {self.cause_message()}"


def _go_quote(value: Any) -> str:
    """Render a value as ``field.Error`` does: strings quoted (``%q``), numbers and booleans
    as ``%v``, anything else as its JSON (``[]string{"a"}`` prints as ``["a"]``, nil as
    ``null``)."""
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, int):
        return str(value)
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    # Go's encoder escapes HTML characters.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_float(value: float) -> str:
    """A float64 as Go's ``%v`` prints it: the shortest digits, an exponent only below 1e-4
    or from 1e21 on (``1``, ``1.5``, ``1e+21``, ``1e-05``)."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"inf": "+Inf", "-inf": "-Inf"}.get(str(value), "NaN")
    if value == 0:
        return "0"
    digits = Decimal(repr(value))
    exponent = digits.adjusted()
    if -4 <= exponent < 21:
        text = format(digits, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    sign, coeff, _ = digits.as_tuple()
    mantissa = "".join(map(str, coeff)).rstrip("0") or "0"
    head = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
    return f"{'-' if sign else ''}{head}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"


def invalid(
    kind: str, name: str, errors: list[FieldError], group: str = "", name_in_details: bool = True
) -> ApiError:
    """``NewInvalid``: 422 with one cause per field error.

    The message lists one error plainly and several in brackets, as upstream's
    ``ErrorList.ToAggregate().Error()`` does.
    """
    if len(errors) == 1:
        summary = str(errors[0])
    else:
        summary = "[" + ", ".join(str(e) for e in errors) + "]"
    qualified = f"{kind}.{group}" if group else kind
    details = _details(name if name_in_details else "", kind, group)
    details["causes"] = [e.cause() for e in errors]
    return ApiError(
        status_body(422, "Invalid", f'{qualified} "{name}" is invalid: {summary}', details)
    )


def unsupported_patch_type() -> ApiError:
    """PATCH with a media type that is not a patch: the handler's bare 415 (message and
    empty details as upstream's ``NewGenericServerResponse`` for StatusUnsupportedMediaType)."""
    return ApiError(status_body(415, "UnsupportedMediaType", "415: Unsupported Media Type", {}))


def patch_rejected() -> ApiError:
    """A JSON patch that cannot be applied (failed ``test``, missing path): 422, no details."""
    return ApiError(
        status_body(
            422, "Invalid", "the server rejected our request due to an error in our request", {}
        )
    )


def success(code: int | None = None, details: JSON | None = None) -> JSON:
    """A ``Status`` reporting success (binding answers 201; node delete answers details only)."""
    return status_body(code, None, "", details, success=True)
