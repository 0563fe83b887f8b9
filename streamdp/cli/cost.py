"""What work sized by the user's numbers will cost, said before it starts.

A step of ``1e-6`` s, a demo of ``1e7`` s, a grid of many points × seeds: the size of such work
comes from the command line, not from a file the user can see. Before it starts, a command
estimates its time and memory from per-unit costs measured on a development machine (the
constants below; beside each, where and how it was measured) and calls
:func:`~streamdp.cli.progress.preview`: work whose memory exceeds what this machine has available
is refused (exit status 2, with the estimate), and work over a minute is announced in one line on
stderr, after which :class:`~streamdp.cli.progress.Progress` reports how far it got.

The estimates need not be precise: per-unit costs change with the machine, its load and the data,
so each is stated as good within a factor of :data:`UNCERTAINTY` (the measurements below agreed
with the model within a factor of 2 on a loaded 2-core machine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..schema import N_FEATURES
from .format import counted

__all__ = [
    "UNCERTAINTY",
    "Cost",
    "audit_cost",
    "demo_cost",
    "evaluate_cost",
    "feature_cost",
    "feature_steps",
    "gaze_evaluate_cost",
    "heatmap_cost",
    "human_bytes",
    "human_seconds",
    "simulate_cost",
]

#: the factor within which an estimate is stated to hold, either way
UNCERTAINTY = 3.0

# Per-unit costs, measured 2026-11-26 on the development machine (2 cores, 23 GB, Python 3.11,
# NumPy 2; other test runs sharing it), each by timing the public call named and /usr/bin/time's
# maximum resident size of the command, at two sizes, the difference divided by the units added.

#: streamdp.synthetic.generate at 200 Hz, 480 000 samples: 2.0 s, 159 B a sample at its peak
SYNTHETIC_S = 4.2e-6
#: gaze held in memory, a sample (GazeBatch columns and their copies while read or generated)
GAZE_BYTES = 160.0
#: Session.feature_rows at step 0.5 s on 480 000 samples: 1.7 µs a sample (event detection)
EVENTS_S = 2.0e-6
#: a feature row costs ROW_S + ROW_WINDOW_S × window/step: its window's mean and variance merge
#: window/(8·step) public groups (stages._window_stats). Fitted on Session.feature_rows over 40–300 s
#: of gaze at steps 0.5–0.001 s (0.33 ms a row at window/step 60, 3.5 ms at 6 000, 15.7 ms at 30 000)
ROW_S = 1.0e-4
ROW_WINDOW_S = 6.0e-7
#: ``streamdp features --synthetic 4000 --step 0.05`` vs ``--step 0.5``: 910 B more a row
ROW_BYTES = 1000.0
#: the session's chunking and mechanism, a sample: ``demo --offline --seconds 12000`` vs 3000
#: (6.6 µs a sample in all, generation and features included; 158 B a sample)
SESSION_S = 0.4e-6
SESSION_BYTES = 160.0
#: a datum through the simulated Capture's sockets (and the relay's): ``simulate --speed 0
#: --no-wait --synthetic 4000`` vs 200 (75 µs, 420 B a sample); the networked demo, 80 µs
NETWORK_S = 75e-6
NETWORK_BYTES = 420.0
#: one evaluation job (a grid point × a seed) a feature step of every recording: sanitize and
#: classify, 56–126 µs a step over 6–12 synthetic people × 240–960 s (offline.evaluate, 1 worker)
EVALUATE_STEP_S = 1.2e-4
#: the synthetic study at 120 Hz, generation and features: 3.4 µs a sample (6 people × 960 s)
STUDY_S = 3.4e-6
#: one gaze-channel job (offline.evaluate_gaze): 4 ms a person for dwell and pursuit, and with
#: re-identification 0.3 s plus 0.7 ms a person and second of reading and search (2–8 people)
GAZE_JOB_PERSON_S = 4e-3
GAZE_JOB_REID_S = 0.3
GAZE_JOB_REID_SECOND_S = 7e-4
#: the heatmap's picture, a pixel of its figure (Agg at 120 dpi): ``heatmap --shape 960x1280``
#: vs 24x32 over 3 observers, 34 s and 7.2 GB more (0.12 µs and 25 B a figure pixel)
FIGURE_PIXEL_S = 1.2e-7
FIGURE_PIXEL_BYTES = 25.0
#: an audit run of one mechanism at chunk length 32: ``audit --mechanisms lpa --runs 8000`` vs
#: 2000 (7 ms and 220 KB a run, its outputs kept for the test); dcfpa's 12 variants, 6 ms a run
AUDIT_RUN_S = 7e-3
AUDIT_RUN_BYTES = 220e3
AUDIT_CHUNK = 32
#: a gaze-channel audit trial: ``audit --channel gaze --runs 2000`` vs 500, 6.2 ms a trial
GAZE_AUDIT_TRIAL_S = 6.2e-3


@dataclass(frozen=True)
class Cost:
    """The estimated time (s) and peak memory (bytes) of some work, what it consists of (e.g.
    ``"2e+07 steps × 52 features"``) and which options would make it smaller."""

    seconds: float
    bytes: float
    what: str
    smaller: str

    def describe(self) -> str:
        """The estimate in words.

        Examples
        --------
        >>> Cost(4000.0, 3e9, "1e+07 steps", "a larger --step").describe()
        'about 67 min and 3 GB of memory for 1e+07 steps (an estimate, within a factor of 3)'
        """
        return (
            f"about {human_seconds(self.seconds)} and {human_bytes(self.bytes)} of memory for {self.what} "
            f"(an estimate, within a factor of {UNCERTAINTY:g})"
        )


def _counts(**values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {value!r}")
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"{name} must be finite and ≥ 0, got {value!r}")


def feature_steps(seconds: float, step: float, window: float) -> float:
    """Feature steps a recording of ``seconds`` gives: one a ``step`` once a ``window`` is full.

    Examples
    --------
    >>> feature_steps(40.0, 0.5, 30.0), feature_steps(20.0, 0.5, 30.0)
    (21.0, 0.0)
    """
    return math.floor((seconds - window) / step) + 1.0 if seconds >= window else 0.0


def _row_s(step: float, window: float) -> float:
    return ROW_S + ROW_WINDOW_S * window / step


def feature_cost(
    *, seconds: float, rate: float, step: float, window: float, recordings: int = 1, synthetic: bool = False
) -> Cost:
    """Feature rows of ``recordings`` recordings of ``seconds`` of gaze at ``rate`` Hz each
    (``synthetic``: generated first), one every ``step`` s once a ``window`` is full.

    Raises
    ------
    TypeError, ValueError
        A value that is not a finite number ≥ 0 (``step`` > 0), named.

    Examples
    --------
    >>> cost = feature_cost(seconds=3600.0, rate=200.0, step=1e-6, window=30.0)
    >>> cost.what, cost.bytes > 1e12
    ('3.6e+09 steps × 52 features', True)
    """
    _counts(seconds=seconds, rate=rate, step=step, window=window, recordings=recordings)
    if step <= 0:
        raise ValueError(f"step must be > 0, got {step!r}")
    samples, rows = seconds * rate, feature_steps(seconds, step, window)
    per_sample = EVENTS_S + (SYNTHETIC_S if synthetic else 0.0)
    many = f" × {counted(recordings, 'recording')}" if recordings != 1 else ""
    return Cost(
        seconds=recordings * (samples * per_sample + rows * _row_s(step, window)),
        bytes=samples * GAZE_BYTES + rows * ROW_BYTES,
        what=f"{rows:.2g} steps × {N_FEATURES} features{many}",
        smaller="a larger --step or less gaze",
    )


def demo_cost(*, seconds: float, rate: float, step: float, window: float, networked: bool) -> Cost:
    """The demo: ``seconds`` of synthetic gaze at ``rate`` Hz generated, sanitized in chunks of
    feature steps every ``step`` s, through sockets when ``networked``.

    Raises
    ------
    TypeError, ValueError
        As :func:`feature_cost`.

    Examples
    --------
    >>> demo_cost(seconds=1e7, rate=200.0, step=0.5, window=30.0, networked=False).bytes > 1e11
    True
    """
    features = feature_cost(seconds=seconds, rate=rate, step=step, window=window, synthetic=True)
    samples = seconds * rate
    per_sample = SESSION_S + (NETWORK_S if networked else 0.0)
    held = NETWORK_BYTES if networked else SESSION_BYTES
    return Cost(
        seconds=features.seconds + samples * per_sample,
        bytes=samples * max(held, GAZE_BYTES) + features.bytes - samples * GAZE_BYTES,
        what=f"{samples:.2g} gaze samples → {features.what}",
        smaller="a smaller --seconds (or a larger --step)",
    )


def simulate_cost(*, samples: float, synthetic: bool, paced: bool) -> Cost:
    """The simulated Capture: ``samples`` datums (``synthetic``: generated first) published as
    fast as it can, or ``paced`` at a speed (the wait is the user's choice, not work).

    Raises
    ------
    TypeError, ValueError
        ``samples`` is not a finite number ≥ 0.

    Examples
    --------
    >>> simulate_cost(samples=2e9, synthetic=True, paced=True).bytes > 1e11
    True
    """
    _counts(samples=samples)
    per_sample = (SYNTHETIC_S if synthetic else 0.0) + (0.0 if paced else NETWORK_S)
    return Cost(
        seconds=samples * per_sample,
        bytes=samples * NETWORK_BYTES,
        what=f"{samples:.2g} gaze datums",
        smaller="a smaller --synthetic" if synthetic else "a shorter recording",
    )


def evaluate_cost(*, jobs: int, steps: float, parallel: int, study_samples: float = 0.0) -> Cost:
    """An evaluation: ``jobs`` grid points × seeds, each over ``steps`` feature steps of all
    recordings together, on ``parallel`` processes, after a synthetic study of
    ``study_samples`` gaze samples (0: recordings already read).

    Raises
    ------
    TypeError, ValueError
        A value that is not a finite number ≥ 0 (``parallel`` ≥ 1), named.

    Examples
    --------
    >>> evaluate_cost(jobs=10**6, steps=5040.0, parallel=2).describe()[:14]
    'about 3.5 days'
    """
    _counts(jobs=jobs, steps=steps, parallel=parallel, study_samples=study_samples)
    if parallel < 1:
        raise ValueError(f"parallel must be ≥ 1, got {parallel!r}")
    return Cost(
        seconds=study_samples * STUDY_S + jobs * steps * EVALUATE_STEP_S / min(parallel, max(jobs, 1)),
        bytes=study_samples * GAZE_BYTES + steps * ROW_BYTES * (parallel + 1),
        what=(f"{study_samples:.2g} synthetic gaze samples, then " if study_samples else "")
        + f"{counted(jobs, 'job')} (grid points × seeds) over {steps:.2g} feature steps",
        smaller="fewer --mechanisms, --epsilons, --chunk-lengths or --seeds, or fewer or shorter recordings",
    )


def gaze_evaluate_cost(*, jobs: int, people: int, seconds: float, reid: bool, parallel: int) -> Cost:
    """The gaze channel's evaluation: ``jobs`` grid points × seeds over ``people`` synthetic
    people (``reid``: each reading and searching ``seconds`` at 120 Hz), on ``parallel``
    processes.

    Raises
    ------
    TypeError, ValueError
        As :func:`evaluate_cost`.

    Examples
    --------
    >>> gaze_evaluate_cost(jobs=20, people=6, seconds=240.0, reid=False, parallel=2).seconds < 1
    True
    """
    _counts(jobs=jobs, people=people, seconds=seconds, parallel=parallel)
    if parallel < 1:
        raise ValueError(f"parallel must be ≥ 1, got {parallel!r}")
    job = people * GAZE_JOB_PERSON_S
    samples = 0.0
    if reid:
        job += GAZE_JOB_REID_S + people * seconds * GAZE_JOB_REID_SECOND_S
        samples = people * 2 * seconds * 120.0
    return Cost(
        seconds=samples * STUDY_S + jobs * job / min(parallel, max(jobs, 1)),
        bytes=samples * GAZE_BYTES * 2,
        what=f"{counted(jobs, 'job')} (grid points × seeds) over {people} synthetic people",
        smaller="fewer --gaze-mechanisms, --tick-epsilons, --gaze-windows or --seeds, fewer --people, or --no-reid",
    )


def heatmap_cost(*, observers: int, pixels: float, figure_pixels: float) -> Cost:
    """A heatmap of ``pixels`` cells over ``observers`` recordings, drawn in a picture of
    ``figure_pixels``.

    Raises
    ------
    TypeError, ValueError
        A value that is not a finite number ≥ 0, named.

    Examples
    --------
    >>> heatmap_cost(observers=3, pixels=1.2e6, figure_pixels=2.8e8).describe()[:28]
    'about 34 s and 7.1 GB of mem'
    """
    _counts(observers=observers, pixels=pixels, figure_pixels=figure_pixels)
    return Cost(
        seconds=figure_pixels * FIGURE_PIXEL_S,
        bytes=figure_pixels * FIGURE_PIXEL_BYTES + 2 * 8 * observers * pixels,
        what=f"a map of {pixels:.2g} pixels over {counted(observers, 'observer')} and its picture",
        smaller="a smaller --shape",
    )


def audit_cost(*, audits: int, gaze_audits: int, runs: int, chunk_length: int) -> Cost:
    """An audit of ``audits`` chunk mechanisms and ``gaze_audits`` gaze mechanisms, ``runs``
    runs per neighbouring input, chunks of ``chunk_length`` steps.

    Raises
    ------
    TypeError, ValueError
        A value that is not a finite number ≥ 0, named.

    Examples
    --------
    >>> audit_cost(audits=38, gaze_audits=2, runs=2000, chunk_length=32).describe()[:13]
    'about 9.3 min'
    """
    _counts(audits=audits, gaze_audits=gaze_audits, runs=runs, chunk_length=chunk_length)
    scale = chunk_length / AUDIT_CHUNK
    return Cost(
        seconds=runs * (audits * AUDIT_RUN_S * scale + gaze_audits * GAZE_AUDIT_TRIAL_S),
        bytes=runs * AUDIT_RUN_BYTES * scale,
        what=f"{counted(audits + gaze_audits, 'mechanism')} × {counted(runs, 'run')}",
        smaller="a smaller --runs or fewer mechanisms",
    )


def human_seconds(seconds: float) -> str:
    """A duration, rounded to the unit that suits it.

    Examples
    --------
    >>> [human_seconds(s) for s in (0.4, 42, 200, 7200, 3e5, 4e6, 2e8, 6e10)]
    ['0.4 s', '42 s', '3.3 min', '2 h', '3.5 days', '6.6 weeks', '6.3 years', '1900 years']
    """
    for unit, size in (("years", 365.25 * 86400), ("weeks", 7 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size if unit != "min" else seconds >= 100:
            return f"{_figure(seconds / size)} {unit}"
    return f"{_figure(seconds)} s"


def human_bytes(size: float) -> str:
    """A size in bytes, in the unit that suits it (powers of 1000).

    Examples
    --------
    >>> human_bytes(512), human_bytes(3.2e9), human_bytes(1.5e12)
    ('512 B', '3.2 GB', '1.5 TB')
    """
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{_figure(size / scale)} {unit}"
    return f"{size:.0f} B"


def _figure(value: float) -> str:
    """Two significant figures, without an exponent (an estimate has no more)."""
    return f"{value:.2g}" if value < 100 else f"{float(f'{value:.2g}'):.0f}"
