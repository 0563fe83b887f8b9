"""streamdp inside Pupil Capture: sanitized eye-movement features on the plugin's own endpoint.

Install: ``streamdp install-plugin ~/pupil_capture_settings/plugins`` copies this file and the part
of streamdp it imports (one ``streamdp`` folder; numpy, scipy, pyzmq and msgpack are Capture's own)
after checking the target's Python and numpy, then enable "StreamDP" in Capture's plugin manager.

The plugin is a thin shell around a :class:`streamdp.session.Session`, the same core the relay,
the Neon relay and ``replay`` run: its settings become a :class:`streamdp.config.SessionConfig`,
and every frame it hands ``events["gaze"]`` and ``events["blinks"]`` to the session. It runs
after the blink detector (order 0.8) and before the recorder (0.9), at 0.85.

Each sanitized chunk goes to two places:

- the plugin's own endpoint (:mod:`streamdp.capture.endpoint`): the relay's publisher,
  with its options and defaults (``bind`` tcp://127.0.0.1:5570, CURVE beyond loopback, the
  owner's status socket on loopback only, seeded noise refused). Apps subscribe there;
- ``events["streamdp"]``: Capture publishes everything in ``events`` on its IPC backbone under
  the datum's ``topic`` (``streamdp.features.<mechanism>``) and its recorder saves it with the
  recording. That backbone serves raw gaze too: apps must not be pointed at it.

The plugin also says, in its menu, whether raw gaze is reachable beyond this machine (Capture's
Pupil Remote and backbone), checked at start and whenever Pupil Remote restarts, and offers to
set Pupil Remote to 127.0.0.1 through Capture's own Network API plugin.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any

from plugin import Plugin  # Capture's plugin base class, importable inside Capture

#: what streamdp needs of the Python and the numpy Capture runs it in; ``streamdp install-plugin``
#: reads these two lines and refuses an older target
REQUIRED_PYTHON = (3, 10)
REQUIRED_NUMPY = (1, 23)


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

from streamdp.capture.check import check_capture  # noqa: E402 (after the host check)
from streamdp.capture.endpoint import EndpointSettings, PluginEndpoint, open_endpoint, reopen_endpoint  # noqa: E402
from streamdp.capture.events import ENDPOINT_SETTINGS, CaptureEventsSink, session_config  # noqa: E402
from streamdp.capture.watch import CLOCK_JUMP_THRESHOLD, clock_jumped, network_api_state, pupil_remote_to_loopback  # noqa: E402
from streamdp.config import DEFAULT_EPSILON, SessionConfig  # noqa: E402
from streamdp.live_pacing import FeedPacing  # noqa: E402
from streamdp.network.doctor import EXIT_RAW_REACHABLE  # noqa: E402
from streamdp.privacy.mechanisms import MECHANISMS  # noqa: E402
from streamdp.session import Session  # noqa: E402
from streamdp.status import StatusEvent  # noqa: E402

__all__ = ["CaptureEventsSink", "StreamDP", "session_config"]

logger = logging.getLogger(__name__)

try:  # Capture with a window has pyglui; headless Capture may not
    from pyglui import ui
except ImportError:  # pragma: no cover - depends on the host
    ui = None
try:  # the verdict's colour; without it the verdict is still shown
    from pyglui.cygl.utils import RGBA
except ImportError:  # pragma: no cover - depends on the host
    RGBA = None

#: the verdict's colour in the menu: red unless the check found the setup private
_GREEN = RGBA(0.55, 0.9, 0.55, 1.0) if RGBA is not None else None
_RED = RGBA(1.0, 0.35, 0.35, 1.0) if RGBA is not None else None
_NOT_SEEN = object()
ENDPOINT_DEFAULTS = dataclasses.asdict(EndpointSettings())

MENU_HELP = (
    "Apps subscribe to the endpoint below (streamdp.features.*). The same chunks also go into "
    "Capture's events, recorded with the recording; Capture's backbone carries raw gaze too: "
    "never point an app there."
)


class StreamDP(Plugin):
    """Differentially private eye-movement features, served on the plugin's endpoint and put into
    ``events`` as ``streamdp.features.*``.

    Settings are those of :class:`streamdp.config.SessionConfig` (the named ones below, and any
    other field by its name), with ``blinks_from_capture`` for ``blinks="given"``, and those of
    :class:`streamdp.capture.endpoint.EndpointSettings` (``bind``, ``curve_secret``, ``curve_clients``,
    ``insecure``, ``status_bind``, ``status_interval``, ``publish_reproducible_noise_not_private``,
    ``pupil_remote``, ``lsl`` for LSL streams too; ``bind=None`` serves no endpoint). All are saved
    with Capture's session (:meth:`get_init_dict`).
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
            **ENDPOINT_DEFAULTS,  # the relay's defaults: bind tcp://127.0.0.1:5570, status on :5571
            **config,
        }
        self.error = ""
        self._generation = 0
        self.sink = CaptureEventsSink()
        config_ = session_config(self._settings)
        #: the plugin's own sanitized endpoint; None when off or when it could not be opened
        #: (:attr:`endpoint_error` says why: Capture goes on, the menu shows it)
        self.endpoint: PluginEndpoint | None = None
        self.endpoint_error = ""
        self._open_endpoint(self._settings)
        self.session = self._session(config_)
        self._timebase_seen: float | None = None
        self._remote_seen: object = _NOT_SEEN
        self._next_status: float | None = None
        #: the privacy check's verdict in one line, and whether it found the setup private
        #: (None: could not tell)
        self.privacy = "not checked yet"
        self.private: bool | None = None
        self._verdict_text: Any = None

    # ------------------------------------------------------------------ settings

    def _session(self, config: SessionConfig) -> Session:
        # a settings change never reuses a seeded noise stream: the same noise on two chunks
        # would reveal their difference exactly
        seed = None if config.seed is None else config.seed + self._generation
        sinks = [self.sink, *(self.endpoint.sinks if self.endpoint is not None else [])]
        config = config if self.endpoint is None else self.endpoint.session_config(config)
        # the stages run every few steps, not with every world frame (this changes when, not what)
        session = Session(config, sinks=sinks, seed=seed, source="Capture events", pacing=FeedPacing())
        return session if self.endpoint is None else self.endpoint.attach(session)

    def _open_endpoint(self, settings: dict[str, Any]) -> None:
        # never raises: a port in use or a refused address is shown in the menu, Capture goes on
        self.endpoint, self.endpoint_error = open_endpoint(settings, context=getattr(self.g_pool, "zmq_ctx", None))
        if self.endpoint_error:
            logger.error("streamdp: endpoint closed: %s", self.endpoint_error)

    def update_settings(self, **changes: Any) -> bool:
        """Apply new settings; invalid ones are refused (shown in the menu) and the session and
        the endpoint go on unchanged. A valid change starts a new session that continues the old
        one's budget: changing a setting never resets the ε spent. The feature windows start
        again. A change of the endpoint's settings (or of the seed) reopens the endpoint."""
        new = {**self._settings, **changes}
        try:
            config = session_config(new)
            endpoint_settings, _ = EndpointSettings.split(new)
            if endpoint_settings.bind is not None:  # all but a port in use, with nothing closed
                PluginEndpoint.check(endpoint_settings, seed=new.get("seed"))
        except (TypeError, ValueError) as exc:  # InputError is a ValueError
            return self._refuse(exc)
        if any(new.get(k) != self._settings.get(k) for k in (*ENDPOINT_SETTINGS, "seed")):
            context = getattr(self.g_pool, "zmq_ctx", None)
            endpoint, problem = reopen_endpoint(self.endpoint, self._settings, new, context=context)
            if problem:
                if endpoint is not self.endpoint:  # reopened on the same ports: the session's sinks follow
                    self.endpoint, self.endpoint_error = endpoint, "" if endpoint else problem
                    self.session.sinks = [self.sink, *(endpoint.sinks if endpoint is not None else [])]
                return self._refuse(problem)
            self.endpoint, self.endpoint_error = endpoint, ""
        self._generation += 1
        session = self._session(config)
        session.continue_budget(self.session)
        self.session, self._settings, self.error = session, new, ""
        self._remote_seen = _NOT_SEEN  # the endpoint or the seed may have changed the verdict: check again
        return True

    def _refuse(self, problem: object) -> bool:
        self.error = str(problem)
        logger.error("streamdp: %s", problem)
        return False

    def get_init_dict(self) -> dict[str, Any]:
        return dict(self._settings)

    # ------------------------------------------------------------------ Capture callbacks

    def recent_events(self, events: dict[str, Any]) -> None:
        self._follow_clock()  # `T` and Time Sync set the clock without a notification: noticed here
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
        if isinstance(now, float):
            self._status_due(now)
        self._watch_pupil_remote()

    def on_notify(self, notification: dict[str, Any]) -> None:
        # no subject means a new clock (see streamdp.capture.watch); any notification is
        # a chance to look, and what the restart releases goes out with the next frame
        self._follow_clock()

    def _follow_clock(self) -> None:
        """A jump of Pupil time starts a new segment and is one line on the status socket, as the relay says it."""
        if self._clock_was_set():
            self.session.restart(StatusEvent.CAPTURE_RESTARTED)
            if self.endpoint is not None:
                self.session.publish_status(StatusEvent.CLOCK_JUMPED, self.endpoint.subscribers())

    def _clock_was_set(self) -> bool:
        """Whether Pupil time (monotonic clock - ``g_pool.timebase``) jumped since the last look
        by more than the reorder window: ``T`` or Time Sync's jump, forwards or backwards. Time
        Sync's slews (≤ 0.5 ms a step) continue the session and its public grid; a jump is logged."""
        timebase = getattr(getattr(self.g_pool, "timebase", None), "value", None)
        if not isinstance(timebase, (int, float)):
            return False
        seen, self._timebase_seen = self._timebase_seen, float(timebase)
        if seen is None or not clock_jumped(seen, float(timebase), threshold=CLOCK_JUMP_THRESHOLD):
            return False
        logger.info("streamdp: Pupil time jumped by %+.3f s (T or Time Sync): new segment", seen - timebase)
        return True

    def _status_due(self, now: float) -> None:
        """The owner's status every ``status_interval`` seconds of Pupil time (on the loopback
        status socket; a clock set backwards starts the interval again)."""
        if self.endpoint is None:
            return
        if self._next_status is None or now >= self._next_status or now < self._next_status - 2 * self._interval:
            self.session.publish_status(subscribers=self.endpoint.subscribers())
            self._next_status = now + self._interval

    @property
    def _interval(self) -> float:
        return float(self._settings["status_interval"])

    # ------------------------------------------------------------------ privacy of the setup

    def _watch_pupil_remote(self) -> None:
        """Check the setup at the first frame and whenever Capture's Network API plugin was
        started, replaced, stopped or rebound from its menu (Capture notifies none of it)."""
        state = network_api_state(getattr(self.g_pool, "plugins", None) or ())
        if state != self._remote_seen:
            self._remote_seen = state
            self.check_privacy()

    def check_privacy(self) -> None:
        """Run the privacy check now; its one-line verdict goes to :attr:`privacy` and the menu
        (red unless private)."""
        try:
            report = check_capture(self.g_pool, self.endpoint, self.session.config)
        except Exception as exc:  # the check must never stop Capture's world loop
            self.private, self.privacy = None, f"could not check: {exc}"
            logger.warning("streamdp: %s", self.privacy)
        else:
            self.private = True if report.private else (False if report.exit_code == EXIT_RAW_REACHABLE else None)
            self.privacy = report.verdict
            for line in report.lines():  # the findings and the firewall commands, for Capture's log
                (logger.info if self.private else logger.warning)("streamdp: %s", line)
        if self._verdict_text is not None:
            self._verdict_text.text = self.privacy
            if RGBA is not None:
                self._verdict_text.text_color = _GREEN if self.private else _RED

    def restrict_pupil_remote(self) -> None:
        """Have Capture restart Pupil Remote on 127.0.0.1 only, through its Network API plugin
        (a ``start_plugin`` notification; the backbone's own ports are Capture's to bind)."""
        self.notify_all(pupil_remote_to_loopback(getattr(self.g_pool, "plugins", None) or ()))

    # ------------------------------------------------------------------ what the menu shows

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

    @property
    def endpoint_text(self) -> str:
        """The endpoint apps subscribe to, with CURVE on or off; or why there is none."""
        if self.endpoint is not None:
            return self.endpoint.describe()
        if self.endpoint_error:
            return f"closed: {self.endpoint_error}"
        return "off (bind is empty): chunks go into Capture's events only"

    @property
    def subscribers(self) -> int:
        """Live subscriptions on the endpoint (one per subscriber and topic prefix)."""
        return 0 if self.endpoint is None else self.endpoint.subscribers()

    def init_ui(self) -> None:
        self.add_menu()
        self.menu.label = "StreamDP"
        if ui is None:
            return
        self.menu.append(ui.Info_Text(MENU_HELP))
        self.menu.append(ui.Text_Input("endpoint_text", self, label="Endpoint", setter=lambda _: None))
        self.menu.append(ui.Text_Input("bind", self, label="Bind (empty: none)"))
        self.menu.append(ui.Text_Input("subscribers", self, label="Subscribers", setter=lambda _: None))
        self._verdict_text = ui.Info_Text(self.privacy)
        if self.private is not None and RGBA is not None:
            self._verdict_text.text_color = _GREEN if self.private else _RED
        self.menu.append(self._verdict_text)
        self.menu.append(ui.Button("Pupil Remote on 127.0.0.1 only", self.restrict_pupil_remote))
        self.menu.append(ui.Slider("epsilon", self, min=1.0, max=500.0, label="ε per chunk (all features)"))
        lengths = sorted({16, 32, 64, 128, 256, int(self._settings["chunk_length"])})  # pyglui: a value outside crashes
        self.menu.append(ui.Selector("chunk_length", self, selection=lengths, label="Chunk length"))
        self.menu.append(ui.Selector("mechanism", self, selection=list(MECHANISMS), label="Mechanism"))
        self.menu.append(ui.Text_Input("status", self, label="Status", setter=lambda _: None))

    def deinit_ui(self) -> None:
        self._verdict_text = None
        self.remove_menu()

    def cleanup(self) -> None:
        # nothing partial is ever released: the chunk in progress is dropped with the plugin;
        # the endpoint's port is given back (Capture calls this on removal and at shutdown)
        logger.info("streamdp: %s", self.status)
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None
        self.sink.close()

    # settings the menu edits: read from the settings, written through update_settings (checked there)
    epsilon = property(lambda self: float(self._settings["epsilon"]), lambda self, v: self.update_settings(epsilon=v))
    chunk_length = property(
        lambda self: int(self._settings["chunk_length"]), lambda self, v: self.update_settings(chunk_length=v)
    )
    mechanism = property(
        lambda self: str(self._settings["mechanism"]), lambda self, v: self.update_settings(mechanism=v)
    )

    @property
    def bind(self) -> str:
        return self._settings["bind"] or ""

    @bind.setter
    def bind(self, value: str) -> None:
        self.update_settings(bind=value.strip() or None)
