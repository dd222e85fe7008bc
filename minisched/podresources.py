"""What a pod asks of its node: the runtime's one copy of the scheduler's request arithmetic.

Upstream counterpart: computePodResourceRequest in
pkg/scheduler/framework/plugins/noderesources/fit.go at v1.23, with NewResource and
Resource.Add/SetMaxResource (pkg/scheduler/framework/types.go) for the units and rounding.
The steps keep their own copy (steps/step10/plugins/noderesources.py: it is the lesson); the
runtime (the web page's node cards) uses this one, so what the page shows as requested on a node
is what the scheduler's NodeInfo counts.

A pod's containers run side by side, so their requests add up; its init containers run one
after the other before them, so the pod needs the largest of them where that is more; the
overhead of its runtime class (``spec.overhead``) comes on top.

Amounts are integers, as upstream's Resource holds them: cpu in millicores
(``Quantity.MilliValue()``), everything else in whole units (``Quantity.Value()``: bytes for
memory), each rounded up. Every resource named is counted (upstream also counts extended
resources and hugepages, as scalar resources).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kubernetes.utils import parse_quantity

__all__ = ["compute_pod_resource_request", "resource_list"]


def resource_list(quantities: Mapping[str, Any] | None) -> dict[str, int]:
    """A ResourceList (``{"cpu": "250m", "memory": "1Gi"}``) in upstream's units: cpu in
    millicores, the rest in whole units, rounded up (upstream: NewResource)."""
    amounts: dict[str, int] = {}
    for name, quantity in (quantities or {}).items():
        value = parse_quantity(str(quantity))
        amounts[name] = math.ceil(value * 1000) if name == "cpu" else math.ceil(value)
    return amounts


def compute_pod_resource_request(pod: Any) -> dict[str, int]:
    """The pod's request of each resource it names (upstream: computePodResourceRequest).

    ``pod`` is a V1Pod (or anything with its ``spec`` shape): the containers' requests summed,
    raised to any init container's where that asks for more, plus ``spec.overhead``.
    """
    spec = pod.spec
    total: dict[str, int] = {}
    for container in spec.containers or []:
        for name, amount in _requests(container).items():
            total[name] = total.get(name, 0) + amount
    for container in spec.init_containers or []:
        for name, amount in _requests(container).items():
            total[name] = max(total.get(name, 0), amount)
    for name, amount in resource_list(spec.overhead).items():
        total[name] = total.get(name, 0) + amount
    return total


def _requests(container: Any) -> dict[str, int]:
    resources = container.resources
    return resource_list(resources.requests if resources else None)
