"""How the command line shows the real-time gaze channel: ticks come 60 times a second, far too
often to print each one, so people get one line a second and a summary in words; programs get
each tick with ``--json`` (:func:`~streamdp.cli.format.json_line` of its message).

- :func:`check_tick`: a received message is a tick of ``streamdp.gaze.<mechanism>``;
- :class:`GazeSeconds`: one line per second of the source's clock (the second's tick count, the
  last position, ε per tick), and the guarantee once, when a tick first carries it
  (``streamdp subscribe``);
- :class:`GazeTally` and :func:`format_gaze_channel`: the channel as received, in one line of
  words (``streamdp demo --gaze-channel``);
- :func:`describe_gaze_channel`: the configuration's channel, for a command's start line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..config import SessionConfig
from ..privacy.randomness import CRYPTOGRAPHIC
from ..privacy.release import PrivateRelease, check_sealed
from ..stages.gaze_privatizer import GAZE_NAMES
from ..status import SessionStatus, check_status
from .format import counted

__all__ = ["GazeSeconds", "GazeTally", "check_tick", "describe_gaze_channel", "format_gaze_channel"]

#: the topic prefix of the gaze channel
GAZE_TOPIC = "streamdp.gaze."
#: what every tick's ledger states
_TICK_LEDGER = ("tick_index", "epsilon_tick_per_degree", "epsilon_w_per_degree", "w", "rate_hz", "mechanism")


def describe_gaze_channel(config: SessionConfig) -> str:
    """``"; gaze channel …"`` for a command's start line ('' with the channel off).

    Examples
    --------
    >>> describe_gaze_channel(SessionConfig(gaze_channel=True))  # doctest: +NORMALIZE_WHITESPACE
    '; gaze channel on streamdp.gaze.geo-uniform: 60 ticks a second, ε 20 per degree over any 60 ticks,
    released through a public median of the last 5'
    >>> describe_gaze_channel(SessionConfig())
    ''
    """
    if not config.gaze_channel:
        return ""
    return (
        f"; gaze channel on {GAZE_TOPIC}{config.gaze_mechanism}: {config.gaze_rate:g} ticks a second, "
        f"ε {config.gaze_epsilon:g} per degree over any {config.gaze_w} ticks"
        + ("" if config.gaze_smoothing == "none" else f", released through a public "
           f"{'adaptive ' * config.gaze_smoothing.startswith('adaptive')}median of the last "
           f"{config.gaze_smoothing.removeprefix('median').removeprefix('adaptive')}")
    )  # fmt: skip


def check_tick(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """``message`` if it is a tick of the gaze channel as published: one time, the four values
    named :data:`~streamdp.stages.gaze_privatizer.GAZE_NAMES`, a gaze ledger.

    Raises
    ------
    KeyError, TypeError, ValueError
        It is not (a subscriber reports and skips it).

    Examples
    --------
    >>> check_tick({"names": ["x", "y"], "t": [1.0], "values": [[0.0, 0.0]], "ledger": {}})
    Traceback (most recent call last):
    ...
    ValueError: not a gaze tick: its names are ['x', 'y'], a tick's are x_deg, y_deg, x_norm, y_norm
    """
    names = list(message["names"])
    if names != list(GAZE_NAMES):
        raise ValueError(f"not a gaze tick: its names are {names}, a tick's are {', '.join(GAZE_NAMES)}")
    t, values, led = message["t"], message["values"], message["ledger"]
    if len(t) != 1 or len(values) != 1 or len(values[0]) != len(GAZE_NAMES):
        raise ValueError(f"not a gaze tick: {len(t)} times and {len(values)} rows, a tick has one of each")
    if led.get("channel") != "gaze":
        raise ValueError(f"not a gaze tick: its ledger's channel is {led.get('channel')!r}")
    missing = [k for k in _TICK_LEDGER if k not in led]
    if missing:
        raise KeyError(f"not a gaze tick: its ledger has no {', '.join(missing)}")
    return message


def _noise(led: Mapping[str, Any]) -> str:
    generator = led.get("generator")
    if isinstance(generator, str) and generator != CRYPTOGRAPHIC:
        return f"; noise {generator} — whoever knows the seed removes it (tests and research only)"
    return ""


def _per_tick(led: Mapping[str, Any]) -> str:
    eps, w = float(led["epsilon_w_per_degree"]), int(led["w"])
    most = float(led.get("epsilon_tick_max_per_degree", eps / w))
    if math.isclose(most, eps / w, rel_tol=1e-9):
        return f"{most:g} per degree per tick"
    return f"at most {most:.3g} per degree per tick (a tick repeats the last position unless the gaze moved)"


def format_gaze_channel(
    ticks: int, first: Mapping[str, Any], last: Mapping[str, Any], span: tuple[float, float]
) -> str:
    """One line of words for a gaze channel received: how many ticks, how often, ε per degree over
    ``w`` ticks, what that protects, the spend and the noise's origin.

    ``first`` and ``last`` are the ledgers of the first and last ticks, ``span`` their times.

    Examples
    --------
    >>> led = {"mechanism": "geo-uniform", "epsilon_w_per_degree": 60.0, "w": 60, "rate_hz": 60.0,
    ...        "epsilon_tick_max_per_degree": 1.0, "epsilon_spent_per_degree": 120.0, "generator": "cryptographic"}
    >>> print(format_gaze_channel(120, led, led, (1000.0, 1001.983)))  # doctest: +NORMALIZE_WHITESPACE
    gaze channel: 120 ticks received on streamdp.gaze.geo-uniform at 60 Hz (t 1000.0–1002.0 s):
    ε 60 per degree of gaze displacement (|dx| + |dy|) over any 60 consecutive ticks (1 s), 1 per degree
    per tick; protected: moving where the user looks by d degrees within any 1 s changes the chance
    of any output by at most a factor e^(60·d) (ε 6 for 0.1° held for 1 s), each further 1 s adding as
    much — small displacements at a few ticks are hidden, not where in the scene the user looks; ε 120
    per degree spent in all (a displacement held through every tick)
    """
    eps, w, rate = float(first["epsilon_w_per_degree"]), int(first["w"]), float(first["rate_hz"])
    window = f"{w / rate:.3g} s"
    return (
        f"gaze channel: {counted(ticks, 'tick')} received on {GAZE_TOPIC}{first['mechanism']} at {rate:g} Hz "
        f"(t {span[0]:.1f}–{span[1]:.1f} s): ε {eps:g} per degree of gaze displacement (|dx| + |dy|) over any "
        f"{w} consecutive ticks ({window}), {_per_tick(first)}; protected: moving where the user looks by d "
        f"degrees within any {window} changes the chance of any output by at most a factor e^({eps:g}·d) "
        f"(ε {eps * 0.1:.3g} for 0.1° held for {window}), each further {window} adding as much — small "
        "displacements at a few ticks are hidden, not where in the scene the user looks; "
        f"ε {float(last['epsilon_spent_per_degree']):.6g} per degree spent in all (a displacement held through "
        f"every tick){_noise(first)}"
    )


class GazeTally:
    """Counts the ticks of a gaze channel, received (:meth:`add`) or in-process (a
    :class:`~streamdp.sinks.ReleaseSink` that takes ticks only), for :meth:`summary`.

    Raises
    ------
    KeyError, TypeError, ValueError
        :meth:`add` is given something that is not a tick.
    """

    #: the session hands it the gaze channel's ticks (and it ignores the chunks)
    accepts_gaze = True

    def __init__(self) -> None:
        self.ticks = 0
        self.first: Mapping[str, Any] | None = None
        self.last: Mapping[str, Any] | None = None
        self.span = (math.nan, math.nan)

    def add(self, message: Mapping[str, Any]) -> None:
        check_tick(message)
        t = float(message["t"][0])
        if self.first is None:
            self.first, self.span = message["ledger"], (t, t)
        self.last, self.span = message["ledger"], (self.span[0], t)
        self.ticks += 1

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        if release.ledger.get("channel") == "gaze":
            self.add(release.to_message())

    def publish_status(self, status: SessionStatus) -> None:
        check_status(status)

    def close(self) -> None:
        """Nothing to release."""

    def summary(self) -> str:
        """:func:`format_gaze_channel` of what was counted, or a line saying that no tick came."""
        if self.first is None or self.last is None:
            return "gaze channel: no tick received"
        return format_gaze_channel(self.ticks, self.first, self.last, self.span)


def _short_guarantee(led: Mapping[str, Any]) -> str:
    """The channel's guarantee in one line: its ε_w, its window, and where the full text is."""
    w, rate = int(led["w"]), float(led["rate_hz"])
    return (
        f"metric privacy, ε_w {float(led['epsilon_w_per_degree']):g} per degree of gaze displacement over any "
        f"{counted(w, 'tick')} ({w / rate:g} s) (the guarantee in full: -v, or docs/gaze-channel.md)"
    )


class GazeSeconds:
    """Ticks in, lines out: one line per second of the source's clock, and the channel's
    guarantee once, when a tick first carries it: in one short line (ε_w per degree over ``w``
    ticks, and where the full text is), or in full with ``full_guarantee``.

    Parameters
    ----------
    full_guarantee : bool, optional
        Print the guarantee's whole text (``streamdp subscribe -v``), not its one-line summary.

    Examples
    --------
    >>> seconds = GazeSeconds()
    >>> led = {"channel": "gaze", "mechanism": "geo-uniform", "epsilon_w_per_degree": 60.0, "w": 60,
    ...        "rate_hz": 60.0, "epsilon_tick_per_degree": 1.0, "tick_index": 0, "guarantee": "Metric privacy …"}
    >>> tick = {"topic": "streamdp.gaze.geo-uniform", "names": ["x_deg", "y_deg", "x_norm", "y_norm"],
    ...         "t": [1000.0], "values": [[1.0, -2.5, 0.51, 0.45]], "ledger": led}
    >>> seconds.add(tick)  # doctest: +NORMALIZE_WHITESPACE
    ['gaze channel streamdp.gaze.geo-uniform, protected: metric privacy, ε_w 60 per degree of gaze displacement
      over any 60 ticks (1 s) (the guarantee in full: -v, or docs/gaze-channel.md)']
    >>> GazeSeconds(full_guarantee=True).add(tick)
    ['gaze channel streamdp.gaze.geo-uniform, protected: Metric privacy …']
    >>> seconds.add({**tick, "t": [1001.0], "ledger": {**led, "tick_index": 60}})
    ['gaze t 1000–1001 s: 1 tick, last at x 1.00°, y -2.50° (0.510, 0.450 of the scene), ε 1 per degree per tick']
    """

    def __init__(self, *, full_guarantee: bool = False) -> None:
        if not isinstance(full_guarantee, bool):
            raise TypeError(f"full_guarantee must be a bool, got {full_guarantee!r}")
        self._full = full_guarantee
        self._second: int | None = None
        self._eps: list[float] = []
        self._last: Mapping[str, Any] | None = None
        self._told = False

    def add(self, message: Mapping[str, Any]) -> list[str]:
        """The lines a tick closes (the previous second's, and the guarantee when first seen).

        Raises
        ------
        KeyError, TypeError, ValueError
            ``message`` is not a tick (:func:`check_tick`); nothing is counted.
        """
        check_tick(message)
        led = message["ledger"]
        second = math.floor(float(message["t"][0]))
        out = self.flush() if self._second is not None and second != self._second else []
        if not self._told and isinstance(led.get("guarantee"), str):
            self._told = True
            out.append(f"gaze channel {message.get('topic', GAZE_TOPIC + str(led['mechanism']))}, "
                       f"protected: {led['guarantee'] if self._full else _short_guarantee(led)}")  # fmt: skip
        self._second = second
        self._eps.append(float(led["epsilon_tick_per_degree"]))
        self._last = message
        return out

    def flush(self) -> list[str]:
        """The line of the second under way (none without ticks)."""
        if self._second is None or self._last is None:
            return []
        x, y, nx, ny = (float(v) for v in self._last["values"][0])
        low, high = min(self._eps), max(self._eps)
        eps = (
            f"ε {low:.3g} per degree per tick"
            if math.isclose(low, high)
            else f"ε {low:.3g}–{high:.3g} per degree per tick ({sum(self._eps):.3g} this second)"
        )
        line = (
            f"gaze t {self._second}–{self._second + 1} s: {counted(len(self._eps), 'tick')}, last at x {x:.2f}°, "
            f"y {y:.2f}° ({nx:.3f}, {ny:.3f} of the scene), {eps}"
        )
        self._second, self._eps, self._last = None, [], None
        return [line]
