"""``streamdp simulate``: a stand-in Pupil Capture speaking the real Network API.

Capture starts publishing whoever listens and drops what a stalled subscriber has no room for
(high-water mark 1000). The command asks for lossless playback instead, so that a relay started
after it gets the whole recording: it waits for a subscriber to gaze and queues without limit;
``--no-wait --hwm 1000`` delivers as Capture does. Gaze that would not fit in memory (a huge
``--synthetic``) is refused before it is made; playback as fast as possible (``--speed 0``) that
takes over a minute is announced and its progress shown (:mod:`streamdp.cli.progress`).

While it waits for a subscriber it says so, once, and says when playback starts. The exit status
(:data:`EPILOG`, in ``streamdp simulate --help``) is the same whatever it was doing when stopped."""

from __future__ import annotations

import argparse
import signal
import threading

from ..plausibility import Implausible
from .common import SYNTHETIC_RATE, SYNTHETIC_SECONDS, load_recording
from .console import on_stop_signals, say
from .contract import Excludes
from .cost import simulate_cost
from .format import counted
from .parsing import NON_NEGATIVE, PORT, POSITIVE, SEED, number
from .progress import Progress, preview, progress_after

HWM = number(int, low=0)

#: the exit statuses, as ``streamdp simulate --help`` states them
EPILOG = (
    "exit status: 0 the recording was played to its end, or SIGINT (Ctrl-C) or SIGTERM stopped it cleanly, "
    "whether it was waiting for a subscriber, playing or serving (--stay, --loop); 130 / 143 SIGINT / SIGTERM "
    "before it served (while the gaze was read or made); 2 bad input"
)

#: it reads no configuration field
READS: tuple[str, ...] = ()
#: options that contradict each other, or do nothing without another
CONFLICTS = (
    Excludes("PATH", "--synthetic", "synthetic gaze is made only when no recording is given"),
    Excludes("PATH", "--seed", "--seed seeds the synthetic gaze; a recording is played as it is"),
)


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("simulate", help="a stand-in Pupil Capture speaking the Network API", epilog=EPILOG)
    p.add_argument("path", nargs="?", help="recording to play (default: synthetic gaze)")
    p.add_argument(
        "--synthetic",
        type=POSITIVE,
        metavar="SECONDS",
        help=f"length of synthetic gaze when no path (default: {SYNTHETIC_SECONDS:g})",
    )
    p.add_argument("--seed", type=SEED, help="seed of the synthetic gaze (default: 0)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind")
    p.add_argument("--port", type=PORT, default=50020, help="Pupil Remote's port, 0–65535 (0: any free port)")
    p.add_argument(
        "--speed", type=NON_NEGATIVE, default=1.0, help="1 = real time, 0 = as fast as possible (default: 1)"
    )
    p.add_argument("--loop", action="store_true", help="play the recording over and over")
    p.add_argument("--stay", action="store_true", help="keep serving after the recording ends")
    p.add_argument(
        "--no-wait", action="store_true", help="publish even before anyone subscribes to gaze (as Capture does)"
    )
    p.add_argument(
        "--hwm",
        type=HWM,
        default=0,
        help="messages the backbone queues per subscriber before dropping (Capture: 1000; default: 0, unlimited)",
    )
    p.add_argument(
        "--eye-lag",
        type=NON_NEGATIVE,
        default=0.0,
        metavar="SECONDS",
        help="now and then one eye process falls behind by up to this much, as on a loaded machine: its gaze "
        "arrives late as monocular gaze, the other eye's on time (the real Capture under load: 1.3; default: 0, none)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..network.simulator import CaptureSimulator

    left_out: list[Implausible] = []
    paced = args.speed > 0 or args.loop  # played at a speed, or for ever: the wait is the user's choice
    if args.path is None:  # said before the gaze is made: its size is --synthetic alone
        samples = (args.synthetic or SYNTHETIC_SECONDS) * SYNTHETIC_RATE
        cost = simulate_cost(samples=samples, synthetic=True, paced=paced)
        long = preview(cost, "simulate")
    rec = load_recording(args.path, args.synthetic, args.seed or 0, report=left_out.append)
    if args.path is not None:
        cost = simulate_cost(samples=len(rec.gaze), synthetic=False, paced=paced)
        long = preview(cost, "simulate")
    sim = CaptureSimulator(
        rec,
        host=args.host,
        remote_port=args.port,
        speed=args.speed,
        loop=args.loop,
        wait_for_subscriber=not args.no_wait,
        hwm=args.hwm,
        eye_lag=args.eye_lag,
    )
    done = threading.Event()
    signals = on_stop_signals(done.set)
    sim.start()  # a taken port or a bad host: one line, nothing left open
    pace = f"at {args.speed:g}× real time" if args.speed else "as fast as possible"
    playing = f"{rec.name} {pace}{', in a loop' if args.loop else ''}"
    where = f"Pupil Remote at {sim.remote_address} (SUB_PORT {sim.ports.sub}, PUB_PORT {sim.ports.pub})"
    left = "".join(f"; {x.describe()}" for x in left_out if x.describe())
    waiting = not args.no_wait and not sim.gaze_subscribed
    if waiting:
        say(
            f"simulated Pupil Capture: {where}, waiting for a subscriber to gaze before playing {playing} "
            f"(e.g. streamdp relay --remote {sim.remote_address}; --no-wait plays at once){left}"
        )
    else:
        say(f"simulated Pupil Capture: {where}, playing {playing}{left}")
    show = not args.quiet and not paced
    try:
        while waiting and not done.is_set() and not sim.gaze_subscribed:
            done.wait(0.1)
        if waiting and sim.gaze_subscribed:
            say(f"simulated Pupil Capture: a subscriber came: playing {playing}")
        with Progress("simulate", estimate=cost.seconds, show=show and not done.is_set(), delay=progress_after(long)):
            while not done.is_set() and not sim.finished.is_set():
                done.wait(0.1)
        while args.stay and not done.is_set():
            done.wait(0.1)
    finally:
        sim.stop()
    how = f" by {signal.Signals(signals[0]).name}" if signals else ""
    say(f"simulated Pupil Capture stopped{how} after {counted(sim.published, 'datum')}")
    return 0  # a clean stop, as the relay's: the same whatever it was doing
