"""Traffic as Pupil Capture sends it, for the relay, plugin and latency benchmarks.

Capture publishes gaze in one burst per world frame (~30 Hz), binocular and monocular mixed, with
monocular gaze up to ~90 ms late (its matcher waits for a partner), each 3d gaze datum carrying its
two full pupil datums (~1.3 kB). :func:`capture_bursts` builds that stream from synthetic gaze with
:func:`streamdp.pupil_wire.encode.capture_datums` and pads every pupil datum with the fields
pye3d writes (ellipse, sphere, projected sphere, circle, model confidence, angles), so message
sizes and msgpack work are Capture's.

:func:`serve_capture` runs in a child process as a stand-in Capture for the relay: Pupil Remote
(``SUB_PORT``, ``PUB_PORT``, ``t`` answered live) and the backbone PUB socket, sending the bursts
paced at a multiple of real time (``speed``) or flat out (``speed=0``), each burst stamped with the
monotonic time it was sent, so that latency is measured against the real send time.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np
import zmq

from streamdp.pupil_wire.encode import capture_datums
from streamdp.synthetic import generate

Frames = list[bytes]


def _pye3d_fields(datum: dict[str, Any]) -> None:
    """The pupil detector's fields that streamdp does not read but Capture sends."""
    x, y = datum["norm_pos"]
    cx, cy = 192.0 * x, 192.0 * (1 - y)
    datum.update(
        ellipse={"center": [cx, cy], "axes": [31.2, 35.7], "angle": 71.3},
        location=[cx, cy],
        model_confidence=0.87,
        sphere={"center": [1.52, 0.83, 35.4], "radius": 10.392304845413264},
        projected_sphere={"center": [104.1, 98.3], "axes": [118.2, 118.2], "angle": 90.0},
        circle_3d={"center": [0.41, 0.27, 25.6], "normal": [-0.11, -0.05, -0.99], "radius": 1.73},
        theta=1.62,
        phi=-1.68,
    )
    if "diameter" not in datum:
        datum["diameter"] = 34.1


def capture_bursts(seconds: float, *, rate: float = 200.0, seed: int = 3) -> list[tuple[float, list[Frames]]]:
    """``seconds`` of synthetic gaze as Capture publishes it: (Pupil time the burst leaves, the
    burst's ``[topic, payload]`` messages), gaze topics only."""
    rec = generate(duration=seconds, rate=rate, seed=seed).recording
    pack = msgpack.Packer(use_bin_type=True).pack
    bursts: list[tuple[float, list[Frames]]] = []
    for at, group in itertools.groupby(capture_datums(rec), key=lambda sent: sent[0]):
        burst = []
        for _, datum in group:
            if not datum["topic"].startswith("gaze."):
                continue
            for pupil in datum["base_data"]:
                _pye3d_fields(pupil)
            burst.append([datum["topic"].encode(), pack(datum)])
        if burst:
            bursts.append((at, burst))
    return bursts


def burst_stats(bursts: Sequence[tuple[float, list[Frames]]]) -> dict[str, float]:
    sizes = [len(m[1]) for _, b in bursts for m in b]
    return {
        "messages": float(len(sizes)),
        "bursts": float(len(bursts)),
        "mean_burst": len(sizes) / max(1, len(bursts)),
        "mean_bytes": float(np.mean(sizes)) if sizes else 0.0,
    }


@dataclass(frozen=True)
class SendPlan:
    """How :func:`serve_capture` sends: ``speed`` × real time (0: flat out), after ``go``."""

    seconds: float
    rate: float = 200.0
    speed: float = 1.0
    seed: int = 3
    #: times the stream is sent, each later by its length (floods without holding them in memory)
    cycles: int = 1


def serve_capture(plan: SendPlan, ports_q: Any, go: Any, sent_q: Any | None = None) -> None:
    """Child process: a stand-in Capture for the relay. Puts (Pupil Remote port, backbone SUB
    port) on ``ports_q``, answers Pupil Remote until told to stop by the ``"quit"`` request,
    and once ``go`` is set sends the bursts; with ``sent_q`` it reports, per burst, the
    monotonic time it was sent (CLOCK_MONOTONIC is shared by the processes of one machine)."""
    bursts = capture_bursts(plan.seconds, rate=plan.rate, seed=plan.seed)
    cycle_span = bursts[-1][0] - bursts[0][0] + 1.0
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.linger = 0
    pub.sndhwm = 1000  # Capture's backbone
    sub_port = pub.bind_to_random_port("tcp://127.0.0.1")
    rep = ctx.socket(zmq.REP)
    rep.linger = 0
    remote_port = rep.bind_to_random_port("tcp://127.0.0.1")
    ports_q.put((remote_port, sub_port))
    t0_pupil, t0_wall = bursts[0][0], time.monotonic()
    newest_sent = t0_pupil
    finished = False

    def answer(block_ms: int) -> bool:
        if not rep.poll(block_ms):
            return True
        cmd = rep.recv_string()
        if cmd == "SUB_PORT":
            rep.send_string(str(sub_port))
        elif cmd == "PUB_PORT":
            rep.send_string(str(sub_port + 1))
        elif cmd == "done?":
            rep.send_string("done" if finished else "sending")
        elif cmd == "t":
            # Capture's clock: real time when paced; flat out, the newest datum sent (a flood
            # arrives at the present, not from the future)
            paced = t0_pupil + (time.monotonic() - t0_wall) * plan.speed
            rep.send_string(repr(paced if plan.speed > 0 and go.is_set() else newest_sent))
        else:
            rep.send_string("Unknown command.")
        return cmd != "quit"

    while not go.is_set():
        answer(10)
    sent: list[float] = []
    start = t0_wall = time.monotonic()  # the clock starts with the stream
    for cycle in range(plan.cycles):
        if cycle:
            bursts = _shifted(bursts, cycle_span)
        for at, burst in bursts:
            if plan.speed > 0:
                delay = start + (at - t0_pupil) / plan.speed - time.monotonic()
                if delay > 0:
                    answer(int(delay * 1000))  # pace like a camera, serving Pupil Remote meanwhile
                    delay = start + (at - t0_pupil) / plan.speed - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
            elif rep.poll(0):
                answer(0)
            now = time.monotonic()
            for message in burst:
                pub.send_multipart(message)
            newest_sent = at
            if sent_q is not None:
                sent.append(now)
    finished = True
    if sent_q is not None:
        sent_q.put(sent)
    while answer(100):
        pass
    pub.close(linger=0)
    rep.close(linger=0)
    ctx.term()


def _shifted(bursts: list[tuple[float, list[Frames]]], offset: float) -> list[tuple[float, list[Frames]]]:
    """The same bursts ``offset`` seconds later (timestamps re-encoded)."""
    pack = msgpack.Packer(use_bin_type=True).pack
    out = []
    for at, burst in bursts:
        moved = []
        for topic, payload in burst:
            datum = msgpack.unpackb(payload, raw=False)
            datum["timestamp"] += offset
            for pupil in datum["base_data"]:
                pupil["timestamp"] += offset
            moved.append([topic, pack(datum)])
        out.append((at + offset, moved))
    return out
