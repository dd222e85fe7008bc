"""A Ctrl-C that lands in a finalizer prints no traceback (``runner._quiet_interrupts``): the
shutdown test saw "Exception ignored in: 'list_namespaced_pod'" once, a KeyboardInterrupt
raised while the collector closed a watch's generator."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from minisched import runner


def test_a_keyboard_interrupt_nobody_can_raise_is_not_printed() -> None:
    seen: list[Any] = []
    hook = runner._quiet_interrupts(seen.append)
    hook(SimpleNamespace(exc_value=KeyboardInterrupt()))
    assert seen == []
    other = SimpleNamespace(exc_value=ValueError("a real problem"))
    hook(other)
    assert seen == [other]  # every other unraisable error goes to the previous hook
