"""Data into pandas: gaze, feature rows and releases as DataFrames, and gaze and rows back.

pandas is an optional extra (``pip install 'streamdp[pandas]'``), imported only when one of these
functions runs, so the relay and the Capture plugin never load it.

Columns:

- gaze: ``t, x, y, confidence, diameter, eye_id, valid`` (:data:`GAZE_COLUMNS`); the diameter unit
  and the source's name travel in ``DataFrame.attrs``. The gaze conversions are
  :class:`~streamdp.gaze.GazeBatch`'s own ``to_pandas``/``from_pandas`` (on
  :mod:`streamdp.frame_columns`), which the functions here call: this module imports
  :mod:`streamdp.gaze`, never the other way round;
- feature rows: ``t`` and the 52 features in schema order (:data:`streamdp.schema.FEATURE_NAMES`);
- releases: ``chunk_index``, ``t`` and the 52 features, one row per step.

Releases do not come back from a DataFrame: only the privatizer makes one (see
:mod:`streamdp.privacy.release`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError
from .frame_columns import GAZE_COLUMNS, check_frame, numeric_column, pandas_module, require_columns
from .gaze import GazeBatch
from .schema import FEATURE_NAMES

if TYPE_CHECKING:
    import pandas as pd

    from .privacy.release import PrivateRelease
    from .stages.features import FeatureRows

def gaze_to_pandas(batch: GazeBatch) -> pd.DataFrame:
    """A gaze batch as a DataFrame of :data:`GAZE_COLUMNS`, its diameter unit and source in
    ``attrs``.

    Raises
    ------
    TypeError
        ``batch`` is not a :class:`~streamdp.gaze.GazeBatch`.
    ImportError
        pandas is not installed.

    Examples
    --------
    >>> df = gaze_to_pandas(GazeBatch.from_arrays(t=[0.0, 0.01], x=[0.5, 0.6], y=[0.5, 0.5]))
    >>> list(df.columns), df.attrs["diameter_unit"]
    (['t', 'x', 'y', 'confidence', 'diameter', 'eye_id', 'valid'], 'none')
    """
    if not isinstance(batch, GazeBatch):
        raise TypeError(f"batch must be a GazeBatch, got {type(batch).__name__}")
    return batch.to_pandas()


def gaze_from_pandas(df: pd.DataFrame, *, diameter_unit: str | None = None, source: str | None = None) -> GazeBatch:
    """A validated :class:`~streamdp.gaze.GazeBatch` from a DataFrame of :data:`GAZE_COLUMNS`.

    ``t`` (s), ``x`` and ``y`` (normalized) are required; a missing ``confidence`` is 1, a
    missing ``diameter`` NaN, a missing ``eye_id`` unknown, a missing ``valid`` "x and y are
    finite". Any other column is refused (a misspelt optional column would otherwise be
    replaced by its default without a word): select the gaze columns first.

    Parameters
    ----------
    df : pandas.DataFrame
        The gaze, in time order.
    diameter_unit : {"mm", "px", "none"}, optional
        Unit of the ``diameter`` column; default ``df.attrs["diameter_unit"]`` (set by
        :func:`gaze_to_pandas`). Required when the frame has diameters and does not say.
    source : str, optional
        Named in error messages; default ``df.attrs["source"]``, else "DataFrame".

    Raises
    ------
    TypeError
        ``df`` is not a DataFrame.
    InputError
        A required column is missing (named), a column is unknown (named) or not numeric, a
        diameter of unknown unit, or anything :class:`~streamdp.gaze.GazeBatch` refuses.

    Examples
    --------
    >>> import pandas as pd
    >>> len(gaze_from_pandas(pd.DataFrame({"t": [0.0, 0.01], "x": [0.5, 0.6], "y": [0.5, 0.5]})))
    2
    >>> gaze_from_pandas(pd.DataFrame({"t": [0.0], "x": [0.5]}))
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: gaze: the DataFrame has no column 'y'
    """
    return GazeBatch.from_pandas(df, diameter_unit=diameter_unit, source=source)


def rows_to_pandas(rows: FeatureRows) -> pd.DataFrame:
    """Feature rows as a DataFrame: ``t`` and the 52 features in schema order.

    Raises
    ------
    TypeError
        ``rows`` is not :class:`~streamdp.stages.features.FeatureRows`.
    ImportError
        pandas is not installed.
    """
    from .stages.features import FeatureRows

    if not isinstance(rows, FeatureRows):
        raise TypeError(f"rows must be FeatureRows, got {type(rows).__name__}")
    pd = pandas_module()
    df = pd.DataFrame(np.array(rows.values, dtype=np.float64), columns=list(FEATURE_NAMES))
    df.insert(0, "t", np.array(rows.t, dtype=np.float64))
    return df


def rows_from_pandas(df: pd.DataFrame) -> FeatureRows:
    """Feature rows from a DataFrame with ``t`` and the 52 feature columns (other columns, e.g.
    a participant label, are left out: every feature column is required, so none can be
    misspelt silently).

    Raises
    ------
    TypeError
        ``df`` is not a DataFrame.
    InputError
        A column is missing (named) or not numeric; ``t`` is not finite and increasing, or a
        feature not finite (row and column named).
    """
    from .stages.features import FeatureRows

    df = check_frame(df, "df")
    what = "feature rows"
    require_columns(df, ("t", *FEATURE_NAMES), what)
    t = numeric_column(df, "t", what)
    values = np.column_stack([numeric_column(df, name, what) for name in FEATURE_NAMES]) if len(df) else None
    if not np.isfinite(t).all():
        raise InputError(f"{what}: t at row {int(np.flatnonzero(~np.isfinite(t))[0])} is not finite")
    if t.size > 1 and not (np.diff(t) > 0).all():
        raise InputError(f"{what}: t does not increase at row {int(np.flatnonzero(np.diff(t) <= 0)[0]) + 1}")
    if values is None:
        return FeatureRows()
    bad = ~np.isfinite(values)
    if bad.any():
        row, col = (int(i[0]) for i in np.nonzero(bad))
        raise InputError(f"{what}: {FEATURE_NAMES[col]!r} at row {row} is not finite")
    return FeatureRows(t, values)


def releases_to_pandas(releases: Iterable[PrivateRelease]) -> pd.DataFrame:
    """Sanitized releases as one DataFrame: ``chunk_index``, ``t`` and the features, a row per
    step. Their ledgers stay with the releases (``release.ledger``).

    Raises
    ------
    TypeError
        An item is not a :class:`~streamdp.privacy.release.PrivateRelease`.
    InputError
        The releases name different features.
    ImportError
        pandas is not installed.
    """
    from .privacy.release import PrivateRelease

    pd = pandas_module()
    items = list(releases)
    for i, rel in enumerate(items):
        if not isinstance(rel, PrivateRelease):
            raise TypeError(f"releases[{i}] must be a PrivateRelease, got {type(rel).__name__}")
    names = items[0].names if items else FEATURE_NAMES
    for i, rel in enumerate(items):
        if rel.names != names:
            raise InputError(f"releases[{i}] names other features than releases[0]: they do not fit one DataFrame")
    values = np.concatenate([r.values for r in items]) if items else np.empty((0, len(names)))
    df = pd.DataFrame(values, columns=list(names))
    df.insert(0, "t", np.concatenate([r.t for r in items]) if items else np.empty(0))
    index = [np.full(len(r.t), int(r.ledger["chunk_index"]), dtype=np.int64) for r in items]
    df.insert(0, "chunk_index", np.concatenate(index) if items else np.empty(0, dtype=np.int64))
    return df


__all__ = [
    "GAZE_COLUMNS",
    "gaze_from_pandas",
    "gaze_to_pandas",
    "releases_to_pandas",
    "rows_from_pandas",
    "rows_to_pandas",
]
