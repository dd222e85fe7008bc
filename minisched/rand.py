"""``intn``: Go's ``rand.Intn`` over a seeded ``random.Random``.

Upstream counterpart: math/rand's ``Intn``, which kube-scheduler's selectHost calls once for
every node that ties with the best score so far.

``intn(rng, n)`` returns the number ``rng.randrange(n)`` would, and leaves ``rng`` in the same
state: CPython's ``randrange(n)`` draws ``n.bit_length()`` random bits until they make a number
below ``n``, and so does this. It exists for speed only: ``randrange`` checks its arguments and
then calls ``_randbelow``, two Python calls where this is one, about 80 ns less per draw, 0.4 ms
of a cycle where 5000 nodes tie. The seeded scenarios bind exactly as they did with
``randrange``; ``tests/test_rand.py`` holds the two to the same numbers.
"""

from __future__ import annotations

import random


def intn(rng: random.Random, n: int) -> int:
    """A number in [0, n), uniformly at random; ``n`` must be positive (Go panics otherwise)."""
    if n <= 0:
        raise ValueError(f"invalid argument to intn: {n}")
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:  # too large: draw again, as randrange does, so every number is as likely
        r = rng.getrandbits(k)
    return r
