"""``streamdp relay``: live gaze in (Pupil Capture, or a Neon/Invisible), sanitized chunks out on
a ZeroMQ topic.

Everything that can fail before the loop does so with one line and nothing left running: the
options, the addresses, the CURVE certificates, the port to listen on (in use?), the device.
Once connected to Capture, and whenever Pupil Remote restarts its server, the relay says in one line
whether the deployment is private (``streamdp doctor``'s check: where Capture's raw-gaze ports
listen). While Capture does not answer (at start, or after it went away) the relay says once what it
waits for, counts its attempts (each one a line with ``-v``) and, with ``--wait-timeout``, gives up
when that long has passed (exit status 2, one line). SIGINT and SIGTERM end the loop between two
batches (no partial chunk); the stop line is the session's status in words. With ``--gaze-channel``
the same publisher also sends the real-time gaze channel's ticks on ``streamdp.gaze.<mechanism>``,
each at its public time.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gc
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError, StreamdpError
from .console import error_text, on_stop_signals, say
from .contract import Excludes, Needs
from .format import counted, describe_epsilon, format_status
from .gaze_format import describe_gaze_channel
from .gaze_options import gaze_options_checked
from .options import GivenValue, add_config_file_option, add_config_options, reads
from .parsing import POSITIVE

log = logging.getLogger(__name__)

#: where the realtime API's exceptions come from (it raises its own types, aiohttp's and asyncio's)
_DEVICE_MODULES = ("pupil_labs", "aiohttp", "asyncio", "zeroconf")

#: the configuration fields it reads: all of them
READS = reads("privacy", "features", "gaze", "live")
#: options that contradict each other, or do nothing without another
CONFLICTS = (
    Needs("--invisible", "--neon", "it says that the device --neon reads is a Pupil Invisible"),
    Needs("--pupil-remote-gaze", "--pupil-remote", "it chooses the gaze datums streamdp's Pupil Remote publishes"),
    Excludes("--neon", "--remote", "--remote is Pupil Capture's Pupil Remote; --neon reads a Neon or Invisible"),
    Excludes("--neon", "--to-backbone", "a Neon or Invisible has no Capture backbone to publish onto"),
    Excludes("--neon", "--wait-timeout", "a Neon or Invisible is reached once, at start, or refused at once"),
    Excludes(
        "--neon",
        "--blinks=confidence",
        "a Neon's confidence is 1 while the glasses are worn: the relay takes its blink events (--blinks given)",
    ),
    Excludes(
        "--pupil-remote", "--no-gaze-channel", "streamdp's Pupil Remote serves the gaze channel's ticks as gaze datums"
    ),
)


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("relay", help="Pupil Capture's gaze in, sanitized chunks out on a ZeroMQ topic")
    p.add_argument("--remote", default="tcp://127.0.0.1:50020", action=GivenValue, help="Pupil Remote's address")
    p.add_argument("--bind", default="tcp://127.0.0.1:5570", help="where subscribers connect")
    p.add_argument("--to-backbone", action="store_true", help="also publish onto Capture's backbone")
    p.add_argument(
        "--curve-secret", help="relay's CURVE secret certificate, zmq.auth format (default: none, loopback only)"
    )
    p.add_argument("--curve-clients", help="folder of allowed clients' public certificates (default: none)")
    p.add_argument("--insecure", action="store_true", help="allow a non-loopback bind without CURVE")
    p.add_argument(
        "--publish-reproducible-noise-not-private",
        action="store_true",
        help="with --seed: publish anyway (tests and demos only: whoever knows the seed removes the noise)",
    )
    p.add_argument("--status-interval", type=POSITIVE, default=10.0, help="seconds between status messages")
    p.add_argument(
        "--wait-timeout",
        type=POSITIVE,
        metavar="SECONDS",
        help="give up (exit status 2) when Pupil Capture has not answered for this long, at start or after "
        "it went away (default: wait until stopped)",
    )
    p.add_argument(
        "--status-bind",
        default="tcp://127.0.0.1:5571",
        help="the device owner's status socket (counters, clip rate: raw, so loopback or ipc:// only)",
    )
    p.add_argument(
        "--neon",
        nargs="?",
        const="",
        default=None,
        metavar="HOST[:PORT]",
        help="take gaze from a Neon or Invisible (realtime API) instead of Pupil Capture; "
        "without an address the device is discovered (default: Pupil Capture)",
    )
    p.add_argument("--invisible", action="store_true", help="the device is a Pupil Invisible (scene 1088×1080)")
    p.add_argument(
        "--pupil-remote",
        metavar="ADDRESS",
        help="serve Capture's Network API here with sanitized data only (e.g. tcp://*:50020 once Capture's own "
        "Pupil Remote is on 127.0.0.1:50021; switches the gaze channel on; docs/pupil-remote.md; default: off)",
    )
    p.add_argument(
        "--pupil-remote-gaze",
        choices=("3d", "2d"),
        default="3d",
        action=GivenValue,
        help="the gaze datums streamdp's Pupil Remote publishes: gaze.3d.01. or gaze.2d.01. (default: %(default)s)",
    )
    p.add_argument(
        "--lsl",
        action="store_true",
        help="also publish the sanitized releases as Lab Streaming Layer streams (Features, and Gaze with "
        "--gaze-channel; extra lsl; default: off)",
    )
    add_config_file_option(p)
    add_config_options(p, READS)
    p.set_defaults(handler=run)


def _curve(args: argparse.Namespace) -> Any:
    from ..network.sink import CurveServer

    if not (args.curve_secret or args.curve_clients):
        return None
    if not (args.curve_secret and args.curve_clients):
        raise StreamdpError("CURVE needs both --curve-secret and --curve-clients")
    return CurveServer(Path(args.curve_secret), Path(args.curve_clients))


def _is_device_error(exc: BaseException) -> bool:
    return isinstance(exc, (OSError, TimeoutError)) or type(exc).__module__.split(".")[0] in _DEVICE_MODULES


def _quiet_device_cleanup(previous: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """An unraisable hook that hides the realtime API's own error while it destroys a device it
    failed to build (its ``__del__`` raises AttributeError), and passes anything else on."""

    def hook(unraisable: Any) -> None:
        module = getattr(unraisable.object, "__module__", None) or type(unraisable.object).__module__
        if str(module).startswith("pupil_labs"):
            return
        previous(unraisable)

    return hook


def connect_neon(address: str) -> Any:
    """The realtime-API device at ``address`` (``host[:port]``; empty: discovered).

    Raises
    ------
    InputError
        The address is malformed, the ``neon`` extra is missing, or the device cannot be
        reached (the realtime API's reason, in one line).
    """
    from ..network.neon import connect_device

    host, _, port = address.partition(":")
    if address and (not host or (port and not (port.isdigit() and 1 <= int(port) <= 65535))):
        raise InputError(f"--neon {address}: give HOST or HOST:PORT with a port 1–65535")
    previous = sys.unraisablehook
    sys.unraisablehook = _quiet_device_cleanup(previous)
    try:
        try:
            return connect_device(address or None)
        except InputError:
            raise
        except Exception as exc:
            if not _is_device_error(exc):
                raise
            problem = error_text(exc)
        gc.collect()  # the half-built device dies here, while its cleanup error is hidden
    finally:
        sys.unraisablehook = previous
    raise InputError(f"--neon {address or '(discovery)'}: cannot reach the device: {problem}")


class Waiting:
    """The relay's words while Pupil Capture does not answer: once what it waits for and how to stop,
    each attempt counted (a line at ``-v``), and the end of the wait after ``timeout`` s.

    Raises
    ------
    InputError
        From the call: ``timeout`` s have passed since the first attempt of this wait.

    Examples
    --------
    >>> waiting = Waiting("tcp://127.0.0.1:1", timeout=0.0)
    >>> waiting(TimeoutError("no answer"), 1)
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: --wait-timeout 0: Pupil Capture at tcp://127.0.0.1:1 did not answer in 1 attempt over 0 s (no answer): is Capture running, with Pupil Remote at this address (Capture's Network API plugin)?
    """  # noqa: E501

    def __init__(self, remote: str, timeout: float | None) -> None:
        self.remote = remote
        self.timeout = timeout
        self.attempts = 0
        self._since = 0.0

    def __call__(self, problem: Exception, attempts: int) -> None:
        import time

        now = time.monotonic()
        self.attempts = attempts
        why = error_text(problem).replace(f"Pupil Remote at {self.remote} ", "")
        if attempts == 1:
            self._since = now
            give_up = f"gives up after {self.timeout:g} s" if self.timeout is not None else "waits until stopped"
            say(
                f"streamdp relay: waiting for Pupil Capture's Pupil Remote at {self.remote} ({why}); "
                f"retrying every few seconds, {give_up} (Ctrl-C stops; --wait-timeout SECONDS sets a limit)"
            )
        waited = now - self._since
        log.info("still waiting for Pupil Capture at %s: attempt %d, %.0f s", self.remote, attempts, waited)
        if self.timeout is not None and waited >= self.timeout:
            raise InputError(
                f"--wait-timeout {self.timeout:g}: Pupil Capture at {self.remote} did not answer in "
                f"{counted(attempts, 'attempt')} over {waited:.0f} s ({why}): is Capture running, "
                "with Pupil Remote at this address (Capture's Network API plugin)?"
            )


def _deployment_check(args: argparse.Namespace, config: Any, curve: bool) -> Callable[..., Any]:
    """``streamdp doctor``'s check of Capture's ports with this relay's side filled in: run when the
    relay connects and whenever Pupil Remote restarts its server."""
    from ..network.doctor import check_ports

    return functools.partial(
        check_ports,
        sanitized=args.bind,
        curve=curve,
        status=args.status_bind,
        identity=config.identity,
        ledger_dir=Path(config.ledger_dir) if config.ledger_dir else None,
        budget=config.budget,
        seeded=config.seed is not None,
        pupil_remote=args.pupil_remote,
        lsl="streamdp" if args.lsl else None,
    )


def _lsl_outlet(args: argparse.Namespace) -> Any:
    """The LSL outlet (``--lsl``), or None."""
    if not args.lsl:
        return None
    from ..network.lsl_sink import LslOutlet

    try:
        return LslOutlet(publish_reproducible_noise_not_private=args.publish_reproducible_noise_not_private)
    except ImportError as exc:
        raise InputError(f"--lsl: {exc}") from None


def _pupil_remote(args: argparse.Namespace, curve: Any) -> Any:
    """streamdp's own Pupil Remote (``--pupil-remote``), or None."""
    if args.pupil_remote is None:
        return None
    from ..network.pupil_remote import StreamdpPupilRemote

    if args.neon is not None:
        raise InputError("--pupil-remote serves apps of Pupil Capture: it needs Capture (not --neon)")
    return StreamdpPupilRemote(
        args.pupil_remote,
        capture_remote=args.remote,
        curve=curve,
        insecure=args.insecure,
        gaze_mode=args.pupil_remote_gaze,
        publish_reproducible_noise_not_private=args.publish_reproducible_noise_not_private,
    )


def check_bind_form(option: str, endpoint: str) -> None:
    """Refuse an ``endpoint`` to listen on that is not of a ZeroMQ address's form (``tcp://HOST:PORT``,
    the port a number or ``*``; ``ipc://PATH``; ``inproc://NAME``), before anything else is said of it
    (whether it is private, whether it can be bound).

    Raises
    ------
    InputError
        Not such an address, named with ``option``.

    Examples
    --------
    >>> check_bind_form("--bind", "nonsense")
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: --bind nonsense: not an address to listen on (give e.g. tcp://127.0.0.1:5570)
    """
    scheme, sep, rest = endpoint.partition("://")
    fine = bool(sep and rest) and scheme in ("tcp", "ipc", "inproc")
    if fine and scheme == "tcp":
        host, colon, port = rest.rpartition(":")
        fine = bool(colon and host) and (port == "*" or (port.isdigit() and int(port) <= 65535))
    if not fine:
        raise InputError(f"{option} {endpoint}: not an address to listen on (give e.g. tcp://127.0.0.1:5570)")


def run(args: argparse.Namespace) -> int:
    check_bind_form("--bind", args.bind)
    check_bind_form("--status-bind", args.status_bind)
    from ..network.sink import ReleasePublisher, StatusPublisher
    from ..network.subscriber import check_address
    from ..session import Session
    from ..status import StatusEvent

    config = gaze_options_checked(args)  # bad options fail before any socket exists
    if args.pupil_remote is not None:
        # streamdp's Pupil Remote serves the real-time channel's ticks as Capture's gaze datums
        config = dataclasses.replace(config, gaze_channel=True)
    if args.neon is None:
        check_address(args.remote, example="tcp://127.0.0.1:50020")
    curve = _curve(args)
    if args.neon is not None:
        # Neon's confidence is 1 while the glasses are worn: blinks come from its eye events
        config = dataclasses.replace(config, blinks="given")
    if config.seed is not None and not args.publish_reproducible_noise_not_private:
        raise InputError(
            f"--seed {config.seed}: seeded noise is reproducible, not private (whoever knows the seed removes it); "
            "the relay publishes it only with --publish-reproducible-noise-not-private"
        )
    publisher = ReleasePublisher(
        args.bind,
        curve=curve,
        insecure=args.insecure,
        publish_reproducible_noise_not_private=args.publish_reproducible_noise_not_private,
    )
    status = StatusPublisher(args.status_bind)
    facade: Any = None
    outlet: Any = None
    shell: Any
    try:
        facade = _pupil_remote(args, curve)
        outlet = _lsl_outlet(args)
        sinks = [publisher, status, *([outlet] if outlet is not None else [])]
        if args.neon is not None:
            from ..network.neon import NeonRelay

            device = connect_neon(args.neon)
            source = f"{'Invisible' if args.invisible else 'Neon'} at {args.neon or 'a discovered device'}"
            camera = "invisible" if args.invisible else "neon"
            session = Session(config, sinks=sinks, camera=camera, source=source)
            shell = NeonRelay(session, device, invisible=args.invisible, status_interval=args.status_interval)
        else:
            from ..network.relay import Relay

            source = f"Pupil Capture at {args.remote}"
            session = Session(config, sinks=sinks, source=source)
            if facade is not None:
                facade.counters = session.counters  # its refusals on the owner's status socket
                session.sinks.append(facade)
            shell = Relay(
                session,
                remote=args.remote,
                to_backbone=args.to_backbone,
                status_interval=args.status_interval,
                deployment_check=_deployment_check(args, config, curve is not None),
            )
            assert shell.watch is not None
            shell.on_waiting = Waiting(args.remote, args.wait_timeout)
            shell.watch.on_report = lambda report: say(f"streamdp relay: {report.verdict}")
        on_stop_signals(shell.stop)
        say(
            f"streamdp relay: {source} → {publisher.endpoint} ({config.mechanism}, "
            f"{describe_epsilon(config.mechanism_instance().describe())}, {config.unit} unit, "
            f"scene camera {session.camera}){describe_gaze_channel(config)}; "
            f"status for this device only on {status.endpoint}",
        )
        if facade is not None:
            say(
                f"streamdp relay: Pupil Remote for apps on {facade.address} (SUB_PORT {facade.sub_port}, "
                f"PUB_PORT {facade.pub_port}): sanitized {facade.gaze_mode} gaze at {config.gaze_rate:g} Hz, "
                "streamdp.*, and what the notification policy passes; Capture's own at " + args.remote
            )
        try:
            shell.run()
        except Exception as exc:
            if args.neon is None or not _is_device_error(exc):
                raise
            raise InputError(f"{source}: the device stopped answering: {error_text(exc)}") from None
        subscribers = publisher.poll_subscriptions()
    finally:
        publisher.close()
        status.close()
        if facade is not None:
            facade.close()
        if outlet is not None:
            outlet.close()
    say(f"streamdp relay: {format_status(session.status(StatusEvent.STOPPED, subscribers), step=config.step)}")
    return 0
