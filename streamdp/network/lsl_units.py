"""The units of the LSL streams' channels (:mod:`streamdp.network.lsl_sink`), as LabRecorder shows
them beside each label: the features' from the session's units, the gaze channel's fixed."""

from __future__ import annotations

from ..schema import FEATURE_NAMES, WORDBOOK_ORDERS

__all__ = ["GAZE_UNITS", "feature_units"]

#: the gaze channel's units, by channel
GAZE_UNITS = {"x_deg": "deg", "y_deg": "deg", "x_norm": "normalized", "y_norm": "normalized"}


def feature_units(position_unit: str = "deg", diameter_unit: str = "mm") -> dict[str, str]:
    """The unit of each feature of :data:`~streamdp.schema.FEATURE_NAMES`.

    Rates are events per second (``Hz``); ratios are dimensionless (``ratio``); durations in
    seconds; amplitudes and fixation dispersions in ``position_unit`` (the event detector's
    ``units``: ``deg``, or ``norm`` for normalized positions); pupil features in ``diameter_unit``
    (``mm``, ``px``, or ``none``); wordbook statistics count n-grams. A variance carries the square
    of its quantity's unit, the variance of a variance the fourth power.

    Parameters
    ----------
    position_unit : str
        The unit of gaze positions the events were detected in.
    diameter_unit : str
        The unit of the pupil diameter.

    Returns
    -------
    dict
        Feature name → unit, in schema order.

    Raises
    ------
    ValueError
        A unit is not a non-empty string.

    Examples
    --------
    >>> units = feature_units()
    >>> units["fixation_rate"], units["saccade_amplitude_var"], units["pupil_var_var"], units["wordbook2_var"]
    ('Hz', 'deg^2', 'mm^4', 'count^2')
    >>> len(units) == len(FEATURE_NAMES)
    True
    """
    for what, unit in (("position_unit", position_unit), ("diameter_unit", diameter_unit)):
        if not isinstance(unit, str) or not unit:
            raise ValueError(f"{what} must be a non-empty string, got {unit!r}")
    pos, dia = position_unit, diameter_unit
    units = {
        "saccades_per_fixation": "ratio",
        "saccade_amplitude_mean": pos,
        "saccade_amplitude_var": f"{pos}^2",
        "saccade_amplitude_max": pos,
        "fixation_duration_mean": "s",
        "fixation_duration_var": "s^2",
        "fixation_duration_max": "s",
        # the mean and the variance over fixations of each fixation's positional variance
        "fixation_var_x_mean": f"{pos}^2",
        "fixation_var_y_mean": f"{pos}^2",
        "fixation_var_x_var": f"{pos}^4",
        "fixation_var_y_var": f"{pos}^4",
        "pupil_mean_mean": dia,
        "pupil_mean_var": f"{dia}^2",
        "pupil_var_mean": f"{dia}^2",
        "pupil_var_var": f"{dia}^4",
        "blink_duration_mean": "s",
        "blink_duration_var": "s^2",
    }
    for name in FEATURE_NAMES:
        if name.endswith("_rate"):
            units[name] = "Hz"
        elif name.endswith("_ratio"):
            units[name] = "ratio"
    for n in WORDBOOK_ORDERS:
        for stat in ("distinct", "max", "min", "range", "mean"):
            units[f"wordbook{n}_{stat}"] = "count"
        units[f"wordbook{n}_var"] = "count^2"
    missing = set(FEATURE_NAMES) - set(units)
    assert not missing, f"features without a unit: {sorted(missing)}"
    return {name: units[name] for name in FEATURE_NAMES}
