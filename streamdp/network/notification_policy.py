"""What streamdp's Pupil Remote lets through, in one table each way (issue #28).

Apps written for Capture's Network API (hmd-eyes, pupil-helpers) send notifications to Pupil
Remote (two frames, ``notify.<subject>`` and a msgpack map, through its REQ socket) and publish
them and annotations into ``PUB_PORT``; they subscribe to Capture's notifications on
``SUB_PORT``. :class:`~streamdp.network.pupil_remote.StreamdpPupilRemote` stands between them
and Capture, and decides with these tables:

- **Inbound** (:data:`INBOUND`, :func:`inbound`): an app's message to Capture is forwarded
  (what an app needs to run: eye processes, detection mode, calibration, recording, annotations)
  or refused (what would hand raw data back, take the deployment apart or stop the device). The
  first matching row wins; a subject in no row is refused.
- **Outbound** (:data:`OUTBOUND`, :func:`outbound`): of Capture's own notifications only those
  an app waits for reach it, stripped to fields that say what happened and nothing measured.
  ``calibration.setup.v2`` (its ``calib_data.pupil_list`` is raw pupil data) and
  ``calibration.result.v2`` (its ``params`` are the wearer's fitted eye geometry) never do.

Examples
--------
>>> inbound(b"notify.calibration.should_start", {"subject": "calibration.should_start"}).action
'forward'
>>> inbound(b"notify.start_plugin", {"subject": "start_plugin", "name": "NetworkApiPlugin"}).reason
"Capture's Network API plugin: restarting it could bind Capture's Pupil Remote beyond loopback"
>>> outbound({"subject": "calibration.result.v2", "params": {}}) is None
True
>>> outbound({"subject": "calibration.successful", "gazer_class_name": "GazerHMD3D", "timestamp": 3.0,
...           "record": True, "topic": "notify.calibration.successful", "extra": 1})
{'subject': 'calibration.successful', 'topic': 'notify.calibration.successful', 'gazer_class_name': 'GazerHMD3D', \
'timestamp': 3.0, 'record': True}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ANNOTATION_TOPIC",
    "FORWARD",
    "INBOUND",
    "OUTBOUND",
    "PLUGINS",
    "REFUSE",
    "Decision",
    "inbound",
    "outbound",
]

FORWARD, REFUSE = "forward", "refuse"
#: the topic pupil-helpers' ``remote_annotations.py`` and hmd-eyes' ``AnnotationPublisher`` use
ANNOTATION_TOPIC = "annotation"


@dataclass(frozen=True)
class Decision:
    """What happens to one inbound message: ``action`` (:data:`FORWARD` or :data:`REFUSE`) and why."""

    action: str
    reason: str

    @property
    def forwarded(self) -> bool:
        return self.action == FORWARD


#: inbound notifications by subject (a row ending in "." matches the subjects it begins)
INBOUND: tuple[tuple[str, str, str], ...] = (
    ("eye_process.should_start", FORWARD, "starts an eye process on this device"),
    ("eye_process.should_stop", FORWARD, "stops an eye process on this device"),
    ("set_detection_mapping_mode", FORWARD, "chooses 2d or 3d detection; the data stays in Capture"),
    ("calibration.should_start", FORWARD, "starts a calibration; its setup and result stay in Capture"),
    ("calibration.add_ref_data", FORWARD, "the app's own reference targets (no gaze)"),
    ("calibration.should_stop", FORWARD, "ends a calibration; the app hears only successful or failed"),
    ("recording.should_start", FORWARD, "records on this device's disk"),
    ("recording.should_stop", FORWARD, "stops a recording on this device"),
    ("start_plugin", FORWARD, "starts a plugin named in PLUGINS"),
    ("stop_plugin", FORWARD, "stops a plugin named in PLUGINS"),
    ("frame_publishing.", REFUSE, "frame publishing sends eye and scene images"),
    ("calibration.", REFUSE, "calibration setups and results are Capture's: an app does not set or read them"),
    ("pupil_detector.", REFUSE, "detector settings are the device owner's"),
    ("world_process.should_stop", REFUSE, "stops Capture for every app and for streamdp"),
    ("launcher_process.should_stop", REFUSE, "stops Capture for every app and for streamdp"),
    ("service_process.should_stop", REFUSE, "stops Pupil Service for every app and for streamdp"),
)

_REBINDS = "Capture's Network API plugin: restarting it could bind Capture's Pupil Remote beyond loopback"
#: plugins an app may start or stop, and the ones it may not, with why (any other name: refused)
PLUGINS: Mapping[str, tuple[str, str]] = {
    "HMD3DChoreographyPlugin": (FORWARD, "hmd-eyes' 3d calibration"),
    "HMD2DChoreographyPlugin": (FORWARD, "hmd-eyes' 2d calibration"),
    "ScreenMarkerChoreographyPlugin": (FORWARD, "screen marker calibration"),
    "SingleMarkerChoreographyPlugin": (FORWARD, "single marker calibration"),
    "NaturalFeatureChoreographyPlugin": (FORWARD, "natural feature calibration"),
    "Annotation_Capture": (FORWARD, "records the apps' annotations"),
    "NetworkApiPlugin": (REFUSE, _REBINDS),
    "Pupil_Remote": (REFUSE, "Capture's Pupil Remote: restarting it could bind it beyond loopback"),
    "Frame_Publisher": (REFUSE, "publishes eye and scene images"),
}

_NOT_IN_POLICY = "not in streamdp's notification policy (docs/pupil-remote.md)"


def _row(subject: str) -> tuple[str, str] | None:
    for pattern, action, reason in INBOUND:
        if subject == pattern or (pattern.endswith(".") and subject.startswith(pattern)):
            return action, reason
        if not pattern.endswith(".") and subject.startswith(pattern + "."):
            return action, reason  # eye_process.should_start.0: the eye's id appended
    return None


def inbound(topic: bytes, payload: object) -> Decision:
    """The decision for an app's message ``[topic, msgpack(payload)]`` to Capture.

    ``payload`` is the decoded second frame (anything: a malformed one is refused here).
    Annotations are forwarded; a notification by :data:`INBOUND` (``start_plugin`` and
    ``stop_plugin`` by :data:`PLUGINS` too); anything else is refused.
    """
    try:
        name = topic.decode()
    except UnicodeDecodeError:
        return Decision(REFUSE, "the topic is not UTF-8")
    if not isinstance(payload, dict):
        return Decision(REFUSE, f"the payload is not a msgpack map ({type(payload).__name__})")
    if name == ANNOTATION_TOPIC or name.startswith(ANNOTATION_TOPIC + "."):
        return Decision(FORWARD, "the app's own annotation, recorded by Capture")
    if not name.startswith("notify."):
        return Decision(REFUSE, "only notifications and annotations go to Capture")
    subject = name[len("notify.") :]
    if payload.get("subject") != subject:
        return Decision(REFUSE, f"the payload's subject {payload.get('subject')!r} is not the topic's {subject!r}")
    row = _row(subject)
    if row is None:
        return Decision(REFUSE, _NOT_IN_POLICY)
    if subject in ("start_plugin", "stop_plugin"):
        plugin = payload.get("name")
        if not isinstance(plugin, str):
            return Decision(REFUSE, "no plugin name")
        return Decision(*PLUGINS.get(plugin, (REFUSE, f"plugin {plugin!r} is not in PLUGINS")))
    return Decision(*row)


#: Capture's notifications an app may receive, with the fields kept (the rest is stripped)
OUTBOUND: Mapping[str, tuple[str, ...]] = {
    "calibration.started": (),
    "calibration.stopped": (),
    # success or failure is one bit per calibration the app itself ran: it must know whether to
    # calibrate again (hmd-eyes waits for it); Capture's failure reasons are fixed sentences
    "calibration.successful": ("gazer_class_name", "timestamp", "record"),
    "calibration.failed": ("reason", "gazer_class_name", "timestamp", "record"),
    "recording.started": ("session_name",),
    "recording.stopped": (),
}


def outbound(note: Mapping[str, Any]) -> dict[str, Any] | None:
    """``note`` (one of Capture's notifications) as an app may see it, or None: not in
    :data:`OUTBOUND`. Kept: ``subject``, ``topic`` and the row's fields, in that order."""
    subject = note.get("subject")
    if not isinstance(subject, str) or subject not in OUTBOUND:
        return None
    kept = {"subject": subject, "topic": "notify." + subject}
    # a field of another type than Capture sends (a nested map, a list) is not passed on blind
    kept.update({k: note[k] for k in OUTBOUND[subject] if isinstance(note.get(k), (str, int, float, bool))})
    return kept
