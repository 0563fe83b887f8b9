"""Synthetic eye and world cameras for the real Capture, of our own making.

Run by Capture's own Python (it has OpenCV): ``python camera.py PUPIL_REMOTE EYE_RATE EYE_LAG``. Each
camera streams its frames into Capture through ``HMD_Streaming_Source`` (the source hmd-eyes
streams a VR scene with) on topics ``hmd_streaming.eye0``/``eye1``/``world``, each frame stamped
with Capture's clock when it is taken, as a camera stamps its frames. An eye process that is
busy takes the newest frame when it is ready and drops the rest, as it does with a camera: how
far its gaze trails Capture's clock is its own lag, never a file's playback drifting away (a
``File_Source`` sleeps frame to frame and never catches up: measured here, its gaze fell 4 s
behind Capture's clock in a minute and the two eyes drifted apart by 0.6 s, without bound).

Each eye is a 192×192 grey image: a dark pupil disc (2 mm radius) on an eyeball of radius 12 mm,
35 mm in front of the camera, inside a darker iris, projected through the intrinsics Capture
has for a Pupil Cam2 eye camera at 192×192, so that Capture's 2D detector and pye3d find the
pupil as they would on a real eye. The eyes follow one script of fixations (0.15–0.6 s, with
tremor), smooth pursuit (0.5–1 s) and saccades (40 ms), with blinks (150 ms, every ~4 s);
eye 1 is mirrored. Each frame carries the intrinsics (``projection_matrix``) the source reads.
The cameras run until SIGTERM; after SIGUSR1 only the world camera does.

``python camera.py PUPIL_REMOTE EYE_RATE EYE_LAG``: with ``EYE_LAG`` > 0 s, one eye process at a
time falls behind, as they do on a loaded 2-core headset PC (``../shared/pupil-capture/README.md``:
a lagging eye's gaze up to 1.3 s behind the newest): in episodes, the frames of one eye reach its
process later and later (up to ``EYE_LAG`` s over 3–6 s), each still stamped when it was taken,
then catch up in a quarter of that time; the other eye stays on time.
"""

from __future__ import annotations

import signal
import sys
import time

import cv2
import numpy as np

SIZE = 192
WORLD_SIZE = (640, 480)
WORLD_RATE = 30
EYE_RADIUS, PUPIL_SPHERE, PUPIL_RADIUS, IRIS_RADIUS = 12.0, 10.39, 2.0, 6.0
CENTER = np.array([0.0, 0.0, 35.0])


def gaze_script(n: int, rate: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Yaw and pitch (radians) of the eye per frame, and whether it is closed."""
    rng = np.random.default_rng(seed)
    yaw, pitch = np.zeros(n), np.zeros(n)
    i, y, p = 0, 0.0, 0.0
    while i < n:
        kind = rng.random()
        if kind < 0.75:
            m = max(1, int(rng.uniform(0.15, 0.6) * rate))
            y2, p2 = y, p
            k = min(m, n - i)
            yaw[i : i + k] = y + rng.normal(0, 0.15, k)
            pitch[i : i + k] = p + rng.normal(0, 0.15, k)
        else:
            pursuit = kind < 0.9
            m = max(2, int((rng.uniform(0.5, 1.0) if pursuit else 0.04) * rate))
            if pursuit:
                y2 = float(np.clip(y + rng.uniform(-10, 10), -20, 20))
                p2 = float(np.clip(p + rng.uniform(-6, 6), -12, 12))
            else:
                y2, p2 = rng.uniform(-20, 20), rng.uniform(-12, 12)
            k = min(m, n - i)
            yaw[i : i + k] = np.linspace(y, y2, m)[:k]
            pitch[i : i + k] = np.linspace(p, p2, m)[:k]
        y, p = y2, p2
        i += m
    closed = np.zeros(n, dtype=bool)
    for start in rng.uniform(0, n / rate, max(1, int(n / rate / 4))):
        closed[int(start * rate) : int((start + 0.15) * rate)] = True
    return np.radians(yaw), np.radians(pitch), closed


def eye_image(yaw: float, pitch: float, closed: bool, mirrored: bool, noise: np.ndarray, k: np.ndarray) -> np.ndarray:
    img = cv2.add(np.full((SIZE, SIZE), 165, np.uint8), noise)
    if closed:  # the lid: no pupil, a darker band
        cv2.rectangle(img, (0, 70), (SIZE, 122), 120, -1)
        return img
    g = np.array([np.sin(yaw) * (-1 if mirrored else 1), np.sin(pitch), -np.cos(yaw) * np.cos(pitch)])
    g /= np.linalg.norm(g)
    u = np.cross(g, [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(g, u)
    th = np.linspace(0, 2 * np.pi, 40, endpoint=False)

    def disc(radius: float, distance: float) -> np.ndarray:
        pts = CENTER + distance * g + radius * (np.cos(th)[:, None] * u + np.sin(th)[:, None] * v)
        uv = (k @ pts.T).T
        return np.round(uv[:, :2] / uv[:, 2:]).astype(np.int32)

    cv2.fillPoly(img, [disc(IRIS_RADIUS, np.sqrt(EYE_RADIUS**2 - IRIS_RADIUS**2))], 105)
    cv2.fillPoly(img, [disc(PUPIL_RADIUS, PUPIL_SPHERE)], 25)
    return cv2.GaussianBlur(img, (3, 3), 0)


#: Capture's intrinsics of a Pupil Cam2 eye camera at 192×192 (camera_models.default_intrinsics)
EYE_K = np.array([[282.976877, 0.0, 96], [0.0, 283.561467, 96], [0.0, 0.0, 1.0]])
WORLD_K = np.array([[500.0, 0.0, WORLD_SIZE[0] / 2], [0.0, 500.0, WORLD_SIZE[1] / 2], [0.0, 0.0, 1.0]])
SCRIPT_SECONDS = 1200.0  # the gaze script repeats after 20 min


def lag_episodes(seconds: float, max_lag: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per 10 ms of the run: how late each eye's frames reach its process (s)."""
    grid = np.arange(0.0, seconds, 0.01)
    lag = np.zeros((2, len(grid)))
    if max_lag <= 0:
        return grid, lag
    rng = np.random.default_rng(seed)
    start = 5.0
    while start < seconds:
        eye, grow = int(rng.integers(0, 2)), rng.uniform(3.0, 6.0)
        drain = grow / 4
        since = grid - start
        rising = (since >= 0) & (since < grow)
        falling = (since >= grow) & (since < grow + drain)
        lag[eye, rising] = since[rising] / grow * max_lag
        lag[eye, falling] = (1 - (since[falling] - grow) / drain) * max_lag
        start += grow + drain + rng.uniform(4.0, 10.0)
    return grid, lag


def main() -> None:
    import heapq

    import msgpack
    import zmq

    remote, rate, max_lag = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    ctx = zmq.Context()
    req = ctx.socket(zmq.REQ)
    req.linger = 0
    req.connect(remote)

    def ask(command: str) -> str:
        req.send_string(command)
        if not req.poll(60_000):  # Capture's world process may be busy starting plugins
            raise SystemExit(f"camera: Pupil Remote at {remote} did not answer {command!r}")
        return req.recv_string()

    pub = ctx.socket(zmq.PUB)
    pub.linger = 0
    host = remote.rsplit(":", 1)[0]
    pub.connect(f"{host}:{ask('PUB_PORT')}")
    # Capture's clock: its answer to `t`, taken between two readings of the monotonic clock
    before = time.monotonic()
    offset = float(ask("t")) - (before + time.monotonic()) / 2
    n = int(SCRIPT_SECONDS * rate)
    yaw, pitch, closed = gaze_script(n, rate, seed=7)  # both eyes follow one target
    rng = np.random.default_rng(0)
    noises = [rng.integers(0, 14, (SIZE, SIZE), dtype=np.uint8) for _ in range(8)]
    world = np.full(WORLD_SIZE[::-1], 90, np.uint8)
    cv2.rectangle(world, (200, 150), (440, 330), 200, -1)
    stop, eyes_off = [], []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGUSR1, lambda *_: eyes_off.append(True))  # the eye cameras stop, the world's goes on

    def frames(topic: str, image: np.ndarray, index: int, t: float, k: np.ndarray) -> list[bytes]:
        height, width = image.shape
        meta = {
            "topic": topic, "format": "gray", "width": width, "height": height, "index": index, "timestamp": t,
            "projection_matrix": k.tolist(),
        }  # fmt: skip
        return [topic.encode(), msgpack.packb(meta, use_bin_type=True), image.tobytes()]

    grid, lag = lag_episodes(SCRIPT_SECONDS, max_lag, seed=11)
    queued: list[tuple[float, int, list[bytes]]] = []  # (send at, sequence, frames)
    last_sent = [0.0, 0.0]  # an eye's frames reach its process in order: catching up, it drops the older
    start = time.monotonic()
    tick = 0
    world_every = max(1, round(rate / WORLD_RATE))
    while not stop:
        due = start + tick / rate
        while queued and queued[0][0] <= time.monotonic():
            pub.send_multipart(heapq.heappop(queued)[2])
        pause = min(due, queued[0][0]) - time.monotonic() if queued else due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
            if time.monotonic() < due:
                continue
        elif pause < -0.5:  # this process was starved: skip the frames it missed, as a camera does
            tick = int((time.monotonic() - start) * rate)
            continue
        now = time.monotonic()
        t = now + offset  # the frame's exposure, on Capture's clock
        i = tick % n
        step = min(int((now - start) % SCRIPT_SECONDS / 0.01), len(grid) - 1)
        for eye in () if eyes_off else (0, 1):
            image = eye_image(yaw[i], pitch[i], closed[i], eye == 1, noises[tick % 8], EYE_K)
            last_sent[eye] = max(last_sent[eye], now + lag[eye, step])
            frame = frames(f"hmd_streaming.eye{eye}", image, tick, t, EYE_K)
            heapq.heappush(queued, (last_sent[eye], 2 * tick + eye, frame))
        if tick % world_every == 0:
            pub.send_multipart(frames("hmd_streaming.world", world, tick // world_every, t, WORLD_K))
        tick += 1
    pub.close(linger=0)
    req.close(linger=0)
    ctx.term()


if __name__ == "__main__":
    main()
