"""A stand-in for Pupil Capture's ``plugin`` module (pupil_src/shared_modules/plugin.py, v3):
the same ``Plugin`` base class interface and ``Plugin_List`` manager, without the GUI."""

from __future__ import annotations

from typing import Any


class _Menu(list):
    label = ""


class Plugin:
    uniqueness = "by_class"
    order = 0.5
    icon_chr = "?"

    def __init__(self, g_pool: Any) -> None:
        self._alive = True
        self.g_pool = g_pool

    def init_ui(self) -> None:
        pass

    def deinit_ui(self) -> None:
        pass

    def recent_events(self, events: dict[str, Any]) -> None:
        pass

    def on_notify(self, notification: dict[str, Any]) -> None:
        pass

    def get_init_dict(self) -> dict[str, Any]:
        raise NotImplementedError()

    def cleanup(self) -> None:
        pass

    def add_menu(self) -> None:
        self.menu = _Menu()
        self.g_pool.menubar.append(self.menu)

    def remove_menu(self) -> None:
        self.g_pool.menubar.remove(self.menu)
        self.menu = None

    def notify_all(self, notification: dict[str, Any]) -> None:
        self.g_pool.ipc_pub.notify(notification)

    @property
    def alive(self) -> bool:
        if not self._alive:
            self.cleanup()
        return self._alive

    @alive.setter
    def alive(self, value: bool) -> None:
        if isinstance(value, bool):
            self._alive = value

    @property
    def this_class(self) -> type:
        return self.__class__

    @property
    def class_name(self) -> str:
        return self.__class__.__name__


class Plugin_List:
    def __init__(self, g_pool: Any, plugin_initializers: list[tuple[type, dict[str, Any]]]) -> None:
        self._plugins: list[Plugin] = []
        self.g_pool = g_pool
        g_pool.plugins = self
        for cls, args in plugin_initializers:
            self.add(cls, args)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._plugins)

    def add(self, new_plugin: type, args: dict[str, Any] | None = None) -> None:
        if new_plugin.uniqueness == "by_class" and any(p.this_class is new_plugin for p in self._plugins):
            return
        instance = new_plugin(self.g_pool, **(args or {}))
        self._plugins.append(instance)
        self._plugins.sort(key=lambda p: p.order)
        if self.g_pool.app in ("capture", "player") and instance.alive:
            instance.init_ui()
        self.clean()

    def clean(self) -> None:
        for p in self._plugins[:]:
            if not p.alive:
                p.deinit_ui()
                self._plugins.remove(p)

    def get_initializers(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for p in self._plugins:
            try:
                out.append((p.class_name, p.get_init_dict()))
            except NotImplementedError:
                pass
        return out
