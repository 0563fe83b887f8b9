"""Normalized scene-camera coordinates to visual angle."""

from __future__ import annotations

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
    tx = np.tan(np.radians(fov_deg[0]) / 2.0) * 2.0
    ty = np.tan(np.radians(fov_deg[1]) / 2.0) * 2.0
    return np.degrees(np.arctan((x - 0.5) * tx)), np.degrees(np.arctan((y - 0.5) * ty))


def degrees_to_norm(
    ax: NDArray[np.float64], ay: NDArray[np.float64], fov_deg: tuple[float, float]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Inverse of :func:`norm_to_degrees`."""
    tx = np.tan(np.radians(fov_deg[0]) / 2.0) * 2.0
    ty = np.tan(np.radians(fov_deg[1]) / 2.0) * 2.0
    return np.tan(np.radians(ax)) / tx + 0.5, np.tan(np.radians(ay)) / ty + 0.5
