"""Public bounds of the 52 features: range ``[lo, hi]`` and maximum change per step ``r``.

Sensitivities come from these bounds alone, never from a user's data. Inputs are clipped to them
inside every mechanism, so a guarantee holds for any input; the clipped fraction is reported.

The default profile assumes the defaults of the pipeline: 30 s window, 0.5 s steps, positions in
degrees, pupil diameter in mm. A window moved by 0.5 s gains the events ending in the new 0.5 s
and loses those that ended in the oldest 0.5 s; at most ~3 saccades and ~3 fixations fit in
0.5 s (80 ms minimum fixation + ~25 ms saccade), so counts change by at most ~6 per step and
rates (count / 30 s) by at most 0.2/s. Maxima and minima can jump by their whole range in one
step (the extreme event leaves the window), so their ``r`` is their range: DCFPA gains nothing on
them, and says so through its sensitivity.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..schema import FEATURE_NAMES, N_FEATURES
from .shipped_weights import WEIGHTS_PROFILES, resolve_weights, weights_profile
from .weights_file import weights_digest

#: (feature, lo, hi, r, why): the default profile, one documented line per feature
DEFAULT_BOUNDS: tuple[tuple[str, float, float, float, str], ...] = (
    (
        "fixation_rate",
        0.0,
        6.0,
        0.2,
        "≤ 1/(80 ms fix + 25 ms sac) ≈ 9.5/s in theory, ≤ 6/s observed; ±6 events/30 s per step",
    ),
    ("saccade_rate", 0.0, 6.0, 0.2, "one saccade per fixation at most; as fixation rate"),
    ("small_saccade_rate", 0.0, 6.0, 0.2, "a subset of saccades"),
    ("large_saccade_rate", 0.0, 6.0, 0.2, "a subset of saccades"),
    ("positive_saccade_rate", 0.0, 6.0, 0.2, "a subset of saccades"),
    ("negative_saccade_rate", 0.0, 6.0, 0.2, "a subset of saccades"),
    (
        "saccades_per_fixation",
        0.0,
        1.5,
        0.1,
        "saccades ≤ fixations + 1 in a window; 1.5 covers windows of ≥ 2 fixations",
    ),
    ("small_saccade_ratio", 0.0, 1.0, 0.1, "a proportion; ±6 of ≥ 60 saccades per step in a typical window"),
    ("large_saccade_ratio", 0.0, 1.0, 0.1, "a proportion"),
    ("positive_saccade_ratio", 0.0, 1.0, 0.1, "a proportion"),
    ("negative_saccade_ratio", 0.0, 1.0, 0.1, "a proportion"),
    ("saccade_amplitude_mean", 0.0, 20.0, 1.0, "degrees; head-fixed saccades rarely exceed 20°, means lie well below"),
    ("saccade_amplitude_var", 0.0, 150.0, 15.0, "deg²; amplitudes within [0, 30°] in practice"),
    ("saccade_amplitude_max", 0.0, 40.0, 40.0, "degrees; a maximum jumps when its saccade leaves the window"),
    ("fixation_duration_mean", 0.0, 1.0, 0.05, "seconds; mean fixations last 0.2–0.4 s"),
    ("fixation_duration_var", 0.0, 0.25, 0.03, "s²; durations within [0.08, 1 s] mostly"),
    ("fixation_duration_max", 0.0, 3.0, 3.0, "seconds; a maximum jumps when its fixation leaves the window"),
    ("fixation_var_x_mean", 0.0, 0.5, 0.05, "deg²; within-fixation spread of a 2.5° dispersion I-DT ≤ (2.5/2)²"),
    ("fixation_var_y_mean", 0.0, 0.5, 0.05, "deg²; as x"),
    ("fixation_var_x_var", 0.0, 0.1, 0.02, "deg⁴; spread of values within [0, 0.5]"),
    ("fixation_var_y_var", 0.0, 0.1, 0.02, "deg⁴; as x"),
    ("pupil_mean_mean", 1.5, 9.0, 0.1, "mm; human pupils measure 2–8 mm; window means drift slowly"),
    ("pupil_mean_var", 0.0, 2.0, 0.2, "mm²; spread of fixation means within the window"),
    ("pupil_var_mean", 0.0, 0.5, 0.05, "mm²; within-fixation variance (hippus, noise)"),
    ("pupil_var_var", 0.0, 0.1, 0.02, "mm⁴; spread of within-fixation variances in [0, 0.5]"),
    ("blink_duration_mean", 0.0, 0.6, 0.1, "seconds; spontaneous blinks last 0.1–0.4 s"),
    ("blink_duration_var", 0.0, 0.1, 0.02, "s²; durations within [0, 0.6 s]"),
    ("blink_rate", 0.0, 1.0, 0.07, "per second; ≤ 60/min; ±2 blinks per step = 0.067/s"),
    ("wordbook1_distinct", 0.0, 24.0, 6.0, "24 letters; ±6 saccades per step"),
    ("wordbook1_max", 0.0, 180.0, 6.0, "≤ saccades in 30 s (≤ 6/s); ±6 per step"),
    ("wordbook1_min", 0.0, 180.0, 180.0, "the smallest count can jump by its range"),
    ("wordbook1_range", 0.0, 180.0, 180.0, "max − min: jumps with min"),
    ("wordbook1_mean", 0.0, 7.5, 0.25, "total / 24; total ≤ 180, ±6 per step"),
    ("wordbook1_var", 0.0, 1350.0, 90.0, "≤ total²/24; Σc² moves by ≤ 6·(2·180+1) per step, / 24"),
    ("wordbook2_distinct", 0.0, 180.0, 6.0, "≤ n-grams in the window; ±6 per step"),
    ("wordbook2_max", 0.0, 180.0, 6.0, "≤ n-grams in 30 s; ±6 per step"),
    ("wordbook2_min", 0.0, 180.0, 180.0, "the smallest count can jump by its range"),
    ("wordbook2_range", 0.0, 180.0, 180.0, "the smallest count can jump by its range"),
    ("wordbook2_mean", 0.0, 0.3125, 0.0105, "total / 24²; total ≤ 180, ±6 per step"),
    ("wordbook2_var", 0.0, 56.25, 3.77, "≤ total²/576; Σc² change / 576"),
    ("wordbook3_distinct", 0.0, 180.0, 6.0, "as for bigrams: ≤ n-grams in the window, ±6 per step"),
    ("wordbook3_max", 0.0, 180.0, 6.0, "as for bigrams: ≤ n-grams in the window, ±6 per step"),
    ("wordbook3_min", 0.0, 180.0, 180.0, "the smallest count can jump by its range"),
    ("wordbook3_range", 0.0, 180.0, 180.0, "the smallest count can jump by its range"),
    ("wordbook3_mean", 0.0, 0.013, 0.00044, "total / 24³; total ≤ 180, ±6 per step"),
    ("wordbook3_var", 0.0, 2.35, 0.157, "≤ total²/24³; Σc² change / 24³"),
    ("wordbook4_distinct", 0.0, 180.0, 6.0, "as for bigrams: ≤ n-grams in the window, ±6 per step"),
    ("wordbook4_max", 0.0, 180.0, 6.0, "as for bigrams: ≤ n-grams in the window, ±6 per step"),
    ("wordbook4_min", 0.0, 180.0, 180.0, "the smallest count can jump by its range"),
    ("wordbook4_range", 0.0, 180.0, 180.0, "the smallest count can jump by its range"),
    ("wordbook4_mean", 0.0, 0.00055, 0.0000181, "total / 24⁴; total ≤ 180, ±6 per step"),
    ("wordbook4_var", 0.0, 0.0977, 0.00655, "≤ total²/24⁴; Σc² change / 24⁴"),
)


def _check_number(where: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: {name} is {value!r}, not a number")
    v = float(value)
    if not math.isfinite(v):
        raise InputError(f"{where}: {name} is {v!r}, not a finite number")
    return v


@dataclass(frozen=True, eq=False)
class BoundsProfile:
    """Public bounds of every feature, in schema order, and the weights that split a chunk's ε
    over the features. Immutable once built.

    ``weights`` (default: all 1, an equal split) are public: a mechanism given a total ε per chunk
    spends ``ε·wᵢ/Σw`` on feature ``i``. A weight of 0 drops the feature: it is released as the
    public constant ``(lo + hi)/2`` (the schema keeps its 52 columns) and costs nothing.
    ``weights_name`` names the allocation in ledgers, and :meth:`weights_digest` the split.

    Raises
    ------
    InputError
        A bound is not a finite number, ``lo ≥ hi``, ``r ≤ 0``, a weight is negative or not
        finite, every weight is 0, or the feature list is not the schema's.
    """

    lo: NDArray[np.float64]
    hi: NDArray[np.float64]
    r: NDArray[np.float64]
    names: tuple[str, ...] = FEATURE_NAMES
    source: str = "default"
    weights: NDArray[np.float64] | None = None
    weights_name: str = "equal"

    def __post_init__(self) -> None:
        src = self.source
        n = len(self.names)
        if self.weights is None:
            object.__setattr__(self, "weights", np.ones(n))
        for field in ("lo", "hi", "r", "weights"):
            arr = np.asarray(getattr(self, field), dtype=np.float64)
            if arr.shape != (n,):
                raise InputError(f"{src}: {field} has shape {arr.shape}, expected ({n},)")
            if not np.all(np.isfinite(arr)):
                j = int(np.flatnonzero(~np.isfinite(arr))[0])
                raise InputError(f"{src}: {field} of {self.names[j]} is not a finite number")
            # a view of immutable bytes: unlike setflags(write=False), no one can undo it
            frozen = np.frombuffer(np.ascontiguousarray(arr, dtype=np.float64).tobytes(), dtype=np.float64)
            object.__setattr__(self, field, frozen)
        inverted = np.flatnonzero(self.lo >= self.hi)
        if inverted.size:
            i = int(inverted[0])
            raise InputError(f"{src}: {self.names[i]}: lo ({self.lo[i]}) must be below hi ({self.hi[i]})")
        flat = np.flatnonzero(self.r <= 0)
        if flat.size:
            i = int(flat[0])
            raise InputError(f"{src}: {self.names[i]}: r ({self.r[i]}) must be > 0")
        w = self.feature_weights
        if np.any(w < 0):
            i = int(np.flatnonzero(w < 0)[0])
            raise InputError(f"{src}: {self.names[i]}: weight ({w[i]}) must be ≥ 0")
        if not np.any(w > 0):
            raise InputError(f"{src}: every weight is 0: no feature would be released")

    @property
    def feature_weights(self) -> NDArray[np.float64]:
        """The weights as an array (never None once built)."""
        assert self.weights is not None
        return self.weights

    @property
    def released(self) -> NDArray[np.bool_]:
        """The features that get a share of ε (weight > 0); the others are public constants."""
        return np.asarray(self.feature_weights > 0)

    @property
    def midpoint(self) -> NDArray[np.float64]:
        """``(lo + hi)/2``: the public constant released for a feature of weight 0."""
        return np.asarray((self.lo + self.hi) / 2.0)

    @property
    def equal_weights(self) -> bool:
        w = self.feature_weights
        return bool(np.all(w == w[0]))

    def with_weights(self, weights: object, name: str) -> BoundsProfile:
        """The same bounds with other weights (a sequence in schema order, or a mapping from
        feature name to weight, unnamed features 0).

        Raises
        ------
        InputError
            An unknown feature, a wrong length, a negative or non-finite weight, all zero.

        Examples
        --------
        >>> p = default_profile().with_weights({"fixation_rate": 2.0, "saccade_rate": 1.0}, "two")
        >>> int(p.released.sum()), p.weights_name
        (2, 'two')
        """
        if isinstance(weights, dict):
            unknown = sorted(set(weights) - set(self.names))
            if unknown:
                raise InputError(f"{name}: unknown feature(s) {', '.join(unknown)}")
            arr = np.array([_check_number(name, f, weights.get(f, 0.0)) for f in self.names])
        else:
            arr = np.asarray(weights, dtype=np.float64)
            if arr.shape != (len(self.names),):
                raise InputError(f"{name}: weights of shape {arr.shape} for {len(self.names)} features")
        return BoundsProfile(self.lo.copy(), self.hi.copy(), self.r.copy(), self.names, self.source, arr, name)

    @property
    def width(self) -> NDArray[np.float64]:
        return self.hi - self.lo

    @property
    def step_bound(self) -> NDArray[np.float64]:
        """``min(r, hi - lo)``: no difference can exceed the range."""
        return np.minimum(self.r, self.hi - self.lo)

    def digest(self) -> str:
        """SHA-256 of the canonical JSON of the bounds: names the profile in every ledger entry."""
        content: dict[str, object] = {
            "names": list(self.names),
            "lo": self.lo.tolist(),
            "hi": self.hi.tolist(),
            "r": self.r.tolist(),
        }
        if not self.equal_weights:  # an equal split is the default: those digests do not change
            content["weights"] = (self.feature_weights / self.feature_weights.sum()).tolist()
        payload = json.dumps(content, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def weights_digest(self) -> str:
        """The digest of the split the weights make (:func:`~streamdp.privacy.weights_file.weights_digest`):
        the ledger's ``weights_digest``, equal to that of the weights file they came from.

        Examples
        --------
        >>> default_profile("task").weights_digest() == default_profile("task").weights_digest()
        True
        """
        return weights_digest(dict(zip(self.names, self.feature_weights.tolist(), strict=True)))

    def select(self, features: list[int]) -> BoundsProfile:
        """The bounds of a subset of features (e.g. for an audit of one feature)."""
        idx = np.asarray(features, dtype=np.intp)
        return BoundsProfile(
            self.lo[idx].copy(),
            self.hi[idx].copy(),
            self.r[idx].copy(),
            tuple(self.names[i] for i in idx),
            f"{self.source}[{','.join(map(str, idx))}]",
            self.feature_weights[idx].copy(),
            self.weights_name,
        )

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{feature: {"lo", "hi", "r"}}``, with ``"weight"`` when the weights are not all equal."""
        out = {
            n: {"lo": float(a), "hi": float(b), "r": float(c)}
            for n, a, b, c in zip(self.names, self.lo, self.hi, self.r, strict=True)
        }
        if not self.equal_weights:
            for n, w in zip(self.names, self.feature_weights, strict=True):
                out[n]["weight"] = float(w)
        return out

    @classmethod
    def from_mapping(cls, data: object, source: str) -> BoundsProfile:
        """From ``{feature: {"lo": .., "hi": .., "r": .., "weight": ..}}`` (``weight`` optional,
        default 1; a ``[features]`` table is also accepted)."""
        if isinstance(data, dict) and "features" in data and isinstance(data["features"], dict):
            data = data["features"]
        if not isinstance(data, dict):
            raise InputError(f"{source}: expected a table of features, got {type(data).__name__}")
        missing = [n for n in FEATURE_NAMES if n not in data]
        if missing:
            raise InputError(f"{source}: missing feature(s) {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
        unknown = sorted(set(data) - set(FEATURE_NAMES))
        if unknown:
            raise InputError(f"{source}: unknown feature(s) {', '.join(unknown)}")
        lo, hi, r, w = np.empty(N_FEATURES), np.empty(N_FEATURES), np.empty(N_FEATURES), np.ones(N_FEATURES)
        for i, name in enumerate(FEATURE_NAMES):
            entry = data[name]
            if not isinstance(entry, dict):
                raise InputError(f"{source}: {name} must be a table with lo, hi and r")
            for key, arr in (("lo", lo), ("hi", hi), ("r", r)):
                if key not in entry:
                    raise InputError(f"{source}: {name} has no {key}")
                arr[i] = _check_number(f"{source}: {name}", key, entry[key])
            if "weight" in entry:
                w[i] = _check_number(f"{source}: {name}", "weight", entry["weight"])
        named = "equal" if np.all(w == w[0]) else Path(source).stem
        return cls(lo, hi, r, FEATURE_NAMES, source, w, named)

    @classmethod
    def load(cls, path: str | Path) -> BoundsProfile:
        """A user's profile from a TOML or JSON file."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{p}: cannot read bounds profile: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{p}: not a bounds profile: not UTF-8 text (byte {exc.start}); give a TOML or JSON file"
            ) from None
        # TOML is read only here, so that importing streamdp never needs tomli (Python 3.10)
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib
        try:
            data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{p}: not valid {'TOML' if p.suffix == '.toml' else 'JSON'}: {exc}") from None
        return cls.from_mapping(data, str(p))


def default_profile(weights: str = "equal", *, epsilon: float | None = None) -> BoundsProfile:
    """The shipped profile (see :data:`DEFAULT_BOUNDS` for each line's reasoning), with the shipped
    allocation ``weights`` (:func:`weights_profile`; default an equal split) at a total ε per chunk of
    ``epsilon`` (:func:`~streamdp.privacy.shipped_weights.resolve_weights`: ``"task"`` funds fewer
    features at a low ε, and is then named ``task@k=K``; None: every feature it funds).

    Raises
    ------
    TypeError
        ``epsilon`` is neither a number nor None.
    ValueError
        ``weights`` is not a shipped allocation; ``epsilon`` not > 0.

    Examples
    --------
    >>> default_profile("task", epsilon=200.0).weights_name, int(default_profile("task").released.sum())
    ('task', 26)
    >>> bool(default_profile("task", epsilon=10.0).released.sum() < 26)
    True
    """
    names = tuple(b[0] for b in DEFAULT_BOUNDS)
    assert names == FEATURE_NAMES
    profile = BoundsProfile(
        np.array([b[1] for b in DEFAULT_BOUNDS]),
        np.array([b[2] for b in DEFAULT_BOUNDS]),
        np.array([b[3] for b in DEFAULT_BOUNDS]),
        FEATURE_NAMES,
        "default",
    )
    if weights == "equal":
        return profile
    if epsilon is not None and weights in WEIGHTS_PROFILES:
        name, mapping = resolve_weights(weights, epsilon)
        return profile.with_weights(mapping, name)
    return profile.with_weights(weights_profile(weights), weights)
