"""streamdp inside Pupil Capture: sanitized eye-movement features on the IPC backbone.

Install: copy this file into ``~/pupil_capture_settings/plugins/`` and streamdp with its
dependencies beside it (bundled Capture ships its own Python; see the README), then enable
"StreamDP" in Capture's plugin manager.

The plugin runs after the blink detector (order 0.8) and before the recorder (0.9), at 0.85. Every
frame it feeds ``events["gaze"]`` (and ``events["blinks"]`` when blinks come from Capture's
detector) to streamdp's private pipeline and adds each sanitized chunk to
``events["streamdp"]``; Capture publishes everything in ``events`` on its backbone under the
datum's ``topic`` (``streamdp.features.<mechanism>``) and its recorder saves it.

Note: Capture keeps exposing raw gaze on its own backbone. The sanitized topic protects data only
for apps that are given the sanitized topic alone (e.g. through ``streamdp relay`` on another
interface), never the backbone.
"""

from __future__ import annotations

import logging
from typing import Any

from plugin import Plugin  # Capture's plugin base class, importable inside Capture

from streamdp.errors import BudgetExhausted, InputError
from streamdp.gaze import BlinkEvents
from streamdp.pipeline import PrivatePipeline
from streamdp.privacy import default_profile, make_mechanism, secure_generator
from streamdp.privacy.accountant import PrivacyUnit
from streamdp.pupil_datum import BlinkPairing, gaze_batch, gaze_row
from streamdp.stages.events import EventConfig
from streamdp.stages.reorder import ReorderBuffer

logger = logging.getLogger(__name__)

try:  # Capture with a window has pyglui; headless Capture (and tests) may not
    from pyglui import ui
except ImportError:  # pragma: no cover - depends on the host
    ui = None


class StreamDP(Plugin):
    """Differentially private eye-movement features, published as ``streamdp.features.*``."""

    order = 0.85
    uniqueness = "by_class"
    icon_chr = "DP"

    def __init__(
        self,
        g_pool: Any,
        epsilon: float = 1.0,
        chunk_length: int = 64,
        mechanism: str = "dcfpa",
        k: int | None = None,
        unit: str = "chunk",
        budget: float | None = None,
        blinks_from_capture: bool = False,
        seed: int | None = None,
    ) -> None:
        super().__init__(g_pool)
        self._settings: dict[str, Any] = {
            "epsilon": epsilon,
            "chunk_length": chunk_length,
            "mechanism": mechanism,
            "k": k,
            "unit": unit,
            "budget": budget,
            "blinks_from_capture": blinks_from_capture,
            "seed": seed,
        }
        self.error = ""
        self.invalid = 0
        self.released = 0
        self._order = ReorderBuffer()
        self._pairing = BlinkPairing()
        self._blinks: list[tuple[float, float]] = []
        self.pipeline = self._build(self._settings)

    # ------------------------------------------------------------------ settings

    def _build(self, settings: dict[str, Any]) -> PrivatePipeline:
        mech = make_mechanism(
            settings["mechanism"],
            epsilon=settings["epsilon"],
            bounds=default_profile(),
            chunk_length=settings["chunk_length"],
            k=settings["k"],
        )
        unit = PrivacyUnit(settings["unit"], budget=settings["budget"])
        events = EventConfig(blink_source="given" if settings["blinks_from_capture"] else "confidence")
        # OS entropy unless a seed was set for reproducible research
        return PrivatePipeline(mech, unit=unit, events=events, rng=secure_generator(settings["seed"]))

    def update_settings(self, **changes: Any) -> bool:
        """Apply new settings; invalid ones are refused (shown in the menu) and nothing changes.
        The ε already spent is carried over: changing a setting never resets a budget."""
        new = {**self._settings, **changes}
        try:
            pipeline = self._build(new)
        except (TypeError, ValueError) as exc:
            self.error = str(exc)
            logger.error("streamdp: %s", exc)
            return False
        old = self.pipeline.privatizer.accountant
        acc = pipeline.privatizer.accountant
        acc.spent, acc.released = old.spent, old.released
        pipeline.features = self.pipeline.features  # the windows go on; a partial chunk is dropped
        self.pipeline, self._settings, self.error = pipeline, new, ""
        return True

    def get_init_dict(self) -> dict[str, Any]:
        return dict(self._settings)

    # ------------------------------------------------------------------ Capture callbacks

    def recent_events(self, events: dict[str, Any]) -> None:
        rows = []
        for i, datum in enumerate(events.get("gaze", [])):
            try:
                rows.append(gaze_row(datum, f"events['gaze'][{i}]"))
            except InputError as exc:
                self.invalid += 1
                logger.debug("streamdp skipped %s", exc)
        for i, datum in enumerate(events.get("blinks", [])):
            try:
                blink = self._pairing.add(datum, f"events['blinks'][{i}]")
            except InputError:
                self.invalid += 1
                continue
            if blink is not None:
                self._blinks.append(blink)
        out = []
        if self._order.clock_went_back(rows):
            out += self._feed(self._order.drain()) + self._safely(self.pipeline.restart)
            self._order.reset()
        out += self._feed(self._order.push(rows))
        if out:
            self.released += len(out)
            events["streamdp"] = [r.to_message() for r in out]

    def _feed(self, rows: list[Any]) -> list[Any]:
        if not rows:
            return []
        batch = gaze_batch(rows, "Capture events['gaze']", unit="mm", sort=False)
        blinks = None
        if self._settings["blinks_from_capture"]:
            blinks = BlinkEvents.from_arrays([b[0] for b in self._blinks], [b[1] for b in self._blinks])
            self._blinks = []
        return self._safely(lambda: self.pipeline.update(batch, blinks))

    def _safely(self, step: Any) -> list[Any]:
        try:
            return list(step())
        except BudgetExhausted as exc:
            self.error = str(exc)
            return []

    def on_notify(self, notification: dict[str, Any]) -> None:
        # a new clock (Pupil Remote's T, or time sync) means a new segment
        if notification.get("subject") in ("world_process.adapting_clock", "time_sync.master_announcement"):
            self._safely(self.pipeline.restart)
            self._order.reset()

    @property
    def status(self) -> str:
        acc = self.pipeline.privatizer.accountant
        priv = self.pipeline.privatizer
        if priv.exhausted:
            return f"budget spent: {priv.exhausted_message}"
        return (
            f"{self.released} chunks released, ε spent {acc.spent:g} "
            f"({self._settings['mechanism']}, {self._settings['epsilon']:g}/feature/chunk)"
            + (f"; {self.invalid} datums skipped" if self.invalid else "")
            + (f"; error: {self.error}" if self.error else "")
        )

    # ------------------------------------------------------------------ menu

    def init_ui(self) -> None:
        self.add_menu()
        self.menu.label = "StreamDP"
        if ui is None:
            return
        self.menu.append(ui.Info_Text("Sanitized eye-movement features on streamdp.features.*"))
        self.menu.append(ui.Slider("epsilon", self, min=0.1, max=50.0, label="ε per feature per chunk"))
        self.menu.append(ui.Selector("chunk_length", self, selection=[32, 64, 128], label="Chunk length"))
        self.menu.append(ui.Selector("mechanism", self, selection=["dcfpa", "cfpa", "lpa", "steil"], label="Mechanism"))
        self.menu.append(ui.Text_Input("status", self, label="Status", setter=lambda _: None))

    def deinit_ui(self) -> None:
        self.remove_menu()

    def cleanup(self) -> None:
        # nothing partial is ever released: the chunk in progress is dropped with the plugin
        logger.info("streamdp: %s", self.status)

    # properties the menu edits
    @property
    def epsilon(self) -> float:
        return float(self._settings["epsilon"])

    @epsilon.setter
    def epsilon(self, value: float) -> None:
        self.update_settings(epsilon=value)

    @property
    def chunk_length(self) -> int:
        return int(self._settings["chunk_length"])

    @chunk_length.setter
    def chunk_length(self, value: int) -> None:
        self.update_settings(chunk_length=value)

    @property
    def mechanism(self) -> str:
        return str(self._settings["mechanism"])

    @mechanism.setter
    def mechanism(self, value: str) -> None:
        self.update_settings(mechanism=value)
