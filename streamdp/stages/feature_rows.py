"""Feature rows, the window stage's output type, and their DataFrame form.

The conversions build on :mod:`streamdp.frame_columns` (pandas on first use), so that this type
imports nothing that imports it back; :mod:`streamdp.frames` calls them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..frame_columns import check_frame, numeric_column, pandas_module, require_columns
from ..schema import FEATURE_NAMES, N_FEATURES

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FeatureRows"]

_F64 = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class FeatureRows:
    """Feature vectors: ``t`` (m,) step times, ``values`` (m, 52) in schema order; unsanitized.

    Examples
    --------
    >>> rows = FeatureRows(np.array([30.0, 30.5]), np.zeros((2, N_FEATURES)))
    >>> df = rows.to_pandas()
    >>> df.shape, df.columns[0], len(FeatureRows.from_pandas(df))
    ((2, 53), 't', 2)
    """

    t: _F64 = field(default_factory=lambda: np.empty(0))
    values: _F64 = field(default_factory=lambda: np.empty((0, N_FEATURES)))

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def to_pandas(self) -> pd.DataFrame:
        """``t`` and the 52 features in schema order, as a DataFrame.

        Raises
        ------
        ImportError
            pandas is not installed.
        """
        pd = pandas_module()
        df = pd.DataFrame(np.array(self.values, dtype=np.float64), columns=list(FEATURE_NAMES))
        df.insert(0, "t", np.array(self.t, dtype=np.float64))
        return df

    @classmethod
    def from_pandas(cls, df: pd.DataFrame) -> FeatureRows:
        """Rows from a DataFrame with ``t`` and the 52 feature columns (other columns, e.g. a
        participant label, are left out: every feature column is required, so none can be
        misspelt silently).

        Raises
        ------
        TypeError
            ``df`` is not a DataFrame.
        InputError
            A column is missing (named) or not numeric; ``t`` is not finite and increasing, or a
            feature not finite (row and column named).
        """
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
            return cls()
        bad = ~np.isfinite(values)
        if bad.any():
            row, col = (int(i[0]) for i in np.nonzero(bad))
            raise InputError(f"{what}: {FEATURE_NAMES[col]!r} at row {row} is not finite")
        return cls(t, values)

    @staticmethod
    def concat(parts: list[FeatureRows]) -> FeatureRows:
        parts = [p for p in parts if len(p)]
        if not parts:
            return FeatureRows()
        return FeatureRows(np.concatenate([p.t for p in parts]), np.concatenate([p.values for p in parts]))
