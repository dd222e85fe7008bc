"""Helpers shared by plugins.

Upstream: pkg/scheduler/framework/plugins/helper/normalize_score.go (DefaultNormalizeScore) at
v1.23.
"""

from __future__ import annotations

from ..framework import NodeScore, Status


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status:
    """Scale the scores in place so the highest becomes ``max_priority``; with ``reverse``,
    the highest becomes 0 and 0 becomes ``max_priority``.

    When every score is 0 they stay 0, or all become ``max_priority`` with ``reverse``.
    Integer arithmetic, as upstream: 10 of a best 30 becomes 33 out of 100.
    """
    max_count = max((s.score for s in scores), default=0)
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return Status()
    for s in scores:
        score = max_priority * s.score // max_count
        s.score = max_priority - score if reverse else score
    return Status()
