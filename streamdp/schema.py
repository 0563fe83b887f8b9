"""The public feature schema: 52 eye-movement features in MPIIDPEye order (DESIGN.md §3).

The order and the names are a public contract: releases, files and the bounds profile use them.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

_BASE_FEATURES: tuple[str, ...] = (
    "fixation_rate",
    "saccade_rate",
    "small_saccade_rate",
    "large_saccade_rate",
    "positive_saccade_rate",
    "negative_saccade_rate",
    "saccades_per_fixation",
    "small_saccade_ratio",
    "large_saccade_ratio",
    "positive_saccade_ratio",
    "negative_saccade_ratio",
    "saccade_amplitude_mean",
    "saccade_amplitude_var",
    "saccade_amplitude_max",
    "fixation_duration_mean",
    "fixation_duration_var",
    "fixation_duration_max",
    "fixation_var_x_mean",
    "fixation_var_y_mean",
    "fixation_var_x_var",
    "fixation_var_y_var",
    "pupil_mean_mean",
    "pupil_mean_var",
    "pupil_var_mean",
    "pupil_var_var",
    "blink_duration_mean",
    "blink_duration_var",
    "blink_rate",
)

WORDBOOK_STATS: tuple[str, ...] = ("distinct", "max", "min", "range", "mean", "var")
WORDBOOK_ORDERS: tuple[int, ...] = (1, 2, 3, 4)

FEATURE_NAMES: tuple[str, ...] = _BASE_FEATURES + tuple(
    f"wordbook{n}_{stat}" for n in WORDBOOK_ORDERS for stat in WORDBOOK_STATS
)
N_FEATURES = len(FEATURE_NAMES)
FEATURE_INDEX: dict[str, int] = {name: i for i, name in enumerate(FEATURE_NAMES)}

assert N_FEATURES == 52
