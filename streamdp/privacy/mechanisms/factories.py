"""``cfpa(...)``, ``dcfpa(...)`` and ``dcfpa_bozkir(...)``: the Fourier mechanisms by their papers'
names, with explicit keyword-only signatures (for ``help`` and IDEs)."""

from __future__ import annotations

from ..bounds import BoundsProfile
from .fourier_mechanisms import CFPA, DCFPA, DEFAULT_LEVEL_SHARE, DCFPABozkir


def cfpa(
    *,
    epsilon: float | None = None,
    epsilon_per_feature: float | None = None,
    bounds: BoundsProfile,
    chunk_length: int,
    transform: str = "dft",
    k: int | str | None = None,
    sensitivity: str | None = None,
    k_epsilon_share: float | None = None,
) -> CFPA:
    """Chunk-based FPA on the values themselves (Bozkir et al.): a :class:`CFPA`.

    ``epsilon`` is the total of one chunk (split by the profile's weights); ``epsilon_per_feature``
    the papers' per-feature ε instead. Other parameters and the guarantee as in
    :class:`FourierPerturbation`.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> cfpa(epsilon=26.0, bounds=default_profile(), chunk_length=16, k=2).describe()["k"]
    2
    """
    return CFPA(
        epsilon=epsilon,
        epsilon_per_feature=epsilon_per_feature,
        bounds=bounds,
        chunk_length=chunk_length,
        transform=transform,
        k=k,
        sensitivity=sensitivity,
        k_epsilon_share=k_epsilon_share,
    )


def dcfpa(
    *,
    epsilon: float | None = None,
    epsilon_per_feature: float | None = None,
    bounds: BoundsProfile,
    chunk_length: int,
    transform: str = "dft",
    k: int | str | None = None,
    sensitivity: str | None = None,
    k_epsilon_share: float | None = None,
    level_share: float = DEFAULT_LEVEL_SHARE,
) -> DCFPA:
    """DCFPA that keeps level and shape, streamdp's default: a :class:`DCFPA`.

    Parameters and guarantee as in :class:`DCFPA`.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> dcfpa(epsilon=52.0, bounds=default_profile(), chunk_length=32).describe()["mechanism"]
    'dcfpa'
    >>> dcfpa(epsilon=52.0, bounds=default_profile(), chunk_length=30)
    Traceback (most recent call last):
    ...
    ValueError: chunk_length must be a power of two ≥ 2, got 30
    """
    return DCFPA(
        epsilon=epsilon,
        epsilon_per_feature=epsilon_per_feature,
        bounds=bounds,
        chunk_length=chunk_length,
        transform=transform,
        k=k,
        sensitivity=sensitivity,
        k_epsilon_share=k_epsilon_share,
        level_share=level_share,
    )


def dcfpa_bozkir(
    *,
    epsilon: float | None = None,
    epsilon_per_feature: float | None = None,
    bounds: BoundsProfile,
    chunk_length: int,
    transform: str = "dft",
    k: int | str | None = None,
    sensitivity: str | None = None,
    k_epsilon_share: float | None = None,
) -> DCFPABozkir:
    """Bozkir et al.'s Algorithm 1 as published (``"dcfpa-bozkir"``): a :class:`DCFPABozkir`.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> dcfpa_bozkir(epsilon_per_feature=1.0, bounds=default_profile(), chunk_length=32).describe()["epsilon"]
    52.0
    """
    return DCFPABozkir(
        epsilon=epsilon,
        epsilon_per_feature=epsilon_per_feature,
        bounds=bounds,
        chunk_length=chunk_length,
        transform=transform,
        k=k,
        sensitivity=sensitivity,
        k_epsilon_share=k_epsilon_share,
    )
