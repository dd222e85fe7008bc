"""DefaultBinder: binds a pod by creating its ``pods/NAME/binding`` subresource.

Upstream: pkg/scheduler/framework/plugins/defaultbinder/default_binder.go (DefaultBinder.Bind)
at v1.23: the last Bind plugin of the default profile, the one that binds every pod the
plugins before it skip.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kubernetes import client
from kubernetes.client import V1Pod

from minisched.cluster import connection_error_reason
from minisched.informer import meta_namespace_key

from ..cycle_state import CycleState
from ..framework import Handle, Status, as_status

log = logging.getLogger(__name__)

NAME = "DefaultBinder"


class DefaultBinder:
    """Binds through the API server, with the framework handle's client."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def name(self) -> str:
        return NAME

    def bind(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> Status:
        """The API server answers 201 with a Status, which the official client cannot read as
        a V1Binding: ask for the raw response and read it, so the connection goes back to the
        pool."""
        log.debug(
            'Attempting to bind pod to node pod="%s" node="%s"', meta_namespace_key(pod), node_name
        )
        binding = client.V1Binding(
            metadata=client.V1ObjectMeta(
                name=pod.metadata.name, namespace=pod.metadata.namespace, uid=pod.metadata.uid
            ),
            target=client.V1ObjectReference(kind="Node", api_version="v1", name=node_name),
        )
        try:
            response = self.handle.client_set().create_namespaced_pod_binding(
                pod.metadata.name, pod.metadata.namespace, binding, _preload_content=False
            )
            response.data  # noqa: B018 -- reading the body releases the connection
        except client.ApiException as e:
            err = Exception(status_message(e))
            err.__cause__ = e  # so that a 404 can be told apart (is_not_found)
            return as_status(err)
        except Exception as e:  # the connection failed: say why, not urllib3's nested reprs
            return as_status(Exception(connection_error_reason(e)))
        return Status()


def status_message(e: client.ApiException) -> str:
    """The ``message`` of the Status the API server refused with, which is all client-go's
    StatusError prints; the status line when the body is not a Status."""
    try:
        message = json.loads(e.body or "").get("message")
    except (ValueError, AttributeError):
        message = None
    return message or f"{e.status} {e.reason}"


def new(args: Any, handle: Handle) -> DefaultBinder:
    """The plugin factory (upstream: New)."""
    return DefaultBinder(handle)
