"""Ticks in, sealed gaze releases out: the real-time channel's privatizer.

The second maker of releases beside :mod:`streamdp.stages.privatizer`: importing this module
claims its handle of the process's :class:`~streamdp.privacy.release.ReleaseMint`, which lives
only inside :meth:`GazePrivatizer.update`, after the gaze mechanism's noise. Each tick becomes one
release on ``streamdp.gaze.<mechanism>``: its public tick time and the sanitized position in
degrees and in scene-normalized units (the latter a function of the former and the camera's
public field of view). Whether the tick had gaze, how many inputs were clipped and the raw
position stay on the device.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..kernels.geometry import degrees_to_norm, degrees_to_norm_one
from ..kernels.smoothing import MAX_SMOOTHING_TICKS, CausalMedian, causal_smooth, check_smoothing, smoothing_length
from ..privacy.frozen import freeze_constant
from ..privacy.gaze_mechanisms import GAZE_MECHANISMS, GazeMechanism
from ..privacy.ledger_store import LedgerStore
from ..privacy.noise import secure_generator
from ..privacy.randomness import RandomSource
from ..privacy.release import PrivateRelease, ReleaseMint, claim_mint
from .base import Stage
from .gaze_ticks import Ticks
from .privatizer import GENERATOR_KEY, check_rng

__all__ = ["GAZE_LEDGER_SUFFIX", "GAZE_NAMES", "MAX_SMOOTHING_TICKS", "GazePrivatizer"]

#: the gaze channel's durable ledger is the session identity's with this suffix
GAZE_LEDGER_SUFFIX = "#gaze"

#: the most off axis a position's normalized scene units are computed at
MAX_OFF_AXIS_DEG = 89.999
#: the columns of a gaze release: degrees from the scene camera's axis, then normalized scene units
GAZE_NAMES = ("x_deg", "y_deg", "x_norm", "y_norm")


def _update_with(mint: ReleaseMint) -> Callable[[GazePrivatizer, Ticks], list[PrivateRelease]]:
    def seal(self: GazePrivatizer, t: np.ndarray, values: np.ndarray, epsilon: float, clipped: float) -> PrivateRelease:
        """One tick's release, sealed with its ledger entry."""
        self._spent += epsilon
        entry: dict[str, Any] = {
            # the guarantee in words at every whole second of the public grid
            **(self._public if round(float(t[0]) * self.rate) % self._every == 0 else self._brief),
            "tick_index": self._ticks,
            "epsilon_tick_per_degree": epsilon,
            "epsilon_spent_per_degree": self._spent,
            "clipped_fraction": clipped,
        }
        if self._ledger is not None:
            # what was charged by this tick's block, a function of its index alone (the write
            # itself may come earlier, for a whole batch): the same whatever the batching
            blocks = self._ticks // self._every + 1
            entry["epsilon_charged_per_degree"] = self._charged + blocks * self.second_bound
        self._ticks += 1
        return mint.seal(t=t, values=values, names=GAZE_NAMES, ledger=entry, clipped_fraction=clipped)

    def one(self: GazePrivatizer, ticks: Ticks) -> PrivateRelease:
        """One tick (a live wake's) in Python floats, bit for bit what the arrays give: the mechanism's
        ``release_one``, the median's ``push``, and NumPy's ``tan`` for the scene units (never ``math.tan``,
        whose last bit may differ from the replay's)."""
        x, y = ticks.deg[0].tolist()
        vx, vy, epsilon, clipped = self.mechanism.release_one(x, y, self._state, self.rng)
        if self._median is not None:
            vx, vy = self._median.push(vx, vy)
        ix, iy = (min(max(v, -MAX_OFF_AXIS_DEG), MAX_OFF_AXIS_DEG) for v in (vx, vy))
        nx, ny = degrees_to_norm_one(ix, iy, self.fov_deg)
        return seal(self, ticks.t, np.array([[vx, vy, nx, ny]]), epsilon, float(clipped))

    def update(self: GazePrivatizer, ticks: Ticks) -> list[PrivateRelease]:
        """Perturb each tick's position and seal it; one release per tick, in order."""
        if not len(ticks.t):
            return []
        self._charge_ahead(ticks)  # on disk before anything of these ticks is sealed
        if len(ticks.t) == 1 and (self._median is not None or self.smoothing == "none"):
            return [one(self, ticks)]
        res = self.mechanism.release(ticks.deg, self._state, self.rng)
        # public post-processing of what the mechanism released (never of the raw positions)
        if self._median is not None:
            released = self._median(res.values)
        else:
            released, self._smoothed = causal_smooth(res.values, self.smoothing, self._smoothed)
        # a position drawn past 90° off axis has no tangent: its scene units are the clipped one's
        # (np.clip's floats for finite values, without its per-call overhead)
        inside = np.minimum(np.maximum(released, -MAX_OFF_AXIS_DEG), MAX_OFF_AXIS_DEG)
        values = np.empty((len(released), 4))
        values[:, :2] = released
        values[:, 2], values[:, 3] = degrees_to_norm(inside[:, 0], inside[:, 1], self.fov_deg)
        return [
            seal(self, ticks.t[i : i + 1], values[i : i + 1], float(res.epsilon[i]), res.clipped_fraction)
            for i in range(len(ticks.t))
        ]

    return update


def check_gaze_mechanism(mechanism: object) -> GazeMechanism:
    """``mechanism`` if it is an instance of a registered gaze mechanism class (not a subclass).

    Raises
    ------
    TypeError
        Anything else, named.
    """
    if type(mechanism) not in GAZE_MECHANISMS.values():
        raise TypeError(
            f"mechanism must be one of the registered gaze mechanisms ({', '.join(GAZE_MECHANISMS)}), "
            f"got {type(mechanism).__name__}"
        )
    return mechanism  # type: ignore[return-value]


class GazePrivatizer(Stage[Ticks, "list[PrivateRelease]"]):
    """Perturbs each tick's position with a gaze mechanism and seals it.

    Parameters
    ----------
    mechanism : GazeMechanism
        A registered gaze mechanism (:data:`~streamdp.privacy.gaze_mechanisms.GAZE_MECHANISMS`).
    fov_deg : (float, float)
        The scene camera's public field of view: degrees to normalized units.
    rate : float
        The public tick rate in Hz (stated in the ledger).
    rng : RandomSource or numpy Generator, optional
        The noise's source (default: the OS's CSPRNG).
    ledger : LedgerStore, optional
        A durable ledger of its own (the session identity's, named ``<identity>#gaze``), charged
        for the ticks sealed, whatever their times: before a tick is sealed, a block of the next
        ``round(rate)`` ticks is charged unless one already covers it, at the most any that many
        consecutive ticks can spend, ``min(n·ε_tick_max, ⌈n/w⌉·ε_w)`` per degree (one charge per
        block, not per tick: a charge is three fsyncs). So the ledger holds at least what every
        sealed tick spent and at most one block more, through clock jumps, restarts and segments;
        ticks sealed but dropped unpublished
        (:meth:`streamdp.gaze_channel.GazeChannel.reset`) stay charged.
    smoothing : str
        ``"none"`` or ``"median<k>"`` (k odd, 3–31): each released position is the per-axis median
        of the mechanism's last ``k`` outputs (the stream's first repeated backwards). Public
        post-processing: it costs no ε; an output of the median is one of its inputs, so released
        positions stay on the noise's lattice; one raw sample then reaches ``k`` published ticks.

    Raises
    ------
    TypeError
        ``mechanism`` is not a registered gaze mechanism, ``rng`` not a random source.
    ValueError
        ``smoothing`` names no odd-length median.
    """

    update = _update_with(claim_mint())

    def __init__(
        self,
        mechanism: GazeMechanism,
        *,
        fov_deg: tuple[float, float],
        rate: float,
        rng: RandomSource | np.random.Generator | None = None,
        ledger: LedgerStore | None = None,
        smoothing: str = "none",
    ) -> None:
        self._mechanism = check_gaze_mechanism(mechanism)
        self.smoothing = check_smoothing(smoothing, max_ticks=MAX_SMOOTHING_TICKS, median_only=True)
        k = smoothing_length(self.smoothing)
        #: the median of the mechanism's last k outputs, carrying k - 1 of them (None: another filter)
        self._median = CausalMedian(k) if k > 1 and self.smoothing.startswith("median") else None
        #: another filter's history: the mechanism's last k - 1 outputs (None: a new stream)
        self._smoothed: np.ndarray | None = None
        if ledger is not None and not isinstance(ledger, LedgerStore):
            raise TypeError(f"ledger must be a LedgerStore or None, got {ledger!r}")
        self._ledger = ledger
        #: ticks charged to the ledger and not yet sealed (a block's rest; kept through reset)
        self._prepaid = 0
        # read now: a ledger that was tampered with is refused before anything starts; the ledger's
        # total then, to which each tick's published running total adds this channel's blocks
        self._charged = 0.0 if ledger is None else float(ledger.read().epsilon_spent)
        self._rng = check_rng(rng) if rng is not None else secure_generator()
        self.fov_deg = (float(fov_deg[0]), float(fov_deg[1]))
        self.rate = float(rate)
        self._public = {
            "channel": "gaze",
            **mechanism.describe(),
            "rate_hz": float(rate),
            "fov_deg": list(self.fov_deg),
            GENERATOR_KEY: self._rng.ledger_label,
            "smoothing": self.smoothing,
        }
        smoothed = "" if k == 1 else (
            f" and, through the public {'adaptive ' * self.smoothing.startswith('adaptive')}median of the last {k} "
            f"outputs, the {k - 1} ticks after it"
        )  # fmt: skip
        self._public["raw_gaze_guarantee"] = (
            "one raw gaze sample is part of one tick's input (the tick whose interval holds it); "
            + (
                f"it changes that tick's output{smoothed} only"
                if type(mechanism).name == "geo-uniform"
                else "it changes that tick's output and, through the later ticks' decisions to publish or "
                "repeat, may change any later tick's: the metric guarantee above bounds what all of them reveal"
            )
        )
        #: how many published ticks one raw sample can change (0: any later one, geo-bd's decisions)
        self._public["raw_gaze_reach_ticks"] = k if type(mechanism).name == "geo-uniform" else 0
        #: the guarantee in words only on the ticks at whole seconds (a tick's message stays small)
        # frozen once: a tick's seal does not walk the public fields again
        self._public = {k: freeze_constant(v, f"ledger[{k!r}]") for k, v in self._public.items()}
        self._brief = {k: v for k, v in self._public.items() if k not in ("guarantee", "raw_gaze_guarantee")}
        self._every = max(1, round(rate))
        self._state = mechanism.new_state()
        self._ticks = 0
        self._spent = 0.0

    @property
    def mechanism(self) -> GazeMechanism:
        return self._mechanism

    @property
    def rng(self) -> RandomSource:
        return self._rng

    @property
    def spent_per_degree(self) -> float:
        """ε per degree spent by every tick so far (the sum over ticks; the guarantee of any w
        consecutive ticks is the mechanism's ``epsilon``)."""
        return self._spent

    @property
    def block_ticks(self) -> int:
        """Ticks charged to the durable ledger at a time: a second's worth at the rate."""
        return self._every

    @property
    def second_bound(self) -> float:
        """The most any :attr:`block_ticks` consecutive ticks can spend, per degree: each tick at
        most ``epsilon_tick_max``, any ``w`` consecutive ones at most ``epsilon`` (the mechanism's
        state, kept through :meth:`reset`, makes the ticks of every segment one sequence)."""
        mech, per_block = self._mechanism, self._every
        return min(per_block * mech.epsilon_tick_max, math.ceil(per_block / mech.w) * mech.epsilon)

    def _charge_ahead(self, ticks: Ticks) -> None:
        """Charge the durable ledger, in one write, the blocks these ticks need beyond what is
        already charged, counted in ticks, never in clock seconds: any clock, moved by any app,
        pays for every tick sealed.

        Raises
        ------
        InputError, OSError
            The ledger cannot be read or written: nothing of these ticks is released.
        """
        if self._ledger is None:
            return
        short = len(ticks.t) - self._prepaid
        if short > 0:
            blocks = -(-short // self._every)
            self._ledger.charge(blocks * self.second_bound, keep=0)
            self._prepaid += blocks * self._every
        self._prepaid -= len(ticks.t)

    def flush(self) -> list[PrivateRelease]:
        """Nothing is held between ticks: always ``[]``."""
        return []

    def reset(self) -> None:
        """Forget the stream but not the mechanism's state: the ε spent in the last ``w`` ticks
        still counts, so a restart cannot buy a fresh window's budget, nor the ledger's block
        already charged. The median starts again with the new stream's first tick."""
        self._smoothed = None
        if self._median is not None:
            self._median.reset()
