"""Post-processing of released chunks for free accuracy: differential privacy is closed under it.

Whatever a function of the releases alone computes costs no ε (it never touches the gaze), so
apps and the evaluation may apply it to every :class:`~streamdp.privacy.release.PrivateRelease`
or :class:`~streamdp.network.client.ReceivedRelease`. Two steps, each optional:

1. **Smoothing across consecutive chunks** (``smooth=True``): a Kalman filter per feature on the
   chunk's level (its mean over the steps). The observation noise is the variance the ledger's
   mechanism gives the level (:func:`noise_model`, from the ledger's public parameters and the
   public bounds); the state is assumed to drift slowly, a random walk whose change per chunk has
   the standard deviation ``drift × (hi − lo)`` (an assumption about the data, public, stated
   here: features of the same person and activity change slowly between chunks; a switch of
   activity is followed within a few chunks). Only the level moves: each step keeps its released
   offset from the chunk mean. A gap of ``g`` chunks adds ``g`` times the drift variance.
2. **Consistency** (``consistent=True``): the chunk projected onto the public facts of
   :data:`CONSTRAINTS` (bounds, non-negativity, fractions in [0, 1], rates and fractions that add
   up, range = max − min, mean ≤ max), weighted by the inverse noise variance. A chunk that
   already meets every fact comes back unchanged, bit for bit.

A feature the weights profile dropped (released as its public constant, ledger
``dropped_features``) is left exactly as released by both steps.

Examples
--------
>>> import numpy as np
>>> from streamdp.privacy import dcfpa, default_profile, secure_generator
>>> from streamdp.stages.chunker import Chunk
>>> from streamdp.stages.privatizer import Privatizer
>>> priv = Privatizer(dcfpa(epsilon=52.0, bounds=default_profile(), chunk_length=8), rng=secure_generator(0))
>>> rels = priv.update([Chunk(np.arange(8) * 0.5 + 4 * i, np.full((8, 52), 0.1)) for i in range(3)])
>>> out = postprocess(rels)
>>> len(out), out[0].shape, bool((out[2] >= 0).all())
(3, (8, 52), True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from ..privacy.bounds import BoundsProfile
from ._constraints import CONSTRAINTS, Projection, make_projection
from ._kernel import compiled_pass, pack
from ._noise import SUPPORTED_MECHANISMS, NoiseModel, noise_model

__all__ = ["CONSTRAINTS", "DEFAULT_DRIFT", "POSTPROCESS_KEY", "SUPPORTED_MECHANISMS", "FilterState", "NoiseModel",
           "PostProcessor", "noise_model", "postprocess"]

_F64 = NDArray[np.float64]
_FLOAT64 = np.dtype(np.float64)

#: the ledger key of a release post-processed where it was made (its public settings)
POSTPROCESS_KEY = "postprocess"

#: the assumed standard deviation of a feature's change of level between consecutive chunks, as a
#: fraction of its public range: chosen on public synthetic people (docs/postprocess.md)
DEFAULT_DRIFT = 0.02


@dataclass(frozen=True, eq=False)
class FilterState:
    """The smoother's state after a chunk: the level estimate and its variance per feature."""

    estimate: _F64
    variance: _F64


class PostProcessor:
    """Post-processing of one configuration's releases (see the module docstring).

    A function of the released values it is given and of public parameters only (the ledger's
    public entries, the public bounds, ``drift``): it never reads gaze or unsanitized features,
    which is what makes it differential-privacy post-processing, free of ε. Everything that
    depends on the configuration alone (the noise model, the constraints' index arrays, bounds
    and gains, laid out for the chunk length) is validated and computed once, here; a call only
    checks the chunk's type, shape and finiteness and runs the steps in place (see
    docs/postprocess.md §5 for the cost).

    Parameters
    ----------
    ledger : mapping
        A release's ledger entry: names the mechanism, its public parameters and the bounds digest.
    bounds : BoundsProfile, optional
        The public bounds the ledger's ``bounds_digest`` names; default the shipped profile of
        the ledger's ``weights``.
    drift : float, default DEFAULT_DRIFT
        Assumed standard deviation of a level's change per chunk, as a fraction of ``hi − lo``;
        finite and > 0. Smaller smooths more.
    smooth, consistent : bool, default True
        Which steps to run.

    Raises
    ------
    TypeError
        A parameter of the wrong type (named).
    ValueError
        ``drift`` not finite and > 0; the ledger names an unsupported mechanism or lacks a
        parameter; ``bounds`` is not the profile the ledger's digest names.

    Examples
    --------
    >>> from streamdp.privacy import LPA, default_profile
    >>> ledger = {**LPA(epsilon=52.0, bounds=default_profile(), chunk_length=4).describe(),
    ...           "bounds_digest": default_profile().digest()}
    >>> pp = PostProcessor(ledger=ledger)
    >>> out, state = pp(np.full((4, 52), -1.0))
    >>> float(out.min()), state.estimate.shape
    (0.0, (52,))
    >>> PostProcessor(ledger=ledger, drift=0)
    Traceback (most recent call last):
    ...
    ValueError: drift must be finite and > 0, got 0
    >>> pp.drift = 1.0
    Traceback (most recent call last):
    ...
    AttributeError: PostProcessor is immutable: cannot set 'drift'
    """

    __slots__ = ("_compiled", "_mean_weights", "_no_state", "_one", "_process", "_projection", "_shape",
                 "consistent", "drift", "noise", "smooth")  # fmt: skip

    noise: NoiseModel
    drift: float
    smooth: bool
    consistent: bool
    _projection: Projection
    _process: _F64
    _mean_weights: _F64
    _shape: tuple[int, int]
    _one: _F64
    _compiled: tuple[Callable[..., float], _F64, NDArray[np.int64]] | None
    _no_state: FilterState

    def __init__(
        self,
        *,
        ledger: Mapping[str, Any],
        bounds: BoundsProfile | None = None,
        drift: float = DEFAULT_DRIFT,
        smooth: bool = True,
        consistent: bool = True,
    ) -> None:
        for name, flag in (("smooth", smooth), ("consistent", consistent)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        if isinstance(drift, bool) or not isinstance(drift, (int, float)):
            raise TypeError(f"drift must be a real number, got {drift!r}")
        if not (np.isfinite(drift) and drift > 0):
            raise ValueError(f"drift must be finite and > 0, got {drift!r}")
        model = noise_model(ledger, bounds)
        b = model.bounds
        released = model.released
        projection = make_projection(b.lo, b.hi, model.step_variance, released)
        projection.tiles(model.chunk_length)  # built once, here
        process = _frozen((drift * b.width) ** 2)  # the drift's variance per chunk
        settings = {
            "noise": model,
            "drift": float(drift),
            "smooth": smooth,
            "consistent": consistent,
            "_projection": projection,
            "_process": process,
            "_mean_weights": _frozen(np.full(model.chunk_length, 1.0 / model.chunk_length)),
            "_shape": (model.chunk_length, released.size),
            "_one": _frozen(np.ones(released.size)),
            "_no_state": FilterState(_frozen(np.zeros(released.size)), _frozen(np.zeros(released.size))),
            "_compiled": None if not (smooth or consistent) or (kernel := compiled_pass()) is None else (kernel, *pack(
                np.vstack((projection.lo, projection.hi, process, model.level_variance)),
                projection.equalities, projection.tol, projection.corrected, projection.corrected_gain,
                projection.orders, projection.w_top, consistent=consistent, clip_a=projection.clip_a,
            )),
        }  # fmt: skip
        for key, value in settings.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"PostProcessor is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"PostProcessor is immutable: cannot delete {name!r}")

    def __repr__(self) -> str:
        return (f"PostProcessor(mechanism={self.noise.mechanism!r}, chunk_length={self.noise.chunk_length}, "
                f"drift={self.drift!r}, smooth={self.smooth!r}, consistent={self.consistent!r})")

    def __call__(
        self, values: _F64, state: FilterState | None = None, *, gap: int = 1
    ) -> tuple[_F64, FilterState | None]:
        """One chunk ``values`` (n, F) post-processed, and the smoother's state to pass with the
        next chunk (None when not smoothing). ``state=None`` starts the filter afresh; ``gap``:
        chunks since the state's chunk (≥ 1; consecutive chunks: 1).

        Raises
        ------
        TypeError
            ``values`` is not a float array, ``state`` not a FilterState or None, ``gap`` not an int.
        ValueError
            ``values`` is not a finite (chunk_length, F) array; the state's arrays are not float64
            of shape (F,); ``gap`` < 1.
        """
        n, n_features = self._shape
        if values.__class__ is np.ndarray and values.dtype is _FLOAT64 and values.shape == self._shape:
            x = values  # the common case, checked in one line: a float64 chunk of this shape
        else:
            x = _check_values(values, n, n_features, finite=False)
        owned = x is not values  # converted to float64: a new array, ours to overwrite
        if state is not None:
            if state.__class__ is not FilterState:
                if not isinstance(state, FilterState):
                    raise TypeError(f"state must be a FilterState or None, got {type(state).__name__}")
            for name, a in (("estimate", state.estimate), ("variance", state.variance)):
                # the compiled pass reads them without bounds checks
                if not (a.__class__ is np.ndarray and a.dtype is _FLOAT64 and a.shape == (n_features,)):
                    if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (n_features,)):
                        raise ValueError(f"state.{name} must be a float64 array of shape ({n_features},), "
                                         f"got {a!r:.60}")
        if gap.__class__ is not int:
            if isinstance(gap, bool) or not isinstance(gap, int):
                raise TypeError(f"gap must be an int, got {gap!r}")
            gap = int(gap)
        if gap < 1:
            raise ValueError(f"gap must be ≥ 1, got {gap!r}")
        if self._compiled is not None:
            return self._compiled_call(x, state, gap)
        # the chunk's level: the smoother's observation, and the finiteness check in the same
        # pass over the chunk (a NaN or ±inf value makes the level, then level·level, non-finite)
        level = np.dot(self._mean_weights, x)
        if not math.isfinite(np.dot(level, level)):
            _check_values(x, n, n_features)  # raises, unless finite values overflowed: then as before
        if not self.smooth:
            state = None
        elif state is None:
            state = FilterState(level, self.noise.level_variance)
        else:
            delta, variance = self._update(level, state, gap)
            x, owned = x + delta, True
            state = FilterState(np.add(level, delta, out=delta), variance)
        if self.consistent:
            return self._projection.apply(x, x if owned else np.empty(self._shape)), state
        return (x if owned else x.copy()), state

    def _compiled_call(self, x: _F64, state: FilterState | None, gap: int) -> tuple[_F64, FilterState | None]:
        """:meth:`__call__`'s steps in one compiled pass (:mod:`streamdp.postprocess._kernel`)."""
        assert self._compiled is not None
        compiled, floats, ints = self._compiled
        with_state = self.smooth and state is not None
        known = state if with_state else self._no_state
        assert known is not None

        out = np.empty(self._shape)
        new_state = np.empty((2, self._shape[1]))
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        total = compiled(x, out, known.estimate, known.variance, new_state, floats, ints, with_state,
                                   float(gap))  # fmt: skip
        if not math.isfinite(total):
            _check_values(x, *self._shape)  # raises, unless finite values overflowed: then as before
        return out, (FilterState(new_state[0], new_state[1]) if self.smooth else None)

    def _update(self, level: _F64, state: FilterState, gap: int) -> tuple[_F64, _F64]:
        """One step of the Kalman filter on the levels: the correction of ``level`` and the next
        variance, each a new array."""
        prior = state.variance + (self._process if gap == 1 else self._process * gap)
        keep = prior + self.noise.level_variance
        np.divide(prior, keep, out=keep)  # the Kalman gain
        np.subtract(self._one, keep, out=keep)  # the prior's share
        # the correction of the level: 0 exactly for a dropped feature (observation variance 0:
        # gain 1), which is never moved
        delta = state.estimate - level
        np.multiply(delta, keep, out=delta)
        return delta, np.multiply(keep, prior, out=prior)

    def project(self, values: _F64) -> _F64:
        """Consistency only: ``values`` (n, F) projected onto the public facts, as a new array.

        Raises
        ------
        TypeError, ValueError
            As :meth:`__call__`.
        """
        x = _check_values(values, None, self.noise.released.size)
        return self._projection.apply(x, x if x is not values else np.empty(x.shape))

    def violation(self, values: _F64) -> float:
        """The largest violation of a public fact by ``values``, in units of its tolerance (≤ 1:
        consistent)."""
        return self._projection.violation(_check_values(values, None, self.noise.released.size))

    def run(self, releases: Iterable[Any]) -> list[_F64]:
        """Every release of one stream post-processed in order; a gap in ``chunk_index`` counts
        as that many chunks of drift.

        Raises
        ------
        TypeError
            An item has no ``values`` and ``ledger`` (not a release).
        ValueError
            A release of another configuration (its ledger names other public parameters), one
            already post-processed where it was made (ledger ``postprocess``), or chunk indices
            that do not increase.
        """
        out: list[_F64] = []
        state: FilterState | None = None
        last: int | None = None
        for i, rel in enumerate(releases):
            if not (hasattr(rel, "values") and isinstance(getattr(rel, "ledger", None), Mapping)):
                raise TypeError(f"releases[{i}] must be a release (values and ledger), got {type(rel).__name__}")
            led = rel.ledger
            if POSTPROCESS_KEY in led:
                raise ValueError(f"releases[{i}] was post-processed where it was made (ledger 'postprocess'): "
                                 "post-processing it again would smooth it twice")  # fmt: skip
            for key, want in self.noise.ledger_keys.items():
                if led.get(key) != want:
                    raise ValueError(f"releases[{i}]: ledger {key} {led[key]!r} is not this post-processor's")
            index = led.get("chunk_index")
            gap = 1 if last is None or index is None else int(index) - last
            if gap < 1:
                raise ValueError(f"releases[{i}]: chunk_index {index!r} does not follow {last!r}")
            values, state = self(np.asarray(rel.values, dtype=np.float64), state, gap=gap)
            out.append(values)
            last = None if index is None else int(index)
        return out


def _frozen(a: NDArray[Any]) -> _F64:
    out = np.array(a, dtype=np.float64)
    out.setflags(write=False)
    return out


def _check_values(values: object, n: int | None, n_features: int, *, finite: bool = True) -> _F64:
    if not isinstance(values, np.ndarray) or values.dtype.kind != "f":
        raise TypeError(f"values must be a float array, got {type(values).__name__} {getattr(values, 'dtype', '')}")
    if values.ndim != 2 or values.shape[1] != n_features or (n is not None and values.shape[0] != n):
        want = f"({n if n is not None else 'n'}, {n_features})"
        raise ValueError(f"values must have shape {want}, got {values.shape}")
    if finite and not np.isfinite(values).all():
        raise ValueError("values must be finite")
    return values if values.dtype == np.float64 else values.astype(np.float64)


def postprocess(
    releases: Iterable[Any],
    *,
    bounds: BoundsProfile | None = None,
    drift: float = DEFAULT_DRIFT,
    smooth: bool = True,
    consistent: bool = True,
) -> list[_F64]:
    """The values of a stream of releases (of one configuration, in order) post-processed: a
    :class:`PostProcessor` built from the first release's ledger, run over all of them.

    Raises
    ------
    TypeError, ValueError
        As :class:`PostProcessor` and :meth:`PostProcessor.run`.
    """
    items = list(releases)
    if not items:
        return []
    first = items[0]
    if not isinstance(getattr(first, "ledger", None), Mapping):
        raise TypeError(f"releases[0] must be a release (values and ledger), got {type(first).__name__}")
    pp = PostProcessor(ledger=first.ledger, bounds=bounds, drift=drift, smooth=smooth, consistent=consistent)
    return pp.run(items)
