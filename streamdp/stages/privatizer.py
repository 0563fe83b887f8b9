"""Chunks in, :class:`~streamdp.privacy.release.PrivateRelease` out: mechanism + accountant.

The privatizer is the only maker of releases: importing this module claims the process's
:class:`~streamdp.privacy.release.ReleaseMint`, and the mint lives only inside
:meth:`Privatizer.update`, after the accountant's charge and the mechanism's noise. No module or
class attribute names it, so no import reaches it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
from randomgen import HC128, SPECK128, AESCounter, ChaCha

from ..errors import BudgetExhausted
from ..privacy.accountant import Accountant, PrivacyUnit, chunks_touched
from ..privacy.mechanisms import MECHANISMS, Mechanism
from ..privacy.noise import secure_generator
from ..privacy.release import PrivateRelease, ReleaseMint, claim_mint
from .base import Stage
from .chunker import Chunk

log = logging.getLogger(__name__)

_REGISTERED = frozenset(MECHANISMS.values())

#: bit generators built on a cryptographic cipher: their output does not reveal their state, so
#: the noise cannot be predicted from earlier releases (PCG64, MT19937, Philox… can be)
CRYPTOGRAPHIC_BIT_GENERATORS: tuple[type, ...] = (AESCounter, ChaCha, HC128, SPECK128)

#: the ledger key saying whether the noise came from a cryptographic generator, and its values
GENERATOR_KEY = "generator"
CRYPTOGRAPHIC = "cryptographic"
NOT_CRYPTOGRAPHIC = "not cryptographic"


def is_cryptographic(rng: np.random.Generator) -> bool:
    """Whether ``rng`` draws from a cryptographic bit generator (as :func:`secure_generator`'s does).

    Examples
    --------
    >>> is_cryptographic(secure_generator(0)), is_cryptographic(np.random.default_rng(0))
    (True, False)
    """
    return isinstance(rng.bit_generator, CRYPTOGRAPHIC_BIT_GENERATORS)


def check_rng(rng: object) -> np.random.Generator:
    """``rng`` if it is a NumPy ``Generator``.

    Raises
    ------
    TypeError
        Anything else (a seed, a ``RandomState``, a bit generator), with the hint to build one.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy Generator (use streamdp.privacy.secure_generator(seed)), got {rng!r}"
        )
    return rng


def _update_with(mint: ReleaseMint) -> Callable[[Privatizer, list[Chunk]], list[PrivateRelease]]:
    def update(self: Privatizer, chunks: list[Chunk]) -> list[PrivateRelease]:
        """Charge, perturb and seal each chunk; return the releases.

        When the session budget runs out midway, the releases made so far are returned and
        ``exhausted`` becomes true.

        Raises
        ------
        BudgetExhausted
            ``chunks`` is not empty and the budget was already exhausted.
        """
        if chunks and self.exhausted:
            raise BudgetExhausted(self.exhausted_message or "privacy budget exhausted")
        out: list[PrivateRelease] = []
        for chunk in chunks:
            try:
                entry = self.accountant.charge()
            except BudgetExhausted as exc:
                self._exhausted_message = str(exc)
                log.debug("%s", exc)  # the session says it, once
                break
            res = self.mechanism.privatize(chunk.values, self.rng)
            entry["clipped_fraction"] = res.clipped_fraction
            entry[GENERATOR_KEY] = self._generator
            if getattr(self.mechanism, "k_private", False):
                entry["k_chosen"] = res.k.tolist()
            out.append(
                mint.seal(
                    t=chunk.t,
                    values=res.values,
                    names=self.mechanism.bounds.names,
                    ledger=entry,
                    clipped_fraction=res.clipped_fraction,
                )
            )
        return out

    return update


class Privatizer(Stage[list[Chunk], list[PrivateRelease]]):
    """Perturbs each chunk with ``mechanism`` after charging it to the accountant.

    ``rng`` defaults to a cryptographic generator seeded from the OS; pass
    ``secure_generator(seed)`` for reproducible research. Every ledger entry says under
    ``"generator"`` whether the noise came from a cryptographic generator (``"cryptographic"``)
    or not (``"not cryptographic"``, e.g. ``np.random.default_rng``: fine for simulations, refused
    by network sinks). When a session budget runs out the releases made so far are returned,
    ``exhausted`` becomes true with a message (``exhausted_message``), and the next update raises
    :class:`~streamdp.errors.BudgetExhausted`.

    Raises
    ------
    TypeError
        ``mechanism`` is not one of the registered mechanisms, ``unit`` not a
        :class:`~streamdp.privacy.accountant.PrivacyUnit`, or ``rng`` not a NumPy ``Generator``.

    Examples
    --------
    >>> import numpy as np
    >>> from streamdp.privacy import dcfpa, default_profile, secure_generator
    >>> priv = Privatizer(dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=4), rng=secure_generator(1))
    >>> (rel,) = priv.update([Chunk(np.arange(4) * 0.5, np.zeros((4, 52)))])
    >>> rel.ledger["chunk_index"], rel.ledger["epsilon_spent"], rel.ledger["generator"], priv.flush()
    (0, 52.0, 'cryptographic', [])
    >>> Privatizer(priv.mechanism, rng=42)
    Traceback (most recent call last):
    ...
    TypeError: rng must be a numpy Generator (use streamdp.privacy.secure_generator(seed)), got 42
    """

    update = _update_with(claim_mint())

    def __init__(
        self,
        mechanism: Mechanism,
        unit: PrivacyUnit | None = None,
        rng: np.random.Generator | None = None,
        window: float = 30.0,
        step: float = 0.5,
    ) -> None:
        # a mechanism of our own registry only: a subclass could return its input unperturbed
        # and still have it sealed
        if type(mechanism) not in _REGISTERED:
            raise TypeError(
                f"mechanism must be one of the registered mechanisms ({', '.join(MECHANISMS)}), "
                f"got {type(mechanism).__name__}"
            )
        if unit is not None and not isinstance(unit, PrivacyUnit):
            raise TypeError(
                f"unit must be a PrivacyUnit (e.g. PrivacyUnit('session', budget=100.0)), got {unit!r}"
            )
        self._mechanism = mechanism
        self._rng = check_rng(rng) if rng is not None else secure_generator()
        self._generator = CRYPTOGRAPHIC if is_cryptographic(self._rng) else NOT_CRYPTOGRAPHIC
        self._accountant = Accountant(
            epsilon_chunk=mechanism.epsilon_chunk,
            unit=unit or PrivacyUnit(),
            mechanism=mechanism.describe(),
            bounds_digest=mechanism.bounds.digest(),
            raw_gaze_chunks=chunks_touched(window, step, mechanism.chunk_length),
        )
        self._exhausted_message: str | None = None

    # read-only: what is perturbed, with which noise, and what was spent cannot be swapped
    # behind the ledger's back
    @property
    def mechanism(self) -> Mechanism:
        return self._mechanism

    @property
    def rng(self) -> np.random.Generator:
        return self._rng

    @property
    def accountant(self) -> Accountant:
        return self._accountant

    @property
    def unit(self) -> PrivacyUnit:
        return self._accountant.unit

    @property
    def exhausted_message(self) -> str | None:
        """Why nothing more is released, once the session budget is spent."""
        return self._exhausted_message

    @property
    def exhausted(self) -> bool:
        """Whether the session budget is spent: nothing more is released."""
        return self._exhausted_message is not None

    def flush(self) -> list[PrivateRelease]:
        """Nothing is held between chunks: always ``[]``."""
        return []

    def reset(self) -> None:
        """Forget the stream, but never the budget spent: the accountant (ε spent, chunks
        released, exhaustion) and the generator's state carry on, so a reset cannot buy a fresh
        budget or repeat noise. The privatizer holds no other stream state."""
