"""The input signals streamdp knows, each with its units, event thresholds and bounds profile.

Features are only as good as the thresholds that find the events and the bounds that clip them,
and both depend on the signal: visual angle in degrees with diameters in mm (calibrated
scene-camera gaze, the default) differs from eye-camera pupil positions in normalized image units
with diameters in px (what MPIIDPEye recorded, ~30 Hz) by two orders of magnitude in space. A
signal names one consistent set:

- ``"scene-deg"``: calibrated gaze mapped to degrees with the scene camera's field of view, pupil
  diameter in mm where the 3d detector gives it; the shipped profile
  (:func:`streamdp.privacy.bounds.default_profile`) and the detector's default thresholds.
- ``"eye-camera-norm"``: eye-camera pupil centres in normalized image units, diameters in px;
  thresholds and bounds chosen on public synthetic data of that kind
  (:func:`streamdp.synthetic.generate_eye_camera`, people 100–107, none of whom the synthetic
  evaluation uses), each line justified below and in ``docs/evaluation.md``.

The values a signal sets are :class:`~streamdp.config.SessionConfig` fields (``units``,
``diameter_unit``, ``max_dispersion``, ``large_saccade``); the configuration applies them to the
fields left at their defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from .privacy.bounds import DEFAULT_BOUNDS, BoundsProfile, default_profile

#: one line per feature whose bound depends on the units: (feature, lo, hi, r, why)
_EYE_CAMERA_NORM_LINES: tuple[tuple[str, float, float, float, str], ...] = (
    # 1° of eye rotation moves the pupil 0.004–0.007 of the eye image: the degree bounds × 0.0075
    ("saccade_amplitude_mean", 0.0, 0.15, 0.0075, "20° × 0.0075 norm/°; step 1° × 0.0075"),
    ("saccade_amplitude_var", 0.0, 0.0084, 0.00084, "150 deg² × 0.0075²; step a tenth"),
    ("saccade_amplitude_max", 0.0, 0.3, 0.3, "40° × 0.0075; a maximum jumps by its range"),
    # I-DT at 0.015 caps a fixation's variance at (0.015/2)² = 5.6e-5; a third of it, as in degrees
    ("fixation_var_x_mean", 0.0, 1.5e-5, 1.5e-6, "norm²; ~⅓ of the I-DT cap (0.0075)², step a tenth"),
    ("fixation_var_y_mean", 0.0, 1.5e-5, 1.5e-6, "norm²; as x"),
    ("fixation_var_x_var", 0.0, 6e-11, 1.2e-11, "norm⁴; ≤ (1.5e-5)²/4 for values in [0, 1.5e-5]"),
    ("fixation_var_y_var", 0.0, 6e-11, 1.2e-11, "norm⁴; as x"),
    # 2–8 mm pupils at 13–18 px/mm (a 640-px eye image over 35–50 mm)
    ("pupil_mean_mean", 20.0, 160.0, 2.0, "px; 1.5–9 mm × 13–18 px/mm; window means drift ≤ 0.1 mm/step"),
    ("pupil_mean_var", 0.0, 160.0, 16.0, "px²; spread of fixation means, ≤ 71 px² observed"),
    ("pupil_var_mean", 0.0, 8.0, 0.8, "px²; detector jitter of 0.5–3 px within a fixation"),
    ("pupil_var_var", 0.0, 6.0, 1.2, "px⁴; spread of within-fixation variances in [0, 8]"),
)


@dataclass(frozen=True)
class Signal:
    """One input signal: what its positions and diameters measure and how to read events in it.

    Parameters
    ----------
    name : str
        The name ``--signal`` takes.
    description : str
        One line for help texts.
    settings : mapping of str to value
        :class:`~streamdp.config.SessionConfig` fields and the values this signal gives them.
    bounds : tuple of (feature, lo, hi, r, why), or None
        The lines that differ from the shipped profile (None: the shipped profile unchanged).
    """

    name: str
    description: str
    settings: Mapping[str, Any]
    bounds: tuple[tuple[str, float, float, float, str], ...] | None = None

    def bounds_profile(self) -> BoundsProfile:
        """The signal's bounds profile, named after it (built once).

        Examples
        --------
        >>> profile = get_signal("eye-camera-norm").bounds_profile()
        >>> profile.source, float(profile.hi[profile.names.index("saccade_amplitude_max")])
        ('eye-camera-norm', 0.3)
        >>> get_signal("scene-deg").bounds_profile().digest() == default_profile().digest()
        True
        """
        return _profile(self.name)

    def event_settings(self) -> dict[str, Any]:
        """The settings that are :class:`~streamdp.stages.events.EventConfig` fields.

        Examples
        --------
        >>> from streamdp.stages.events import EventConfig
        >>> EventConfig(**get_signal("eye-camera-norm").event_settings()).max_dispersion
        0.015
        """
        return {k: v for k, v in self.settings.items() if k != "diameter_unit"}


SIGNALS: Mapping[str, Signal] = MappingProxyType(
    {
        "scene-deg": Signal(
            "scene-deg",
            "scene-camera gaze in degrees of visual angle, pupil diameter in mm",
            MappingProxyType({"units": "deg", "diameter_unit": "auto", "max_dispersion": 2.5, "large_saccade": 3.0}),
        ),
        "eye-camera-norm": Signal(
            "eye-camera-norm",
            "eye-camera pupil positions in normalized image units (~30 Hz), diameter in px (MPIIDPEye)",
            # best fixation/saccade F1 (0.96/0.92) and small/large agreement (0.94) on synthetic
            # eye-camera people 100–107; 2.5 and 3.0 (the degree defaults) find no saccade at all
            MappingProxyType(
                {"units": "norm", "diameter_unit": "px", "max_dispersion": 0.015, "large_saccade": 0.0165}
            ),
            _EYE_CAMERA_NORM_LINES,
        ),
    }
)
#: the signal when none is named
DEFAULT_SIGNAL = "scene-deg"


def get_signal(name: str) -> Signal:
    """The signal called ``name``.

    Raises
    ------
    TypeError
        ``name`` is not a str.
    ValueError
        No signal has that name (the choices are listed).

    Examples
    --------
    >>> get_signal("eye-camera-norm").settings["units"]
    'norm'
    >>> get_signal("eye-norm")
    Traceback (most recent call last):
    ...
    ValueError: signal must be one of scene-deg, eye-camera-norm, got 'eye-norm'
    """
    if not isinstance(name, str):
        raise TypeError(f"signal must be a str, got {name!r}")
    if name not in SIGNALS:
        raise ValueError(f"signal must be one of {', '.join(SIGNALS)}, got {name!r}")
    return SIGNALS[name]


@cache
def _profile(name: str) -> BoundsProfile:
    lines = SIGNALS[name].bounds
    if lines is None:
        return default_profile()
    changed = {line[0]: line for line in lines}
    table = {
        feature: {"lo": lo, "hi": hi, "r": r}
        for feature, lo, hi, r, _ in (changed.get(line[0], line) for line in DEFAULT_BOUNDS)
    }
    return BoundsProfile.from_mapping(table, name)
