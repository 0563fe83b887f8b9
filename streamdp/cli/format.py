"""How the command line shows a sanitized chunk and a session's status: sentences for people,
JSON lines for programs.

One chunk formatter serves both an in-process release (``format_chunk(release.to_message())``)
and a message a subscriber received (the same payload, decoded), so ``demo --offline``, the
networked ``demo`` and ``subscribe`` print the same lines for the same chunk; with ``--json``
they print :func:`json_line` of the message instead, one object per line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TextIO

import numpy as np

from ..privacy.randomness import CRYPTOGRAPHIC
from ..privacy.release import PrivateRelease, check_sealed
from ..status import SessionStatus, StatusEvent, check_status

#: features shown per chunk (their mean over the chunk's steps), the first released of these in order: a
#: rate, a duration, the pupil, blinks, then saccades, fixation spread and a wordbook; a feature the
#: weights give no ε is a public constant (the same in every chunk), never shown as if it were data
SHOWN_FEATURES = (
    "fixation_rate",
    "fixation_duration_mean",
    "pupil_mean_mean",
    "blink_rate",
    "positive_saccade_rate",
    "saccade_amplitude_max",
    "fixation_var_x_mean",
    "wordbook1_max",
)
#: how many feature means a chunk shows
SHOWN = 4

#: each status event in words
EVENT_WORDS = {
    StatusEvent.RUNNING: "running",
    StatusEvent.BUDGET_EXHAUSTED: "budget exhausted",
    StatusEvent.CAPTURE_RESTARTED: "Pupil Capture restarted, new segment",
    StatusEvent.CLOCK_JUMPED: "Pupil time jumped (T or Time Sync), new segment",
    StatusEvent.RECONNECTING: "reconnecting to the source",
    StatusEvent.STOPPED: "stopped",
}


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1.

    Examples
    --------
    >>> counted(1, "observer"), counted(3, "observer")
    ('1 observer', '3 observers')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _allocation_at(mechanism: Mapping[str, Any], total: float) -> str:
    """``"; allocation task@k=1 for ε 10"`` when the weights are a shipped allocation taken at the
    ε spent (it funds fewer features at a low ε), else empty.

    Examples
    --------
    >>> _allocation_at({"weights": "task@k=1"}, 10.0), _allocation_at({"weights": "task"}, 200.0)
    ('; allocation task@k=1 for ε 10', '')
    """
    name = mechanism.get("weights")
    return f"; allocation {name} for ε {total:g}" if isinstance(name, str) and "@k=" in name else ""


def _epsilon_split(led: Mapping[str, Any], features: int) -> str:
    """``ε 52 for the whole chunk (1 per feature × 52 features)``: the total first, the split
    when the ledger states it (a total-ε mechanism may state weights instead of one figure)."""
    total = float(led["epsilon_chunk"])
    per = led.get("epsilon_per_feature")
    dropped = len(led.get("dropped_features") or ())
    released = features - dropped
    constants = f"; {counted(dropped, 'feature')} released as public constants" if dropped else ""
    split = (
        f" ({per:.3g} per feature × {counted(released, 'feature')}{constants})"
        if isinstance(per, (int, float)) and not isinstance(per, bool)
        else f" (shared by {counted(released, 'feature')}{constants})"
    )
    asked = led.get("epsilon_asked")
    capped = f", capped by the ceiling from the ε {float(asked):g} asked" if asked is not None else ""
    split = split[:-1] + _allocation_at(led, total) + ")"  # the split's own parenthesis
    return f"ε {total:g} for this whole chunk{split}{capped}"


def describe_epsilon(mechanism: Mapping[str, Any]) -> str:
    """A mechanism's ε in words, from its ``describe()``: the chunk's total first.

    Examples
    --------
    >>> describe_epsilon({"epsilon": 10.0, "epsilon_per_feature": 10 / 52})
    'ε 10 per chunk (0.192 per feature)'
    >>> describe_epsilon({"epsilon": 10.0, "epsilon_per_feature": [0.5, 0.0], "weights": "task"})
    'ε 10 per chunk (split by the task weights)'
    >>> describe_epsilon({"epsilon": 200.0, "epsilon_asked": 2496.0, "epsilon_per_feature": 200 / 52})
    'ε 200 per chunk (3.85 per feature; the ceiling of 200 spent, 2496 asked)'
    >>> describe_epsilon({"epsilon": 10.0, "epsilon_per_feature": 10.0, "weights": "task@k=1"})
    'ε 10 per chunk (10 per feature; allocation task@k=1 for ε 10)'
    """
    total = mechanism.get("epsilon", mechanism.get("epsilon_chunk"))
    per = mechanism.get("epsilon_per_feature")
    asked = mechanism.get("epsilon_asked")
    capped = f"; the ceiling of {float(total):g} spent, {float(asked):g} asked" if asked is not None else ""
    capped = _allocation_at(mechanism, float(total)) + capped
    if isinstance(per, (int, float)) and not isinstance(per, bool):
        return f"ε {float(total):g} per chunk ({per:.3g} per feature{capped})"
    return f"ε {float(total):g} per chunk (split by the {mechanism.get('weights', 'profile')} weights{capped})"


#: the unit of each feature of the schema (streamdp.privacy.bounds states them with each bound);
#: ratios, proportions and the wordbook's counts have none
_UNITS = {
    "saccade_amplitude_mean": "°",
    "saccade_amplitude_max": "°",
    "saccade_amplitude_var": " deg²",
    "fixation_duration_mean": " s",
    "fixation_duration_max": " s",
    "fixation_duration_var": " s²",
    "fixation_var_x_mean": " deg²",
    "fixation_var_y_mean": " deg²",
    "fixation_var_x_var": " deg⁴",
    "fixation_var_y_var": " deg⁴",
    "pupil_mean_mean": " mm",
    "pupil_mean_var": " mm²",
    "pupil_var_mean": " mm²",
    "pupil_var_var": " mm⁴",
    "blink_duration_mean": " s",
    "blink_duration_var": " s²",
}


def feature_unit(name: str) -> str:
    """The unit a feature's value is in, as it follows the number (empty when it has none).

    Examples
    --------
    >>> [f"1.5{feature_unit(n)}" for n in ("blink_rate", "saccade_amplitude_max", "pupil_mean_mean", "wordbook1_max")]
    ['1.5/s', '1.5°', '1.5 mm', '1.5']
    """
    if name.endswith("_rate"):
        return "/s"
    return _UNITS.get(name, "")


def _means(led: Mapping[str, Any], names: list[str], values: np.ndarray) -> str:
    """The means over the chunk of a few released features with their units, that they are noised,
    and how many public constants are not shown and why.

    Examples
    --------
    >>> led = {"dropped_features": ["fixation_rate"], "weights": "task"}
    >>> _means(led, ["fixation_rate", "blink_rate", "x"], np.array([[3.0, 0.25, 1.0], [3.0, -0.75, 2.0]]))
    'blink_rate -0.25/s, x 1.5 (noise can put a mean outside its range, even below 0; 1 public constant not shown: the task weights give it no ε)'
    """  # noqa: E501
    constants = set(led.get("dropped_features") or ())
    released = [name for name in names if name not in constants]
    shown = [name for name in SHOWN_FEATURES if name in released][:SHOWN]
    shown += [name for name in released if name not in shown][: SHOWN - len(shown)]
    means = ", ".join(f"{name} {values[:, names.index(name)].mean():.3g}{feature_unit(name)}" for name in shown) or "-"
    notes = ["noise can put a mean outside its range, even below 0"] if shown else []
    if constants:
        them = "it" if len(constants) == 1 else "them"
        notes.append(
            f"{counted(len(constants), 'public constant')} not shown: the {led.get('weights', 'profile')} weights "
            f"give {them} no ε"
        )
    return f"{means} ({'; '.join(notes)})" if notes else means


def _unit_sentence(led: Mapping[str, Any]) -> str:
    """What the unit protects and where the budget stands, in words."""
    unit, spent = led.get("unit"), float(led["epsilon_spent"])
    kept = ""
    if "budget_durable" in led:
        kept = (
            "; the budget is kept on this device across restarts"
            if led["budget_durable"]
            else "; the budget is kept in memory only: it starts again when the program restarts"
        )
    if unit == "session":
        budget = float(led["budget"])
        left = float(led.get("budget_left", budget - spent))
        return (
            f"session unit — everything released about this person adds up: ε {spent:g} of the budget "
            f"{budget:g} spent so far, {left:g} left{kept}"
        )
    if unit == "w-event":
        return (
            f"w-event unit — any {led['w']} consecutive chunks together stay within ε {float(led['budget']):g} "
            f"(the last {led['w']} spent {float(led['epsilon_w']):g}); ε {spent:g} spent so far in all{kept}"
        )
    return (
        f"chunk unit — each chunk is protected on its own; over a longer stretch the ε of its chunks add up "
        f"(ε {spent:g} spent so far, with no cap)"
    )


def format_chunk(message: Mapping[str, Any]) -> str:
    """Sentences for one sanitized chunk that a non-expert reads: which chunk, what it costs in
    total, what is protected under which unit, the total so far and what remains, what that
    means for raw gaze; then the means over the chunk of a few released features (never of a public
    constant: a feature the weights give no ε).

    ``message`` is :meth:`PrivateRelease.to_message` or what a subscriber decoded from the topic.

    Raises
    ------
    KeyError, TypeError, ValueError, IndexError
        ``message`` is not a chunk message (a subscriber should report and skip it).

    Examples
    --------
    >>> from streamdp.config import SessionConfig
    >>> from streamdp.synthetic import generate
    >>> pipe = SessionConfig(chunk_length=32, seed=0).private_pipeline()
    >>> release = pipe.run(generate(duration=60.0, seed=1).recording)[0]
    >>> for line in format_chunk(release.to_message()).splitlines()[:4]:
    ...     print(line)
    chunk 0: streamdp.features.dcfpa, t 1040.0–1055.5 s (32 steps): ε 10 for this whole chunk (10 per feature × 1 feature; 51 features released as public constants; allocation task@k=1 for ε 10)
      protected: chunk unit — each chunk is protected on its own; over a longer stretch the ε of its chunks add up (ε 10 spent so far, with no cap)
      raw gaze: one sample changes at most 3 chunks (ε ≤ 30); one second of gaze at most 4 chunks (ε ≤ 40); a whole session is not bounded (each chunk adds ε 10)
      noise: reproducible, not private — drawn from a seeded generator: whoever knows the seed removes it (tests and research only)
    """  # noqa: E501
    led = message["ledger"]
    names = list(message["names"])
    t = message["t"]
    values = np.asarray(message["values"], dtype=np.float64).reshape(len(t), len(names))
    raw = led.get("raw_gaze_guarantee")
    if not isinstance(raw, str):
        raw = f"raw gaze: one sample is protected at ε ≤ {float(led['raw_gaze_epsilon']):g}"
    elif not raw.startswith("raw gaze"):
        raw = f"raw gaze: {raw}"
    generator = led.get("generator")
    noise = (
        f"  noise: {generator} — drawn from a seeded generator: whoever knows the seed removes it "
        "(tests and research only)\n"
        if isinstance(generator, str) and generator != CRYPTOGRAPHIC
        else ""
    )
    return (
        f"chunk {led['chunk_index']}: {message['topic']}, t {t[0]:.1f}–{t[-1]:.1f} s ({counted(len(t), 'step')}): "
        f"{_epsilon_split(led, len(names))}\n"
        f"  protected: {_unit_sentence(led)}\n"
        f"  {raw}\n"
        f"{noise}"
        f"  noised means over the chunk: {_means(led, names, values)}"
    )


def format_local(clipped_fraction: float) -> str:
    """The line a device prints under a chunk about what stays on it: the share of the chunk's
    values clipped to the bounds (a raw function of the gaze, never in a message).

    Examples
    --------
    >>> format_local(0.0125)
    '  on this device only: 1.2% of the values were clipped to the bounds'
    """
    return f"  on this device only: {clipped_fraction:.1%} of the values were clipped to the bounds"


def format_status(status: SessionStatus, *, step: float | None = None) -> str:
    """One sentence for a session's status: what happened, the counters, ε spent, subscribers.

    The publisher counts subscriptions, one per subscriber and topic prefix it asked for (ZeroMQ
    does not say which subscriber sent one): they are called so, not subscribers. ``step`` (s),
    when the caller knows the session's, says how long a dropped step is: a step of
    the feature grid that no released chunk holds (a partial chunk at the start or the end, or a gap).

    Raises
    ------
    TypeError
        ``status`` is not a :class:`~streamdp.status.SessionStatus` (decode a subscriber's
        message with :meth:`SessionStatus.from_message` first).

    Examples
    --------
    >>> line = format_status(SessionStatus(mechanism="dcfpa", received=10, released=1, epsilon_spent=52.0))
    >>> for part in line.split("; "):
    ...     print(part)
    running (dcfpa): 10 gaze samples received, 1 chunk released, ε 52 spent
    skipped 0 malformed, 0 invalid, 0 late
    0 steps dropped (in no released chunk), 0 reconnects, 0 restarts
    0 topic subscriptions
    >>> format_status(SessionStatus(mechanism="dcfpa", dropped_steps=52), step=0.5).split("; ")[2]
    '52 steps of 0.5 s dropped (in no released chunk), 0 reconnects, 0 restarts'
    """
    s = check_status(status)
    if step is not None and (isinstance(step, bool) or not isinstance(step, (int, float))):
        raise TypeError(f"step must be a number of seconds, got {step!r}")
    if step is not None and not 0 < step < float("inf"):
        raise ValueError(f"step must be finite and > 0, got {step!r}")
    steps = "step" if s.dropped_steps == 1 else "steps"
    dropped = f"{s.dropped_steps} {steps}{f' of {step:g} s' if step else ''} dropped (in no released chunk)"
    budget = ", the budget is exhausted" if s.budget_exhausted else ""
    clipped = f" ({s.clipped_fraction:.1%} of the last chunk clipped to the bounds)" if s.clipped_fraction else ""
    return (
        f"{EVENT_WORDS[s.event]} ({s.mechanism}): {counted(s.received, 'gaze sample')} received, "
        f"{counted(s.released, 'chunk')} released{clipped}, ε {s.epsilon_spent:g} spent{budget}; "
        f"skipped {s.malformed} malformed, {s.invalid} invalid, {s.late} late; "
        f"{dropped}, {counted(s.reconnects, 'reconnect')}, "
        f"{counted(s.restarts, 'restart')}; {counted(s.subscribers, 'topic subscription')}"
        + (f"; {s.refused} requests of apps refused (streamdp's Pupil Remote)" if s.refused else "")
    )


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def json_line(message: Mapping[str, Any]) -> str:
    """``message`` (a chunk or status as published) as one line of JSON.

    Examples
    --------
    >>> json_line({"t": np.array([1.0, 1.5]), "event": "running"})
    '{"t": [1.0, 1.5], "event": "running"}'
    """
    return json.dumps(dict(message), ensure_ascii=False, default=_plain)


class PrintingSink:
    """A :class:`~streamdp.sinks.ReleaseSink` that prints each release with :func:`format_chunk`
    (with ``as_json``: :func:`json_line` of its message) to ``out`` and, when ``status_out`` is
    given, each status with :func:`format_status` to it.

    Raises
    ------
    TypeError
        :meth:`publish` is given anything but a sealed release, or :meth:`publish_status`
        anything but a :class:`~streamdp.status.SessionStatus`.
    """

    def __init__(self, out: TextIO, status_out: TextIO | None = None, *, as_json: bool = False) -> None:
        self.out = out
        self.status_out = status_out
        self.as_json = as_json

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        message = release.to_message()
        if self.as_json:
            print(json_line(message), file=self.out, flush=True)
            return
        # the clip rate is local: printed here, on the device, never part of the message
        print(format_chunk(message) + "\n" + format_local(release.clipped_fraction), file=self.out, flush=True)

    def publish_status(self, status: SessionStatus) -> None:
        line = format_status(status)
        if self.status_out is not None:
            print(line, file=self.status_out, flush=True)

    def close(self) -> None:
        """Nothing to release: the streams belong to the caller."""
