"""The Lab Streaming Layer streams of the local network, as ``streamdp doctor`` sees them.

LSL has no authentication: every stream is readable by any host that resolves it. streamdp's own
outlets (:mod:`streamdp.network.lsl_sink`, the relay's and the plugin's ``lsl``, ``replay --lsl``)
carry sanitized releases only; a gaze stream of anyone else's, such as Pupil's LSL relay
(``pupil_capture``, type ``Gaze``), carries raw gaze to the whole network. :func:`survey_lsl`
resolves the streams for a short while (pylsl's ``resolve_streams``, multicast on the local
network) and :func:`lsl_findings` turns what it found into the doctor's findings: streamdp's
streams are named as sanitized, another gaze stream on this machine is raw gaze exposed, one on
another host a warning; streams of other kinds (EEG, markers) say nothing about gaze and are left
out. streamdp's streams are told by their source id, ``<source>/<channel>/<mechanism>``, and
type (``Features`` or ``Gaze``): a resolved stream's description is not read (that takes a
connection to every outlet).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field

from .deployment import Finding

__all__ = ["LSL_LOOK_S", "LslStream", "LslSurvey", "check_look", "lsl_findings", "outlet_finding", "survey_lsl"]

#: how long ``streamdp doctor`` listens for LSL streams (s)
LSL_LOOK_S = 0.5
_OURS = re.compile(r"/(features|gaze)/[\w.+-]+$")
_NO_AUTH = "LSL has no authentication: any host of the local network can read"


@dataclass(frozen=True)
class LslStream:
    """One resolved stream: its name, type, source id and the host of its outlet."""

    name: str
    type: str
    source_id: str
    hostname: str

    @property
    def streamdp(self) -> bool:
        """Whether the stream is one of streamdp's outlets (sanitized releases only).

        Examples
        --------
        >>> LslStream("streamdp-features", "Features", "streamdp/features/dcfpa", "lab1").streamdp
        True
        >>> LslStream("pupil_capture", "Gaze", "pupil_capture_lsl_relay", "lab1").streamdp
        False
        """
        found = _OURS.search(self.source_id)
        return found is not None and self.type.lower() == found.group(1)

    @property
    def gaze(self) -> bool:
        return self.type.lower() == "gaze" or self.name == "pupil_capture"


@dataclass(frozen=True)
class LslSurvey:
    """What :func:`survey_lsl` found in ``timeout`` seconds, or why it could not look."""

    streams: tuple[LslStream, ...] = ()
    timeout: float = LSL_LOOK_S
    problem: str = ""
    #: this machine's host name, as LSL outlets report theirs
    host: str = field(default_factory=socket.gethostname)


def check_look(timeout: object) -> float:
    """``timeout`` as the seconds a survey listens, refused unless a finite number > 0.

    Raises
    ------
    TypeError
        Not a number.
    ValueError
        Not finite and > 0.

    Examples
    --------
    >>> check_look(0)
    Traceback (most recent call last):
    ...
    ValueError: lsl_timeout must be a positive number of seconds, got 0
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"lsl_timeout must be a number of seconds, got {timeout!r}")
    if not 0 < timeout < float("inf"):
        raise ValueError(f"lsl_timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


def survey_lsl(timeout: float = LSL_LOOK_S) -> LslSurvey:
    """The LSL streams that answer within ``timeout`` seconds; without pylsl, a survey that says
    why it did not look.

    Raises
    ------
    TypeError, ValueError
        As :func:`check_look`.
    """
    check_look(timeout)
    from .lsl_sink import load_pylsl

    try:
        pylsl = load_pylsl()
    except ImportError as exc:
        return LslSurvey(timeout=timeout, problem=f"not looked for: {exc}")
    found = [LslStream(i.name(), i.type(), i.source_id(), i.hostname()) for i in pylsl.resolve_streams(timeout)]
    return LslSurvey(tuple(sorted(found, key=lambda s: (s.name, s.source_id, s.hostname))), timeout)


def outlet_finding(name: str) -> Finding:
    """The finding of streamdp's own outlet named ``name`` (its streams ``<name>-features`` and, with
    the gaze channel, ``<name>-gaze``), known without resolving it."""
    return Finding(
        f"LSL streams {name}-*",
        "warning",
        f"streamdp's outlet: sanitized releases only (Features; Gaze with the gaze channel); {_NO_AUTH} them",
    )


def lsl_findings(survey: LslSurvey, known: Sequence[str] = ()) -> list[Finding]:
    """The doctor's findings about the streams of ``survey`` (streamdp's, and gaze streams of
    others); ``known`` names streams already reported (an outlet's own, by :func:`outlet_finding`).

    Examples
    --------
    >>> raw = LslStream("pupil_capture", "Gaze", "pupil_capture_lsl_relay", "lab1")
    >>> ours = LslStream("streamdp-features", "Features", "streamdp/features/dcfpa", "lab1")
    >>> [f.status for f in lsl_findings(LslSurvey((ours, raw), host="lab1"))]
    ['warning', 'exposed']
    >>> lsl_findings(LslSurvey(host="lab1"))[0].text
    'no raw gaze stream answered in 0.5 s'
    """
    if survey.problem:
        return [Finding("LSL", "note", survey.problem)]
    out = []
    for s in survey.streams:
        where = "this machine" if s.hostname == survey.host else f"host {s.hostname}"
        subject = f"LSL stream {s.name}"
        if s.streamdp:
            if not any(s.name.startswith(f"{k}-") or s.name == k for k in known):
                text = f"streamdp's ({s.type}, on {where}): sanitized releases only; {_NO_AUTH} it"
                out.append(Finding(subject, "warning", text))
        elif s.gaze:
            status = "exposed" if s.hostname == survey.host else "warning"
            out.append(
                Finding(
                    subject,
                    status,
                    f"not streamdp's: a {s.type} stream on {where} (source {s.source_id}), likely raw gaze "
                    f"(Pupil's LSL relay is pupil_capture); {_NO_AUTH} it",
                )
            )
    if not out:
        out.append(Finding("LSL", "ok", f"no raw gaze stream answered in {survey.timeout:g} s"))
    return out
