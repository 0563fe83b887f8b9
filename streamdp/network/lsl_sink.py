"""A Lab Streaming Layer outlet for sanitized releases: what LabRecorder records beside EEG and markers.

:class:`LslOutlet` is a :class:`~streamdp.sinks.ReleaseSink` (the ``lsl`` extra: ``pip install
'streamdp[lsl]'``; pylsl's wheels bundle liblsl). Like the ZeroMQ
:class:`~streamdp.network.sink.ReleasePublisher`, it takes only sealed releases
(:func:`~streamdp.privacy.release.check_sealed`) and sends their public or noised fields only:
raw gaze, unsanitized features, the clip rate and the status counters have no way onto it.

One LSL stream per channel, made when the channel's first release arrives (its description holds
that release's ledger, which does not exist before):

- ``<name>-features``, type ``Features``: one channel per feature name of
  :data:`~streamdp.schema.FEATURE_NAMES`, one sample per released row (step), irregular rate;
- ``<name>-gaze``, type ``Gaze``: channels ``x_deg``, ``y_deg``, ``x_norm``, ``y_norm``, one sample
  per tick of the real-time gaze channel, nominal rate the ledger's ``rate_hz``.

Each stream's XML description follows LabRecorder's conventions (``desc/channels/channel/label,
unit, type``) and adds ``desc/streamdp``: the schema version, the topic, the clock mapping, the
guarantee in words and ``ledger``, the public ledger of the stream's first release (per-release
entries such as ``chunk_index`` or ``epsilon_spent`` change afterwards: the ZeroMQ topic carries
each release's).

Timestamps are on the LSL clock (``pylsl.local_clock()``), mapped from the source's clock (Pupil
time): ``lsl = t + offset``, the offset measured once, at the first release of either channel, as
``local_clock() − t`` of that release's last step (the newest instant it describes), so both
streams share one mapping. A live relay releases a chunk a little after its last step, so the
streams lag the true LSL time of the gaze by that first release's latency (constant, not drift);
when Pupil time already is the LSL clock (Capture's LSL time sync), pass ``clock_offset=0.0``.
``streamdp replay --lsl`` (:mod:`streamdp.offline.lsl_playback`) maps a recording's own timestamps
the same way, the offset taken when its streams are made (:meth:`LslOutlet.announce`, before an
inlet can connect), and plays the releases at the recording's pace.

LSL has no authentication or encryption: any host of the local network can resolve and read the
streams. Only sanitized releases reach them, so what they expose is what the ledger's guarantee
covers; noise from a seeded generator (reproducible, so removable) is refused as on the ZeroMQ
socket, unless ``publish_reproducible_noise_not_private`` is set for tests and demos.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..privacy.release import PrivateRelease, check_sealed
from ..status import SessionStatus, check_status
from .gaze_client import TICK_NAMES
from .lsl_units import GAZE_UNITS, feature_units
from .sink import check_private_noise

__all__ = ["GAZE_UNITS", "LslOutlet", "feature_units", "load_pylsl"]

log = logging.getLogger(__name__)

#: the LSL stream type of each channel (``ledger["channel"]``; a chunk's ledger names none)
_STREAM_TYPES = {"features": "Features", "gaze": "Gaze"}
#: the channel type LabRecorder shows beside each label
_CHANNEL_TYPES = {"features": "Feature", "gaze": "Gaze"}


def load_pylsl() -> Any:
    """pylsl, imported now, with a one-line error without the extra; its import warnings logged."""
    # pylsl warns at import when the liblsl it finds is older than it wants: worth a log line,
    # not an exception in the caller (the test suite turns warnings into errors)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            import pylsl
        except ImportError:
            raise ImportError("the LSL outlet needs the optional extra: pip install 'streamdp[lsl]'") from None
        except RuntimeError as exc:  # pylsl raises RuntimeError when it finds no liblsl at all
            raise ImportError(f"the LSL outlet cannot load liblsl: {exc}") from None
    for warning in caught:
        log.warning("pylsl: %s", warning.message)
    return pylsl


def _text(value: Any) -> str:
    """An XML text node for one ledger value: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class LslOutlet:
    """A :class:`~streamdp.sinks.ReleaseSink` publishing sanitized releases as LSL streams (one per
    channel: ``<name>-features``, type ``Features``; ``<name>-gaze``, type ``Gaze``).

    Parameters
    ----------
    name : str
        The streams' name prefix.
    source_id : str, optional
        A stable identifier (LSL uses it to let a recorder resume a stream after the relay
        restarts); each stream's is ``<source_id>/<channel>/<mechanism>``. Default: the name.
    clock_offset : float, optional
        Seconds added to the source's timestamps to put them on the LSL clock. Default: measured
        at the first release (``local_clock() − t[-1]``); 0.0 when Pupil time is the LSL clock.
    position_unit, diameter_unit : str
        The features' units (see :func:`feature_units`): the session's event ``units`` and pupil
        ``diameter_unit``.
    max_buffered : int
        What an outlet keeps for a slow inlet (LSL's ``max_buffered``: seconds, or hundreds of
        samples at an irregular rate); beyond it the oldest samples are dropped.
    publish_reproducible_noise_not_private : bool
        Accept releases whose noise is seeded (tests and demos only).

    Raises
    ------
    ImportError
        pylsl is not installed (the ``lsl`` extra) or cannot load liblsl.
    TypeError, ValueError
        An argument has the wrong type or value.

    Examples
    --------
    Arguments are checked before pylsl is loaded:

    >>> LslOutlet("")
    Traceback (most recent call last):
    ...
    ValueError: name must be a non-empty string, got ''

    With the ``lsl`` extra, the session hands it releases and gaze ticks like any sink:

    >>> outlet = LslOutlet("streamdp", publish_reproducible_noise_not_private=True)  # doctest: +SKIP
    >>> session = Session(SessionConfig(gaze_channel=True), sinks=[outlet])  # doctest: +SKIP
    >>> outlet.clock_offset is None  # measured at the first release  # doctest: +SKIP
    True
    """

    #: the gaze channel's ticks come here too, on the ``Gaze`` stream
    accepts_gaze = True

    def __init__(
        self,
        name: str = "streamdp",
        *,
        source_id: str | None = None,
        clock_offset: float | None = None,
        position_unit: str = "deg",
        diameter_unit: str = "mm",
        max_buffered: int = 360,
        publish_reproducible_noise_not_private: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if source_id is not None and (not isinstance(source_id, str) or not source_id):
            raise ValueError(f"source_id must be a non-empty string or None, got {source_id!r}")
        if clock_offset is not None and (
            isinstance(clock_offset, bool) or not isinstance(clock_offset, (int, float)) or clock_offset != clock_offset
        ):
            raise ValueError(f"clock_offset must be a number of seconds or None, got {clock_offset!r}")
        if isinstance(max_buffered, bool) or not isinstance(max_buffered, int) or max_buffered < 1:
            raise ValueError(f"max_buffered must be an int ≥ 1, got {max_buffered!r}")
        if not isinstance(publish_reproducible_noise_not_private, bool):
            raise TypeError(
                f"publish_reproducible_noise_not_private must be a bool, got {publish_reproducible_noise_not_private!r}"
            )
        self._units = {"features": feature_units(position_unit, diameter_unit), "gaze": dict(GAZE_UNITS)}
        self._lsl = load_pylsl()
        self.name = name
        self.source_id = source_id or name
        #: seconds from the source's clock to the LSL clock; None until the first release
        self.clock_offset: float | None = None if clock_offset is None else float(clock_offset)
        self.max_buffered = max_buffered
        self.publish_reproducible_noise_not_private = publish_reproducible_noise_not_private
        self._outlets: dict[str, Any] = {}
        self._names: dict[str, tuple[str, ...]] = {}
        self.closed = False

    @property
    def stream_names(self) -> dict[str, str]:
        """The streams made so far: channel (``features``, ``gaze``) → LSL stream name."""
        return {channel: self._stream_name(channel) for channel in self._outlets}

    def _stream_name(self, channel: str) -> str:
        return f"{self.name}-{channel}"

    def publish(self, release: PrivateRelease) -> None:
        """Push one sealed release: a sample per row, timestamped ``t + clock_offset``.

        Raises
        ------
        TypeError
            ``release`` is not a genuine, unmodified :class:`~streamdp.privacy.release.PrivateRelease`.
        ValueError
            Its noise is reproducible, not private, and ``publish_reproducible_noise_not_private``
            was not set; or its names differ from its stream's (the channels of a stream are fixed
            when it is made).
        RuntimeError
            The outlet is closed.
        """
        if len(check_sealed(release).t) == 0:
            check_private_noise(release, self.publish_reproducible_noise_not_private)
            return
        outlet = self._outlets[self._ready(release)]
        assert self.clock_offset is not None  # measured by _ready
        stamps = (release.t + self.clock_offset).tolist()
        rows = release.values.tolist()
        last = len(rows) - 1
        for i, (row, stamp) in enumerate(zip(rows, stamps, strict=True)):
            # one sample per step with its own timestamp (push_chunk takes a list of stamps only
            # in recent pylsl); the chunk goes on the wire at its last row
            outlet.push_sample(row, stamp, i == last)

    def announce(self, release: PrivateRelease) -> str:
        """Make the stream of ``release``'s channel now, described by its ledger, without pushing
        the release (an inlet connects only to a stream that exists, and receives only what is
        pushed after it connected); the offset is measured here if it was not yet. Returns the
        stream's name.

        Raises
        ------
        TypeError, ValueError, RuntimeError
            As :meth:`publish`; ValueError too for a release without rows (no time to map).
        """
        if len(check_sealed(release).t) == 0:
            raise ValueError("a release without rows describes no stream")
        return self._stream_name(self._ready(release))

    def _ready(self, release: PrivateRelease) -> str:
        """The channel of a sealed release with rows, its stream made and the offset measured."""
        check_private_noise(release, self.publish_reproducible_noise_not_private)
        if self.closed:
            raise RuntimeError("this LslOutlet is closed: nothing more is published")
        channel = "gaze" if release.ledger.get("channel") == "gaze" else "features"
        if self.clock_offset is None:
            # once, for both streams: their samples stay comparable to each other
            self.clock_offset = self.local_clock() - float(release.t[-1])
        if channel not in self._outlets:
            self._outlets[channel] = self._make_outlet(channel, release)
        elif release.names != self._names[channel]:
            raise ValueError(
                f"this release's names differ from the {self._stream_name(channel)} stream's channels: "
                "a stream's channels are fixed when it is made"
            )
        return channel

    def local_clock(self) -> float:
        """Now on the LSL clock (s)."""
        return float(self._lsl.local_clock())

    def _make_outlet(self, channel: str, release: PrivateRelease) -> Any:
        lsl = self._lsl
        names = release.names
        units = self._units[channel]
        unknown = [n for n in names if n not in units]
        if unknown:
            raise ValueError(f"release names channels this outlet has no unit for: {unknown[:5]}")
        if channel == "gaze" and sorted(names) != sorted(TICK_NAMES):
            raise ValueError(f"a gaze tick names {list(names)}, the channel's are {list(TICK_NAMES)}")
        message = release.to_message()  # the public fields only: what the ZeroMQ topic carries
        ledger: Mapping[str, Any] = message["ledger"]
        rate = ledger.get("rate_hz") if channel == "gaze" else None
        nominal = float(rate) if isinstance(rate, (int, float)) and rate > 0 else lsl.IRREGULAR_RATE
        mechanism = str(ledger["mechanism"])
        info = lsl.StreamInfo(
            self._stream_name(channel),
            _STREAM_TYPES[channel],
            len(names),
            nominal,
            "double64",  # the released float64 values, bit for bit
            f"{self.source_id}/{channel}/{mechanism}",
        )
        desc = info.desc()
        desc.append_child_value("manufacturer", "streamdp")
        channels = desc.append_child("channels")
        for label in names:
            ch = channels.append_child("channel")
            ch.append_child_value("label", label)
            ch.append_child_value("unit", units[label])
            ch.append_child_value("type", _CHANNEL_TYPES[channel])
        self._describe(desc.append_child("streamdp"), message, ledger)
        self._names[channel] = tuple(names)
        log.info(
            "LSL stream %s (%s, %d channels) is up", self._stream_name(channel), _STREAM_TYPES[channel], len(names)
        )
        return lsl.StreamOutlet(info, 0, self.max_buffered)

    def _describe(self, node: Any, message: Mapping[str, Any], ledger: Mapping[str, Any]) -> None:
        node.append_child_value("schema_version", str(message["schema_version"]))
        node.append_child_value("topic", str(message["topic"]))
        clock = node.append_child("clock")
        clock.append_child_value("offset", repr(self.clock_offset))
        clock.append_child_value(
            "mapping",
            "LSL timestamp = source (Pupil) time + offset; offset = local_clock() - t of the last step of the "
            "first release, measured once (or given)",
        )
        for key in ("guarantee", "raw_gaze_guarantee"):
            if key in ledger:
                node.append_child_value(key, _text(ledger[key]))
        entries = node.append_child("ledger")
        entries.append_child_value(
            "_note", "the public ledger of this stream's first release; per-release entries change afterwards"
        )
        for key, value in ledger.items():
            entries.append_child_value(key, _text(value))

    def publish_status(self, status: SessionStatus) -> None:
        """Check ``status`` and send nothing: its counters are raw functions of the gaze, for the
        owner's :class:`~streamdp.network.sink.StatusPublisher` only.

        Raises
        ------
        TypeError
            ``status`` is not a :class:`~streamdp.status.SessionStatus`.
        """
        check_status(status)

    def wait_for_consumers(self, timeout: float = 5.0, channels: Sequence[str] = ("features",)) -> bool:
        """Whether every stream of ``channels`` has an inlet within ``timeout`` seconds (False when a
        stream is not made yet).

        Raises
        ------
        ValueError
            ``timeout`` is not a number ≥ 0.
        """
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise ValueError(f"timeout must be a number of seconds ≥ 0, got {timeout!r}")
        outlets = [self._outlets.get(c) for c in channels]
        return all(o is not None and o.wait_for_consumers(float(timeout)) for o in outlets)

    def has_consumers(self) -> bool:
        """Whether any stream made so far has an inlet connected."""
        return any(o.have_consumers() for o in self._outlets.values())

    def close(self) -> None:
        """Withdraw the streams (inlets see them end); nothing is published afterwards."""
        self.closed = True
        # pylsl destroys an outlet when its last reference goes
        self._outlets.clear()
