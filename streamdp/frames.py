"""Data into pandas: gaze, feature rows and releases as DataFrames, and gaze and rows back.

pandas is an optional extra (``pip install 'streamdp[pandas]'``), imported only when one of these
functions runs, so the relay and the Capture plugin never load it.

Columns:

- gaze: ``t, x, y, confidence, diameter, eye_id, valid`` (:data:`GAZE_COLUMNS`); the diameter unit
  and the source's name travel in ``DataFrame.attrs``. The gaze conversions are
  :class:`~streamdp.gaze.GazeBatch`'s own ``to_pandas``/``from_pandas`` (on
  :mod:`streamdp.frame_columns`), which the functions here call: this module imports
  :mod:`streamdp.gaze`, never the other way round;
- feature rows: ``t`` and the 52 features in schema order (:data:`streamdp.schema.FEATURE_NAMES`),
  :class:`~streamdp.stages.feature_rows.FeatureRows`' own conversions;
- releases: ``chunk_index``, ``t`` and the 52 features, one row per step
  (:func:`streamdp.privacy.release.releases_frame`).

Like the gaze, the types convert themselves on :mod:`streamdp.frame_columns`; this module imports
them and is imported by none of them.

Releases do not come back from a DataFrame: only the privatizer makes one (see
:mod:`streamdp.privacy.release`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .frame_columns import GAZE_COLUMNS
from .gaze import GazeBatch
from .privacy.release import PrivateRelease, releases_frame
from .stages.feature_rows import FeatureRows

if TYPE_CHECKING:
    import pandas as pd


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
    """Feature rows as a DataFrame: ``t`` and the 52 features in schema order
    (:meth:`FeatureRows.to_pandas`).

    Raises
    ------
    TypeError
        ``rows`` is not :class:`~streamdp.stages.features.FeatureRows`.
    ImportError
        pandas is not installed.
    """
    if not isinstance(rows, FeatureRows):
        raise TypeError(f"rows must be FeatureRows, got {type(rows).__name__}")
    return rows.to_pandas()


def rows_from_pandas(df: pd.DataFrame) -> FeatureRows:
    """Feature rows from a DataFrame with ``t`` and the 52 feature columns
    (:meth:`FeatureRows.from_pandas`: every feature column is required, others are left out).

    Raises
    ------
    TypeError
        ``df`` is not a DataFrame.
    InputError
        A column is missing (named) or not numeric; ``t`` is not finite and increasing, or a
        feature not finite (row and column named).
    """
    return FeatureRows.from_pandas(df)


def releases_to_pandas(releases: Iterable[PrivateRelease]) -> pd.DataFrame:
    """Sanitized releases as one DataFrame: ``chunk_index``, ``t`` and the features, a row per
    step (:func:`streamdp.privacy.release.releases_frame`). Their ledgers stay with the releases.

    Raises
    ------
    TypeError
        An item is not a :class:`~streamdp.privacy.release.PrivateRelease`.
    InputError
        The releases name different features.
    ImportError
        pandas is not installed.
    """
    return releases_frame(releases)


__all__ = [
    "GAZE_COLUMNS",
    "gaze_from_pandas",
    "gaze_to_pandas",
    "releases_to_pandas",
    "rows_from_pandas",
    "rows_to_pandas",
]
