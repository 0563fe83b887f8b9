"""The simulator's world process: how Pupil Capture reacts to the notifications apps such as
hmd-eyes send it, written from Capture's source (v3.x) so that a stand-in for Capture (streamdp's
own Pupil Remote, issue #28) can be tested against the same behaviour.

Every notification on the backbone reaches :meth:`SimulatedWorld.observe` (and pupil datums while
a calibration collects them); :meth:`SimulatedWorld.react`, run by the simulator's broker thread
after it has answered Pupil Remote, publishes what Capture would. What the world publishes comes
back to it, as on Capture's IPC backbone: the choreography's ``start_plugin`` for the gazer is what
fits the gazer.

What is simulated, file by file (``pupil_src/…``):

- ``calibration_choreography/hmd_plugin.py``, ``base_plugin.py``: the HMD 3D choreography, active
  once ``start_plugin`` names ``HMD3DChoreographyPlugin`` (Capture starts with its screen marker
  choreography, which the simulator does not simulate: calibration notifications get no reaction
  before). ``calibration.should_start`` needs ``translation_eye0``/``translation_eye1``, else an
  error record ``Calibration cannot be started without 'translation_eye0'`` and nothing else;
  then ``calibration.started``. ``calibration.add_ref_data`` keeps ``ref_data`` (an error record
  when not calibrating); pupil datums on the backbone are collected meanwhile, raw, all of them.
  ``calibration.should_stop`` publishes ``calibration.stopped`` and then ``start_plugin`` naming
  ``GazerHMD3D`` with ``eye_translations`` and ``calib_data`` (``ref_list``, ``pupil_list``) in
  its ``args``: the whole calibration goes over the backbone twice. Untidy: the log messages have
  two spaces (``Starting  Calibration``); starting the choreography again while it calibrates
  stops the calibration (its ``deinit_ui``) and fits a gazer.
- ``gaze_mapping/gazer_base.py``, ``gazer_3d/gazer_hmd.py``, ``gaze_mapping/utils.py``,
  ``notifications.py``: the gazer announces ``calibration.setup.v2`` (``calib_data``) before it
  fits, then ``calibration.successful`` *before* ``calibration.result.v2`` (``params``), or
  ``calibration.failed`` with its ``reason``. Every one has ``gazer_class_name``, ``timestamp``
  (Pupil time), ``record=True``; setup and result ``version=2``. The HMD gazer skips the base
  class's checks, so an empty pupil or reference list fails on ``_match_data_batch``'s asserts:
  reasons ``No pupil data to match`` (3d pupil datums with confidence ≥ 0.8 only) and ``No reference
  data to match``; no binocular match within 1/15 s gives ``Not sufficient data available.``.
  ``params`` is ``left_model`` (eye 1: ``eye_camera_to_world_matrix``, ``gaze_distance`` 500),
  ``right_model`` (eye 0) and ``binocular_model`` (``eye_camera_to_world_matrix0``/``1``): the
  person's eye geometry. Capture solves the eye rotations by bundle adjustment; the simulator
  keeps them at identity, so each matrix's translation is the app's eye translation minus the
  eyeball centre (the last matched pupil datum's ``sphere.center``, or a typical one when the
  datum has no eye model, as the simulator's do not).
- ``recorder.py``: ``recording.should_start`` (``session_name``, ``record_eye``) publishes
  ``recording.started`` (``rec_path``, ``session_name``, ``record_eye``, ``compression``,
  ``start_time_synced``); ``recording.should_stop`` publishes ``recording.stopped`` (``rec_path``).
  Untidy: while recording, any notification with ``record=True`` is only saved, never acted on
  (even ``recording.should_stop``), and one without ``timestamp`` logs ``Notification without
  timestamp will not be saved.`` (it is saved); a session name with ``/`` logs a warning.
- ``main.py``, ``launchables/eye.py``: ``eye_process.should_start.<id>`` starts an eye process
  (read from ``eye_id``) that finds its eye already running (the simulator plays both) and only
  logs ``Aborting redundant eye process startup``. ``launchables/world.py``: nothing reacts to
  ``set_detection_mapping_mode`` any more (Capture ≥ 2.0); ``start_plugin`` replaces a plugin of
  the same base class (``plugin.py`` logs ``Replacing … due to 'by_base_class' uniqueness``).

Not simulated: validation, the other choreographies, gaze mapped with the new gazer (the simulator
plays its recording's gaze whatever the outcome), files written to disk.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np

from .simulated_remote import PupilRemoteServer, log_record, notification, plugin_request

__all__ = ["HMD_CHOREOGRAPHY", "HMD_GAZER", "SimulatedWorld"]

HMD_CHOREOGRAPHY = "HMD3DChoreographyPlugin"
HMD_GAZER = "GazerHMD3D"
#: Capture's choreographies by class name, with their labels (their ``pretty_class_name``)
_CHOREOGRAPHIES = {
    "ScreenMarkerChoreographyPlugin": "Screen Marker Calibration",
    "SingleMarkerChoreographyPlugin": "Single Marker Calibration",
    "NaturalFeatureChoreographyPlugin": "Natural Feature Calibration",
    HMD_CHOREOGRAPHY: "HMD 3D Calibration",
}
_GAZERS = ("Gazer2D", "Gazer3D", HMD_GAZER, "PosthocGazerHMD3D")
MIN_CALIBRATION_CONFIDENCE = 0.8  # world.py's session default
_MAX_DISPERSION = 1 / 15.0
_GAZE_DISTANCE = 500.0  # Model3D_Binocular.set_params: the monocular models get it at fit time
#: a typical pye3d eyeball centre in eye-camera coordinates (mm), for datums without an eye model
_SPHERE_CENTER = (0.0, 0.0, 35.0)
_BASE = "calibration_choreography.base_plugin"
_GAZER_LOG = "gaze_mapping.gazer_base"

Publish = Callable[[list[bytes]], Any]


class SimulatedWorld:
    """Capture's world process (and launcher) as far as notifications go. Owned by the
    simulator's broker thread: it calls :meth:`observe` with every message put on the backbone and
    :meth:`react` once per turn; other threads only read :attr:`received` or :meth:`wait_for`.

    Parameters
    ----------
    now : callable
        Pupil time now (``g_pool.get_timestamp``).
    rec_root_dir : str, optional
        Where recordings would go (Capture: ``recordings`` beside its settings directory).
    """

    def __init__(self, now: Callable[[], float], rec_root_dir: str | None = None) -> None:
        self._now = now
        self.rec_root_dir = rec_root_dir or os.path.join(os.path.expanduser("~"), "recordings")
        #: the subject of every notification the world process received, in order (its own too)
        self.received: list[str] = []
        self._heard = threading.Condition()
        self._pending: deque[list[bytes]] = deque()
        self._publish: Publish = lambda frames: None
        self.choreography = "ScreenMarkerChoreographyPlugin"
        self.gazer: str | None = "Gazer3D"  # Capture's default gazer
        self.calibrating = False
        self._translations: tuple[list[float], list[float]] = ([0, 0, 0], [0, 0, 0])
        self._ref_list: list[dict[str, Any]] = []
        self._pupil_list: list[dict[str, Any]] = []
        self.rec_path: str | None = None
        self.session_name = time.strftime("%Y_%m_%d", time.localtime())
        self.record_eye = True
        self._rec_counters: dict[str, int] = {}

    # ------------------------------------------------------------ the broker's side

    def observe(self, frames: list[bytes], send: Publish | None = None) -> None:
        """Note a message put on the backbone, after ``send`` put it there (cheap: notifications,
        and pupil datums only while calibrating, are kept for :meth:`react`)."""
        if send is not None:
            send(frames)
        topic = frames[0] if frames else b""
        if topic.startswith(b"notify.") or (self.calibrating and topic.startswith(b"pupil.")):
            self._pending.append(frames)

    def react(self, publish: Publish, remote: PupilRemoteServer | None = None) -> None:
        """Publish Capture's reactions to what was observed (and to those reactions in turn);
        ``remote`` is Pupil Remote, which ``start_plugin``/``stop_plugin`` naming the Network
        API plugin restart or stop."""
        self._publish = publish
        while self._pending:
            frames = self._pending.popleft()
            if len(frames) < 2:
                continue
            try:
                payload = msgpack.unpackb(frames[1], raw=False, strict_map_key=False)
            except Exception:  # Capture's world would fail on it; the simulator only drops it
                continue
            if not isinstance(payload, dict):
                continue
            if frames[0].startswith(b"pupil."):
                if self.calibrating:  # the choreography's recent_events: every pupil datum
                    self._pupil_list.append(payload)
                continue
            subject = payload.get("subject")
            if not isinstance(subject, str):
                continue
            with self._heard:
                self.received.append(subject)
                self._heard.notify_all()
            request = plugin_request(frames)
            if request is not None and remote is not None:
                remote.replace_plugin(*request)
            self._on_notify(subject, payload)

    def wait_for(self, subject: str, timeout: float) -> bool:
        """Wait until the world process received a notification with ``subject``."""
        with self._heard:
            return self._heard.wait_for(lambda: subject in self.received, timeout)

    # ------------------------------------------------------------ publishing

    def _notify(self, subject: str, **fields: Any) -> None:
        frames = notification(subject, **fields)
        self._publish(frames)
        self._pending.append(frames)  # Capture's IPC brings it back to the world process

    def _log(self, level: str, msg: str, logger: str, process: str = "world") -> None:
        self._publish(log_record(level, msg, logger=logger, process=process))

    # ------------------------------------------------------------ reactions

    def _on_notify(self, subject: str, note: dict[str, Any]) -> None:
        if subject == "start_plugin":
            self._start_plugin(str(note.get("name")), note.get("args") or {})
        elif subject.startswith("eye_process.should_start"):
            # main.py reads eye_id (its launcher dies without it); eye.py finds the eye running
            if "eye_id" in note:
                eye = note["eye_id"]
                self._log("warning", "Aborting redundant eye process startup", "launchables.eye", f"eye{eye}")
        elif self.choreography == HMD_CHOREOGRAPHY and subject.startswith("calibration."):
            self._choreography(subject, note)
        self._recorder(subject, note)

    def _start_plugin(self, name: str, args: Any) -> None:
        if name in _CHOREOGRAPHIES:
            old = self.choreography
            self._log("debug", f"Replacing {_CHOREOGRAPHIES[old]} due to 'by_base_class' uniqueness", "plugin")
            if old == HMD_CHOREOGRAPHY and self.calibrating:
                self._perform_stop()  # the replaced choreography's deinit_ui
            self.choreography = name
        elif name in _GAZERS and isinstance(args, dict) and isinstance(args.get("calib_data"), dict):
            if self.gazer is not None:
                self._log("debug", f"Replacing {self.gazer} due to 'by_base_class' uniqueness", "plugin")
            self.gazer = None
            if name == HMD_GAZER:
                self._fit_gazer(args)

    def _choreography(self, subject: str, note: dict[str, Any]) -> None:
        if subject == "calibration.should_start":
            if not self.calibrating:
                missing = [k for k in ("translation_eye0", "translation_eye1") if k not in note]
                if missing:
                    message = f"Calibration cannot be started without '{missing[0]}'"
                    self._log("error", message, "calibration_choreography.hmd_plugin")
                    return
                self._translations = (list(note["translation_eye0"]), list(note["translation_eye1"]))
            if self.calibrating:
                self._log("warning", "Calibration already running.", _BASE)
                return
            self._log("info", "Starting  Calibration", _BASE)
            self.calibrating, self._ref_list, self._pupil_list = True, [], []
            self._notify("calibration.started")
        elif subject == "calibration.add_ref_data":
            if self.calibrating:
                self._ref_list += list(note.get("ref_data") or [])
            else:
                self._log("error", "Ref data can only be added when calibration is running.", _BASE)
        elif subject == "calibration.should_stop":
            if self.calibrating:
                self._perform_stop()
            else:
                self._log("debug", "Calibration already stopped.", _BASE)

    def _perform_stop(self) -> None:
        self._log("info", "Stopping  Calibration", _BASE)
        pupil_list, ref_list = self._pupil_list, self._ref_list
        self.calibrating, self._ref_list, self._pupil_list = False, [], []
        self._notify("calibration.stopped")
        calib_data = {"ref_list": ref_list, "pupil_list": pupil_list}
        args = {"eye_translations": self._translations, "calib_data": calib_data}
        self._notify("start_plugin", name=HMD_GAZER, args=args)

    def _fit_gazer(self, args: dict[str, Any]) -> None:
        calib_data = args["calib_data"]
        common = {"gazer_class_name": HMD_GAZER, "record": True}
        self._notify("calibration.setup.v2", calib_data=calib_data, timestamp=self._now(), version=2, **common)
        params, reason = fit_hmd(args.get("eye_translations"), calib_data)
        if params is None:
            self._log("error", "Calibration Failed!", _GAZER_LOG)
            self._log("error", reason, _GAZER_LOG)
            self._notify("calibration.failed", reason=reason, timestamp=self._now(), **common)
            self._log("warning", f"Plugin {HMD_GAZER} failed to initialize", "plugin")
            return
        self._notify("calibration.successful", timestamp=self._now(), **common)
        self._notify("calibration.result.v2", params=params, timestamp=self._now(), version=2, **common)
        self.gazer = HMD_GAZER

    def _recorder(self, subject: str, note: dict[str, Any]) -> None:
        if note.get("record") and self.rec_path is not None:
            if "timestamp" not in note:  # and saves it all the same, with the time now
                self._log("error", "Notification without timestamp will not be saved.", "recorder")
            return
        if subject == "recording.should_start":
            if self.rec_path is not None:
                self._log("info", "Recording already running!", "recorder")
                return
            self.record_eye = bool(note.get("record_eye", self.record_eye))
            name = note.get("session_name")
            if name:
                if os.path.sep in str(name):
                    self._log("warning", "You session name will create one or more subdirectories", "recorder")
                self.session_name = str(name)
            self._start_recording()
        elif subject == "recording.should_stop":
            if self.rec_path is None:
                self._log("debug", "Recording already stopped!", "recorder")
                return
            self._log("info", "Saved Recording.", "recorder")
            rec_path, self.rec_path = self.rec_path, None
            self._notify("recording.stopped", rec_path=rec_path)

    def _start_recording(self) -> None:
        session = os.path.join(self.rec_root_dir, self.session_name)  # an absolute name wins
        counter = self._rec_counters.get(session, 0)
        self._rec_counters[session] = counter + 1  # Capture never overwrites: 000/, 001/, …
        self.rec_path = os.path.join(session, f"{counter:03d}/")
        self._log("debug", f"Created new recordings session dir {session}", "recorder")
        self._log("debug", f"Created new recording dir {self.rec_path}", "recorder")
        self._log("info", "Started Recording.", "recorder")
        self._notify(
            "recording.started",
            rec_path=self.rec_path,
            session_name=self.session_name,
            record_eye=self.record_eye,
            compression=True,  # raw_jpeg, the recorder's default
            start_time_synced=float(self._now()),
        )


def fit_hmd(eye_translations: Any, calib_data: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """``(params, "")`` as ``GazerHMD3D`` fits ``calib_data``, or ``(None, reason)`` with the
    reason Capture's ``calibration.failed`` gives (module docstring)."""
    pupils = [p for p in calib_data.get("pupil_list") or [] if isinstance(p, dict) and "3d" in str(p.get("method"))]
    pupils = [p for p in pupils if p.get("confidence", 0) >= MIN_CALIBRATION_CONFIDENCE]
    refs = calib_data.get("ref_list") or []
    if not pupils:
        return None, "No pupil data to match"
    if not refs:
        return None, "No reference data to match"
    try:
        by_eye = [[p for p in pupils if p["id"] == eye] for eye in (0, 1)]
        matched: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
        if by_eye[0] and by_eye[1]:
            times = [np.array([p["timestamp"] for p in eye]) for eye in by_eye]
            for ref in refs:
                p0, p1 = (by_eye[k][int(np.abs(times[k] - ref["timestamp"]).argmin())] for k in (0, 1))
                stamps = (p0["timestamp"], p1["timestamp"], ref["timestamp"])
                if max(stamps) - min(stamps) < _MAX_DISPERSION:
                    matched.append((ref, p0, p1))
        if not matched:
            return None, "Not sufficient data available."
        for ref, _, _ in matched:
            if len(ref["mm_pos"]) != 3:
                return None, f"reference position {ref['mm_pos']!r} is not 3d"
    except KeyError as err:  # the gazer's generic failure: the exception's first argument
        return None, str(err.args[0])
    if not isinstance(eye_translations, (list, tuple)) or len(eye_translations) != 2:
        return None, "GazerHMD3D can only be calibrated if it is initialised with valid eye translations."
    matrices = []
    for k in (0, 1):
        sphere = matched[-1][1 + k].get("sphere")  # the last matched datum's eye model
        center = np.asarray(sphere["center"] if isinstance(sphere, dict) else _SPHERE_CENTER, dtype=float)
        pose = np.eye(4)
        pose[:3, 3] = np.asarray(eye_translations[k], dtype=float) - center
        matrices.append(pose.tolist())
    return {
        "left_model": {"eye_camera_to_world_matrix": matrices[1], "gaze_distance": _GAZE_DISTANCE},
        "right_model": {"eye_camera_to_world_matrix": matrices[0], "gaze_distance": _GAZE_DISTANCE},
        "binocular_model": {"eye_camera_to_world_matrix0": matrices[0], "eye_camera_to_world_matrix1": matrices[1]},
    }, ""
