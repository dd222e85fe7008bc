"""minisched.rand.intn: the numbers and the state of ``randrange``, for every step's
select_host."""

from __future__ import annotations

import random

import pytest

from minisched.rand import intn


@pytest.mark.parametrize("seed", [0, 1, 42])
def test_intn_draws_what_randrange_draws_and_leaves_the_same_state(seed: int) -> None:
    ours, theirs = random.Random(seed), random.Random(seed)
    sizes = [1, 2, 3, 5, 7, 8, 9, 100, 127, 128, 129, 5000, 2**40 + 3] * 20
    assert [intn(ours, n) for n in sizes] == [theirs.randrange(n) for n in sizes]
    assert ours.getstate() == theirs.getstate()


def test_intn_refuses_what_go_panics_on() -> None:
    with pytest.raises(ValueError):
        intn(random.Random(1), 0)
