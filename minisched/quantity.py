"""``parse_quantity``, remembered: the official client's, each distinct quantity parsed once.

Upstream counterpart: ``resource.ParseQuantity`` (k8s.io/apimachinery). A Go object's
quantities are parsed once, as it is decoded, and read as numbers from then on. The Python
client keeps them as strings, and ``kubernetes.utils.parse_quantity`` parses one with
``Decimal`` arithmetic each time it is asked, so a scheduler asks again for the same few
strings ("100m", "500Mi") in every cycle. The answer is a ``Decimal``, which nobody can
change: handing the same one out again is safe. A quantity that does not parse raises every
time, as the client's does.
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

from kubernetes.utils import parse_quantity as _parse_quantity


@lru_cache(maxsize=4096)
def parse_quantity(quantity: str | int | float | Decimal) -> Decimal:
    """``kubernetes.utils.parse_quantity``, cached by its argument."""
    return _parse_quantity(quantity)  # type: ignore[no-any-return]
