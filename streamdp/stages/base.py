"""The streaming stage contract, as code.

Every stage (detectors, window features, chunker, privatizer, reorder buffer, pipelines, the
session) has the same three methods, as river's estimators do:

- ``update(item)`` takes the next batch and returns what it finished;
- ``flush()`` finishes what the end of the stream allows, returns it and leaves the stage ready
  for a new stream (a second ``flush`` returns nothing new);
- ``reset()`` forgets the stream: afterwards the stage behaves as a freshly built one. What is
  not stream state survives a reset on purpose and says so (the privacy budget spent).

Output never depends on how the input was split into batches. ``tests/test_stage_contract.py``
finds every subclass of :class:`Stage` and checks all of this on each.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


class Stage(ABC, Generic[In, Out]):
    """Base of every streaming stage: ``update`` / ``flush`` / ``reset``.

    Examples
    --------
    >>> class Total(Stage[list, list]):
    ...     def __init__(self): self.reset()
    ...     def update(self, item): self.total += sum(item); return []
    ...     def flush(self):
    ...         out, self.total = ([self.total] if self.total else []), 0
    ...         return out
    ...     def reset(self): self.total = 0
    >>> s = Total()
    >>> s.update([1, 2]) + s.update([3]), s.flush(), s.flush()
    ([], [6], [])
    """

    @abstractmethod
    def update(self, item: In, /, *args: Any, **kwargs: Any) -> Out:
        """Take the next batch; return what it finished."""

    @abstractmethod
    def flush(self) -> Out:
        """Finish what the end of the stream allows and return it."""

    @abstractmethod
    def reset(self) -> None:
        """Forget the stream: behave as a freshly built stage from now on."""
