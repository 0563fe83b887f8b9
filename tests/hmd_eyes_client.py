"""A Python stand-in for hmd-eyes (Pupil Labs' Unity plugin), written from its connection flow
(``plugin/Scripts``, hmd-eyes master, 2022) to test what speaks Pupil Remote to it: Pupil Capture,
the simulator, or streamdp's own Pupil Remote (issue #28).

What it does as hmd-eyes does, file by file:

- ``Request.cs``: a REQ socket on Pupil Remote; ``SUB_PORT`` then ``PUB_PORT``, each answer
  awaited 1 s. No ``SUB_PORT`` answer: not connected (the socket is closed; hmd-eyes retries after
  5 s). No ``PUB_PORT`` answer: connected all the same, without a PUB port (hmd-eyes' untidiness).
  A notification is two frames, ``notify.<subject>`` and the msgpack'd dictionary (no ``topic``
  key), sent through the REQ socket; its reply is awaited 1 s and ignored.
- ``RequestController.cs`` (``Connected``): ``v``, then ``eye_process.should_start.1`` (eye 1,
  delay 0.1) and ``.0`` (eye 0, delay 0.2), then ``set_detection_mapping_mode`` ``3d``.
- ``TimeSync.cs``: on connecting, ``t`` between two readings of the local clock; the offset maps
  local time to Pupil time.
- ``Calibration.cs``, ``CalibrationController.cs``, ``CalibrationSettings.cs``: one SUB socket
  each for ``notify.calibration.successful`` and ``notify.calibration.failed``; ``start_plugin``
  ``HMD3DChoreographyPlugin`` and ``calibration.should_start`` (``translation_eye0`` the right
  eye, ``translation_eye1`` the left, in mm, ``record``) through the REQ socket; reference samples
  (``mm_pos``: the target's position in mm with y divided by the camera's aspect, ``timestamp``
  in Pupil time) sent per target as ``calibration.add_ref_data`` and ``calibration.should_stop``
  through a PUB socket on ``PUB_PORT``.
- ``RecordingController.cs``: ``recording.should_start`` (``session_name``: a path,
  ``record_eye``) and ``recording.should_stop`` through the REQ socket.
- ``GazeListener.cs``, ``GazeData.cs``, ``Helpers.cs``: a SUB socket on ``gaze.3d``, each datum
  parsed as :class:`GazeData` does.

Differences: MessagePack-CSharp sends C# ``float`` values (translations, ``mm_pos``, ``delay``) as
float32, this client as float64 (the same numbers once decoded). Where hmd-eyes would throw or log
and go on with zeros, :func:`parse_gaze` raises :class:`GazeDataError` naming the field.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgpack
import zmq

__all__ = ["CALIBRATION_PLUGIN", "GazeData", "GazeDataError", "HmdEyesClient", "parse_gaze"]

REQUEST_TIMEOUT = 1.0  # Request.cs: 1 s for every answer
CALIBRATION_PLUGIN = "HMD3DChoreographyPlugin"  # CalibrationSettings.PluginName
PUPIL_UNIT_SCALING = 1000.0  # Helpers.PupilUnitScalingFactor: Pupil works in mm, Unity in m
#: a five-point circle 1 m ahead (CircleCalibrationTargets' default is 5 points per circle)
DEFAULT_TARGETS: tuple[tuple[float, float, float], ...] = tuple(
    (0.1 * math.cos(math.radians(a)), 0.1 * math.sin(math.radians(a)), 1.0) for a in range(0, 360, 72)
)


class GazeDataError(ValueError):
    """A gaze datum hmd-eyes' ``GazeData`` could not parse."""


@dataclass(frozen=True)
class GazeData:
    """A gaze datum as hmd-eyes' ``GazeData`` holds it: Unity's coordinates (y up, metres for
    points), eye data only for the eyes the mapping context names (else None)."""

    topic: str
    mapping_context: str  # "Binocular", "Monocular_0" or "Monocular_1"
    confidence: float
    pupil_timestamp: float
    norm_pos: tuple[float, ...] | None
    gaze_point_3d: tuple[float, float, float]
    gaze_direction: tuple[float, float, float]
    gaze_distance: float
    eye_center_0: tuple[float, float, float] | None = None
    eye_center_1: tuple[float, float, float] | None = None
    gaze_normal_0: tuple[float, float, float] | None = None
    gaze_normal_1: tuple[float, float, float] | None = None


_CONTEXTS = {"gaze.3d.01.": "Binocular", "gaze.3d.0.": "Monocular_0", "gaze.3d.1.": "Monocular_1"}


def _field(datum: dict[Any, Any], key: str, topic: str) -> Any:
    if key not in datum:
        raise GazeDataError(f"{topic!r} datum has no {key!r}, which hmd-eyes' GazeData reads (KeyNotFoundException)")
    return datum[key]


def _double(value: Any, what: str) -> float:
    # `(double)value_o` unboxes: anything but a double (an int, a missing value) throws in C#
    if not isinstance(value, float):
        raise GazeDataError(f"{what} is {value!r}: hmd-eyes unboxes it as a double (InvalidCastException)")
    return value


def _vector(value: Any, what: str, scale: bool) -> tuple[float, float, float]:
    """Helpers.Position: 2 or 3 doubles, divided by 1000 when ``scale``; y then inverted by the caller."""
    if not isinstance(value, (list, tuple)) or len(value) not in (2, 3):
        raise GazeDataError(f"{what} is {value!r}: hmd-eyes reads an array of 2 or 3 doubles")
    xyz = [_double(v, f"{what}[{i}]") for i, v in enumerate(value)] + [0.0] * (3 - len(value))
    k = PUPIL_UNIT_SCALING if scale else 1.0
    return xyz[0] / k, xyz[1] / k, xyz[2] / k


def _per_eye(datum: dict[Any, Any], topic: str, key: str, eye: int, binocular: bool) -> Any:
    """``eye_center_3d`` (monocular) or ``eye_centers_3d[eye]`` (binocular), and so for normals."""
    if not binocular:
        return _field(datum, key, topic)
    key = key.replace("_3d", "s_3d")
    by_eye = _field(datum, key, topic)
    if not isinstance(by_eye, dict):
        raise GazeDataError(f"{key} is {by_eye!r}: hmd-eyes reads a map keyed by eye")
    if eye in by_eye:  # before Pupil 3.0 the keys were ints
        return by_eye[eye]
    if str(eye) in by_eye:  # since Pupil 3.0 they are strings
        return by_eye[str(eye)]
    raise GazeDataError(f"{key} has no eye {eye} (neither {eye} nor {str(eye)!r})")


def parse_gaze(topic: str, datum: dict[Any, Any]) -> GazeData:
    """Parse ``datum`` published on ``topic`` as ``GazeData.Parse`` does.

    Raises
    ------
    GazeDataError
        The topic is none of ``gaze.3d.01.``/``.0.``/``.1.`` (hmd-eyes logs "GazeData with no
        matching mode"), or a field GazeData reads is missing or not of the type it unboxes.
    """
    context = _CONTEXTS.get(topic)
    if context is None:
        raise GazeDataError(f"GazeData with no matching mode: topic {topic!r}")
    confidence = _double(_field(datum, "confidence", topic), "confidence")
    timestamp = _double(_field(datum, "timestamp", topic), "timestamp")
    norm_pos = None
    if "norm_pos" in datum:  # optional: Pupil Service has no scene camera to project into
        x, y, z = _vector(datum["norm_pos"], "norm_pos", False)
        norm_pos = (x, y) if len(datum["norm_pos"]) == 2 else (x, y, z)
    gx, gy, gz = _vector(_field(datum, "gaze_point_3d", topic), "gaze_point_3d", True)
    gy = -gy  # Pupil's y axis points down, Unity's up
    length = math.sqrt(gx * gx + gy * gy + gz * gz)
    # Vector3.Angle(forward, p) >= 90°: a point behind the viewer is mirrored to the front
    if length > 1e-15 and gz / length <= 0.0:
        gx, gy, gz = -gx, -gy, -gz
    direction = (gx / length, gy / length, gz / length) if length > 1e-5 else (0.0, 0.0, 0.0)
    eyes: dict[str, tuple[float, float, float] | None] = {}
    for eye in (0, 1):
        if context not in ("Binocular", f"Monocular_{eye}"):
            continue
        centre = _per_eye(datum, topic, "eye_center_3d", eye, context == "Binocular")
        normal = _per_eye(datum, topic, "gaze_normal_3d", eye, context == "Binocular")
        cx, cy, cz = _vector(centre, f"eye centre {eye}", True)
        nx, ny, nz = _vector(normal, f"gaze normal {eye}", False)
        eyes[f"eye_center_{eye}"], eyes[f"gaze_normal_{eye}"] = (cx, -cy, cz), (nx, -ny, nz)
    return GazeData(topic, context, confidence, timestamp, norm_pos, (gx, gy, gz), direction, length, **eyes)


class HmdEyesClient:
    """hmd-eyes' connection to Pupil Remote at ``remote`` (``tcp://host:port``). Use as a context
    manager or call :meth:`connect` and :meth:`close`.

    Attributes after :meth:`connect`: ``sub_port``, ``pub_port`` (None when ``PUB_PORT`` got no
    answer), ``version``, ``time_offset`` (Pupil time minus the local clock).
    """

    def __init__(self, remote: str = "tcp://127.0.0.1:50020", *, context: zmq.Context | None = None) -> None:
        self.remote = remote
        self.host = remote.rsplit(":", 1)[0]
        self._ctx = context or zmq.Context.instance()
        self._req: zmq.Socket | None = None
        self._pub: zmq.Socket | None = None
        self._subs: list[zmq.Socket] = []
        self.sub_port: int | None = None
        self.pub_port: int | None = None
        self.version: str | None = None
        self.time_offset = 0.0
        self.is_recording = False

    def __enter__(self) -> HmdEyesClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ Request.cs, RequestController.cs

    def connect(self) -> None:
        """Connect as ``RequestController.Connect`` then ``Connected``, and sync time.

        Raises
        ------
        TimeoutError
            ``SUB_PORT`` got no answer within 1 s (hmd-eyes would retry in 5 s).
        """
        req = self._ctx.socket(zmq.REQ)
        req.linger = 0
        req.connect(self.remote)
        self._req = req
        sub = self._ask("SUB_PORT")
        if sub is None:
            self.close()
            raise TimeoutError(f"no answer to SUB_PORT from {self.remote} within {REQUEST_TIMEOUT:g} s")
        self.sub_port = int(sub)
        pub = self._ask("PUB_PORT")
        self.pub_port = int(pub) if pub is not None else None
        self.version = self._ask("v")
        self.send_notification({"subject": "eye_process.should_start.1", "eye_id": 1, "delay": 0.1})
        self.send_notification({"subject": "eye_process.should_start.0", "eye_id": 0, "delay": 0.2})
        self.send_notification({"subject": "set_detection_mapping_mode", "mode": "3d"})
        self.update_time_sync()  # TimeSync listens to OnConnected

    def close(self) -> None:
        for sock in [*self._subs, self._pub, self._req]:
            if sock is not None:
                sock.close(linger=0)
        self._subs, self._pub, self._req = [], None, None

    def _ask(self, command: str) -> str | None:
        """``SendCommand``: one frame out, the answer within 1 s or None."""
        if self._req is None:
            raise RuntimeError("not connected")
        self._req.send_string(command)
        if not self._req.poll(int(REQUEST_TIMEOUT * 1000)):
            return None
        return self._req.recv_string()

    def command(self, command: str) -> str | None:
        """A Pupil Remote command (``t``, ``v``, …): its answer, or None after 1 s."""
        return self._ask(command)

    def send_notification(self, note: dict[str, Any]) -> str | None:
        """``SendRequestMessage``: ``notify.<subject>`` and the msgpack'd dictionary through the REQ
        socket; the reply (awaited 1 s) is returned for tests, hmd-eyes ignores it."""
        if self._req is None:
            raise RuntimeError("not connected")
        self._req.send_multipart([f"notify.{note['subject']}".encode(), msgpack.packb(note, use_bin_type=True)])
        if not self._req.poll(int(REQUEST_TIMEOUT * 1000)):
            return None
        return b"".join(self._req.recv_multipart()).decode()

    def start_plugin(self, name: str, args: dict[str, Any] | None = None) -> str | None:
        note: dict[str, Any] = {"subject": "start_plugin", "name": name}
        if args is not None:  # hmd-eyes leaves the key out rather than sending null
            note["args"] = args
        return self.send_notification(note)

    def stop_plugin(self, name: str) -> str | None:
        return self.send_notification({"subject": "stop_plugin", "name": name})

    # ------------------------------------------------------------ TimeSync.cs

    @staticmethod
    def local_time() -> float:
        """The local clock (Unity's ``Time.realtimeSinceStartup``)."""
        return time.monotonic()

    def update_time_sync(self) -> float:
        """``UpdateTimeSync``: Pupil time minus the local clock at the middle of the request."""
        before = self.local_time()
        answer = self._ask("t")
        after = self.local_time()
        if answer is None:
            raise TimeoutError(f"no answer to 't' from {self.remote} within {REQUEST_TIMEOUT:g} s")
        self.time_offset = float(answer) - (before + after) / 2.0
        return self.time_offset

    def pupil_time(self, local: float | None = None) -> float:
        """``ConvertToPupilTime`` of ``local`` (default: now)."""
        return (self.local_time() if local is None else local) + self.time_offset

    # ------------------------------------------------------------ subscriptions

    def subscribe(self, topic: str) -> zmq.Socket:
        """``SubscriptionsController.SubscribeTo``: a SUB socket of its own on ``SUB_PORT``."""
        sub = self._ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.connect(f"{self.host}:{self.sub_port}")
        sub.setsockopt_string(zmq.SUBSCRIBE, topic)
        self._subs.append(sub)
        return sub

    def _unsubscribe(self, sock: zmq.Socket) -> None:
        sock.close(linger=0)
        self._subs.remove(sock)

    def _publisher(self) -> zmq.Socket:
        """``Publisher``: a PUB socket connected to ``PUB_PORT``."""
        if self._pub is None:
            if self.pub_port is None:
                raise RuntimeError("PUB_PORT got no answer: hmd-eyes' Publisher would have nowhere to connect")
            self._pub = self._ctx.socket(zmq.PUB)
            self._pub.linger = 0
            self._pub.connect(f"{self.host}:{self.pub_port}")
        return self._pub

    def _publish(self, note: dict[str, Any]) -> None:
        self._publisher().send_multipart([f"notify.{note['subject']}".encode(), msgpack.packb(note, use_bin_type=True)])

    # ------------------------------------------------------------ Calibration.cs

    def calibrate(
        self,
        targets: Sequence[tuple[float, float, float]] = DEFAULT_TARGETS,
        *,
        ipd_mm: float = 63.0,
        seconds_per_target: float = 1.0,
        ignore_initial_seconds: float = 0.1,
        samples_per_target: int = 40,
        aspect: float = 1.0,
        send_ref_data: bool = True,
        timeout: float = 5.0,
    ) -> str | None:
        """Calibrate as hmd-eyes does and return ``"successful"`` or ``"failed"`` (whichever
        notification arrived first within ``timeout`` s after ``calibration.should_stop``), or
        None. ``targets`` are positions in the VR camera's space (m); hmd-eyes' defaults for the
        timing; ``send_ref_data=False`` collects samples but never sends them."""
        outcome: dict[zmq.Socket, str] = {}
        for name in ("successful", "failed"):
            outcome[self.subscribe(f"notify.calibration.{name}")] = name
        poller = zmq.Poller()
        for sub in outcome:
            poller.register(sub, zmq.POLLIN)
        try:
            self.start_plugin(CALIBRATION_PLUGIN)
            self._publisher()  # created before should_start, as Calibration.StartCalibration does
            half = ipd_mm / 2.0  # UpdateEyesTranslation: the XR eyes relative to the centre eye, in mm
            note = {
                "subject": "calibration.should_start",
                "translation_eye0": [half, 0.0, 0.0],  # the right eye
                "translation_eye1": [-half, 0.0, 0.0],
                "record": True,
            }
            self.send_notification(note)
            rate = samples_per_target / (seconds_per_target - ignore_initial_seconds)  # CalibrationSettings.SampleRate
            for target in targets:
                started = self.local_time()
                samples: list[dict[str, Any]] = []
                while len(samples) < samples_per_target and self.local_time() - started < seconds_per_target:
                    if poller.poll(int(1000.0 / rate)):  # paces the samples as frames do; a result ends the target
                        break
                    if self.local_time() - started < ignore_initial_seconds:
                        continue
                    mm = [target[0] * 1000.0, target[1] / aspect * 1000.0, target[2] * 1000.0]
                    samples.append({"mm_pos": mm, "timestamp": self.pupil_time()})
                if send_ref_data:
                    self._publish({"subject": "calibration.add_ref_data", "ref_data": samples, "record": True})
            self._publish({"subject": "calibration.should_stop", "record": True})
            for sock, _ in poller.poll(int(timeout * 1000)):
                sock.recv_multipart()
                return outcome[sock]
            return None
        finally:
            for sub in outcome:
                self._unsubscribe(sub)

    # ------------------------------------------------------------ RecordingController.cs

    def start_recording(self, path: str, *, record_eye: bool = True) -> str | None:
        """``StartRecording`` with ``path`` as its session name (hmd-eyes sends a directory)."""
        if self.is_recording:
            return None  # "Recording is already running."
        reply = self.send_notification(
            {"subject": "recording.should_start", "session_name": path, "record_eye": record_eye}
        )
        self.is_recording = True
        return reply

    def stop_recording(self) -> str | None:
        if not self.is_recording:
            return None  # "Recording is not running, nothing to stop."
        reply = self.send_notification({"subject": "recording.should_stop"})
        self.is_recording = False
        return reply

    # ------------------------------------------------------------ GazeListener.cs

    def listen_gaze(self) -> zmq.Socket:
        """``GazeListener``: subscribe to ``gaze.3d``."""
        return self.subscribe("gaze.3d")

    @staticmethod
    def receive_gaze(sock: zmq.Socket, timeout: float) -> GazeData | None:
        """The next gaze datum on ``sock`` parsed as ``GazeData``, or None after ``timeout`` s.

        Raises
        ------
        GazeDataError
            As :func:`parse_gaze`.
        """
        if not sock.poll(int(timeout * 1000)):
            return None
        frames = sock.recv_multipart()  # a third frame (none for gaze) would be passed on as is
        datum = msgpack.unpackb(frames[1], raw=False, strict_map_key=False)
        return parse_gaze(frames[0].decode(), datum)
