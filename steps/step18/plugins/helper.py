"""Helpers shared by plugins.

Upstream: pkg/scheduler/framework/plugins/helper/normalize_score.go (DefaultNormalizeScore) at
v1.23.
"""

from __future__ import annotations

import numpy as np

from ..framework import NodeScore, Status


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status:
    """Scale the scores in place so the highest becomes ``max_priority``; with ``reverse``,
    the highest becomes 0 and 0 becomes ``max_priority``.

    When no score is above 0 they are left as they are, or all become ``max_priority`` with
    ``reverse`` (upstream's maxCount starts at 0, so negative scores never become the best).
    Integer arithmetic, as upstream: 10 of a best 30 becomes 33 out of 100, and a division
    truncates toward zero as Go's does (-300 / 7 is -42; Python's // would give -43).
    """
    max_count = max((s.score for s in scores if s.score > 0), default=0)
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return Status()
    for s in scores:
        product = max_priority * s.score
        score = product // max_count if product >= 0 else -(-product // max_count)
        s.score = max_priority - score if reverse else score
    return Status()


def default_normalize_scores(max_priority: int, reverse: bool, scores: np.ndarray) -> np.ndarray:
    """default_normalize_score over an array of scores (Score over every node at
    once): the same integer arithmetic, a new array."""
    positive = scores[scores > 0]
    max_count = int(positive.max()) if positive.size else 0
    if max_count == 0:
        return np.full_like(scores, max_priority) if reverse else scores
    product = max_priority * scores
    # Go's division truncates toward zero; numpy's // floors, as Python's does.
    score = np.where(product >= 0, product // max_count, -(-product // max_count))
    return max_priority - score if reverse else score
