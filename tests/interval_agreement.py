"""Agreement between two sets of intervals: detected events against reference events.

The tests' measuring tool (tests/test_event_agreement.py, whose figures docs/events.md reports):
the package releases events, it never has reference events to compare them with, so the tool
lives with the tests that use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class IntervalAgreement:
    """Events matched one-to-one by temporal overlap (intersection over union ≥ ``min_iou``)."""

    n_detected: int
    n_reference: int
    n_matched: int
    mean_iou: float
    #: mean absolute onset and offset differences of the matched pairs, in s
    onset_error: float
    offset_error: float

    @property
    def recall(self) -> float:
        return self.n_matched / self.n_reference if self.n_reference else 1.0

    @property
    def precision(self) -> float:
        return self.n_matched / self.n_detected if self.n_detected else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def interval_agreement(
    det_start: NDArray[np.float64],
    det_end: NDArray[np.float64],
    ref_start: NDArray[np.float64],
    ref_end: NDArray[np.float64],
    min_iou: float = 0.5,
) -> IntervalAgreement:
    """Greedy one-to-one matching of intervals by overlap, best IoU first.

    Examples
    --------
    >>> a = interval_agreement(np.array([0.0, 2.0]), np.array([1.0, 3.0]),
    ...                        np.array([0.1, 5.0]), np.array([1.0, 6.0]))
    >>> a.n_matched, round(a.recall, 2), round(a.precision, 2)
    (1, 0.5, 0.5)
    """
    if det_start.size == 0 or ref_start.size == 0:
        return IntervalAgreement(det_start.size, ref_start.size, 0, 0.0, 0.0, 0.0)
    # candidate pairs: reference intervals overlapping each detected one (both sorted by start)
    lo = np.searchsorted(ref_end, det_start, side="left")
    hi = np.searchsorted(ref_start, det_end, side="right")
    pairs = [(i, j) for i in range(det_start.size) for j in range(lo[i], hi[i])]
    if not pairs:
        return IntervalAgreement(det_start.size, ref_start.size, 0, 0.0, 0.0, 0.0)
    di = np.array([p[0] for p in pairs])
    rj = np.array([p[1] for p in pairs])
    inter = np.minimum(det_end[di], ref_end[rj]) - np.maximum(det_start[di], ref_start[rj])
    union = np.maximum(det_end[di], ref_end[rj]) - np.minimum(det_start[di], ref_start[rj])
    iou = np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)
    used_d: set[int] = set()
    used_r: set[int] = set()
    matched: list[int] = []
    for k in np.argsort(-iou, kind="stable"):
        if iou[k] < min_iou:
            break
        if di[k] in used_d or rj[k] in used_r:
            continue
        used_d.add(int(di[k]))
        used_r.add(int(rj[k]))
        matched.append(int(k))
    m = np.asarray(matched, dtype=np.intp)
    if m.size == 0:
        return IntervalAgreement(det_start.size, ref_start.size, 0, 0.0, 0.0, 0.0)
    return IntervalAgreement(
        det_start.size,
        ref_start.size,
        int(m.size),
        float(iou[m].mean()),
        float(np.abs(det_start[di[m]] - ref_start[rj[m]]).mean()),
        float(np.abs(det_end[di[m]] - ref_end[rj[m]]).mean()),
    )
