"""What the gaze channel's stages pass each other: ticks (:class:`Ticks`) and the samples they are made of
(:class:`TickSamples`). Raw: nothing here leaves the device unnoised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["TickSamples", "Ticks", "read_only"]

_F64 = NDArray[np.float64]


def read_only(a: NDArray[Any]) -> NDArray[Any]:
    """``a``, made read-only (a constant shared by every batch that holds it)."""
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Ticks:
    """Gaze positions at public ticks. Raw: never leaves the device unnoised.

    Attributes
    ----------
    t : array of float, shape (m,)
        Tick times ``k / rate`` on the source clock.
    deg : array of float, shape (m, 2)
        Mean gaze (azimuth, elevation) in degrees of the tick's usable samples; the public
        centre (0.0, 0.0) where it has none.
    has_gaze : array of bool, shape (m,)
        Whether the tick had a usable sample. A raw function of the gaze: keep it local.
    """

    t: _F64
    deg: _F64
    has_gaze: NDArray[np.bool_]

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @classmethod
    def empty(cls) -> Ticks:
        """No ticks: one read-only instance (a live wake asks for it several times)."""
        return _NO_TICKS

    @staticmethod
    def concat(parts: Sequence[Ticks]) -> Ticks:
        """Join tick batches in order.

        Examples
        --------
        >>> a = Ticks(np.array([0.5]), np.zeros((1, 2)), np.array([False]))
        >>> len(Ticks.concat([a, Ticks.empty(), a]))
        2
        """
        parts = [p for p in parts if len(p)]
        if not parts:
            return Ticks.empty()
        if len(parts) == 1:
            return parts[0]
        return Ticks(
            np.concatenate([p.t for p in parts]),
            np.concatenate([p.deg for p in parts]),
            np.concatenate([p.has_gaze for p in parts]),
        )


@dataclass(frozen=True, eq=False)
class TickSamples:
    """Time-ordered samples as the ticks read them, converted once as they arrived
    (:meth:`~streamdp.stages.gaze_ticks.GazeTicks.convert`): times ``t`` (finite, non-decreasing),
    each row's tick ``k``, whether it is usable (``use``) and its position in degrees (``dx``,
    ``dy``, read where usable); ``source`` is named in errors. Raw: never leaves the device."""

    t: _F64
    k: NDArray[np.int64]
    use: NDArray[np.bool_]
    dx: _F64
    dy: _F64
    source: str = "gaze"

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def slice(self, start: int, stop: int) -> TickSamples:
        s = slice(start, stop)
        return TickSamples(self.t[s], self.k[s], self.use[s], self.dx[s], self.dy[s], self.source)


_NO_TICKS = Ticks(read_only(np.empty(0)), read_only(np.empty((0, 2))), read_only(np.empty(0, dtype=bool)))
