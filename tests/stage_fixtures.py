"""The streams and fixtures of the stage contract suite (tests/test_stage_contract.py).

A stage is fed from one of three streams, each long enough for several chunks and each with a
6.7 s gap (windows and chunks go on through it: the step grid is public):

- ``GAZE``: ordered gaze (detectors, window features, gaze ticks, the pipelines);
- ``ROWS``: the feature rows of ``GAZE``, fed straight to chunking stages, so that a stream
  continuing the step grid after a flush or reset would complete a chunk left over from before;
- ``ARRIVAL``: ``CAPTURE`` (``GAZE`` as Capture sends it: monocular samples, alternately eye 0
  and 1) in the order it arrives, a random half of the samples up to 90 ms late, for the stages
  that put gaze in order (the reorder buffer, the session).
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from streamdp.events import EventBatch
from streamdp.gaze import GazeBatch, GazeColumns, Recording
from streamdp.pipeline import FeaturePipeline
from streamdp.schema import N_FEATURES
from streamdp.stages.chunker import Chunker
from streamdp.stages.events import EventConfig, EventDetector
from streamdp.stages.features import FeatureRows, WindowConfig
from streamdp.stages.gaze_ticks import Ticks
from streamdp.synthetic import generate

WINDOW = WindowConfig(window=4.0, step=0.25)
EVENTS = EventConfig()
CHUNK_LENGTH = 8
MAX_DELAY = 0.09  # s; the reorder window of the fixtures (0.1 s) holds back more than that
# two stretches of gaze with a 6.7 s gap (longer than the window): the grid goes on through it,
# with partial chunks at the start, the end and half the rows.
GAZE = GazeBatch.concat(
    [
        generate(duration=13.3, rate=120.0, seed=11, person=4, start_time=1000.3).recording.gaze,
        generate(duration=9.6, rate=120.0, seed=12, person=4, start_time=1020.0).recording.gaze,
    ]
)

Stream = Any  # GazeBatch, FeatureRows or GazeColumns: each has ``t`` and a length
Flat = dict[str, Any]  # named arrays, or lists of plain values (ledgers)


def _capture_like(gaze: GazeBatch, seed: int) -> tuple[GazeBatch, GazeColumns]:
    """``gaze`` as alternate eye-0/eye-1 samples, and those samples in arrival order."""
    ordered = dataclasses.replace(gaze, eye_id=(np.arange(len(gaze)) % 2).astype(np.int8))
    rng = np.random.default_rng(seed)
    delay = np.where(rng.random(len(gaze)) < 0.5, rng.uniform(0.0, MAX_DELAY, len(gaze)), 0.0)
    arrival = np.argsort(gaze.t + delay, kind="stable")
    return ordered, GazeColumns.from_batch(ordered).take(arrival)


CAPTURE, ARRIVAL = _capture_like(GAZE, seed=3)

# ----------------------------------------------------------------------------- streams


def take(stream: Stream, start: int, stop: int) -> Stream:
    if isinstance(stream, GazeBatch):
        return stream.slice(start, stop)
    if isinstance(stream, FeatureRows):
        return FeatureRows(stream.t[start:stop], stream.values[start:stop])
    return stream.take(slice(start, stop))


def cut(stream: Stream, cuts: Sequence[int]) -> list[Stream]:
    """Consecutive parts of ``stream`` split at the (sorted) item indices ``cuts``."""
    bounds = [0, *cuts, len(stream)]
    return [take(stream, a, b) for a, b in itertools.pairwise(bounds)]


def prefix(stream: Stream, seconds: float) -> Stream:
    """The first items of ``stream``, as many as it has in its first ``seconds``."""
    t = np.asarray(stream.t)
    return take(stream, 0, int(np.count_nonzero(t < t.min() + seconds)))


def starting_at(stream: Stream, t0: float) -> Stream:
    """``stream`` moved in time so that its earliest item is at ``t0``."""
    return dataclasses.replace(stream, t=stream.t + (t0 - float(np.min(stream.t))))


# ----------------------------------------------------------------------------- fixtures


def need(module: str, *names: str) -> list[Any]:
    """Names from a module, skipping the test when the tree does not have them (yet)."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        pytest.skip(f"{module} cannot be imported: {exc}")
    missing = [n for n in names if not hasattr(mod, n)]
    if missing:
        pytest.skip(f"{module} has no {', '.join(missing)}")
    return [getattr(mod, n) for n in names]


@dataclass(frozen=True)
class Fixture:
    """How to build a stage and feed it.

    ``make(cls, seed)`` builds a fresh stage (stages without a generator ignore the seed);
    ``stream`` is the whole input stream; ``inputs(parts)`` turns consecutive parts of it into
    the stage's own inputs, one per ``update`` call (through fresh upstream stages, which are
    split-invariant too, so a split of the stream is a split of the stage's input);
    ``flatten(outputs)`` joins what ``update`` and ``flush`` returned into named arrays.
    ``seeded`` stages draw noise from a generator seeded by ``seed``. ``gap`` is the time from
    the last item of a stream to the first of one continuing its clock. ``expected(cls, seed)``,
    where given, is the output of the whole stream made another way.
    """

    make: Callable[[type, int], Any]
    stream: Stream
    flatten: Callable[[list[Any]], Flat]
    inputs: Callable[[list[Stream]], list[Any]] = list
    seeded: bool = False
    gap: float = 0.005
    expected: Callable[[type, int], Flat] | None = None


def _through(*upstream: Callable[[], Any]) -> Callable[[list[Stream]], list[Any]]:
    """Inputs made by fresh upstream stages: one per part, then each upstream's flush."""

    def inputs(parts: list[Stream]) -> list[Any]:
        items: list[Any] = list(parts)
        for make in upstream:
            stage = make()
            items = [stage.update(x) for x in items] + [stage.flush()]
        return items

    return inputs


def _rows() -> FeatureRows:
    features = FeaturePipeline(window=WINDOW)
    return FeatureRows.concat([features.update(GAZE), features.flush()])


def _mechanism() -> Any:
    make_mechanism, default_profile = need("streamdp.privacy", "make_mechanism", "default_profile")
    return make_mechanism("dcfpa", epsilon=1.0, bounds=default_profile(), chunk_length=CHUNK_LENGTH)


def _gaze_mechanism() -> Any:
    (registry,) = need("streamdp.privacy.gaze_mechanisms", "GAZE_MECHANISMS")
    return registry["geo-bd"](epsilon=60.0, w=60)  # the stateful one: its state must follow the splits


def _gaze_ticks() -> Any:
    (ticks,) = need("streamdp.stages.gaze_ticks", "GazeTicks")
    return ticks()


def _rng(seed: int) -> Any:
    (secure_generator,) = need("streamdp.privacy.noise", "secure_generator")
    return secure_generator(seed)


def _session_config() -> Any:
    (config,) = need("streamdp.config", "SessionConfig")
    return config(chunk_length=CHUNK_LENGTH, window=WINDOW.window, step=WINDOW.step, reorder_window=0.1)


def _ordered_session(cls: type, seed: int) -> Flat:
    recording = Recording(CAPTURE, None, "capture")
    return releases_flat([cls.for_recording(_session_config(), recording, seed=seed).run(recording)])


def events_flat(parts: list[EventBatch]) -> Flat:
    e = EventBatch.concat(parts)
    f, s = e.fixations, e.saccades
    return {
        **{f"fix.{k}": getattr(f, k) for k in ("start", "end", "x", "y", "var_x", "var_y", "pupil_mean", "pupil_var")},
        **{f"sac.{k}": getattr(s, k) for k in ("start", "end", "amplitude", "angle", "dx", "letter")},
        "blk.start": e.blinks.start,
        "blk.end": e.blinks.end,
        "restarts": e.restarts,
    }


def rows_flat(parts: list[FeatureRows]) -> Flat:
    rows = FeatureRows.concat(parts)
    return {"t": rows.t, "values": rows.values}


def chunks_flat(parts: list[list[Any]]) -> Flat:
    chunks = [c for p in parts for c in p]
    return {
        "t": np.concatenate([c.t for c in chunks]) if chunks else np.empty(0),
        "values": np.concatenate([c.values for c in chunks]) if chunks else np.empty((0, N_FEATURES)),
    }


def releases_flat(parts: list[list[Any]]) -> Flat:
    releases = [r for p in parts for r in p]
    return {**chunks_flat([releases]), "ledger": [dict(r.ledger) for r in releases]}


def ticks_flat(parts: list[Ticks]) -> Flat:
    ticks = Ticks.concat(parts)
    return {"t": ticks.t, "deg": ticks.deg, "has_gaze": ticks.has_gaze}


def columns_flat(parts: list[GazeColumns]) -> Flat:
    fields = [f.name for f in dataclasses.fields(GazeColumns)]
    return {k: np.concatenate([np.asarray(getattr(p, k)) for p in parts]) for k in fields}


ROWS = _rows()

#: every stage of the package, by qualified name (a stage not yet in the tree is skipped)
FIXTURES: dict[str, Fixture] = {
    "streamdp.stages.events.EventDetector": Fixture(lambda cls, _: cls(EVENTS), GAZE, events_flat),
    "streamdp.stages.features.WindowFeatures": Fixture(
        lambda cls, _: cls(WINDOW), GAZE, rows_flat, _through(lambda: EventDetector(EVENTS))
    ),
    "streamdp.stages.chunker.Chunker": Fixture(
        lambda cls, _: cls(CHUNK_LENGTH, WINDOW.step), ROWS, chunks_flat, gap=WINDOW.step
    ),
    "streamdp.stages.privatizer.Privatizer": Fixture(
        lambda cls, seed: cls(_mechanism(), rng=_rng(seed), window=WINDOW.window, step=WINDOW.step),
        ROWS,
        releases_flat,
        _through(lambda: Chunker(CHUNK_LENGTH, WINDOW.step)),
        seeded=True,
        gap=WINDOW.step,
    ),
    "streamdp.stages.reorder.ReorderBuffer": Fixture(
        lambda cls, _: cls(window=0.1),
        ARRIVAL,
        columns_flat,
        expected=lambda cls, _: columns_flat([GazeColumns.from_batch(CAPTURE)]),
    ),
    "streamdp.stages.gaze_ticks.GazeTicks": Fixture(lambda cls, _: cls(), GAZE, ticks_flat),
    "streamdp.stages.gaze_privatizer.GazePrivatizer": Fixture(
        lambda cls, seed: cls(_gaze_mechanism(), fov_deg=EVENTS.fov_deg, rate=60.0, rng=_rng(seed)),
        GAZE,
        releases_flat,
        _through(_gaze_ticks),
        seeded=True,
    ),
    "streamdp.gaze_channel.GazeChannel": Fixture(
        lambda cls, seed: cls(
            _gaze_mechanism(), rate=60.0, fov_deg=EVENTS.fov_deg, min_confidence=EVENTS.min_confidence, rng=_rng(seed)
        ),
        GAZE,
        releases_flat,
        seeded=True,
    ),
    "streamdp.pipeline.FeaturePipeline": Fixture(lambda cls, _: cls(window=WINDOW), GAZE, rows_flat),
    "streamdp.pipeline.ChunkPrivatizer": Fixture(
        lambda cls, seed: cls(_mechanism(), rng=_rng(seed), window=WINDOW),
        ROWS,
        releases_flat,
        seeded=True,
        gap=WINDOW.step,
    ),
    "streamdp.pipeline.PrivatePipeline": Fixture(
        lambda cls, seed: cls(_mechanism(), rng=_rng(seed), window=WINDOW), GAZE, releases_flat, seeded=True
    ),
    "streamdp.session.Session": Fixture(
        lambda cls, seed: cls(_session_config(), seed=seed),
        ARRIVAL,
        releases_flat,
        seeded=True,
        expected=_ordered_session,
    ),
}
