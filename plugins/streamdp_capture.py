"""streamdp inside Pupil Capture: sanitized eye-movement features on the IPC backbone.

Install: ``streamdp install-plugin ~/pupil_capture_settings/plugins`` copies this file and the part
of streamdp it imports (one ``streamdp`` folder; numpy, scipy, pyzmq and msgpack are Capture's own)
after checking the target's Python and numpy, then enable "StreamDP" in Capture's plugin manager.

The plugin is a thin shell around a :class:`streamdp.session.Session`, the same core the relay,
the Neon relay and ``replay`` run: its settings become a :class:`streamdp.config.SessionConfig`,
and every frame it hands ``events["gaze"]`` and ``events["blinks"]`` to the session. It runs
after the blink detector (order 0.8) and before the recorder (0.9), at 0.85, and adds each
sanitized chunk to ``events["streamdp"]``; Capture publishes everything in ``events`` on its
backbone under the datum's ``topic`` (``streamdp.features.<mechanism>``) and its recorder saves it.

Note: Capture keeps exposing raw gaze on its own backbone. The sanitized topic protects data only
for apps that are given the sanitized topic alone (e.g. through ``streamdp relay`` on another
interface), never the backbone.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from plugin import Plugin  # Capture's plugin base class, importable inside Capture

#: what streamdp needs of the Python and the numpy Capture runs it in; ``streamdp install-plugin``
#: reads these two lines and refuses an older target
REQUIRED_PYTHON = (3, 10)
REQUIRED_NUMPY = (1, 24)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


def _check_host() -> None:
    """Refuse to load in a Capture whose numpy is older than streamdp needs: Capture logs the
    message as ``Failed to load 'streamdp_capture'. Reason: ...`` and goes on without the plugin.
    The numpy Capture has already imported is the one the plugin gets, whatever the folder holds."""
    import numpy

    if _version(numpy.__version__) < REQUIRED_NUMPY:
        raise ImportError(
            f"streamdp needs numpy >= {'.'.join(map(str, REQUIRED_NUMPY))}; this Capture runs numpy "
            f"{numpy.__version__}: run `streamdp relay` beside Capture instead"
        )


_check_host()

from streamdp.config import DEFAULT_EPSILON, SessionConfig  # noqa: E402 (after the host check)
from streamdp.privacy.mechanisms import MECHANISMS  # noqa: E402
from streamdp.privacy.release import PrivateRelease, check_sealed  # noqa: E402
from streamdp.session import Session  # noqa: E402
from streamdp.status import SessionStatus, StatusEvent, check_status  # noqa: E402

logger = logging.getLogger(__name__)

try:  # Capture with a window has pyglui; headless Capture (and tests) may not
    from pyglui import ui
except ImportError:  # pragma: no cover - depends on the host
    ui = None

#: notifications that mean Pupil time was set anew (the stand-in's end of stream). Capture itself
#: notifies nothing when the clock moves: Pupil Remote's ``T`` and Time_Sync write
#: ``g_pool.timebase.value`` directly, so the plugin watches that value instead
_CLOCK_CHANGES = ("world_process.adapting_clock",)


class CaptureEventsSink:
    """A release sink whose releases become Capture ``events`` datums.

    :meth:`publish` keeps each sealed release as its message with a ``timestamp`` added: Capture's
    recorder writes every datum of ``events`` with ``PLData_Writer``, which needs one (without it
    the world process crashes while recording). The timestamp is the chunk's last step time,
    already public in ``t``. :meth:`take` hands the pending datums to the plugin once per frame.

    Raises
    ------
    TypeError
        :meth:`publish` is given anything but a sealed release, or :meth:`publish_status`
        anything but a :class:`~streamdp.status.SessionStatus`.
    RuntimeError
        Something is published after :meth:`close`.
    """

    def __init__(self) -> None:
        self._pending: list[dict[str, Any]] = []
        #: the latest status; local to this process (counters are raw functions of the gaze)
        self.last_status: SessionStatus | None = None
        self.closed = False

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        self._check_open()
        datum = release.to_message()
        datum["timestamp"] = datum["t"][-1]
        self._pending.append(datum)

    def publish_status(self, status: SessionStatus) -> None:
        check_status(status)
        self._check_open()
        self.last_status = status

    def take(self) -> list[dict[str, Any]]:
        """The datums published since the last call, in release order."""
        out, self._pending = self._pending, []
        return out

    def close(self) -> None:
        self.closed = True
        self._pending = []

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this CaptureEventsSink is closed: nothing more is published")


def session_config(settings: dict[str, Any]) -> SessionConfig:
    """The plugin's settings as a :class:`SessionConfig` (``blinks_from_capture`` is its
    ``blinks="given"``; every other setting is the field of the same name).

    Raises
    ------
    TypeError, ValueError
        A setting that is unknown, of the wrong type or out of range, named with its value.
    """
    fields = {k: v for k, v in settings.items() if k != "blinks_from_capture"}
    fields["blinks"] = "given" if settings.get("blinks_from_capture") else "confidence"
    return SessionConfig(**fields).check()


class StreamDP(Plugin):
    """Differentially private eye-movement features, published as ``streamdp.features.*``.

    Settings are those of :class:`streamdp.config.SessionConfig` (the named ones below, and any
    other field by its name), with ``blinks_from_capture`` for ``blinks="given"``.
    """

    order = 0.85
    uniqueness = "by_class"
    icon_chr = "DP"

    def __init__(
        self,
        g_pool: Any,
        epsilon: float = DEFAULT_EPSILON,
        chunk_length: int = 64,
        mechanism: str = "dcfpa",
        k: int | None = None,
        unit: str = "chunk",
        budget: float | None = None,
        blinks_from_capture: bool = False,
        seed: int | None = None,
        **config: Any,
    ) -> None:
        super().__init__(g_pool)
        self._settings: dict[str, Any] = {
            "epsilon": epsilon,
            "chunk_length": chunk_length,
            "mechanism": mechanism,
            "k": k,
            "unit": unit,
            "budget": budget,
            "blinks_from_capture": blinks_from_capture,
            "seed": seed,
            **config,
        }
        self.error = ""
        self._generation = 0
        self.sink = CaptureEventsSink()
        self.session = self._session(session_config(self._settings))

    # ------------------------------------------------------------------ settings

    def _session(self, config: SessionConfig) -> Session:
        # a settings change never reuses a seeded noise stream: the same noise on two chunks
        # would reveal their difference exactly
        seed = None if config.seed is None else config.seed + self._generation
        return Session(config, sinks=[self.sink], seed=seed, source="Capture events")

    def update_settings(self, **changes: Any) -> bool:
        """Apply new settings; invalid ones are refused (shown in the menu) and the session goes
        on unchanged. A valid change starts a new session that continues the old one's budget:
        changing a setting never resets the ε spent. The feature windows start again."""
        new = {**self._settings, **changes}
        self._generation += 1
        try:
            session = self._session(session_config(new))
        except (TypeError, ValueError) as exc:
            self._generation -= 1
            self.error = str(exc)
            logger.error("streamdp: %s", exc)
            return False
        session.continue_budget(self.session)
        self.session, self._settings, self.error = session, new, ""
        return True

    def get_init_dict(self) -> dict[str, Any]:
        return dict(self._settings)

    # ------------------------------------------------------------------ Capture callbacks

    def recent_events(self, events: dict[str, Any]) -> None:
        if self._clock_was_set():  # `T` sets the clock without a notification: noticed here, every frame
            self.session.restart(StatusEvent.CAPTURE_RESTARTED)
        self.session.receive_datums(events.get("gaze", []), events.get("blinks", []))
        # the public schedule: a chunk whose deadline passed goes out with the first world frame
        # after it, whether or not gaze came (the frame's timestamp is Pupil time)
        now = getattr(events.get("frame"), "timestamp", None)
        due = self.session.next_deadline
        if isinstance(now, float) and due is not None and now > due:
            self.session.advance_to(now)
        out = self.sink.take()
        if out:
            events.setdefault("streamdp", []).extend(out)

    def on_notify(self, notification: dict[str, Any]) -> None:
        # a new clock means a new segment; what the restart releases goes out with the next frame
        if self._clock_was_set() or notification.get("subject") in _CLOCK_CHANGES:
            self.session.restart(StatusEvent.CAPTURE_RESTARTED)

    def _clock_was_set(self) -> bool:
        """Whether ``g_pool.timebase`` (Pupil time = monotonic clock - timebase) changed since the
        last look: what ``T`` and time sync do, forwards or backwards, without a notification."""
        timebase = getattr(getattr(self.g_pool, "timebase", None), "value", None)
        if not isinstance(timebase, (int, float)):
            return False
        seen, self._timebase_seen = getattr(self, "_timebase_seen", timebase), float(timebase)
        return bool(seen != timebase)

    @property
    def released(self) -> int:
        return self.session.counters.released

    @property
    def invalid(self) -> int:
        """Datums skipped: malformed or with a missing, wrongly typed or non-finite field."""
        s = self.session.status()
        return s.invalid + s.malformed

    @property
    def status(self) -> str:
        s = self.session.status()
        cfg = self.session.config
        if s.budget_exhausted:
            return f"budget spent: ε {s.epsilon_spent:g} of {cfg.budget:g} ({cfg.unit}); nothing more is released"
        return (
            f"{s.released} chunks released, ε spent {s.epsilon_spent:g} "
            f"({cfg.mechanism}, ε {self.epsilon:g} per chunk)"
            + (f"; {self.invalid} datums skipped" if self.invalid else "")
            + (f"; error: {self.error}" if self.error else "")
        )

    # ------------------------------------------------------------------ menu

    def init_ui(self) -> None:
        self.add_menu()
        self.menu.label = "StreamDP"
        if ui is None:
            return
        self.menu.append(ui.Info_Text("Sanitized eye-movement features on streamdp.features.*"))
        self.menu.append(ui.Slider("epsilon", self, min=1.0, max=500.0, label="ε per chunk (all features)"))
        self.menu.append(ui.Selector("chunk_length", self, selection=[32, 64, 128], label="Chunk length"))
        self.menu.append(ui.Selector("mechanism", self, selection=list(MECHANISMS), label="Mechanism"))
        self.menu.append(ui.Text_Input("status", self, label="Status", setter=lambda _: None))

    def deinit_ui(self) -> None:
        self.remove_menu()

    def cleanup(self) -> None:
        # nothing partial is ever released: the chunk in progress is dropped with the plugin
        logger.info("streamdp: %s", self.status)
        self.sink.close()

    # properties the menu edits
    @property
    def epsilon(self) -> float:
        return float(self._settings["epsilon"])

    @epsilon.setter
    def epsilon(self, value: float) -> None:
        self.update_settings(epsilon=value)

    @property
    def chunk_length(self) -> int:
        return int(self._settings["chunk_length"])

    @chunk_length.setter
    def chunk_length(self, value: int) -> None:
        self.update_settings(chunk_length=value)

    @property
    def mechanism(self) -> str:
        return str(self._settings["mechanism"])

    @mechanism.setter
    def mechanism(self, value: str) -> None:
        self.update_settings(mechanism=value)
