"""pyglui.ui's elements as plugin menus use them (signatures from ui_elements.pxi)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .cygl.utils import RGBA

#: pyglui's ``color_text_info`` (design_params.pxi)
COLOR_TEXT_INFO = RGBA(1.0, 1.0, 1.0, 0.6)


class _Synced:
    """An element bound to ``attribute_context.attribute_name`` (or a getter and a setter)."""

    def __init__(
        self,
        attribute_name: str,
        attribute_context: Any = None,
        *,
        label: str | None = None,
        setter: Callable[[Any], Any] | None = None,
        getter: Callable[[], Any] | None = None,
    ) -> None:
        self.attribute_name, self.context = attribute_name, attribute_context
        self.label = label or attribute_name
        self._setter, self._getter = setter, getter

    @property
    def value(self) -> Any:
        """What the element shows when drawn: pyglui reads the attribute every frame."""
        return self._getter() if self._getter else getattr(self.context, self.attribute_name)

    def set(self, value: Any) -> None:
        """The user edits the element."""
        if self._setter is not None:
            self._setter(value)
        else:
            setattr(self.context, self.attribute_name, value)


class Text_Input(_Synced):
    pass


class Slider(_Synced):
    def __init__(
        self,
        attribute_name: str,
        attribute_context: Any = None,
        label: str | None = None,
        min: float = 0,
        max: float = 100,
        step: float = 0,
        setter: Callable[[Any], Any] | None = None,
        getter: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(attribute_name, attribute_context, label=label, setter=setter, getter=getter)
        self.min, self.max, self.step = min, max, step


class Switch(_Synced):
    def __init__(
        self,
        attribute_name: str,
        attribute_context: Any = None,
        on_val: Any = True,
        off_val: Any = False,
        label: str | None = None,
        setter: Callable[[Any], Any] | None = None,
        getter: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(attribute_name, attribute_context, label=label, setter=setter, getter=getter)
        self.on_val, self.off_val = on_val, off_val


class Selector(_Synced):
    def __init__(
        self,
        attribute_name: str,
        attribute_context: Any = None,
        selection: list[Any] | None = None,
        labels: list[str] | None = None,
        label: str | None = None,
        setter: Callable[[Any], Any] | None = None,
        getter: Callable[[], Any] | None = None,
        selection_getter: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(attribute_name, attribute_context, label=label, setter=setter, getter=getter)
        self.selection = list(selection or [])
        self.labels = labels or [str(s) for s in self.selection]
        # as pyglui's Selector syncs its value at construction (ui_elements.pxi, _on_change): a
        # value outside the selection raises, and Capture's world process crashes on it
        value = getattr(attribute_context, attribute_name, None) if getter is None else getter()
        if selection_getter is None and value not in self.selection:
            raise ValueError(f"Synced value '{value}' is not part of selection.")


class Button:
    def __init__(self, label: str, function: Callable[[], Any], outer_label: str = "") -> None:
        self.label, self.function, self.outer_label = label, function, outer_label

    def click(self) -> None:
        self.function()


class Info_Text:
    def __init__(self, text: str) -> None:
        self.text = text
        self.text_color = COLOR_TEXT_INFO
