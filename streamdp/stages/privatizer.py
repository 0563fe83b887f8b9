"""Chunks in, :class:`~streamdp.privacy.release.PrivateRelease` out: mechanism + accountant."""

from __future__ import annotations

import logging

import numpy as np

from ..errors import BudgetExhausted
from ..privacy.accountant import Accountant, PrivacyUnit, chunks_touched
from ..privacy.mechanisms import Mechanism
from ..privacy.noise import secure_generator
from ..privacy.release import PrivateRelease, _make_release
from .chunker import Chunk

log = logging.getLogger(__name__)


class Privatizer:
    """Perturbs each chunk with ``mechanism`` after charging it to the accountant.

    ``rng`` defaults to a cryptographic generator seeded from the OS; pass
    ``secure_generator(seed)`` for reproducible research. When a session budget runs out the
    releases made so far are returned, ``exhausted`` becomes true with a message, and the next
    update raises :class:`~streamdp.errors.BudgetExhausted`.
    """

    def __init__(
        self,
        mechanism: Mechanism,
        unit: PrivacyUnit | None = None,
        rng: np.random.Generator | None = None,
        window: float = 30.0,
        step: float = 0.5,
    ) -> None:
        self.mechanism = mechanism
        self.unit = unit or PrivacyUnit()
        self.rng = rng if rng is not None else secure_generator()
        self.accountant = Accountant(
            epsilon_chunk=mechanism.epsilon_chunk,
            unit=self.unit,
            mechanism=mechanism.describe(),
            bounds_digest=mechanism.bounds.digest(),
            raw_gaze_chunks=chunks_touched(window, step, mechanism.chunk_length),
        )
        self.exhausted_message: str | None = None

    @property
    def exhausted(self) -> bool:
        return self.exhausted_message is not None

    def update(self, chunks: list[Chunk]) -> list[PrivateRelease]:
        if chunks and self.exhausted:
            raise BudgetExhausted(self.exhausted_message or "privacy budget exhausted")
        out: list[PrivateRelease] = []
        for chunk in chunks:
            try:
                entry = self.accountant.charge()
            except BudgetExhausted as exc:
                self.exhausted_message = str(exc)
                log.warning("%s", exc)
                break
            res = self.mechanism.privatize(chunk.values, self.rng)
            entry["clipped_fraction"] = res.clipped_fraction
            if getattr(self.mechanism, "k_private", False):
                entry["k_chosen"] = res.k.tolist()
            out.append(
                _make_release(chunk.t.copy(), res.values, self.mechanism.bounds.names, entry, res.clipped_fraction)
            )
        return out

    def flush(self) -> list[PrivateRelease]:
        return []

    def reset(self) -> None:
        """Forget the stream, but never the budget spent: the accountant is not reset."""
