"""``cfpa(...)`` and ``dcfpa(...)``: the two Fourier mechanisms by their papers' names, with
explicit keyword-only signatures (for ``help`` and IDEs)."""

from __future__ import annotations

from ..bounds import BoundsProfile
from .fourier import CFPA, DCFPA


def cfpa(
    *,
    epsilon: float,
    bounds: BoundsProfile,
    chunk_length: int,
    transform: str = "dft",
    k: int | str | None = None,
    sensitivity: str = "bound",
    k_epsilon_share: float | None = None,
) -> CFPA:
    """Chunk-based FPA on the values themselves (Bozkir et al.): a :class:`CFPA`.

    Parameters and guarantee as in :class:`FourierPerturbation`.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> cfpa(epsilon=0.5, bounds=default_profile(), chunk_length=16, k=2).describe()["k"]
    2
    """
    return CFPA(
        epsilon=epsilon,
        bounds=bounds,
        chunk_length=chunk_length,
        transform=transform,
        k=k,
        sensitivity=sensitivity,
        k_epsilon_share=k_epsilon_share,
    )


def dcfpa(
    *,
    epsilon: float,
    bounds: BoundsProfile,
    chunk_length: int,
    transform: str = "dft",
    k: int | str | None = None,
    sensitivity: str = "bound",
    k_epsilon_share: float | None = None,
) -> DCFPA:
    """Difference- and chunk-based FPA (Bozkir et al. Algorithm 1), streamdp's default: a :class:`DCFPA`.

    Parameters and guarantee as in :class:`FourierPerturbation`.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=32).describe()["mechanism"]
    'dcfpa'
    >>> dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=30)
    Traceback (most recent call last):
    ...
    ValueError: chunk_length must be a power of two ≥ 2, got 30
    """
    return DCFPA(
        epsilon=epsilon,
        bounds=bounds,
        chunk_length=chunk_length,
        transform=transform,
        k=k,
        sensitivity=sensitivity,
        k_epsilon_share=k_epsilon_share,
    )
