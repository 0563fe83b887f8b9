"""The audited channel: raw chunks in, the published message bytes out, decoded as a subscriber would.

:class:`Channel` runs a fresh :class:`~streamdp.stages.privatizer.Privatizer` (cryptographic
generator, seeded for reproducibility) and returns, for each raw chunk, the msgpack bytes of
``release.to_message()``: exactly what goes on the wire. :func:`decode` turns a batch of them
back into the released values and every other field, flattened to dotted paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgpack
import numpy as np
from numpy.typing import NDArray

from ...stages.chunker import Chunk
from ...stages.privatizer import Privatizer
from ..mechanisms import Mechanism
from ..noise import secure_generator

_F64 = NDArray[np.float64]

#: the message field holding the noised values
VALUES = "values"
#: the ledger field holding a privately chosen k (the exponential mechanism's output)
K_CHOSEN = "ledger.k_chosen"


class Channel:
    """A mechanism's release path from raw chunks to message bytes.

    Step times are a public grid (0.5 s steps, chunk after chunk), the same for every input, so
    a difference in any field comes from the data.

    Examples
    --------
    >>> from streamdp.privacy import default_profile, make_mechanism
    >>> ch = Channel(make_mechanism("lpa", epsilon=52.0, bounds=default_profile(), chunk_length=4), seed=0)
    >>> (raw,) = ch.publish([np.tile(default_profile().lo, (4, 1))])
    >>> values, fields = decode([raw])
    >>> values.shape, fields[0]["ledger.mechanism"]
    ((1, 4, 52), 'lpa')
    """

    def __init__(self, mechanism: Mechanism, seed: int) -> None:
        self.mechanism = mechanism
        try:
            self._privatizer = Privatizer(mechanism, rng=secure_generator(seed))
        except TypeError:  # a privatizer that takes only a NumPy Generator
            self._privatizer = Privatizer(mechanism, rng=np.random.default_rng(seed))
        self._count = 0

    def publish(self, chunks: Sequence[_F64]) -> list[bytes]:
        """The message bytes of each raw chunk (n, F), in order."""
        n = self.mechanism.chunk_length
        batch = []
        for x in chunks:
            t = 0.5 * (self._count * n + np.arange(n, dtype=np.float64))
            batch.append(Chunk(t, np.asarray(x, dtype=np.float64)))
            self._count += 1
        return [self.pack(r.to_message(), x) for r, x in zip(self._privatizer.update(batch), chunks, strict=True)]

    def pack(self, message: dict[str, Any], raw: _F64) -> bytes:
        """The bytes of one message (``raw`` is the chunk it came from; the real channel ignores it)."""
        return bytes(msgpack.packb(message, use_bin_type=True))


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{path}.{k}" if path else str(k), out)
    else:
        out[path] = value


def decode(messages: Sequence[bytes]) -> tuple[_F64, list[dict[str, Any]]]:
    """The released values (runs, n, F) and each message's other fields by dotted path.

    Raises
    ------
    ValueError
        A message has no ``values`` field.
    """
    values, fields = [], []
    for raw in messages:
        flat: dict[str, Any] = {}
        _flatten(msgpack.unpackb(raw, raw=False), "", flat)
        if VALUES not in flat:
            raise ValueError("a published message has no 'values' field")
        values.append(flat.pop(VALUES))
        fields.append(flat)
    return np.asarray(values, dtype=np.float64), fields


def differing_fields(runs: Sequence[Sequence[dict[str, Any]]], noised: frozenset[str]) -> list[str]:
    """The paths, outside ``noised``, whose value differs between inputs at the same run index
    (``runs[i][j]``: input ``i``, run ``j``), or that some messages have and others do not."""
    leaks: set[str] = set()
    for j in range(min(len(r) for r in runs)):
        first = runs[0][j]
        for other in runs[1:]:
            o = other[j]
            for key in set(first) | set(o):
                if key in noised:
                    continue
                if key not in first or key not in o or first[key] != o[key]:
                    leaks.add(key)
    return sorted(leaks)


__all__ = ["K_CHOSEN", "VALUES", "Channel", "decode", "differing_fields"]
