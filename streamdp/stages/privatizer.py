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

from ..errors import BudgetExhausted
from ..postprocess import POSTPROCESS_KEY, FilterState, PostProcessor
from ..privacy.accountant import Accountant, PrivacyUnit
from ..privacy.guarantee import RawGazeReach
from ..privacy.mechanisms import MECHANISMS, Mechanism
from ..privacy.noise import secure_generator
from ..privacy.randomness import CRYPTOGRAPHIC, REPRODUCIBLE, RandomSource, as_random_source
from ..privacy.release import PrivateRelease, ReleaseMint, claim_mint
from ..schedule_defaults import DEFAULT_DEADLINE_SLACK, DEFAULT_MAX_EVENT_DURATION, DEFAULT_MAX_SACCADE_INTERVAL
from .base import Stage
from .chunker import Chunk

log = logging.getLogger(__name__)

_REGISTERED = frozenset(MECHANISMS.values())

#: the ledger key saying where the noise came from: ``CRYPTOGRAPHIC`` (the OS's CSPRNG, unpredictable)
#: or ``REPRODUCIBLE`` ("reproducible, not private": a seed or a NumPy generator, predictable)
GENERATOR_KEY = "generator"

__all__ = [
    "CRYPTOGRAPHIC", "GENERATOR_KEY", "POSTPROCESS_KEY", "REPRODUCIBLE", "Privatizer", "check_rng", "is_cryptographic",
]  # fmt: skip


def is_cryptographic(rng: RandomSource | np.random.Generator) -> bool:
    """Whether ``rng``'s output cannot be predicted from earlier outputs: only the OS-backed
    source that :func:`secure_generator` returns without a seed.

    Examples
    --------
    >>> is_cryptographic(secure_generator()), is_cryptographic(secure_generator(0))
    (True, False)
    >>> is_cryptographic(np.random.default_rng(0))
    False
    """
    return as_random_source(rng).cryptographic


def check_mechanism(mechanism: object) -> Mechanism:
    """``mechanism`` if it is an instance of a registered mechanism class (not a subclass: one
    could return its input unperturbed and still have it sealed).

    Raises
    ------
    TypeError
        Anything else, named.
    """
    if type(mechanism) not in _REGISTERED:
        raise TypeError(
            f"mechanism must be one of the registered mechanisms ({', '.join(MECHANISMS)}), "
            f"got {type(mechanism).__name__}"
        )
    return mechanism  # type: ignore[return-value]


def _post_processor(mechanism: Mechanism) -> PostProcessor:
    """The post-processor of ``mechanism``'s releases, run once on a chunk of zeros (numba, where
    installed, compiles the pass then, not at the first release).

    Raises
    ------
    ValueError
        The mechanism's noise is not one the ledger states (Steil's), named.
    """
    ledger = {**mechanism.describe(), "bounds_digest": mechanism.bounds.digest()}
    try:
        post = PostProcessor(ledger=ledger, bounds=mechanism.bounds)
    except ValueError as exc:
        raise ValueError(f"postprocess: {exc}") from None
    post(np.zeros((mechanism.chunk_length, len(mechanism.bounds.names))))
    return post


def check_rng(rng: object) -> RandomSource:
    """``rng`` as a random source: a :class:`~streamdp.privacy.randomness.RandomSource` as it is,
    a NumPy ``Generator`` wrapped (reproducible, not private).

    Raises
    ------
    TypeError
        Anything else (a seed, a ``RandomState``, a bit generator), with the hint to build one.
    """
    return as_random_source(rng)


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
            values = res.values
            post = self._post
            if post is not None:  # a function of the noised values and public parameters: no ε
                values, self._post_state = post(values, self._post_state)
                entry[POSTPROCESS_KEY] = {"drift": post.drift, "smooth": post.smooth, "consistent": post.consistent}
            out.append(
                mint.seal(
                    t=chunk.t,
                    values=values,
                    names=self.mechanism.bounds.names,
                    ledger=entry,
                    clipped_fraction=res.clipped_fraction,
                )
            )
        return out

    return update


class Privatizer(Stage[list[Chunk], list[PrivateRelease]]):
    """Perturbs each chunk with ``mechanism`` after charging it to the accountant.

    ``rng`` defaults to the OS's CSPRNG (:func:`secure_generator` without a seed); pass
    ``secure_generator(seed)`` (or a NumPy ``Generator``) for reproducible research. Every ledger
    entry says under ``"generator"`` where the noise came from: ``"cryptographic"``, or
    ``"reproducible, not private"`` for a seeded or NumPy generator (fine for tests and
    simulations, refused by network sinks). When a session budget runs out the releases made so far are returned,
    ``exhausted`` becomes true with a message (``exhausted_message``), and the next update raises
    :class:`~streamdp.errors.BudgetExhausted`.

    Every ledger entry also states what raw gaze costs (one sample, one second, a whole session):
    :class:`~streamdp.privacy.guarantee.RawGazeReach` from the public ``window``, ``step``,
    chunk length, ``max_event_duration`` (the block length events never span),
    ``max_saccade_interval`` and ``deadline_slack`` — give the values the features use.

    ``postprocess=True`` smooths each chunk across the stream's chunks and makes it consistent
    with public facts (:class:`~streamdp.postprocess.PostProcessor`) after the noise and before
    the seal: a function of the noised values and public parameters only, so it spends no ε; the
    ledger says so under ``"postprocess"`` (its public settings).

    Raises
    ------
    TypeError
        ``mechanism`` is not one of the registered mechanisms, ``unit`` not a
        :class:`~streamdp.privacy.accountant.PrivacyUnit`, ``rng`` neither a random source
        nor a NumPy ``Generator``, or a time parameter not a number.
    ValueError
        ``window``, ``step`` or ``max_event_duration`` not finite and > 0,
        ``max_saccade_interval`` or ``deadline_slack`` negative, named with the value.

    Examples
    --------
    >>> import numpy as np
    >>> from streamdp.privacy import dcfpa, default_profile, secure_generator
    >>> priv = Privatizer(dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=4))
    >>> (rel,) = priv.update([Chunk(np.arange(4) * 0.5, np.zeros((4, 52)))])
    >>> rel.ledger["chunk_index"], rel.ledger["generator"], priv.flush()
    (0, 'cryptographic', [])
    >>> seeded = Privatizer(priv.mechanism, rng=secure_generator(1))
    >>> seeded.update([Chunk(np.arange(4) * 0.5, np.zeros((4, 52)))])[0].ledger["generator"]
    'reproducible, not private'
    >>> print(rel.ledger["raw_gaze_guarantee"].split("; ")[0])
    raw gaze: one sample changes at most 23 chunks (ε ≤ 23)
    >>> Privatizer(priv.mechanism, rng=42)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: rng must be a random source (streamdp.privacy.secure_generator(), ...) or a numpy Generator, got 42
    """

    update = _update_with(claim_mint())

    def __init__(
        self,
        mechanism: Mechanism,
        unit: PrivacyUnit | None = None,
        rng: RandomSource | np.random.Generator | None = None,
        window: float = 30.0,
        step: float = 0.5,
        *,
        max_event_duration: float = DEFAULT_MAX_EVENT_DURATION,
        max_saccade_interval: float = DEFAULT_MAX_SACCADE_INTERVAL,
        deadline_slack: float = DEFAULT_DEADLINE_SLACK,
        postprocess: bool = False,
    ) -> None:
        check_mechanism(mechanism)
        if not isinstance(postprocess, bool):
            raise TypeError(f"postprocess must be True or False, got {postprocess!r}")
        self._post = _post_processor(mechanism) if postprocess else None
        self._post_state: FilterState | None = None
        if unit is not None and not isinstance(unit, PrivacyUnit):
            raise TypeError(
                f"unit must be a PrivacyUnit (e.g. PrivacyUnit('session', budget=100.0)), got {unit!r}"
            )
        reach = RawGazeReach(
            window,
            step,
            mechanism.chunk_length,
            max_event_duration=max_event_duration,
            max_saccade_interval=max_saccade_interval,
            deadline_slack=deadline_slack,
        )
        self._mechanism = mechanism
        self._rng = check_rng(rng) if rng is not None else secure_generator()
        self._generator = self._rng.ledger_label
        self._accountant = Accountant(
            epsilon_chunk=mechanism.epsilon_chunk,
            unit=unit or PrivacyUnit(),
            mechanism=mechanism.describe(),
            bounds_digest=mechanism.bounds.digest(),
            raw_gaze_chunks=reach,
        )
        self._exhausted_message: str | None = None

    # read-only: what is perturbed, with which noise, and what was spent cannot be swapped
    # behind the ledger's back
    @property
    def mechanism(self) -> Mechanism:
        return self._mechanism

    @property
    def rng(self) -> RandomSource:
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
        """No chunk is held: always ``[]``. The stream ended: the post-processing filter
        (``postprocess``) forgets it, so a stream after a gap or a restart is not smoothed toward
        this one."""
        self._post_state = None
        return []

    def reset(self) -> None:
        """Forget the stream, but never the budget spent: the accountant (ε spent, chunks
        released, exhaustion) and the generator's state carry on, so a reset cannot buy a fresh
        budget or repeat noise. The post-processing filter (``postprocess``) starts afresh: the
        next chunk is not smoothed toward the last stream's."""
        self._post_state = None
