"""Saccade alphabet and incremental n-gram wordbooks (Bulling et al. 2011; DESIGN.md §3)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

ALPHABET_SIZE = 24
N_SMALL_DIRECTIONS = 8
N_LARGE_DIRECTIONS = 16


def encode_saccades(
    amplitude: NDArray[np.float64], angle_deg: NDArray[np.float64], large_threshold: float
) -> NDArray[np.int8]:
    """Letters 0-7 for small saccades in 8 directions of 45°, 8-23 for large ones in 16 of 22.5°.

    Direction 0 is centred on rightward (0°) and directions run counter-clockwise (y points up),
    so a straight-up saccade is letter 2 when small and 12 when large. A saccade exactly on a
    sector edge goes to the counter-clockwise sector.

    Examples
    --------
    >>> encode_saccades(np.array([1.0, 1.0, 9.0, 9.0]), np.array([0.0, 90.0, 90.0, -22.5]),
    ...                 5.0).tolist()
    [0, 2, 12, 23]
    """
    ang = np.mod(angle_deg, 360.0)
    small = np.floor(np.mod(ang + 22.5, 360.0) / 45.0).astype(np.int64) % N_SMALL_DIRECTIONS
    large = np.floor(np.mod(ang + 11.25, 360.0) / 22.5).astype(np.int64) % N_LARGE_DIRECTIONS
    return np.where(amplitude < large_threshold, small, N_SMALL_DIRECTIONS + large).astype(np.int8)


class NgramCounter:
    """Counts of the n-grams currently in a window, with O(1) amortised updates.

    Keeps the count of every n-gram seen, the number of n-grams per count (to track the
    largest and the smallest non-zero count without a scan), and exact integer sums for the
    mean and variance over all ``24**n`` possible n-grams.
    """

    __slots__ = ("_by_count", "_counts", "max", "min", "n_possible", "sum_sq", "total")

    def __init__(self, n: int) -> None:
        self.n_possible = ALPHABET_SIZE**n
        self._counts: dict[int, int] = {}
        self._by_count: list[int] = [0]
        self.total = 0
        self.sum_sq = 0
        self.max = 0
        self.min = 0

    def add(self, code: int) -> None:
        c = self._counts.get(code, 0)
        self._counts[code] = c + 1
        by = self._by_count
        if c + 1 >= len(by):
            by.append(0)
        if c:
            by[c] -= 1
        by[c + 1] += 1
        self.total += 1
        self.sum_sq += 2 * c + 1
        if c + 1 > self.max:
            self.max = c + 1
        if c == 0:
            self.min = 1
        elif c == self.min and by[c] == 0:
            self.min = c + 1

    def remove(self, code: int) -> None:
        c = self._counts[code]
        by = self._by_count
        by[c] -= 1
        if c == 1:
            del self._counts[code]
        else:
            self._counts[code] = c - 1
            by[c - 1] += 1
        self.total -= 1
        self.sum_sq -= 2 * c - 1
        if c == self.max and by[c] == 0:
            self.max = c - 1
        if not self._counts:
            self.min = 0
        elif c - 1 >= 1 and c - 1 < self.min:
            self.min = c - 1
        elif c == self.min and by[c] == 0:
            m = c + 1  # the only grams at the old minimum vanished: next occupied count up
            while by[m] == 0:
                m += 1
            self.min = m

    def stats(self) -> tuple[float, float, float, float, float, float]:
        """(distinct, max, min non-zero, max - min, mean, variance over all 24**n n-grams)."""
        n_pos = self.n_possible
        mean = self.total / n_pos
        var = (self.sum_sq * n_pos - self.total * self.total) / (n_pos * n_pos)
        return (
            float(len(self._counts)),
            float(self.max),
            float(self.min),
            float(self.max - self.min),
            mean,
            var,
        )


def ngram_code(letters: NDArray[np.int8] | list[int]) -> int:
    """Integer code of an n-gram: its letters as digits in base 24, first letter most significant."""
    code = 0
    for letter in letters:
        code = code * ALPHABET_SIZE + int(letter)
    return code
