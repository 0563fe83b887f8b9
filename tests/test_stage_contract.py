"""One contract suite over every streaming stage, found automatically (as river's estimator checks).

Every module of the streamdp package is imported and every concrete subclass of
:class:`streamdp.stages.base.Stage` is checked for: batch-split invariance, single-sample batches,
flush idempotence, a new stream after a flush or a reset (one continuing the old clock, one going
back in time) equal to a fresh stage's, pickling mid-stream, seeding, non-empty output, and, where
the same output can be made another way (gaze arriving out of order against the ordered gaze),
that output. Each stage is fed from one stream of ``tests/stage_fixtures.py``. A stage without a
fixture in ``FIXTURES`` fails ``test_every_stage_has_a_fixture``, so a new stage cannot skip the
contract.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pickle
import pkgutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamdp
from streamdp.stages.base import Stage
from streamdp.stages.chunker import Chunker
from streamdp.stages.events import EventDetector

from .stage_fixtures import (
    ARRIVAL,
    CHUNK_LENGTH,
    FIXTURES,
    GAZE,
    MAX_DELAY,
    ROWS,
    WINDOW,
    Fixture,
    Flat,
    Stream,
    cut,
    prefix,
    starting_at,
)

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

NAMES = sorted(set(STAGES) | set(FIXTURES))

# ----------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Case:
    cls: type
    fixture: Fixture

    def make(self, seed: int = 1) -> Any:
        return self.fixture.make(self.cls, seed)

    def feed(self, stage: Any, parts: list[Stream]) -> list[Any]:
        """``update`` with the stage's inputs made from ``parts`` (and the upstream flushes)."""
        return [stage.update(x) for x in self.fixture.inputs(parts)]

    def run(self, stream: Stream, cuts: Sequence[int] = (), seed: int = 1) -> Flat:
        """A fresh stage over ``stream`` cut at ``cuts``, then flushed."""
        return self.feed_and_flush(self.make(seed), stream, cuts)

    def feed_and_flush(self, stage: Any, stream: Stream, cuts: Sequence[int] = ()) -> Flat:
        """``stage`` fed ``stream`` cut at ``cuts``, then flushed: the outputs, flattened."""
        return self.fixture.flatten([*self.feed(stage, cut(stream, list(cuts))), stage.flush()])


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
    case = _case(name)
    return case.run(case.fixture.stream)


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


_BUDGET_KEYS = (
    "chunk_index",
    "epsilon_spent",
    "epsilon_w",
    # the gaze channel's: its ticks count on, and geo-bd's spend follows the window's budget
    "tick_index",
    "epsilon_spent_per_degree",
    "epsilon_tick_per_degree",
)


def _spent(entry: dict[str, Any]) -> float:
    return float(entry["epsilon_spent"] if "epsilon_spent" in entry else entry["epsilon_spent_per_degree"])


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


def _assert_new_stream(case: Case, stage: Any, last_fed: float, clock: str, after: str) -> None:
    """``stage`` (reset or flushed after being fed up to time ``last_fed``) must treat a new
    stream as a fresh stage does. A stream that continues the clock (starting ``gap`` after
    ``last_fed``) is the one that finds what the stage kept: a jump back in time would make it
    start a new segment and so hide what was left over."""
    stream = case.fixture.stream
    if clock == "continues":
        stream = starting_at(stream, last_fed + case.fixture.gap)
    again, fresh = case.feed_and_flush(stage, stream), case.run(stream)
    _assert_identical(_stream_part(case, again), _stream_part(case, fresh), f"a new stream after {after}")
    if case.fixture.seeded:
        assert not np.array_equal(again["values"], fresh["values"]), "the noise was replayed"
        assert _spent(again["ledger"][0]) > _spent(fresh["ledger"][0]), "the budget was reset"


# ----------------------------------------------------------------------------- the contract


def test_every_module_imports():
    assert not BROKEN_MODULES, f"modules that do not import: {BROKEN_MODULES}"


def test_every_stage_has_a_fixture():
    missing = sorted(set(STAGES) - set(FIXTURES))
    assert not missing, f"stages without a contract fixture in tests/stage_fixtures.py: {missing}"


def test_discovery_finds_the_stages_it_was_written_with():
    assert {_qualified(c) for c in (EventDetector, Chunker)} <= set(STAGES)


def test_arrival_stream_is_out_of_order_by_up_to_the_delay():
    """Samples arrive up to MAX_DELAY late: more than a 50 ms reorder window, less than 0.1 s."""
    lateness = np.maximum.accumulate(ARRIVAL.t) - ARRIVAL.t
    assert 0.05 < lateness.max() <= MAX_DELAY
    assert np.count_nonzero(lateness) > len(ARRIVAL) // 10
    assert set(np.unique(ARRIVAL.eye_id)) == {0, 1}


def test_rows_lie_on_the_public_grid_through_the_gap_with_partial_chunks_at_both_ends():
    k = np.rint(ROWS.t / WINDOW.step).astype(np.int64)
    assert np.array_equal(ROWS.t, k * WINDOW.step) and np.all(np.diff(k) == 1)  # the gap moves nothing
    assert ROWS.t[0] - WINDOW.window >= GAZE.t[0] > ROWS.t[0] - WINDOW.window - WINDOW.step
    assert k[0] % CHUNK_LENGTH and (k[-1] + 1) % CHUNK_LENGTH and (k[0] + len(ROWS) // 2) % CHUNK_LENGTH


@pytest.mark.parametrize("name", NAMES)
def test_output_is_not_empty_and_deterministic(name):
    case = _case(name)
    assert not _is_empty(_whole(name))
    _assert_identical(case.run(case.fixture.stream), _whole(name))


@pytest.mark.parametrize("name", [n for n in NAMES if n in FIXTURES and FIXTURES[n].expected])
def test_output_equals_the_same_stream_made_another_way(name):
    case = _case(name)
    assert case.fixture.expected is not None
    stream = case.fixture.stream
    # in batches of 10 samples, as Capture sends them: a batch is shorter than the delays
    in_batches = case.run(stream, range(10, len(stream), 10))
    _assert_identical(in_batches, case.fixture.expected(case.cls, 1), "the output of the ordered stream")


@pytest.mark.parametrize("name", NAMES)
def test_any_batch_split_gives_identical_output(name):
    case, whole = _case(name), _whole(name)
    stream = case.fixture.stream

    # cuts may repeat or sit at either end: empty batches are part of every stream
    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cuts=st.lists(st.integers(0, len(stream)), max_size=30))
    def check(cuts: list[int]) -> None:
        _assert_identical(case.run(stream, sorted(cuts)), whole)

    check()


@pytest.mark.parametrize("name", NAMES)
def test_single_sample_batches_give_identical_output(name):
    case = _case(name)
    short = prefix(case.fixture.stream, 8.5)  # a window, the slot boundary and a chunk
    one_by_one = case.run(short, range(1, len(short)))
    assert not _is_empty(one_by_one)
    _assert_identical(one_by_one, case.run(short))


@pytest.mark.parametrize("clock", ["continues", "goes back"])
@pytest.mark.parametrize("name", NAMES)
def test_flush_is_idempotent_and_ends_the_stream(name, clock):
    case = _case(name)
    stage = case.make()
    case.feed(stage, [case.fixture.stream])
    stage.flush()
    assert _is_empty(case.fixture.flatten([stage.flush()])), "a second flush returned something"
    _assert_new_stream(case, stage, float(np.max(case.fixture.stream.t)), clock, "flush")


@pytest.mark.parametrize("clock", ["continues", "goes back"])
@pytest.mark.parametrize("name", NAMES)
def test_reset_behaves_as_a_fresh_stage(name, clock):
    case = _case(name)
    stage = case.make()
    stream = case.fixture.stream
    half = cut(stream, [len(stream) // 2])[0]
    parts = cut(half, [len(stream) // 6])
    for item in case.fixture.inputs(parts)[: len(parts)]:  # mid-stream: no upstream flush yet
        stage.update(item)
    stage.reset()
    _assert_new_stream(case, stage, float(np.max(half.t)), clock, "reset")


@pytest.mark.parametrize("name", NAMES)
def test_pickled_mid_stream_continues_identically(name):
    case = _case(name)
    stream = case.fixture.stream
    inputs = case.fixture.inputs(cut(stream, [len(stream) // 3, 2 * len(stream) // 3]))
    stage = case.make()
    head = [stage.update(x) for x in inputs[:2]]
    copy = pickle.loads(pickle.dumps(stage))
    outs = [case.fixture.flatten([*head, *(s.update(x) for x in inputs[2:]), s.flush()]) for s in (stage, copy)]
    _assert_identical(outs[0], outs[1], "the pickled copy")
    _assert_identical(outs[0], _whole(name))


@pytest.mark.parametrize("name", NAMES)
def test_seed_decides_the_noise(name):
    case = _case(name)
    if not case.fixture.seeded:
        pytest.skip(f"{name} draws no noise")
    stream = case.fixture.stream
    a, b, c = case.run(stream, seed=5), case.run(stream, seed=5), case.run(stream, seed=6)
    _assert_identical(a, b, "the same seed")
    assert a["values"].shape == c["values"].shape
    assert not np.array_equal(a["values"], c["values"])
