"""The columns of DataFrames, below every type that converts to pandas: pandas imported on first
use, the checks of a DataFrame's columns, and the gaze columns both ways.

:class:`~streamdp.gaze.GazeBatch`'s ``to_pandas``/``from_pandas`` and :mod:`streamdp.frames` (the
public conversions of gaze, feature rows and releases) build on this module, which imports no
streamdp type: the conversions depend on the types, never the types on the conversions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .errors import InputError

if TYPE_CHECKING:
    import pandas as pd

#: gaze columns in order; ``t``, ``x`` and ``y`` are required, the others optional
GAZE_COLUMNS = ("t", "x", "y", "confidence", "diameter", "eye_id", "valid")
_GAZE_REQUIRED = ("t", "x", "y")


def pandas_module() -> Any:
    """pandas, imported now (the first conversion that runs), with a one-line error without it."""
    try:
        import pandas
    except ImportError:
        raise ImportError("DataFrames need the optional extra: pip install 'streamdp[pandas]'") from None
    return pandas


def check_frame(df: object, what: str) -> pd.DataFrame:
    """``df``, if it is a DataFrame; else ``TypeError`` naming ``what``."""
    pd = pandas_module()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    return df


def require_columns(df: pd.DataFrame, needed: Iterable[str], what: str) -> None:
    """``InputError`` naming the first columns of ``needed`` that ``df`` lacks, if any."""
    missing = [c for c in needed if c not in df.columns]
    if missing:
        shown = ", ".join(repr(c) for c in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise InputError(f"{what}: the DataFrame has no column {shown}")


def numeric_column(df: pd.DataFrame, column: str, what: str, dtype: type = np.float64) -> NDArray[Any]:
    """A column as ``dtype``; an integer or boolean column must hold exactly such values (a NaN
    would otherwise become an arbitrary integer, or True)."""
    try:
        values = np.ascontiguousarray(df[column].to_numpy(dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what}: column {column!r} does not hold numbers ({exc})") from None
    if dtype is np.float64:
        return values
    allowed = np.isin(values, (0.0, 1.0)) if dtype is np.bool_ else (values == np.rint(values)) & (np.abs(values) < 128)
    if not allowed.all():
        row = int(np.flatnonzero(~allowed)[0])
        kind = "True/False" if dtype is np.bool_ else "a small integer"
        raise InputError(f"{what}: column {column!r} at row {row} is {float(values[row])!r}, not {kind}")
    return values.astype(dtype)


def gaze_frame(columns: Mapping[str, NDArray[Any]], diameter_unit: str, source: str) -> pd.DataFrame:
    """The gaze ``columns`` (every one of :data:`GAZE_COLUMNS`) as a DataFrame, the diameter unit
    and the source in ``attrs``."""
    df = pandas_module().DataFrame({name: columns[name] for name in GAZE_COLUMNS})
    df.attrs.update(diameter_unit=diameter_unit, source=source)
    return df


def gaze_columns(df: pd.DataFrame, *, diameter_unit: str | None = None, source: str | None = None) -> dict[str, Any]:
    """The keyword arguments of :meth:`GazeBatch.from_arrays <streamdp.gaze.GazeBatch.from_arrays>`
    from a DataFrame of :data:`GAZE_COLUMNS` (see :func:`streamdp.frames.gaze_from_pandas`).

    Raises
    ------
    TypeError
        ``df`` is not a DataFrame.
    InputError
        A required column is missing (named), a column is unknown (named) or not numeric, or a
        diameter of unknown unit.
    """
    df = check_frame(df, "df")
    what = "gaze"
    require_columns(df, _GAZE_REQUIRED, what)
    unknown = [str(c) for c in df.columns if c not in GAZE_COLUMNS]
    if unknown:
        raise InputError(
            f"{what}: unknown column {', '.join(map(repr, unknown))} (gaze columns are {', '.join(GAZE_COLUMNS)}; "
            "select them first)"
        )
    unit = diameter_unit if diameter_unit is not None else df.attrs.get("diameter_unit")
    diameter = numeric_column(df, "diameter", what) if "diameter" in df.columns else None
    if unit is None:
        if diameter is not None and np.isfinite(diameter).any():
            raise InputError(f"{what}: the diameter column's unit is unknown: pass diameter_unit='mm' or 'px'")
        unit = "none"
    if unit not in ("mm", "px", "none"):
        raise InputError(f"{what}: diameter_unit must be 'mm', 'px' or 'none', got {unit!r}")
    optional: dict[str, NDArray[Any] | None] = {
        "confidence": numeric_column(df, "confidence", what) if "confidence" in df.columns else None,
        "eye_id": numeric_column(df, "eye_id", what, np.int8) if "eye_id" in df.columns else None,
        "valid": numeric_column(df, "valid", what, np.bool_) if "valid" in df.columns else None,
    }
    return dict(
        t=numeric_column(df, "t", what),
        x=numeric_column(df, "x", what),
        y=numeric_column(df, "y", what),
        diameter=diameter,
        diameter_unit=unit,
        source=source if source is not None else str(df.attrs.get("source", "DataFrame")),
        **optional,
    )
