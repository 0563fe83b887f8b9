"""The synthetic people ``streamdp evaluate`` runs on without a manifest."""

from __future__ import annotations

from ..gaze import Recording


def synthetic_study(
    people: int = 6, seconds: float = 240.0, seed: int = 0, signal: str = "scene-deg"
) -> list[tuple[Recording, str, str]]:
    """Each synthetic person reads and searches once (two tasks): scene-camera gaze in degrees
    (:func:`~streamdp.synthetic.generate`, 120 Hz) or, for ``signal="eye-camera-norm"``,
    eye-camera pupil positions (:func:`~streamdp.synthetic.generate_eye_camera`, 30 Hz).

    Raises
    ------
    ValueError
        An unknown signal.
    """
    from ..signals import get_signal
    from ..synthetic import Task, generate, generate_eye_camera

    eye = get_signal(signal).settings["units"] == "norm"
    out: list[tuple[Recording, str, str]] = []
    for p in range(people):
        tasks: tuple[Task, Task] = ("reading", "search")
        for j, task in enumerate(tasks):
            s = seed * 1000 + 2 * p + j
            if eye:
                rec = generate_eye_camera(duration=seconds, seed=s, person=p, task=task).recording
            else:
                rec = generate(duration=seconds, rate=120.0, seed=s, person=p, task=task).recording
            out.append((rec, f"P{p}", task))
    return out
