"""pyglui.cygl.utils.RGBA: a colour of four floats in 0–1."""

from __future__ import annotations

from typing import NamedTuple


class RGBA(NamedTuple):
    r: float
    g: float
    b: float
    a: float
