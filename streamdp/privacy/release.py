"""The only object a network sink accepts: a chunk released by a mechanism, with its ledger.

A :class:`PrivateRelease` can only be made inside this package's privatizer (its constructor
checks a module-private token), so raw gaze or unsanitized features cannot be handed to a sink by
mistake: a sink's type says ``PrivateRelease``, and nothing else has that type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..schema import SCHEMA_VERSION

_TOKEN = object()


@dataclass(frozen=True, eq=False)
class PrivateRelease:
    """A sanitized chunk: step times (n,), values (n, F), feature names, ledger entry."""

    t: NDArray[np.float64]
    values: NDArray[np.float64]
    names: tuple[str, ...]
    ledger: dict[str, Any]
    clipped_fraction: float
    _token: object = None

    def __post_init__(self) -> None:
        if self._token is not _TOKEN:
            raise TypeError("a PrivateRelease is made only by a mechanism (streamdp.privacy.Privatizer)")
        self.t.setflags(write=False)
        self.values.setflags(write=False)

    @property
    def topic(self) -> str:
        return f"streamdp.features.{self.ledger['mechanism']}"

    def to_message(self) -> dict[str, Any]:
        """The msgpack-ready payload published on ``streamdp.features.<mechanism>``: plain Python
        types only (msgpack cannot pack numpy scalars)."""
        return {
            "topic": self.topic,
            "schema_version": SCHEMA_VERSION,
            "names": list(self.names),
            "t": self.t.tolist(),
            "values": self.values.tolist(),
            "clipped_fraction": float(self.clipped_fraction),
            "ledger": _plain(self.ledger),
        }


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _make_release(
    t: NDArray[np.float64], values: NDArray[np.float64], names: tuple[str, ...], ledger: dict[str, Any], clipped: float
) -> PrivateRelease:
    return PrivateRelease(t, values, names, ledger, clipped, _TOKEN)
