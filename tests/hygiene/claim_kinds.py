"""What a claim module lists (tests/hygiene/claims/claims_NN_name.py): the sentences records show, and those
they cannot, each quoted from where it is written."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class Claim:
    """``sentence``, quoted from ``where`` (a path from the repository root; the lesson itself by default), and
    ``check(records)``, which asserts that the records show it."""

    sentence: str
    check: Callable[..., None]  # check(records): asserts what the sentence says of them
    where: str | None = None
    # The sentence says the points it reads are within noise (the records mark them so); every other
    # claim may read no point marked within noise.
    about_noise: bool = False


@dataclasses.dataclass(frozen=True)
class Unshown:
    """A sentence about a GPU, quoted from ``where``, that no shipped record can show, and ``why``."""

    sentence: str
    why: str
    where: str | None = None
