"""What the Capture plugin watches in Capture, which notifies nothing of it: Pupil Remote's server
and Pupil time.

Every fact below is read from Capture's source (pupil-labs/pupil, ``pupil_src``, v3.6):

- **Notifications.** The plugin reacts to no notification subject. Capture sends none when Pupil
  time is set (``network_api/controller/pupil_remote_controller.py``: ``T`` writes
  ``g_pool.timebase.value``; ``time_sync.py``: ``slew_time``/``jump_time`` add to it) nor when
  Pupil Remote restarts its server (``network_api/network_api_plugin.py``:
  ``on_pupil_remote_server_did_start`` does nothing; the controller only logs at debug level).
  ``world_process.adapting_clock``, which the plugin once restarted on, appears nowhere in
  ``pupil_src``. :data:`NOTIFICATION_SUBJECTS` lists what the plugin does with each subject it
  meets, with the source file (``tests/test_plugin_capture_facts.py`` holds the plugin to it).
- **Pupil Remote restarts** happen (a) when the Network API plugin is started, replaced or stopped
  (``launchables/world.py``: ``start_plugin``/``stop_plugin``, or the plugin manager), binding
  ``tcp://{host}:{g_pool.preferred_remote_port}`` in ``PupilRemoteController.__init__`` and
  falling back to ``tcp://*:*`` when that fails; (b) from its menu, with no notification: the
  primary-interface switch (``tcp://*:{port}``), the port, the custom address. (a) and the
  switch and address of (b) change the plugin instance or its ``get_init_dict()`` (``host``,
  ``use_primary_interface``); the port is read from its controller's public properties
  (``primary_port``, ``custom_address``) and the ``port`` its fallback bind sets:
  :func:`network_api_state` is what the plugin compares every frame.
- **Setting Pupil Remote to 127.0.0.1** the way Capture honours: a ``start_plugin`` notification
  naming ``NetworkApiPlugin`` (``world.py`` adds it; ``plugin.py``'s ``Plugin_List.add`` first
  removes and cleans up the running instance, whose ``cleanup`` stops the server, then the new
  one binds ``tcp://127.0.0.1:{preferred_remote_port}``), with the running instance's
  ``get_init_dict()`` (the frame publisher's format kept) and ``host="127.0.0.1"``,
  ``use_primary_interface=False`` (so its menu shows the custom address it is bound to).
- **Pupil time**: Pupil time is the monotonic clock minus ``g_pool.timebase.value``. Time Sync's
  follower (``network_time_sync.py``, ``Clock_Sync_Follower``) jumps by the whole offset when it
  exceeds 10 ms and otherwise slews in steps of at most 0.5 ms every 0.1 s, once every ~10 s;
  ``T`` sets any value. :func:`clock_jumped` is the one rule: a change up to the public
  threshold (the session's reorder window) continues the session and its public grid; a larger
  one starts a new segment.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

__all__ = [
    "CLOCK_JUMP_THRESHOLD",
    "LOOPBACK_HOST",
    "NETWORK_API",
    "NOTIFICATION_SUBJECTS",
    "clock_jumped",
    "network_api_state",
    "pupil_remote_port",
    "pupil_remote_to_loopback",
]

#: s by which Pupil time moves between two reads for a jump (T, Time Sync's jump) that starts a new
#: segment: far above Time Sync's slews (≤ 0.5 ms a step) and a read's delay on a loaded PC
CLOCK_JUMP_THRESHOLD = 0.1
#: the class name of Capture's Network API plugin (``plugin_by_name`` key of ``start_plugin``)
NETWORK_API = "NetworkApiPlugin"
LOOPBACK_HOST = "127.0.0.1"

#: every notification subject the plugin meets, with the Capture source that sends or handles it
#: and what the plugin does; "(any)" means every notification is a prompt to look at the clock
NOTIFICATION_SUBJECTS: dict[str, tuple[str, str]] = {
    "start_plugin": (
        "launchables/world.py handle_notifications",
        "sent (Pupil Remote to 127.0.0.1); a Network API plugin it starts is noticed by network_api_state",
    ),
    "stop_plugin": ("launchables/world.py handle_notifications", "noticed by network_api_state, not by subject"),
    "(any)": ("launchables/world.py event loop: p.on_notify(n)", "Pupil time is compared (clock_jumped)"),
}


def _network_api(plugins: Iterable[Any]) -> Any:
    return next((p for p in plugins if getattr(p, "class_name", None) == NETWORK_API), None)


def pupil_remote_port(plugins: Iterable[Any], default: int | None = None) -> int | None:
    """The port Pupil Remote listens on, read (never changed) from the running Network API
    plugin's controller: the port it fell back to after a failed bind, else the custom
    address's port or the primary port as its menu chose; ``default`` (``g_pool.
    preferred_remote_port``) when the controller cannot be read; None when no Network API
    plugin runs (Pupil Remote is closed)."""
    plugin = _network_api(plugins)
    if plugin is None:
        return None
    # Capture's private attribute (``self.__pupil_remote``): read only, and only its public properties
    controller: Any = getattr(plugin, f"_{NETWORK_API}__pupil_remote", None)
    try:
        if isinstance(getattr(controller, "port", None), int):
            return int(controller.port)  # set by its fallback bind to tcp://*:*
        if controller.use_primary_interface:
            return int(controller.primary_port)
        return int(str(controller.custom_address).rpartition(":")[2])
    except (AttributeError, TypeError, ValueError):
        return default


def network_api_state(plugins: Iterable[Any]) -> tuple[int, str, bool, int | None] | None:
    """The running Network API plugin as ``(id, host, use_primary_interface, Pupil Remote's
    port)``, or None when none runs: a change means Pupil Remote's server was restarted or
    stopped."""
    plugins = list(plugins)
    plugin = _network_api(plugins)
    if plugin is None:
        return None
    try:
        init = plugin.get_init_dict()
    except Exception:  # a plugin of another version: identity and port then
        init = {}
    host, primary = str(init.get("host", "")), bool(init.get("use_primary_interface", False))
    return id(plugin), host, primary, pupil_remote_port(plugins)


def pupil_remote_to_loopback(plugins: Iterable[Any]) -> dict[str, Any]:
    """The notification that has Capture restart Pupil Remote on 127.0.0.1 only (see the module).

    Examples
    --------
    >>> note = pupil_remote_to_loopback([])
    >>> note["subject"], note["name"], note["args"]
    ('start_plugin', 'NetworkApiPlugin', {'host': '127.0.0.1', 'use_primary_interface': False})
    """
    args: dict[str, Any] = {}
    plugin = _network_api(plugins)
    if plugin is not None:
        try:
            args = dict(plugin.get_init_dict())
        except Exception:  # a plugin of another version: Capture's defaults for the rest
            args = {}
    args.update(host=LOOPBACK_HOST, use_primary_interface=False)
    return {"subject": "start_plugin", "name": NETWORK_API, "args": args}


def clock_jumped(previous: float, current: float, *, threshold: float) -> bool:
    """Whether Pupil time moved by more than ``threshold`` seconds (either way) between two reads
    of ``g_pool.timebase.value``: a new clock, not a slew.

    Raises
    ------
    TypeError
        ``threshold`` is not a number.
    ValueError
        ``threshold`` is negative or not finite.

    Examples
    --------
    >>> clock_jumped(10.0, 10.0005, threshold=0.1)  # Time Sync's largest slew step
    False
    >>> clock_jumped(10.0, 9.0, threshold=0.1)  # T, or Time Sync's jump
    True
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise TypeError(f"threshold must be a number of seconds, got {threshold!r}")
    if not (math.isfinite(threshold) and threshold >= 0):
        raise ValueError(f"threshold must be a finite number of seconds ≥ 0, got {threshold!r}")
    return bool(abs(current - previous) > threshold)
