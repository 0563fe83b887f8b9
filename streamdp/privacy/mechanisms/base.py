"""The validated, immutable base of every mechanism, and the base of the streaming chunk mechanisms.

A mechanism takes keyword-only parameters, validates each of them at construction (a wrong type
raises ``TypeError``, a value out of range ``ValueError``, both naming the parameter and the
value) and can never change afterwards: setting or deleting an attribute raises
``AttributeError``, and every array it exposes is a view of an immutable buffer, so not even
``setflags(write=True)`` makes it writeable. Each class lists the parameters it takes in
``parameters``, so that a configuration or a command line can ask it.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

from ...errors import InputError
from ..bounds import BoundsProfile
from ..noise import lattice_laplace
from ..randomness import RandomSource
from .parameters import BOUNDS, CHUNK_LENGTH, Parameter, checked_arguments, document, signature_of
from .validation import check_epsilon, frozen_array

_F64 = NDArray[np.float64]
_M = TypeVar("_M", bound="BaseMechanism")


class _FrozenAfterInit(ABCMeta):
    """Makes each class's signature, ``parameters`` and docstring from its ``parameter_table``,
    and freezes every instance once its whole ``__init__`` chain has returned."""

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(name, bases, namespace, **kwargs)
        table: tuple[Parameter, ...] = getattr(cls, "parameter_table", ())
        setattr(cls, "parameters", tuple(p.name for p in table))  # noqa: B010 (a ClassVar the metaclass owns)
        # without it, inspect and help() would show __init__'s (**arguments)
        setattr(cls, "__signature__", signature_of(table))  # noqa: B010
        if namespace.get("__doc__"):
            cls.__doc__ = document(namespace["__doc__"], table)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        # an ε so small that a scale overflows is refused below, by name, not warned about
        with np.errstate(over="ignore"):
            instance = super().__call__(*args, **kwargs)
        object.__setattr__(instance, "_frozen", True)
        return instance


def _rebuild(cls: type[_M], arguments: dict[str, Any]) -> _M:
    return cls(**arguments)


class BaseMechanism(metaclass=_FrozenAfterInit):
    """What every mechanism shares: keyword-only validated parameters, immutability, read-only
    arrays, a readable ``repr``, and ``describe()`` for the ledger.

    Subclasses set their attributes in ``__init__`` with :meth:`_set` only; the instance is frozen
    when construction returns. Pickling and copying rebuild the mechanism from its
    :meth:`arguments`, so a copy is validated and frozen like the original.
    """

    #: the name in ledgers, topics and the registry
    name: ClassVar[str]
    #: the keyword-only parameters the constructor takes, each declared once, in order
    parameter_table: ClassVar[tuple[Parameter, ...]] = ()
    #: their names, made from ``parameter_table``
    parameters: ClassVar[tuple[str, ...]]
    _frozen: bool = False

    def __init__(self, **arguments: Any) -> None:
        if self._frozen:
            raise AttributeError(f"{type(self).__name__} is immutable: cannot init again")
        self._construct(checked_arguments(type(self).__name__, self.parameter_table, arguments))

    def _construct(self, checked: dict[str, Any]) -> None:
        """Set the attributes from ``checked``, every parameter of the table checked, in order,
        defaults filled in: here each as it is; a subclass checks what depends on more than one
        parameter and derives its calibration."""
        self._set(**checked)

    def _set(self, **attributes: Any) -> None:
        """Set attributes during construction; arrays are stored as frozen copies."""
        if self._frozen:
            raise AttributeError(f"{type(self).__name__} is immutable: cannot set {', '.join(attributes)}")
        for key, value in attributes.items():
            if key.startswith(("noise_scale", "sigma", "scale")) and not np.all(np.isfinite(value)):
                raise ValueError(
                    f"epsilon={getattr(self, 'epsilon', '?')!r} is too small for {self.name}: its noise scale "
                    "overflows a float"
                )
            object.__setattr__(self, key, frozen_array(value) if isinstance(value, np.ndarray) else value)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {key}")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {key}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.arguments()))

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments this mechanism was built with, after validation and defaults:
        ``type(m)(**m.arguments())`` builds the same mechanism."""
        return {p: getattr(self, p) for p in self.parameters}

    def __repr__(self) -> str:
        args = self.arguments()
        bounds = args.pop("bounds", None)
        items = [f"{key}={value!r}" for key, value in args.items()]
        if isinstance(bounds, BoundsProfile):
            n = len(bounds.names)
            items.append(f"bounds=<{bounds.source!r}, {n} feature{'s' if n != 1 else ''}>")
        return f"{type(self).__name__}({', '.join(items)})"

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The public parameters, for the ledger."""


@dataclass(frozen=True, eq=False)
class MechanismOutput:
    """A perturbed chunk and what it took: values (n, F), fraction of inputs clipped, k per feature."""

    values: _F64
    clipped_fraction: float
    k: NDArray[np.int64]


def laplace_columns(
    rng: RandomSource | np.random.Generator, c: _F64, scale: _F64, mask: NDArray[np.bool_] | None = None
) -> _F64:
    """Lattice Laplace noise (exact discrete Laplace, :mod:`streamdp.privacy.exact_samplers`) on
    every column at its own scale; rows outside ``mask`` (coefficients not released) are zero."""
    out = lattice_laplace(rng, c, scale)
    return out if mask is None else np.where(mask, out, 0.0)


class Mechanism(BaseMechanism):
    """Base of the streaming mechanisms on a chunk of ``n`` steps × ``F`` features.

    Unit of privacy of every chunk mechanism: **one chunk of one feature**. Two inputs are
    neighbours when they are any two chunks inside the public bounds (after clipping). The
    concrete mechanisms (:class:`~streamdp.privacy.mechanisms.budget.ChunkMechanism`) take ε as
    the total of a chunk and split it over the features, which compose sequentially to it (see
    :mod:`streamdp.privacy.accountant` for chunks, w-events, sessions and raw gaze).

    """

    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter(
            "epsilon",
            "float",
            "ε of one feature per chunk at this level (the subclasses pass their split), finite and > 0.",
            check=check_epsilon,
        ),
        BOUNDS,
        CHUNK_LENGTH,
    )

    epsilon: float
    bounds: BoundsProfile
    chunk_length: int

    @property
    def n_features(self) -> int:
        return len(self.bounds.names)

    @property
    def epsilon_chunk(self) -> float:
        """ε of one chunk: the features compose sequentially."""
        return self.epsilon * self.n_features

    def _check_input(self, x: _F64) -> _F64:
        arr = np.asarray(x, dtype=np.float64)
        want = (self.chunk_length, self.n_features)
        if arr.shape != want:
            raise InputError(f"{self.name}: chunk has shape {arr.shape}, expected {want}")
        if not np.all(np.isfinite(arr)):
            r, c = np.argwhere(~np.isfinite(arr))[0]
            raise InputError(f"{self.name}: chunk value at step {r}, feature {self.bounds.names[c]} is not finite")
        return arr

    def _clip(self, x: _F64) -> tuple[_F64, int]:
        clipped = np.clip(x, self.bounds.lo, self.bounds.hi)
        return clipped, int(np.count_nonzero(clipped != x))

    @abstractmethod
    def privatize(self, x: _F64, rng: RandomSource) -> MechanismOutput:
        """The perturbed chunk, its noise drawn from ``rng``.

        Raises
        ------
        InputError
            ``x`` is not a finite (chunk_length, F) array.
        """

    def describe(self) -> dict[str, Any]:
        """The public parameters, for the ledger."""
        return {"mechanism": self.name, "epsilon_per_feature": self.epsilon, "chunk_length": self.chunk_length}
