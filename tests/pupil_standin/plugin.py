"""A stand-in for Pupil Capture's ``plugin`` module (pupil_src/shared_modules/plugin.py, v3):
the same ``Plugin`` base class interface and ``Plugin_List`` manager, without the GUI.

As in Capture: ``alive`` is a plain attribute; ``Plugin_List.add`` first removes an instance the
new one replaces (``uniqueness``), then builds the new one; ``clean`` calls ``deinit_ui`` and then
``cleanup`` of every plugin that is no longer alive and drops it. The world loop calls ``clean``
after each frame, on ``stop_plugin`` and, for every plugin, at shutdown."""

from __future__ import annotations

from typing import Any


class _Menu(list):
    """pyglui's ``Growing_Menu`` as plugins use it: a list of elements with a ``label``."""

    label = ""

    @property
    def elements(self) -> list[Any]:
        return self


class Plugin:
    uniqueness = "by_class"
    order = 0.5
    icon_chr = "?"
    alive = True

    def __init__(self, g_pool: Any) -> None:
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
        for cls, args in sorted(plugin_initializers, key=lambda p: p[0].order):
            self.add(cls, args)

    def __iter__(self):  # type: ignore[no-untyped-def]
        yield from self._plugins

    def add(self, new_plugin: type, args: dict[str, Any] | None = None) -> None:
        for old in list(self._plugins):
            if new_plugin.uniqueness == "by_class" and old.this_class is new_plugin:
                old.alive = False  # Capture: "Replacing ... due to 'by_class' uniqueness"
                self.clean()
        instance = new_plugin(self.g_pool, **(args or {}))
        if not instance.alive:
            return
        self._plugins.append(instance)
        self._plugins.sort(key=lambda p: p.order)
        if self.g_pool.app in ("capture", "player"):
            instance.init_ui()

    def clean(self) -> None:
        for p in self._plugins[::-1]:
            if not p.alive:
                if self.g_pool.app in ("capture", "player"):
                    p.deinit_ui()
                p.cleanup()
                self._plugins.remove(p)

    def get_initializers(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for p in self._plugins:
            try:
                out.append((p.class_name, p.get_init_dict()))
            except NotImplementedError:
                pass
        return out
