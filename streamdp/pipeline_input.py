"""What a session feeds its pipeline: decoded gaze as batches in the stream's diameter unit, with
the source's blink events (:class:`PipelineInput`)."""

from __future__ import annotations

import logging

import numpy as np

from .config import SessionConfig
from .errors import InputError
from .gaze import BlinkEvents, DiameterUnit, GazeBatch, GazeColumns, Recording, choose_diameter_unit
from .plausibility import columns_within_bounds
from .pupil_wire import GazeDecoder

log = logging.getLogger(__name__)

__all__ = ["PipelineInput"]


class PipelineInput:
    """Decoded gaze and the source's blinks, made into the pipeline's input.

    The diameter unit is chosen once per stream, so that it never depends on how the stream was
    split: the configured one, else the one the source's pupil detector names (Pupil's gaze
    topics, read by ``decoder``), else that of the first samples with a diameter. The source's
    blink events (``blinks="given"``) wait for the gaze they come with; with blinks from
    confidence the source's are ignored.

    Parameters
    ----------
    config : SessionConfig
        Its ``diameter_unit`` and ``blinks``.
    source : str
        Named in error messages.
    decoder : GazeDecoder
        The session's decoder of Pupil's wire format.
    """

    def __init__(self, config: SessionConfig, source: str, decoder: GazeDecoder) -> None:
        #: whether the source's blink events are taken (else blinks come from confidence)
        self.given = config.blinks == "given"
        self._configured: DiameterUnit | None = None if config.diameter_unit == "auto" else config.diameter_unit  # type: ignore[assignment]
        self.source = source
        self.decoder = decoder
        self._told = False  # whether live gaze beyond the plausibility bounds was logged
        self.reset()

    def reset(self) -> None:
        """A new stream: no blink waits, the unit is chosen again."""
        self._blinks: list[BlinkEvents] = []
        #: the stream's diameter unit (None until chosen)
        self.unit = self._configured

    def add_blinks(self, blinks: BlinkEvents | None) -> None:
        """The source's blinks finished since the last call (ignored unless ``blinks="given"``)."""
        if blinks is not None and self.given:
            self._blinks.append(blinks)

    def take(self, cols: GazeColumns) -> tuple[GazeBatch, BlinkEvents | None] | None:
        """``cols`` as a batch in the stream's unit (chosen now if not yet), with the blinks that
        waited (now taken); None when there is neither gaze nor blink.

        Raises
        ------
        InputError
            ``cols`` cannot be made into a batch (the blinks keep waiting).
        """
        blinks = _concat_blinks(self._blinks)
        if not len(cols) and blinks is None:
            return None
        self.unit = self.unit_for(cols)
        batch = cols.to_batch(self.unit or "none", self.source)
        self._blinks = []
        return batch, blinks

    def within_bounds(self, cols: GazeColumns) -> tuple[GazeColumns, int]:
        """Live ``cols`` held to the per-sample plausibility bounds, as a replay of the recording
        would hold them (:func:`~streamdp.plausibility.columns_within_bounds`), and how many positions
        that made invalid. What is left out is logged the first time, at INFO: the real Capture's
        binocular mapper sends such gaze whenever an eye process lags (the status counts it)."""
        kept, left_out = columns_within_bounds(cols)
        if (left_out.positions or left_out.diameters) and not self._told:
            self._told = True
            log.info("%s: %s (further ones are counted, not logged)", self.source, left_out.describe())
        return kept, left_out.positions

    def unit_for(self, cols: GazeColumns) -> DiameterUnit | None:
        """The stream's unit, else the one it would take from the detector or ``cols`` (None
        while no sample has a diameter)."""
        return self.unit or self.decoder.detector_unit or choose_diameter_unit(cols.diameter_mm, cols.diameter_px)

    def recording(self, recording: Recording) -> tuple[GazeColumns, BlinkEvents | None]:
        """A recording's gaze, and its blink events when the source's are taken.

        Raises
        ------
        InputError
            ``blinks="given"`` and the recording has no blink events.
        """
        if self.given and recording.blinks is None:
            raise InputError(f"{recording.name}: blinks 'given', but the recording has no blink events")
        return GazeColumns.from_batch(recording.gaze), recording.blinks if self.given else None


def _concat_blinks(parts: list[BlinkEvents]) -> BlinkEvents | None:
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return BlinkEvents.from_arrays(np.concatenate([p.start for p in parts]), np.concatenate([p.end for p in parts]))
