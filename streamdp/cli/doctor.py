"""``streamdp doctor``: is this setup private?

It asks Pupil Remote (``--remote``) for Capture's backbone ports, finds where each listens in the
system's table of listening sockets, and looks at streamdp's own side as the relay would run it:
the sanitized endpoint (``--bind``, CURVE on with ``--curve-secret``/``--curve-clients``), the
owner's status endpoint (``--status-bind``), the durable ledger (``--identity``, ``--ledger-dir``,
``--budget``, with ``--unit``/``--w`` as the budget's) and seeded noise (``--seed``): the relay's
options that decide these findings, and no other (an option of the relay that changes none, such as
``--epsilon``, is refused naming it: give ``doctor`` the relay's addresses and ledger options).

It prints one line per finding, a one-line verdict and, when Capture's ports are reachable from
other hosts, the firewall commands that would close them (printed, never run); ``--json`` prints
one JSON object instead. Exit status: 0 private, 1 raw gaze reachable beyond loopback, 2 could
not check (Capture absent, Pupil Remote silent, no table of listening sockets): never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .contract import Excludes
from .options import GivenValue, add_config_file_option, add_config_options, checked, config_from, reads
from .parsing import POSITIVE

#: ``streamdp doctor``'s exit status when it cannot check (bad options exit 2 as well)
EXIT_UNCHECKED = 2

#: the configuration fields it reads: the durable ledger's (the unit and w only as the budget's)
READS = reads(plus=("unit", "budget", "w", "seed", "identity", "ledger_dir"))
#: options that contradict each other
CONFLICTS = (
    Excludes("--neon", "--remote", "--remote is Pupil Capture's Pupil Remote; with --neon there is no Capture to ask"),
    Excludes("--neon", "--timeout", "--timeout is Pupil Remote's time to answer; with --neon there is none to ask"),
    Excludes("--neon", "--pupil-remote", "streamdp's Pupil Remote serves apps of Pupil Capture"),
)


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "doctor", help="is this setup private? where raw gaze is reachable, and what streamdp serves"
    )
    p.add_argument(
        "--remote",
        default="tcp://127.0.0.1:50020",
        action=GivenValue,
        help="Pupil Remote's address, as the relay's (default: %(default)s)",
    )
    p.add_argument(
        "--bind", default="tcp://127.0.0.1:5570", help="the relay's sanitized endpoint (default: %(default)s)"
    )
    p.add_argument(
        "--status-bind", default="tcp://127.0.0.1:5571", help="the relay's status endpoint (default: %(default)s)"
    )
    p.add_argument("--curve-secret", help="the relay's CURVE secret certificate (default: none, CURVE off)")
    p.add_argument("--curve-clients", help="folder of allowed clients' public certificates (default: none)")
    p.add_argument("--insecure", action="store_true", help="as the relay's (a non-loopback bind without CURVE)")
    p.add_argument(
        "--publish-reproducible-noise-not-private", action="store_true", help="as the relay's (seeded noise published)"
    )
    p.add_argument(
        "--neon",
        nargs="?",
        const="",
        default=None,
        metavar="HOST[:PORT]",
        help="gaze from a Neon or Invisible: no Pupil Capture to check on this machine (default: Pupil Capture)",
    )
    p.add_argument(
        "--timeout",
        type=POSITIVE,
        default=1.0,
        action=GivenValue,
        help="seconds Pupil Remote has to answer (default: %(default)s)",
    )
    p.add_argument(
        "--pupil-remote",
        metavar="ADDRESS",
        help="streamdp's own Pupil Remote, as the relay's --pupil-remote "
        "(checked: it must not be Capture's; default: none)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object: verdict, exit_code, private, findings, firewall_commands, platform",
    )
    add_config_file_option(p)
    add_config_options(p, READS)
    p.set_defaults(handler=run)


def refuse_capture_address(pupil_remote: str | None, remote: str) -> None:
    """Refuse ``--pupil-remote`` at Capture's own Pupil Remote address (``--remote``), as the relay
    refuses it: streamdp's would answer there instead of Capture's, or be Capture's itself.

    Raises
    ------
    InputError
        The two name the same host and port (``:0``, a port of the system's choosing, is not).

    Examples
    --------
    >>> refuse_capture_address("tcp://h:50020", "tcp://h:50020")
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: streamdp's Pupil Remote (tcp://h:50020) cannot be Capture's (tcp://h:50020)
    """
    from urllib.parse import urlsplit

    from ..errors import InputError

    if pupil_remote is None or pupil_remote.endswith(":0"):
        return
    try:
        same = urlsplit(pupil_remote)[1:] == urlsplit(remote)[1:]
    except ValueError:
        return  # not an address: said where it is used
    if same:
        raise InputError(f"streamdp's Pupil Remote ({pupil_remote}) cannot be Capture's ({remote})")


def run(args: argparse.Namespace) -> int:
    from ..network.doctor import Finding, check_deployment, check_ports
    from ..network.lsl_streams import survey_lsl
    from ..network.subscriber import check_address

    config = checked(config_from(args))
    refuse_capture_address(args.pupil_remote, args.remote)
    if bool(args.curve_secret) != bool(args.curve_clients):
        from ..errors import StreamdpError

        raise StreamdpError("CURVE needs both --curve-secret and --curve-clients")
    side = {
        "sanitized": args.bind,
        "curve": bool(args.curve_secret),
        "status": args.status_bind,
        "identity": config.identity,
        "ledger_dir": Path(config.ledger_dir) if config.ledger_dir else None,
        "budget": config.budget,
        "seeded": config.seed is not None,
    }
    if args.neon is None:
        check_address(args.remote, example="tcp://127.0.0.1:50020")
        report = check_deployment(remote=args.remote, timeout=args.timeout, pupil_remote=args.pupil_remote, **side)
    else:
        report = check_ports({}, lsl_survey=survey_lsl(), **side)  # a raw Gaze stream on the LAN, as for Capture
        device = Finding(
            f"{'device ' + args.neon if args.neon else 'Neon/Invisible'}",
            "note",
            "its Companion app serves raw gaze to its own network: not checked here (docs/threat-model.md)",
        )
        verdict = report.verdict
        if report.private:  # the PC's side only: the phone's own API is the network's to close
            verdict = "private on this PC: nothing here serves gaze beyond loopback but sanitized chunks; " + (
                "the device's realtime API is not checked (docs/threat-model.md)"
            )
        report = type(report)((device, *report.findings), verdict, report.exit_code, (), report.platform)
    if args.json:
        print(report.as_json())
    elif report.exit_code == EXIT_UNCHECKED:
        print(f"streamdp doctor: {report.verdict}", file=sys.stderr)  # one line: what could not be checked
    else:
        for line in report.lines():
            print(line)
    return report.exit_code
