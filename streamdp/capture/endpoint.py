"""The Capture plugin's own sanitized endpoint: the relay's sinks, configured by plugin settings.

Inside Capture, the plugin's chunks also go into ``events`` and so onto Capture's IPC backbone,
the socket that serves raw gaze too. Apps get the sanitized stream from this endpoint instead: a
:class:`~streamdp.network.sink.ReleasePublisher` (loopback by default; any other interface only
with CURVE or ``insecure``; seeded noise refused) and the owner's
:class:`~streamdp.network.sink.StatusPublisher` (loopback or IPC only), with the same options and
defaults as ``streamdp relay`` (``--bind``, ``--curve-secret``, ``--curve-clients``,
``--insecure``, ``--status-bind``, ``--status-interval``,
``--publish-reproducible-noise-not-private``). With ``pupil_remote`` set it also serves streamdp's
own Pupil Remote (:mod:`streamdp.network.pupil_remote`, the relay's ``--pupil-remote``): apps
written for Capture's Network API connect there and get sanitized gaze datums only, their
requests forwarded to Capture's own Pupil Remote (``capture_remote``) by the notification policy.
With ``lsl`` (the relay's ``--lsl``) the same releases also go onto Lab Streaming Layer streams
``streamdp-features`` (and ``streamdp-gaze`` with the gaze channel) for LabRecorder
(:class:`~streamdp.network.lsl_sink.LslOutlet`; pylsl must be importable inside Capture: copy it
into the plugins folder, as Pupil's own LSL relay asks).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import zmq

from ..checks import check_seconds
from ..config import SessionConfig
from ..errors import InputError
from ..network.curve import CurveServer
from ..network.endpoint_checks import _is_loopback_address, check_release_endpoint, check_status_endpoint
from ..network.pupil_remote import StreamdpPupilRemote
from ..network.sink import DEFAULT_STATUS_ENDPOINT, ReleasePublisher, StatusPublisher
from ..session import Session

__all__ = ["DEFAULT_BIND", "EndpointSettings", "PluginEndpoint", "open_endpoint", "reopen_endpoint"]

#: ``streamdp relay --bind``'s default
DEFAULT_BIND = "tcp://127.0.0.1:5570"
_SCHEMES = ("tcp://", "ipc://")
#: seconds :func:`open_endpoint` waits for a port in use to be given back
PORT_RELEASE_WAIT = 0.5
#: Capture's own Pupil Remote, which streamdp's forwards to (``streamdp relay --remote``'s default)
DEFAULT_CAPTURE_REMOTE = "tcp://127.0.0.1:50020"
_EXAMPLES = {
    "bind": DEFAULT_BIND,
    "status_bind": DEFAULT_STATUS_ENDPOINT,
    "pupil_remote": "tcp://*:50020",
    "capture_remote": DEFAULT_CAPTURE_REMOTE,
}


def _optional_str(name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, got {value!r}")
    if value == "":
        raise ValueError(f"{name} must not be empty (None: {'no endpoint' if name == 'bind' else 'none'})")


def _bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class EndpointSettings:
    """Where and how the plugin serves its sanitized chunks (``bind=None``: it serves none; its
    chunks then only go into Capture's ``events``).

    Raises
    ------
    TypeError
        A field of the wrong type, named with its value.
    ValueError
        An empty address, only one of the two CURVE settings, or a status interval ≤ 0.

    Examples
    --------
    >>> EndpointSettings().bind
    'tcp://127.0.0.1:5570'
    >>> EndpointSettings(curve_secret="server.key_secret")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: CURVE needs both curve_secret and curve_clients, got curve_secret='server.key_secret', ...
    """

    bind: str | None = DEFAULT_BIND
    curve_secret: str | None = None
    curve_clients: str | None = None
    insecure: bool = False
    status_bind: str = DEFAULT_STATUS_ENDPOINT
    status_interval: float = 10.0
    publish_reproducible_noise_not_private: bool = False
    #: streamdp's own Pupil Remote for apps (None: none), Capture's own, and the gaze datums' kind
    pupil_remote: str | None = None
    capture_remote: str = DEFAULT_CAPTURE_REMOTE
    pupil_remote_gaze: str = "3d"
    #: the sanitized releases on LSL streams too, beside the endpoint (it needs ``bind``): True for
    #: streams ``streamdp-features``/``-gaze``, a name for ``<name>-features``/``-gaze``
    lsl: bool | str = False

    def __post_init__(self) -> None:
        for name in ("bind", "curve_secret", "curve_clients", "pupil_remote"):
            _optional_str(name, getattr(self, name))
        for name in ("status_bind", "capture_remote"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {getattr(self, name)!r}")
        if self.pupil_remote_gaze not in ("3d", "2d"):
            raise ValueError(f"pupil_remote_gaze must be '3d' or '2d', got {self.pupil_remote_gaze!r}")
        for name in ("pupil_remote", "capture_remote"):
            address = getattr(self, name)
            if address is not None and not address.startswith("tcp://"):
                raise ValueError(f"{name} must be a tcp:// address (e.g. {_EXAMPLES[name]}), got {address!r}")
        for name in ("bind", "status_bind"):
            address = getattr(self, name)
            if address is not None and not address.startswith(_SCHEMES):
                raise ValueError(f"{name} must be a ZeroMQ address (e.g. {_EXAMPLES[name]}), got {address!r}")
        for name in ("insecure", "publish_reproducible_noise_not_private"):
            _bool(name, getattr(self, name))
        if not isinstance(self.lsl, (bool, str)):
            raise TypeError(f"lsl must be a bool or a stream name, got {self.lsl!r}")
        if self.lsl == "":
            raise ValueError("lsl must not be empty (False: no LSL streams; True: streams streamdp-*)")
        if self.lsl and self.bind is None:
            raise ValueError("lsl publishes beside the endpoint: it needs bind (None serves nothing), got bind=None")
        object.__setattr__(self, "status_interval", check_seconds("status_interval", self.status_interval))
        if (self.curve_secret is None) != (self.curve_clients is None):
            raise ValueError(
                "CURVE needs both curve_secret and curve_clients, got "
                f"curve_secret={self.curve_secret!r}, curve_clients={self.curve_clients!r}"
            )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The settings' names, as the plugin's keyword arguments."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def split(cls, settings: dict[str, Any]) -> tuple[EndpointSettings, dict[str, Any]]:
        """The endpoint's settings out of all the plugin's, and the rest (the session's).

        Raises
        ------
        TypeError, ValueError
            As :class:`EndpointSettings`.
        """
        names = cls.names()
        mine = {k: v for k, v in settings.items() if k in names}
        return cls(**mine), {k: v for k, v in settings.items() if k not in names}

    @property
    def curve(self) -> CurveServer | None:
        if self.curve_secret is None or self.curve_clients is None:
            return None
        return CurveServer(Path(self.curve_secret).expanduser(), Path(self.curve_clients).expanduser())


class PluginEndpoint:
    """The sanitized publisher and the owner's status socket, open (:attr:`sinks` go to the
    plugin's session) until :meth:`close`.

    Parameters
    ----------
    settings : EndpointSettings
        With ``bind`` set.
    seed : int or None
        The session's noise seed: seeded noise is reproducible, not private, and is refused
        unless ``settings.publish_reproducible_noise_not_private``.
    context : zmq.Context, optional
        Capture's (``g_pool.zmq_ctx``); default the process's shared one.

    Raises
    ------
    InputError
        Seeded noise without the setting that allows it; an address that cannot be bound; a
        non-loopback ``bind`` without CURVE or ``insecure``; an unreadable CURVE certificate or
        clients folder. Nothing is left open.
    ValueError
        ``settings.bind`` is None, or ``status_bind`` is not loopback or IPC.

    Examples
    --------
    >>> endpoint = PluginEndpoint(EndpointSettings(bind="tcp://127.0.0.1:0", status_bind="tcp://127.0.0.1:0"))
    >>> endpoint.describe().startswith("tcp://127.0.0.1:")
    True
    >>> endpoint.subscribers()
    0
    >>> endpoint.close()
    """

    def __init__(self, settings: EndpointSettings, *, seed: int | None = None, context: zmq.Context | None = None):
        bind = self.check(settings, seed=seed)
        self.settings = settings
        # the status socket first: a refused (non-loopback) address leaves nothing open
        self.status = StatusPublisher(settings.status_bind, context=context)
        try:
            self.publisher = ReleasePublisher(
                bind,
                curve=settings.curve,
                insecure=settings.insecure,
                context=context,
                publish_reproducible_noise_not_private=settings.publish_reproducible_noise_not_private,
            )
        except BaseException:
            self.status.close()
            raise
        self.facade: StreamdpPupilRemote | None = None
        #: the LSL outlet (setting ``lsl``), or None
        self.lsl: Any = None
        try:
            if settings.pupil_remote is not None:
                self.facade = StreamdpPupilRemote(
                    settings.pupil_remote,
                    capture_remote=settings.capture_remote,
                    curve=settings.curve,
                    insecure=settings.insecure,
                    gaze_mode=settings.pupil_remote_gaze,
                    context=context,
                    publish_reproducible_noise_not_private=settings.publish_reproducible_noise_not_private,
                )
            if settings.lsl:
                self.lsl = _lsl_outlet(settings)
        except BaseException:
            self.closed = False
            self.close()
            raise
        self.closed = False

    @staticmethod
    def check(settings: EndpointSettings, *, seed: int | None = None) -> str:
        """Everything :class:`PluginEndpoint` refuses before it binds (all but a port in use),
        without opening anything; returns the address to bind.

        Raises
        ------
        TypeError, ValueError, InputError
            As :class:`PluginEndpoint`.
        """
        if not isinstance(settings, EndpointSettings):
            raise TypeError(f"settings must be EndpointSettings, got {settings!r}")
        if settings.bind is None:
            raise ValueError("settings.bind is None: there is no endpoint to open")
        if seed is not None and not settings.publish_reproducible_noise_not_private:
            raise InputError(
                f"seed {seed}: seeded noise is reproducible, not private (whoever knows the seed removes it); "
                "the endpoint publishes it only with publish_reproducible_noise_not_private"
            )
        check_status_endpoint(settings.status_bind)
        check_release_endpoint(settings.bind, curve=settings.curve, insecure=settings.insecure)
        if settings.pupil_remote is not None:
            check_release_endpoint(settings.pupil_remote, curve=settings.curve, insecure=settings.insecure)
            if settings.pupil_remote == settings.capture_remote:
                raise ValueError(f"pupil_remote {settings.pupil_remote} cannot be Capture's own Pupil Remote")
        if settings.lsl:
            _lsl_module()
        return settings.bind

    @property
    def sinks(self) -> list[Any]:
        return [self.publisher, self.status, *(s for s in (self.facade, self.lsl) if s is not None)]

    def session_config(self, config: SessionConfig) -> SessionConfig:
        """``config`` for the session feeding this endpoint: streamdp's Pupil Remote serves the
        real-time gaze channel's ticks, so it switches the channel on (as ``relay --pupil-remote``)."""
        return config if self.facade is None or config.gaze_channel else replace(config, gaze_channel=True)

    def attach(self, session: Session) -> Session:
        """``session`` feeds this endpoint: streamdp's Pupil Remote counts its refusals in its counters."""
        if self.facade is not None:
            self.facade.counters = session.counters
        return session

    @property
    def endpoint(self) -> str:
        """The bound address of the sanitized socket (the port filled in)."""
        return self.publisher.endpoint

    @property
    def curve(self) -> bool:
        return self.settings.curve is not None

    def bound_settings(self) -> dict[str, str]:
        """``bind`` and ``status_bind`` as bound: opening these again takes the same ports."""
        bound = {"bind": self.publisher.endpoint, "status_bind": self.status.endpoint}
        return bound if self.facade is None else {**bound, "pupil_remote": self.facade.address}

    def subscribers(self) -> int:
        """Live subscriptions on the sanitized socket (one per subscriber and topic prefix)."""
        return 0 if self.closed else self.publisher.poll_subscriptions()

    def describe(self) -> str:
        """The endpoint in one line: address, CURVE on or off, who can reach it."""
        if self.curve:
            reach = "CURVE on: allowed clients only"
        elif _is_loopback_address(self.endpoint):
            reach = "CURVE off: this machine only"
        else:
            reach = "CURVE off, insecure: anyone who reaches this machine"
        apps = "" if self.facade is None else f"; Pupil Remote for apps on {self.facade.address}"
        lsl = "" if self.lsl is None else f"; LSL streams {self.lsl.name}-*"
        return f"{self.endpoint} ({reach}){apps}{lsl}"

    def close(self) -> None:
        """Close both sockets (unsent messages are dropped), and withdraw the LSL streams."""
        if not self.closed:
            self.closed = True
            self.publisher.close()
            self.status.close()
            for extra in (self.facade, self.lsl):
                if extra is not None:
                    extra.close()


def _lsl_module() -> Any:
    """pylsl, or an InputError (a ValueError: the menu shows it, Capture goes on) saying how to get it."""
    from ..network.lsl_sink import load_pylsl

    try:
        return load_pylsl()
    except ImportError as exc:
        raise InputError(f"lsl: {exc} (inside Capture: pylsl in the plugins folder)") from None


def _lsl_outlet(settings: EndpointSettings) -> Any:
    from ..network.lsl_sink import LslOutlet

    _lsl_module()
    name = settings.lsl if isinstance(settings.lsl, str) else "streamdp"
    return LslOutlet(name, publish_reproducible_noise_not_private=settings.publish_reproducible_noise_not_private)


def _port_in_use(exc: BaseException) -> bool:
    cause = exc.__context__  # the ZeroMQ error behind the one-line InputError
    return isinstance(cause, zmq.ZMQError) and cause.errno == errno.EADDRINUSE


def open_endpoint(
    settings: Mapping[str, Any], *, context: zmq.Context | None = None
) -> tuple[PluginEndpoint | None, str]:
    """The endpoint a plugin's settings describe, as ``(endpoint, "")``; ``(None, "")`` when
    ``bind`` is None; ``(None, why)`` when it cannot be opened (nothing is left open).

    A port in use is tried again for up to :data:`PORT_RELEASE_WAIT` seconds: ZeroMQ closes a
    listening socket in its I/O thread after ``close()`` returns, and Capture replaces a plugin
    by cleaning the old one up and building the new one at once, on the same port."""
    deadline = time.monotonic() + PORT_RELEASE_WAIT
    while True:
        try:
            endpoint_settings, _ = EndpointSettings.split(dict(settings))
            if endpoint_settings.bind is None:
                return None, ""
            return PluginEndpoint(endpoint_settings, seed=settings.get("seed"), context=context), ""
        except (TypeError, ValueError) as exc:  # InputError is a ValueError
            if not (_port_in_use(exc) and time.monotonic() < deadline):
                return None, str(exc)
        time.sleep(0.01)  # the port this process gave back is being closed by ZeroMQ's I/O thread


def reopen_endpoint(
    running: PluginEndpoint | None,
    current: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    context: zmq.Context | None = None,
) -> tuple[PluginEndpoint | None, str]:
    """Serve on ``new``'s endpoint instead of ``running`` (opened with ``current``): returns the
    endpoint now serving and ``""``, or why ``new``'s could not be opened and the endpoint that
    serves instead. New addresses are bound before ``running`` closes, so a port in use leaves
    it serving untouched; the same addresses (e.g. CURVE switched on) are given back first and
    taken again, and on failure ``running``'s settings are opened again on its ports (None if
    even that fails)."""
    if running is None:
        return open_endpoint(new, context=context)
    was = {**current, **running.bound_settings()}  # a port 0 was given one: keep it
    same = any(new.get(k) == was[k] for k in ("bind", "status_bind"))
    same = same or (new.get("pupil_remote") is not None and new.get("pupil_remote") == was.get("pupil_remote"))
    if same:
        running.close()
    endpoint, problem = open_endpoint(new, context=context)
    if not problem:
        running.close()
        return endpoint, ""
    if not same:
        return running, problem
    endpoint, _ = open_endpoint(was, context=context)  # its ports were ours a moment ago
    return endpoint, problem
