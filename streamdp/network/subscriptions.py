"""Who listens on a publishing socket, topic by topic: what a publisher need not build at all.

A ZeroMQ PUB socket drops a message nobody subscribed to, after it was built and packed. An XPUB
socket with ``XPUB_VERBOSER`` also hands its owner every subscriber's (un)subscription frames
(``\\x01`` or ``\\x00``, then the topic prefix; a subscriber that leaves unsubscribes from each of
its prefixes), so the owner can skip that work: :class:`Subscriptions` counts the live
subscriptions per prefix and answers, per topic, whether one of them matches it (ZeroMQ's own rule:
the prefix begins the topic).

Use it only where the socket is used (its thread, or under the lock its threads share), and
read often enough (:meth:`read`): what subscribers send upstream waits in the socket until then.

Known limits, of availability only (nothing more ever leaves): ZeroMQ does not say which
subscriber sent a frame, so a peer that unsubscribes from a prefix it never subscribed to (no
libzmq SUB socket does; a hand-written ZMTP client could) hides that prefix's messages from the
others until the next subscription to it; and a SUB socket that subscribes twice to one prefix
sends two subscriptions but one unsubscription when it leaves, so that prefix counts as listened
to until the socket closes.

Examples
--------
>>> ctx = zmq.Context.instance()
>>> pub = ctx.socket(zmq.XPUB)
>>> port = pub.bind_to_random_port("tcp://127.0.0.1")
>>> subs = Subscriptions(pub)
>>> subs.listened("streamdp.gaze.geo-uniform")
False
>>> sub = ctx.socket(zmq.SUB)
>>> _ = sub.connect(f"tcp://127.0.0.1:{port}")
>>> sub.subscribe(b"streamdp.gaze.")
>>> _ = pub.poll(5000)  # the subscription frame arrives
>>> subs.read()  # the owner's read (else within IDLE_READ_EVERY of the last one)
1
>>> subs.listened("streamdp.gaze.geo-uniform"), subs.listened("streamdp.features.dcfpa"), subs.count
(True, False, 1)
>>> sub.close(linger=0); pub.close(linger=0)
"""

from __future__ import annotations

import time
from collections import Counter
from typing import cast

import zmq

__all__ = ["Subscriptions"]



class Subscriptions:
    """The live subscriptions of an XPUB ``socket`` (set to ``XPUB_VERBOSER`` here: without it two
    subscribers of one prefix count as one, and a disconnect goes unseen).

    Raises
    ------
    TypeError
        ``socket`` is not an XPUB socket.
    """

    __slots__ = ("_idle_reads", "_listened", "_next_read", "_prefixes", "_socket", "count")

    #: seconds between reads while somebody listens (a departure is noticed within this)
    READ_EVERY = 1.0
    #: seconds between reads for a topic nobody listens to (a new subscriber is heard within this)
    IDLE_READ_EVERY = 0.1

    def __init__(self, socket: zmq.Socket) -> None:
        if not isinstance(socket, zmq.Socket) or socket.type != zmq.XPUB:
            raise TypeError(f"socket must be a ZeroMQ XPUB socket, got {socket!r}")
        socket.setsockopt(zmq.XPUB_VERBOSER, 1)
        self._socket = socket
        self._prefixes: Counter[bytes] = Counter()
        self._listened: dict[str, bool] = {}
        self._next_read = 0.0
        self._idle_reads: dict[str, float] = {}  # per topic nobody listens to: when to read again
        #: live subscriptions: one per subscriber and prefix (a refused CURVE client never subscribed)
        self.count = 0

    def read(self) -> int:
        """Read the pending (un)subscription frames; returns :attr:`count`."""
        self._next_read = time.monotonic() + self.READ_EVERY
        sock = self._socket
        while cast(int, sock.getsockopt(zmq.EVENTS)) & zmq.POLLIN:  # no Poller: a tick's cost
            frame = sock.recv(zmq.NOBLOCK)
            prefix = frame[1:]
            if frame[:1] == b"\x01":
                self.count += 1
                self._prefixes[prefix] += 1
            elif frame[:1] == b"\x00" and self._prefixes[prefix] > 0:
                self.count -= 1
                self._prefixes[prefix] -= 1
            else:
                continue  # anything else a subscriber sends an XPUB: no subscription
            self._listened.clear()
        return self.count

    def listened(self, topic: str) -> bool:
        """Whether a live subscription matches ``topic``. While nobody listens to it, the frames
        are read anew before a message of that topic, at most every :attr:`IDLE_READ_EVERY`
        seconds (a new subscriber is heard within that: reading costs a system call, and the
        gaze channel's topic comes 60 times a second); while somebody does, at least every
        :attr:`READ_EVERY` seconds (a departure is noticed then; until then a message only goes
        to nobody, which ZeroMQ drops)."""
        listened = self._listened.get(topic)
        now = time.monotonic()
        if listened:
            if now < self._next_read:
                return True
        elif listened is not None and now < self._idle_reads.get(topic, 0.0):
            return False
        self.read()  # forgets every topic's answer when a subscription changed
        self._idle_reads[topic] = now + self.IDLE_READ_EVERY
        listened = self._listened.get(topic)
        if listened is None:
            raw = topic.encode()
            listened = self._listened[topic] = any(n > 0 and raw.startswith(p) for p, n in self._prefixes.items())
        return listened
