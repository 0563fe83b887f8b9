"""``streamdp replay --lsl``: each recording's sanitized releases played on Lab Streaming Layer
streams, at the recording's pace, with the recording's timestamps.

Each recording gets its own :class:`~streamdp.network.lsl_sink.LslOutlet` named
``streamdp-<recording>`` (its name in the output folder): streams ``streamdp-<recording>-features``
(type ``Features``) and, with the real-time gaze channel on, ``streamdp-<recording>-gaze`` (type
``Gaze``). They carry exactly the releases written to the recording's files, value for value.

**Timestamps.** A sample's LSL timestamp is the recording's own timestamp of its step or tick
(Pupil time) plus one offset for all of the recording's streams, fixed when the streams are made:
``offset = local_clock() − t``, ``t`` the last step of the recording's first chunk. Each stream's
description holds it (``desc/streamdp/clock/offset``), so ``stamp − offset`` gives back the
recording's timestamps exactly. Each release is pushed when the LSL clock reaches its timestamp (a
chunk at its last step, as a live relay releases it; a tick at its time): the recording plays in
real time, as if it were being recorded, and an hour of recording takes an hour. Releases whose
time has passed while the replay waited for inlets go at once, their timestamps unchanged.

**Why it waits.** An LSL stream can be made only once a release describes it (its ledger is the
stream's description), and an inlet receives only what is pushed after it connected. So a
recording's releases are held until its first chunk, its streams are then made, and nothing is
pushed until every one of them has an inlet (LabRecorder: tick the streams, press Start). The
replay says once what it waits for; ``wait`` bounds it (the recording's streams are then withdrawn
and its releases go to the files only). After the last release the streams stay up until their
inlets have closed them, at most ``linger`` seconds: an outlet withdrawn right after its last push
cuts off the samples still on their way. Pacing keeps an inlet's buffer (LabRecorder's holds
minutes) from overflowing, as it would with an hour of ticks pushed at once.

A recording that gives no chunk pushes nothing, as it writes no file. The releases are sealed in
the process that made them, so with ``--lsl`` the recordings run in this process, one after
another. pylsl is the optional ``lsl`` extra.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import SessionConfig
from ..privacy.release import PrivateRelease, check_sealed
from ..status import SessionStatus, check_status

__all__ = ["LINGER_S", "LslPlayback", "LslReplay"]

log = logging.getLogger(__name__)

#: the longest the streams stay up after a recording's last release, for their inlets to take it
LINGER_S = 10.0
#: how often a wait looks again (s)
_POLL_S = 0.05


def _is_tick(release: PrivateRelease) -> bool:
    return release.ledger.get("channel") == "gaze"


@dataclass(frozen=True, kw_only=True)
class LslReplay:
    """What ``replay`` is asked of LSL: how long to wait for inlets (None: until stopped), how long
    the streams stay up for their inlets after the last release, whether seeded noise may be
    published, and where the line about the wait goes.

    Raises
    ------
    TypeError, ValueError
        ``wait`` or ``linger`` not a number of seconds ≥ 0 (``wait`` may be None), the flag not a bool.

    Examples
    --------
    >>> LslReplay(wait=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: wait must be a number of seconds ≥ 0 or None, got -1.0
    """

    wait: float | None = None
    linger: float = LINGER_S
    publish_reproducible_noise_not_private: bool = False
    say: Callable[[str], object] = field(default=log.info, compare=False)

    def __post_init__(self) -> None:
        for name, value in (("wait", self.wait), ("linger", self.linger)):
            if value is None and name == "wait":
                continue
            what = f"{name} must be a number of seconds ≥ 0{' or None' * (name == 'wait')}, got {value!r}"
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(what)
            if not 0 <= value < float("inf"):
                raise ValueError(what)
        if not isinstance(self.publish_reproducible_noise_not_private, bool):
            raise TypeError(
                "publish_reproducible_noise_not_private must be a bool, got "
                f"{self.publish_reproducible_noise_not_private!r}"
            )

    def check(self, config: SessionConfig) -> None:
        """Refuse, before any work, what would stop the playback: pylsl missing, seeded noise
        without the flag.

        Raises
        ------
        ImportError
            pylsl is not installed (the ``lsl`` extra) or cannot load liblsl.
        ValueError
            ``config`` seeds the noise and ``publish_reproducible_noise_not_private`` is not set.
        """
        from ..network.lsl_sink import load_pylsl

        load_pylsl()
        if config.seed is not None and not self.publish_reproducible_noise_not_private:
            raise ValueError(
                f"seed {config.seed}: seeded noise is reproducible, not private (whoever knows the seed removes it); "
                "it goes onto LSL streams only with publish_reproducible_noise_not_private"
            )

    def playback(self, name: str, config: SessionConfig, diameter_unit: str = "auto") -> LslPlayback:
        """The playback of the recording called ``name`` in the output folder (its outlet made now,
        its streams at its first chunk)."""
        from ..network.lsl_sink import LslOutlet

        unit = config.diameter_unit if config.diameter_unit != "auto" else diameter_unit
        outlet = LslOutlet(
            f"streamdp-{name}",
            source_id=f"streamdp-replay/{name}",
            position_unit=config.units,
            diameter_unit=unit if unit != "auto" else "mm where the 3d detector gives it, else px",
            publish_reproducible_noise_not_private=self.publish_reproducible_noise_not_private,
        )
        return LslPlayback(outlet, gaze=bool(config.gaze_channel), settings=self)


class LslPlayback:
    """A :class:`~streamdp.sinks.ReleaseSink` playing one recording's releases on ``outlet``'s
    streams at the recording's pace (see the module's description); :meth:`close` ends it.

    Raises
    ------
    TypeError
        :meth:`publish` is given anything but a sealed release, :meth:`publish_status` anything
        but a :class:`~streamdp.status.SessionStatus`.
    """

    def __init__(self, outlet: Any, *, gaze: bool, settings: LslReplay, sleep: Callable[[float], object] = time.sleep):
        self.outlet = outlet
        #: the gaze channel's ticks come here too (they are held until the first chunk)
        self.accepts_gaze = gaze
        self.settings = settings
        self._sleep = sleep
        self._held: list[PrivateRelease] = []
        #: chunks waiting for the ticks before them (with the gaze channel)
        self._chunks: list[PrivateRelease] = []
        #: the recording's streams, once made
        self.stream_names: tuple[str, ...] = ()
        self.playing = False
        #: why nothing was pushed (no inlet came in time); empty otherwise
        self.problem = ""
        #: releases pushed
        self.pushed = 0

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        if self.problem or self.outlet.closed:
            return  # the files take it; the streams were withdrawn
        if not len(release.t):
            return
        if self.playing:
            self._play(release)
            return
        self._held.append(release)
        if not _is_tick(release):
            self._start()

    def publish_status(self, status: SessionStatus) -> None:
        check_status(status)  # its counters are raw functions of the gaze: never on a stream

    def _start(self) -> None:
        chunk = next(r for r in self._held if not _is_tick(r))
        self.outlet.announce(chunk)  # first: the offset comes from the first chunk's last step
        tick = next((r for r in self._held if _is_tick(r)), None)
        if tick is not None:
            self.outlet.announce(tick)
        self.stream_names = tuple(self.outlet.stream_names.values())
        if not self._wait_for_inlets():
            names = " and ".join(self.stream_names)
            wait = f"{self.settings.wait:g} s"
            self.problem = f"no LSL inlet on {names} within {wait}: its releases went to the files only"
            self._held = []
            self.outlet.close()
            return
        self.playing = True
        held, self._held = self._held, []
        for release in held:
            self._play(release)

    def _wait_for_inlets(self) -> bool:
        wait = self.settings.wait
        names = " and ".join(self.stream_names)
        until = f"for {wait:g} s" if wait is not None else "until stopped (Ctrl-C)"
        self.settings.say(
            f"streamdp replay: LSL streams {names} are up (offset {self.outlet.clock_offset:.6f} s from the "
            f"recording's time); waiting {until} for an inlet on each (LabRecorder: tick them, press Start)"
        )
        channels = tuple(self.outlet.stream_names)
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            left = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            if self.outlet.wait_for_consumers(left, channels=channels):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def _play(self, release: PrivateRelease) -> None:
        """Push ``release`` at its time, in time order with the other stream's: the session hands
        over a chunk before the ticks of its last steps, so a chunk waits for the first tick past it."""
        if not self.accepts_gaze:
            self._push(release)
        elif not _is_tick(release):
            self._chunks.append(release)
        else:
            while self._chunks and self._chunks[0].t[-1] <= release.t[-1]:
                self._push(self._chunks.pop(0))
            self._push(release)

    def _push(self, release: PrivateRelease) -> None:
        delay = float(release.t[-1]) + self.outlet.clock_offset - self.outlet.local_clock()
        if delay > 0:
            self._sleep(delay)
        self.outlet.publish(release)
        self.pushed += 1

    def close(self, *, linger: bool = True) -> None:
        """Withdraw the streams; with ``linger``, once their inlets have closed them (at most
        ``settings.linger`` seconds after the last release). Held releases of a recording that gave
        no chunk are dropped unpushed."""
        self._held = []
        if self.outlet.closed:
            return
        if self.playing and linger:
            for chunk in self._chunks:
                self._push(chunk)
            deadline = time.monotonic() + self.settings.linger
            while self.outlet.has_consumers() and time.monotonic() < deadline:
                self._sleep(_POLL_S)
        self.outlet.close()
