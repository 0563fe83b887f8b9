"""Normalized scene-camera coordinates to visual angle."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

#: horizontal and vertical field of view in degrees of common scene cameras (Pupil Labs specs)
CAMERA_FOV_DEG: dict[str, tuple[float, float]] = {
    "pupil_core_720p": (99.0, 53.0),
    "pupil_core_1080p": (139.0, 83.0),
    "pupil_core_480p": (100.0, 74.0),
    "neon": (103.0, 77.0),
    "invisible": (82.0, 82.0),
}


def norm_to_degrees(
    x: NDArray[np.float64], y: NDArray[np.float64], fov_deg: tuple[float, float]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Map normalized positions (origin bottom-left) to angles from the optical axis in degrees.

    A pinhole camera with the given field of view: ``angle = atan((v - 0.5) * 2 * tan(fov / 2))``.
    The two axes are mapped independently (azimuth, elevation), which is exact on the axes and
    a close approximation (< 3 % in amplitude at 30° eccentricity) elsewhere.

    Examples
    --------
    >>> ax, ay = norm_to_degrees(np.array([0.5, 1.0]), np.array([0.5, 0.5]), (90.0, 60.0))
    >>> np.round(ax, 6).tolist(), np.round(ay, 6).tolist()
    ([0.0, 45.0], [0.0, 0.0])
    """
    tx, ty = _image_widths(float(fov_deg[0]), float(fov_deg[1]))
    return np.degrees(np.arctan((x - 0.5) * tx)), np.degrees(np.arctan((y - 0.5) * ty))


def degrees_to_norm(
    ax: NDArray[np.float64], ay: NDArray[np.float64], fov_deg: tuple[float, float]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Inverse of :func:`norm_to_degrees`."""
    tx, ty = _image_widths(float(fov_deg[0]), float(fov_deg[1]))
    return np.tan(np.radians(ax)) / tx + 0.5, np.tan(np.radians(ay)) / ty + 0.5


def degrees_to_norm_one(ax: float, ay: float, fov_deg: tuple[float, float]) -> tuple[float, float]:
    """:func:`degrees_to_norm` of one position, in Python floats with one NumPy ``tan`` for both axes
    (never ``math.tan``, whose last bit may differ from NumPy's): the bits the arrays give.

    Examples
    --------
    >>> degrees_to_norm_one(45.0, 0.0, (90.0, 60.0))
    (1.0, 0.5)
    """
    tx, ty = _image_widths(float(fov_deg[0]), float(fov_deg[1]))
    tan_x, tan_y = np.tan(np.radians(np.array([ax, ay], dtype=np.float64))).tolist()
    return tan_x / float(tx) + 0.5, tan_y / float(ty) + 0.5


@lru_cache(maxsize=16)
def _image_widths(fov_x: float, fov_y: float) -> tuple[np.float64, np.float64]:
    """The image plane's width per unit focal length on each axis, ``2·tan(fov / 2)``: computed
    once per field of view (the live channel converts a tick or a burst at a time)."""
    return np.tan(np.radians(fov_x) / 2.0) * 2.0, np.tan(np.radians(fov_y) / 2.0) * 2.0
