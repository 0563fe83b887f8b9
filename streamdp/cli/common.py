"""What several commands share: loading a recording (any format the readers recognise, a CSV of
any layout with ``--csv-columns``, or synthetic gaze), optional extras, and output files that are
checked before any work and appear whole or not at all."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from ..config import SessionConfig
from ..errors import InputError, StreamdpError
from ..gaze import Recording
from ..offline.recordings import POSITION_UNITS, TIME_UNITS, CsvLayout, open_recording
from ..offline.results import check_writable_place
from ..plausibility import Implausible
from .contract import Needs

#: the rate (Hz) and length (s) of the synthetic gaze read when no recording is given
SYNTHETIC_RATE = 200.0
SYNTHETIC_SECONDS = 120.0

#: CsvLayout fields and the options that give them, for error messages
_CSV_OPTIONS = (
    ("columns", "--csv-columns"),
    ("delimiter", "--csv-delimiter"),
    ("header", "--csv-no-header"),
    ("time_unit", "--time-unit"),
    ("position_unit", "--position-unit"),
    ("size", "--scene-size"),
)


class MissingExtra(StreamdpError):
    """A command needs an optional extra that is not installed; the message says how to get it."""


def require_extra(module: str, extra: str, command: str) -> ModuleType:
    """Import ``module`` for ``command``, or explain which extra installs it.

    Raises
    ------
    MissingExtra
        ``module`` cannot be imported.

    Examples
    --------
    >>> require_extra("json", "core", "demo").__name__
    'json'
    >>> require_extra("no_such_module_here", "evaluate", "evaluate")
    Traceback (most recent call last):
    ...
    streamdp.cli.common.MissingExtra: streamdp evaluate needs the optional extra: pip install 'streamdp[evaluate]'
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"streamdp {command} needs the optional extra: pip install 'streamdp[{extra}]'") from None


#: ``--scheduler`` names a dask cluster: it does nothing without ``--executor dask``
SCHEDULER_NEEDS_DASK = Needs("--scheduler", "--executor=dask", "it is the address of a dask.distributed scheduler")


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    """``--executor`` and ``--scheduler``: where the jobs of ``replay`` and ``evaluate`` run."""
    parser.add_argument(
        "--executor",
        choices=("processes", "dask"),
        default="processes",
        help="local processes, or a dask.distributed cluster (pip install 'streamdp[dask]'; default: %(default)s)",
    )
    parser.add_argument(
        "--scheduler", help="dask.distributed scheduler address, with --executor dask (default: a local cluster)"
    )


def add_csv_options(parser: argparse.ArgumentParser) -> None:
    """The options that describe a CSV no reader recognises by its header (:class:`CsvLayout`)."""
    group = parser.add_argument_group("CSV of any layout")
    group.add_argument(
        "--csv-columns",
        metavar="ROLE=COLUMN,…",
        help="read the recordings as CSV with these columns: roles t, x, y (required), confidence, diameter, "
        "each a header name or a 0-based index, e.g. t=0,x=1,y=2,confidence=3,diameter=4 "
        "(default: none, the format is recognised from the file)",
    )
    group.add_argument(
        "--csv-delimiter", metavar="CHAR", help="with --csv-columns: the delimiter, one character or 'tab' (default: ,)"
    )
    group.add_argument(
        "--csv-no-header", action="store_true", help="with --csv-columns: the first row is data (columns by index)"
    )
    group.add_argument(
        "--time-unit", choices=TIME_UNITS, help="with --csv-columns: unit of the time column (default: s)"
    )
    group.add_argument(
        "--position-unit",
        choices=POSITION_UNITS,
        help="with --csv-columns: x and y in normalized image units (origin bottom-left), px (origin top-left, "
        "needs --scene-size) or degrees of visual angle (through --camera) (default: norm)",
    )
    group.add_argument(
        "--scene-size",
        metavar="WxH",
        help="with --position-unit px: the image size in px, e.g. 1088x1080 (default: none)",
    )


def parse_size(text: str) -> tuple[float, float]:
    """``1088x1080`` as (width, height).

    Raises
    ------
    InputError
        Not two positive numbers joined by ``x``.

    Examples
    --------
    >>> parse_size("1088x1080")
    (1088.0, 1080.0)
    >>> parse_size("1088")
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: --scene-size '1088': give the width and height in px as WxH, e.g. 1088x1080
    """
    parts = text.lower().split("x")
    try:
        w, h = (float(v) for v in parts)
    except ValueError:
        w = h = float("nan")
    if not (0 < w < float("inf") and 0 < h < float("inf")):
        raise InputError(f"--scene-size {text!r}: give the width and height in px as WxH, e.g. 1088x1080")
    return w, h


def csv_layout(args: argparse.Namespace, config: SessionConfig) -> CsvLayout | None:
    """The :class:`CsvLayout` the CSV options describe; None without ``--csv-columns``.

    Raises
    ------
    InputError
        An option that needs ``--csv-columns`` without it, a value the layout refuses, named
        with its option; a diameter column whose unit ``config`` does not say.
    """
    given = {
        "--csv-delimiter": args.csv_delimiter is not None,
        "--csv-no-header": args.csv_no_header,
        "--time-unit": args.time_unit is not None,
        "--position-unit": args.position_unit is not None,
        "--scene-size": args.scene_size is not None,
    }
    if args.csv_columns is None:
        stray = [option for option, set_ in given.items() if set_]
        if stray:
            raise InputError(f"{stray[0]} applies to a CSV read with --csv-columns only")
        return None
    position = args.position_unit or "norm"
    if position == "px" and args.scene_size is None:
        raise InputError("--position-unit px needs --scene-size WxH (the image size in px)")
    if position != "px" and args.scene_size is not None:
        raise InputError("--scene-size applies to --position-unit px only")
    delimiter = args.csv_delimiter if args.csv_delimiter is not None else ","
    delimiter = {"tab": "\t", "\\t": "\t"}.get(delimiter, delimiter)
    size = parse_size(args.scene_size) if args.scene_size is not None else None
    try:
        columns = CsvLayout.parse_columns(args.csv_columns)
        layout = CsvLayout(
            columns=columns,
            delimiter=delimiter,
            header=not args.csv_no_header,
            time_unit=args.time_unit or "s",
            position_unit=position,
            size=size,
        )
    except (TypeError, ValueError) as exc:
        text = str(exc)
        for name, option in _CSV_OPTIONS:
            if text.startswith(name):
                text = option + text[len(name) :]
                break
        else:
            text = f"--csv-columns: {text}"
        raise InputError(text) from None
    layout.diameter_unit(config)  # refused now, not once per recording
    return layout


def refuse_eye_camera_data(path: str | Path) -> None:
    """Refuse a Player ``pupil_positions.csv`` (a CSV whose header has ``pupil_timestamp`` and no
    ``gaze_timestamp``): its positions are of the pupil in an eye camera's image, not of gaze in the
    scene, and the commands would read them as gaze without a word.

    Raises
    ------
    InputError
        ``path`` is such a file, named, with the file to give instead.
    """
    p = Path(path)
    if p.suffix.lower() != ".csv" or not p.is_file():
        return
    try:
        with open(p, errors="replace") as fh:
            head = fh.readline()
    except OSError:
        return  # the reader says why it cannot read it
    if "pupil_timestamp" in head and "gaze_timestamp" not in head:
        raise InputError(
            f"{p}: eye-camera data (pupil positions in the eye images, from Player's pupil_positions.csv), not gaze "
            f"in the scene: give the export's gaze_positions.csv (or its folder)"
        )


def load_recording(
    path: str | None,
    synthetic: float | None,
    seed: int,
    layout: CsvLayout | None = None,
    config: SessionConfig | None = None,
    report: Callable[[Implausible], object] | None = None,
) -> Recording:
    """The recording at ``path`` (read with ``layout`` when given, else any format the readers
    know), or ``synthetic`` seconds of synthetic gaze (default :data:`SYNTHETIC_SECONDS`) when no path is given. A
    recording's gaze is held to the public plausibility bounds: what they leave out goes to
    ``report`` (:func:`~streamdp.readers.plausible_recording`).

    Raises
    ------
    InputError
        ``path`` cannot be read, or holds no plausible gaze, or is eye-camera data
        (:func:`refuse_eye_camera_data`); ``layout`` without a path.
    """
    if path is None:
        if layout is not None:
            raise InputError("--csv-columns describes a CSV file: give its path")
        from ..synthetic import generate

        return generate(duration=synthetic or SYNTHETIC_SECONDS, rate=SYNTHETIC_RATE, seed=seed).recording
    if layout is None:
        refuse_eye_camera_data(path)
    return open_recording(path, layout, config, report)


def output_file(path: str | Path, suffixes: Sequence[str], *, option: str = "--out") -> Path:
    """``path`` checked as an output file before any work: a known extension, not a folder, not
    under a file, in a place where files can be created. Nothing is created.

    Raises
    ------
    InputError
        Any of these does not hold, named with ``option`` and the path.

    Examples
    --------
    >>> output_file("rows.txt", (".csv", ".npz"))
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: --out rows.txt: unknown extension '.txt': give a file ending in .csv or .npz
    """
    p = Path(path)
    what = f"{option} {p}"
    if p.is_dir():
        raise InputError(f"{what}: is a folder: give a file name ending in {' or '.join(suffixes)}")
    if p.suffix.lower() not in suffixes:
        ext = f"extension {p.suffix!r}" if p.suffix else "file without an extension"
        raise InputError(f"{what}: unknown {ext}: give a file ending in {' or '.join(suffixes)}")
    check_writable_place(p, what)
    return p


def write_atomically(path: Path, write: Callable[[Path], object], *, option: str = "--out") -> None:
    """Call ``write`` on ``path`` + ``.partial`` (creating the folders it needs), then rename it
    to ``path``: nothing half-written ever has the final name, and the partial file is removed
    when writing fails or is interrupted.

    Raises
    ------
    InputError
        The file cannot be written (named, with the reason).
    """
    tmp = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        tmp.replace(path)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot be written ({exc.strerror or exc})") from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # its folder could not be made: there is nothing to remove
