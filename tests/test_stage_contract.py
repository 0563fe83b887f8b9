"""One contract suite over every streaming stage, found automatically (as river's estimator checks).

Every module of the streamdp package is imported and every concrete subclass of
:class:`streamdp.stages.base.Stage` is checked for: batch-split invariance, single-sample batches,
flush idempotence (and a new stream after a flush), reset equals a fresh stage, pickling mid-stream,
seeding, non-empty output. Every stage is driven from gaze: its fixture runs fresh upstream stages
over the gaze parts to make its own input, and since those are split-invariant too, a split of the
gaze is a split of the stage's own input stream. A stage without a fixture in ``FIXTURES`` fails
``test_every_stage_has_a_fixture``, so a new stage cannot skip the contract.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pickle
import pkgutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamdp
from streamdp.events import EventBatch
from streamdp.gaze import GazeBatch
from streamdp.schema import N_FEATURES
from streamdp.stages.base import Stage
from streamdp.stages.chunker import Chunker
from streamdp.stages.events import EventConfig, EventDetector
from streamdp.stages.features import FeatureRows, WindowConfig
from streamdp.synthetic import generate

# ----------------------------------------------------------------------------- discovery


def _import_every_module() -> dict[str, str]:
    """Import all of streamdp; return the modules that failed for a reason other than a missing
    optional dependency, with the reason."""
    broken: dict[str, str] = {}

    def import_one(name: str) -> None:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] == "streamdp":
                broken[name] = f"{type(exc).__name__}: {exc}"
            # else: an optional dependency is not installed; its stages are out of scope here
        except Exception as exc:  # reported by test_every_module_imports
            broken[name] = f"{type(exc).__name__}: {exc}"

    for info in pkgutil.walk_packages(streamdp.__path__, "streamdp.", onerror=import_one):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            import_one(info.name)
    return broken


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _stage_classes() -> dict[str, type[Stage[Any, Any]]]:
    """Concrete Stage subclasses reachable by name in a streamdp module (not doctest-local ones)."""
    found: dict[str, type[Stage[Any, Any]]] = {}
    todo = list(Stage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        module = sys.modules.get(cls.__module__)
        if inspect.isabstract(cls) or module is None or not cls.__module__.startswith("streamdp."):
            continue
        try:
            named = functools.reduce(getattr, cls.__qualname__.split("."), module)
        except AttributeError:
            continue
        if named is cls:
            found[_qualified(cls)] = cls
    return found


BROKEN_MODULES = _import_every_module()
STAGES = _stage_classes()

# ----------------------------------------------------------------------------- the stream

WINDOW = WindowConfig(window=4.0, step=0.25)
EVENTS = EventConfig(segment_gap=WINDOW.window)
CHUNK_LENGTH = 8
# two segments with a 6 s gap (longer than the segment gap): windows and chunks restart after it
GAZE = GazeBatch.concat(
    [
        generate(duration=14.0, rate=120.0, seed=11, person=4).recording.gaze,
        generate(duration=10.0, rate=120.0, seed=12, person=4, start_time=1020.0).recording.gaze,
    ]
)
SHORT = GAZE.slice(0, int(np.searchsorted(GAZE.t, GAZE.t[0] + 7.0)))  # one chunk's worth

Flat = dict[str, Any]  # named arrays, or lists of plain values (ledgers)


def _need(module: str, *names: str) -> list[Any]:
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
    """How to build a stage and feed it from gaze.

    ``make(cls, seed)`` builds a fresh stage (stages without a generator ignore the seed);
    ``inputs(parts)`` turns consecutive gaze batches into the stage's own inputs, one per
    ``update`` call; ``flatten(outputs)`` joins what ``update`` and ``flush`` returned into named
    arrays. ``seeded`` stages draw noise from a generator seeded by ``seed``.
    """

    make: Callable[[type, int], Any]
    inputs: Callable[[list[GazeBatch]], list[Any]]
    flatten: Callable[[list[Any]], Flat]
    seeded: bool = False


def _gaze(parts: list[GazeBatch]) -> list[Any]:
    return list(parts)


def _columns(parts: list[GazeBatch]) -> list[Any]:
    (columns,) = _need("streamdp.pupil_wire", "GazeColumns")
    return [columns.from_batch(p) for p in parts]


def _through(*upstream: Callable[[], Any]) -> Callable[[list[GazeBatch]], list[Any]]:
    """Inputs made by fresh upstream stages: one per gaze part, then each upstream's flush."""

    def inputs(parts: list[GazeBatch]) -> list[Any]:
        items: list[Any] = list(parts)
        for make in upstream:
            stage = make()
            items = [stage.update(x) for x in items] + [stage.flush()]
        return items

    return inputs


def _features() -> Any:
    (pipeline,) = _need("streamdp.pipeline", "FeaturePipeline")
    return pipeline(window=WINDOW)


def _mechanism() -> Any:
    make_mechanism, default_profile = _need("streamdp.privacy", "make_mechanism", "default_profile")
    return make_mechanism("dcfpa", epsilon=1.0, bounds=default_profile(), chunk_length=CHUNK_LENGTH)


def _rng(seed: int) -> Any:
    (secure_generator,) = _need("streamdp.privacy.noise", "secure_generator")
    return secure_generator(seed)


def _session(cls: type, seed: int) -> Any:
    (config,) = _need("streamdp.config", "SessionConfig")
    return cls(config(chunk_length=CHUNK_LENGTH, window=WINDOW.window, step=WINDOW.step), seed=seed)


def _events_flat(parts: list[EventBatch]) -> Flat:
    e = EventBatch.concat(parts)
    f, s = e.fixations, e.saccades
    return {
        **{f"fix.{k}": getattr(f, k) for k in ("start", "end", "x", "y", "var_x", "var_y", "pupil_mean", "pupil_var")},
        **{f"sac.{k}": getattr(s, k) for k in ("start", "end", "amplitude", "angle", "dx", "letter")},
        "blk.start": e.blinks.start,
        "blk.end": e.blinks.end,
        "restarts": e.restarts,
        "segment_ends": e.segment_ends,
    }


def _rows_flat(parts: list[FeatureRows]) -> Flat:
    rows = FeatureRows.concat(parts)
    return {"t": rows.t, "values": rows.values}


def _chunks_flat(parts: list[list[Any]]) -> Flat:
    chunks = [c for p in parts for c in p]
    return {
        "t": np.concatenate([c.t for c in chunks]) if chunks else np.empty(0),
        "values": np.concatenate([c.values for c in chunks]) if chunks else np.empty((0, N_FEATURES)),
    }


def _releases_flat(parts: list[list[Any]]) -> Flat:
    releases = [r for p in parts for r in p]
    return {
        **_chunks_flat([releases]),
        "ledger": [dict(r.ledger) for r in releases],
    }


_COLUMNS = ("t", "x", "y", "confidence", "diameter_mm", "diameter_px", "eye_id", "valid")


def _columns_flat(parts: list[Any]) -> Flat:
    return {k: np.concatenate([np.asarray(getattr(p, k)) for p in parts]) for k in _COLUMNS}


#: every stage of the package, by qualified name (a stage not yet in the tree is skipped)
FIXTURES: dict[str, Fixture] = {
    "streamdp.stages.events.EventDetector": Fixture(lambda cls, _: cls(EVENTS), _gaze, _events_flat),
    "streamdp.stages.features.WindowFeatures": Fixture(
        lambda cls, _: cls(WINDOW), _through(lambda: EventDetector(EVENTS)), _rows_flat
    ),
    "streamdp.stages.chunker.Chunker": Fixture(
        lambda cls, _: cls(CHUNK_LENGTH, WINDOW.step), _through(_features), _chunks_flat
    ),
    "streamdp.stages.privatizer.Privatizer": Fixture(
        lambda cls, seed: cls(_mechanism(), rng=_rng(seed), window=WINDOW.window, step=WINDOW.step),
        _through(_features, lambda: Chunker(CHUNK_LENGTH, WINDOW.step)),
        _releases_flat,
        seeded=True,
    ),
    "streamdp.stages.reorder.ReorderBuffer": Fixture(lambda cls, _: cls(window=0.05), _columns, _columns_flat),
    "streamdp.pipeline.FeaturePipeline": Fixture(lambda cls, _: cls(window=WINDOW), _gaze, _rows_flat),
    "streamdp.pipeline.ChunkPrivatizer": Fixture(
        lambda cls, seed: cls(_mechanism(), rng=_rng(seed), window=WINDOW),
        _through(_features),
        _releases_flat,
        seeded=True,
    ),
    "streamdp.pipeline.PrivatePipeline": Fixture(
        lambda cls, seed: cls(_mechanism(), rng=_rng(seed), window=WINDOW), _gaze, _releases_flat, seeded=True
    ),
    "streamdp.session.Session": Fixture(_session, _columns, _releases_flat, seeded=True),
}

NAMES = sorted(set(STAGES) | set(FIXTURES))

# ----------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Case:
    cls: type
    fixture: Fixture

    def make(self, seed: int = 1) -> Any:
        return self.fixture.make(self.cls, seed)

    def feed(self, stage: Any, inputs: list[Any]) -> list[Any]:
        return [stage.update(x) for x in inputs]

    def run(self, gaze: GazeBatch, cuts: Sequence[int] = (), seed: int = 1) -> Flat:
        """A fresh stage over ``gaze`` cut at ``cuts``, then flushed."""
        stage = self.make(seed)
        return self.fixture.flatten([*self.feed(stage, self.fixture.inputs(gaze.split(list(cuts)))), stage.flush()])


def _case(name: str) -> Case:
    cls = STAGES.get(name)
    if cls is None:
        module, _, attr = name.rpartition(".")
        if module in BROKEN_MODULES:
            pytest.skip(f"{name}: its module does not import ({BROKEN_MODULES[module]})")
        if not hasattr(sys.modules.get(module), attr):
            pytest.skip(f"{name} does not exist in this tree")
        pytest.skip(f"{name} exists but is not a Stage subclass")
    if name not in FIXTURES:
        pytest.skip(f"{name} has no fixture (test_every_stage_has_a_fixture fails for it)")
    return Case(cls, FIXTURES[name])


@functools.cache
def _whole(name: str) -> Flat:
    return _case(name).run(GAZE)


def _assert_identical(a: Flat, b: Flat, context: str = "output") -> None:
    assert a.keys() == b.keys(), context
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, f"{context}: {k}"
            assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind in "fc"), f"{context}: {k}"
        else:
            assert a[k] == b[k], f"{context}: {k}"


def _is_empty(flat: Flat) -> bool:
    return all(len(v) == 0 for v in flat.values())


_BUDGET_KEYS = ("chunk_index", "epsilon_spent", "epsilon_w")


def _stream_part(case: Case, flat: Flat) -> Flat:
    """What a new stream must reproduce: everything, except in a privatizing stage the noise
    (the generator is never rewound: replayed noise would leak the difference of two streams)
    and the budget spent (kept on purpose)."""
    if not case.fixture.seeded:
        return flat
    return {
        **flat,
        "values": np.asarray(flat["values"].shape),
        "ledger": [{k: v for k, v in e.items() if k not in _BUDGET_KEYS} for e in flat["ledger"]],
    }


def _assert_new_stream(case: Case, stage: Any, fresh: Flat, after: str) -> None:
    """``stage`` (reset or flushed after some stream) must treat the whole gaze as a fresh one."""
    again = case.fixture.flatten([*case.feed(stage, case.fixture.inputs([GAZE])), stage.flush()])
    _assert_identical(_stream_part(case, again), _stream_part(case, fresh), f"a new stream after {after}")
    if case.fixture.seeded:
        assert not np.array_equal(again["values"], fresh["values"]), "the noise was replayed"
        assert again["ledger"][0]["epsilon_spent"] > fresh["ledger"][0]["epsilon_spent"], "the budget was reset"


# ----------------------------------------------------------------------------- the contract


def test_every_module_imports():
    assert not BROKEN_MODULES, f"modules that do not import: {BROKEN_MODULES}"


def test_every_stage_has_a_fixture():
    missing = sorted(set(STAGES) - set(FIXTURES))
    assert not missing, f"stages without a contract fixture in tests/test_stage_contract.py: {missing}"


def test_discovery_finds_the_stages_it_was_written_with():
    assert {_qualified(c) for c in (EventDetector, Chunker)} <= set(STAGES)


@pytest.mark.parametrize("name", NAMES)
def test_output_is_not_empty_and_deterministic(name):
    case = _case(name)
    assert not _is_empty(_whole(name))
    _assert_identical(case.run(GAZE), _whole(name))


@pytest.mark.parametrize("name", NAMES)
def test_any_batch_split_gives_identical_output(name):
    case, whole = _case(name), _whole(name)

    # cuts may repeat or sit at either end: empty batches are part of every stream
    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cuts=st.lists(st.integers(0, len(GAZE)), max_size=30))
    def check(cuts: list[int]) -> None:
        _assert_identical(case.run(GAZE, sorted(cuts)), whole)

    check()


@pytest.mark.parametrize("name", NAMES)
def test_single_sample_batches_give_identical_output(name):
    case = _case(name)
    one_by_one = case.run(SHORT, list(range(1, len(SHORT))))
    assert not _is_empty(one_by_one)
    _assert_identical(one_by_one, case.run(SHORT))


@pytest.mark.parametrize("name", NAMES)
def test_flush_is_idempotent_and_ends_the_stream(name):
    case = _case(name)
    stage = case.make()
    case.feed(stage, case.fixture.inputs([GAZE]))
    stage.flush()
    assert _is_empty(case.fixture.flatten([stage.flush()])), "a second flush returned something"
    _assert_new_stream(case, stage, _whole(name), "flush")


@pytest.mark.parametrize("name", NAMES)
def test_reset_behaves_as_a_fresh_stage(name):
    case = _case(name)
    stage = case.make()
    parts = GAZE.slice(0, len(GAZE) // 2).split([len(GAZE) // 6])
    case.feed(stage, case.fixture.inputs(parts)[: len(parts)])  # mid-stream: no upstream flush yet
    stage.reset()
    _assert_new_stream(case, stage, _whole(name), "reset")


@pytest.mark.parametrize("name", NAMES)
def test_pickled_mid_stream_continues_identically(name):
    case = _case(name)
    inputs = case.fixture.inputs(GAZE.split([len(GAZE) // 3, 2 * len(GAZE) // 3]))
    stage = case.make()
    head = case.feed(stage, inputs[:2])
    copy = pickle.loads(pickle.dumps(stage))
    outs = [case.fixture.flatten([*head, *case.feed(s, inputs[2:]), s.flush()]) for s in (stage, copy)]
    _assert_identical(outs[0], outs[1], "the pickled copy")
    _assert_identical(outs[0], _whole(name))


@pytest.mark.parametrize("name", NAMES)
def test_seed_decides_the_noise(name):
    case = _case(name)
    if not case.fixture.seeded:
        pytest.skip(f"{name} draws no noise")
    a, b, c = case.run(GAZE, seed=5), case.run(GAZE, seed=5), case.run(GAZE, seed=6)
    _assert_identical(a, b, "the same seed")
    assert a["values"].shape == c["values"].shape
    assert not np.array_equal(a["values"], c["values"])
