"""The ``streamdp`` command line. Errors in input end with a message and a non-zero exit, never a
traceback."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import StreamdpError
from .kernels.geometry import CAMERA_FOV_DEG
from .pipeline import FeaturePipeline
from .privacy.release import PrivateRelease
from .schema import FEATURE_NAMES
from .stages.events import EventConfig
from .stages.features import FeatureRows, WindowConfig

log = logging.getLogger("streamdp")

_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def _command(
    name: str,
) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    def register(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        _COMMANDS[name] = fn
        return fn

    return register


def _add_pipeline_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("features")
    g.add_argument("--window", type=float, default=30.0, help="window length in s (default 30)")
    g.add_argument("--step", type=float, default=0.5, help="step in s (default 0.5; PrivacEye used 1)")
    g.add_argument(
        "--max-dispersion",
        type=float,
        default=EventConfig.max_dispersion,
        help="I-DT dispersion threshold in degrees (default %(default)s)",
    )
    g.add_argument(
        "--camera",
        choices=["auto", *sorted(CAMERA_FOV_DEG)],
        default="auto",
        help="scene camera, for its field of view (default: the recording's, else pupil_core_720p)",
    )
    g.add_argument(
        "--blinks",
        choices=("confidence", "given"),
        default="confidence",
        help="detect blinks from confidence, or use the recording's own blink events",
    )


def _pipeline_from(args: argparse.Namespace, recording_camera: str | None = None) -> FeaturePipeline:
    camera = args.camera if args.camera != "auto" else (recording_camera or "pupil_core_720p")
    fov = CAMERA_FOV_DEG[camera]
    events = EventConfig(max_dispersion=args.max_dispersion, fov_deg=fov, blink_source=args.blinks)
    return FeaturePipeline(events, WindowConfig(window=args.window, step=args.step))


def _load(path: str | None, synthetic: float | None, seed: int):
    from .readers import read_recording
    from .synthetic import generate

    if path is None:
        return generate(duration=synthetic or 120.0, seed=seed).recording
    return read_recording(path)


def write_feature_rows(rows: FeatureRows, out: Path) -> None:
    """CSV (``t`` then the 52 named columns) or ``.npz`` (arrays ``t``, ``values``, ``names``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    if out.suffix == ".npz":
        with open(tmp, "wb") as fh:
            np.savez(fh, t=rows.t, values=rows.values, names=np.array(FEATURE_NAMES))
    else:
        data = np.column_stack([rows.t, rows.values]) if len(rows) else np.empty((0, 53))
        header = ",".join(("t", *FEATURE_NAMES))
        np.savetxt(tmp, data, delimiter=",", header=header, comments="", fmt="%.17g")
    tmp.replace(out)  # nothing half-written is left under the final name


@_command("features")
def _features(args: argparse.Namespace) -> int:
    rec = _load(args.path, args.synthetic, args.seed)
    pipe = _pipeline_from(args, rec.camera)
    if args.blinks == "given" and rec.blinks is None:
        raise StreamdpError(f"{args.path}: --blinks given, but the recording has no blink events")
    rows = pipe.run(rec)
    out = Path(args.out)
    write_feature_rows(rows, out)
    print(
        f"wrote {len(rows)} UNSANITIZED feature rows of {rec.name} to {out} "
        "(raw features for local research: not differentially private, do not share)",
        file=sys.stderr,
    )
    return 0


def _add_mechanism_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("privacy")
    g.add_argument("--mechanism", choices=("dcfpa", "cfpa", "lpa", "steil"), default="dcfpa")
    g.add_argument("--epsilon", type=float, default=1.0, help="ε per feature per chunk (default 1)")
    g.add_argument("--chunk-length", type=int, default=64, help="steps per chunk, a power of two (default 64)")
    g.add_argument("--transform", choices=("dft", "dct"), default="dft")
    g.add_argument("--k", default=None, help="coefficients kept (default: the public default), or 'private'")
    g.add_argument("--sensitivity", choices=("bound", "tight"), default="bound")
    g.add_argument("--bounds", help="bounds profile (TOML or JSON); default: the shipped profile")
    g.add_argument("--unit", choices=("chunk", "w-event", "session"), default="chunk")
    g.add_argument("--budget", type=float, help="ε budget of the w-event or session unit")
    g.add_argument("--w", type=int, help="w of the w-event unit")
    g.add_argument("--seed", type=int, help="seed for reproducible research (default: OS entropy)")


def _config_from(args: argparse.Namespace):
    """The mechanism options of every command, as one PipelineConfig."""
    from .pipeline import PipelineConfig

    k: int | str | None = None
    if args.k is not None:
        k = "private" if args.k == "private" else _int_option("--k", args.k)
    return PipelineConfig(
        mechanism=args.mechanism,
        epsilon=args.epsilon,
        chunk_length=args.chunk_length,
        transform=args.transform,
        k=k,
        sensitivity=args.sensitivity,
        bounds_file=args.bounds,
        unit=args.unit,
        budget=args.budget,
        w=args.w,
        seed=args.seed,
        blinks=getattr(args, "blinks", "confidence"),
    )


def _int_option(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise StreamdpError(f"{name} must be an integer or 'private', got {value!r}") from None


def _print_release(rel: PrivateRelease) -> None:
    out = sys.stdout
    led = rel.ledger
    idx = [0, 14, 21, 27]
    vals = "  ".join(f"{rel.names[i]}={rel.values[:, i].mean():.3g}" for i in idx)
    print(
        f"chunk {led['chunk_index']}: {rel.topic}  t={rel.t[0]:.1f}..{rel.t[-1]:.1f}s  n={len(rel.t)}  {vals}",
        file=out,
    )
    print(
        f"  ledger: ε/feature={led['epsilon_per_feature']:g} ε/chunk={led['epsilon_chunk']:g} "
        f"spent={led['epsilon_spent']:g} unit={led['unit']} k={led.get('k', '-')} "
        f"clipped={led['clipped_fraction']:.1%} raw-gaze ε≤{led['raw_gaze_epsilon']:g} "
        f"bounds={led['bounds_digest']}",
        file=out,
    )


def _offline_demo(args: argparse.Namespace) -> int:
    from .synthetic import generate

    rec = generate(duration=args.seconds, rate=200.0, seed=0).recording
    pipe = _private_pipeline(args)
    mech = pipe.privatizer.mechanism
    print(
        f"streamdp demo: {args.seconds:g} s of synthetic 200 Hz gaze → 52 features every 0.5 s → "
        f"{mech.name} chunks of {mech.chunk_length} steps",
        file=sys.stderr,
    )
    releases = pipe.run(rec)
    for rel in releases:
        _print_release(rel)
    if pipe.privatizer.exhausted:
        print(f"budget: {pipe.privatizer.exhausted_message}", file=sys.stderr)
    return 0 if releases else 1


def _print_message(topic: str, msg: dict) -> None:
    if topic == "streamdp.status":
        print(f"status: {msg}")
        return
    led = msg["ledger"]
    names = msg["names"]
    values = msg["values"]
    idx = [0, 14, 21, 27]
    vals = "  ".join(f"{names[i]}={sum(r[i] for r in values) / len(values):.3g}" for i in idx)
    print(f"chunk {led['chunk_index']}: {topic}  t={msg['t'][0]:.1f}..{msg['t'][-1]:.1f}s  n={len(msg['t'])}  {vals}")
    print(
        f"  ledger: ε/feature={led['epsilon_per_feature']:g} ε/chunk={led['epsilon_chunk']:g} "
        f"spent={led['epsilon_spent']:g} unit={led['unit']} k={led.get('k', '-')} "
        f"clipped={led['clipped_fraction']:.1%} raw-gaze ε≤{led['raw_gaze_epsilon']:g} "
        f"bounds={led['bounds_digest']}"
    )


def _private_pipeline(args: argparse.Namespace):
    return _config_from(args).pipeline(args.seed)


@_command("demo")
def _demo(args: argparse.Namespace) -> int:
    if args.offline:
        return _offline_demo(args)
    import threading

    from .network.relay import Relay
    from .network.simulator import CaptureSimulator
    from .network.sink import ReleasePublisher
    from .network.subscriber import connect_subscriber, messages
    from .synthetic import generate

    rec = generate(duration=args.seconds, rate=200.0, seed=0).recording
    pipeline = _private_pipeline(args)  # bad options fail here, before any socket exists
    sink = ReleasePublisher("tcp://127.0.0.1:0")
    sub = connect_subscriber(sink.endpoint, ("streamdp.features.", "streamdp.status"))
    while sink.poll_subscriptions() < 2:  # the subscriber is in before anything is published
        sub.poll(10)
    sim = CaptureSimulator(rec, speed=args.speed)
    sim.start()
    relay = Relay(pipeline, sink, remote=sim.remote_address)
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    print(
        f"streamdp demo: simulated Pupil Capture at {sim.remote_address} → relay → subscriber at "
        f"{sink.endpoint}; {args.seconds:g} s of synthetic 200 Hz gaze at speed {args.speed:g}",
        file=sys.stderr,
    )
    want = int((args.seconds - 30.0) / 0.5) // args.chunk_length
    got = 0
    wait = args.seconds / args.speed + 10 if args.speed else 10
    try:
        for topic, msg in messages(sub, timeout=wait):
            if topic == "streamdp.status":
                if msg.get("budget_exhausted"):
                    print(f"budget: {msg['message']}", file=sys.stderr)
                    break
                continue
            _print_message(topic, msg)
            got += 1
            if got >= want:
                break
    finally:
        relay.stop()
        thread.join(5)
        sim.stop()
        sub.close(linger=0)
        sink.close()
    print(f"received {got} sanitized chunks; relay counters: {relay.status()}", file=sys.stderr)
    return 0 if got else 1


@_command("simulate")
def _simulate(args: argparse.Namespace) -> int:
    import signal
    import threading

    from .network.simulator import CaptureSimulator

    rec = _load(args.path, args.synthetic, args.seed)
    sim = CaptureSimulator(
        rec,
        host=args.host,
        remote_port=args.port,
        speed=args.speed,
        loop=args.loop,
        wait_for_subscriber=not args.no_wait,
    )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    sim.start()
    print(
        f"simulated Pupil Capture: Pupil Remote at {sim.remote_address} (SUB_PORT {sim.ports.sub}, "
        f"PUB_PORT {sim.ports.pub}), playing {rec.name} at speed {args.speed:g}",
        file=sys.stderr,
        flush=True,
    )
    while not done.is_set():
        if sim.finished.is_set() and not args.stay:
            break
        done.wait(0.1)
    sim.stop()
    return 0


@_command("relay")
def _relay(args: argparse.Namespace) -> int:
    import signal

    from .network.relay import Relay
    from .network.sink import CurveServer, ReleasePublisher

    curve = None
    if args.curve_secret or args.curve_clients:
        if not (args.curve_secret and args.curve_clients):
            raise StreamdpError("CURVE needs both --curve-secret and --curve-clients")
        curve = CurveServer(Path(args.curve_secret), Path(args.curve_clients))
    pipeline = _private_pipeline(args)
    sink = ReleasePublisher(args.bind, curve=curve, insecure=args.insecure)
    relay: Any
    if args.neon is not None:
        from .network.neon import NeonRelay, connect_device

        try:
            device = connect_device(args.neon or None)
        except StreamdpError:
            sink.close()
            raise
        relay = NeonRelay(pipeline, sink, device, invisible=args.invisible)
        args.remote = f"Neon at {args.neon or 'a discovered device'}"
    else:
        relay = Relay(
            pipeline, sink, remote=args.remote, to_backbone=args.to_backbone, status_interval=args.status_interval
        )
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: relay.stop())
    print(
        f"streamdp relay: {args.remote} → {sink.endpoint} ({pipeline.privatizer.mechanism.name}, "
        f"ε {args.epsilon:g}/feature/chunk, unit {args.unit})",
        file=sys.stderr,
        flush=True,
    )
    try:
        counters = relay.run()
    finally:
        sink.close()
    print(f"streamdp relay stopped: {counters}", file=sys.stderr)
    return 0


@_command("subscribe")
def _subscribe(args: argparse.Namespace) -> int:
    from .network.subscriber import connect_subscriber, messages

    sock = connect_subscriber(
        args.endpoint,
        (args.topic, "streamdp.status"),
        server_public_key=Path(args.curve_server_key) if args.curve_server_key else None,
        client_certificate=Path(args.curve_client_cert) if args.curve_client_cert else None,
    )
    count = 0
    try:
        for topic, msg in messages(sock, timeout=args.timeout):
            _print_message(topic, msg)
            count += topic != "streamdp.status"
            if args.count and count >= args.count:
                break
    finally:
        sock.close(linger=0)
    return 0


@_command("replay")
def _replay(args: argparse.Namespace) -> int:
    from .offline.replay import replay

    config = _config_from(args)
    config.pipeline(0)  # bad options fail here, before any work starts
    results = replay(
        args.paths,
        args.out,
        config,
        overwrite=args.overwrite,
        jobs=args.jobs,
        executor=args.executor,
        scheduler=args.scheduler,
        progress=not args.quiet,
    )
    failed = 0
    for r in results:
        if r.skipped:
            failed += r.skipped.startswith("cannot read")
            print(f"skipped {r.path}: {r.skipped}", file=sys.stderr)
        else:
            print(f"{r.path}: {r.chunks} sanitized chunks (seed {r.seed}) → {args.out}/{r.name}.*", file=sys.stderr)
    return 1 if failed else 0


@_command("evaluate")
def _evaluate(args: argparse.Namespace) -> int:
    from .offline.evaluate import GridPoint, evaluate, feature_signals, read_manifest, synthetic_study, write_results
    from .readers import read_recording

    if args.manifest:
        items = [(read_recording(p), person, task) for p, person, task in read_manifest(args.manifest)]
    else:
        print(
            f"no manifest: {args.people} synthetic people, each reading and searching for {args.seconds:g} s",
            file=sys.stderr,
        )
        items = synthetic_study(args.people, args.seconds, args.seed)
    recs = feature_signals(items)
    if len({r.participant for r in recs}) < 2 or len({r.task for r in recs}) < 2:
        raise StreamdpError("evaluation needs at least two participants and two tasks with enough gaze")
    grid = [GridPoint("none", 0.0, n) for n in args.chunk_lengths[:1]]
    grid += [
        GridPoint(m, e, n) for m in args.mechanisms if m != "none" for n in args.chunk_lengths for e in args.epsilons
    ]
    rows = evaluate(recs, grid, seed=args.seed, progress=not args.quiet)
    out = Path(args.out)
    paths = write_results(rows, out)
    print((out / "results.md").read_text())
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0


@_command("audit")
def _audit(args: argparse.Namespace) -> int:
    from .privacy import cfpa, dcfpa, default_profile, make_mechanism
    from .privacy.audit import audit
    from .schema import FEATURE_INDEX

    if args.feature not in FEATURE_INDEX:
        raise StreamdpError(f"--feature {args.feature!r} is not one of the 52 feature names")
    one = default_profile().select([FEATURE_INDEX[args.feature]])
    configs = []
    for name in args.mechanisms:
        if name in ("lpa", "steil"):
            configs.append(make_mechanism(name, epsilon=args.epsilon, bounds=one, chunk_length=args.chunk_length))
            continue
        factory = dcfpa if name == "dcfpa" else cfpa
        for transform in args.transforms:
            for sens in args.sensitivities:
                configs.append(
                    factory(
                        epsilon=args.epsilon,
                        bounds=one,
                        chunk_length=args.chunk_length,
                        transform=transform,
                        k=args.k,
                        sensitivity=sens,
                    )
                )
    print(
        f"{'mechanism':10s} {'transform':9s} {'k':>3s} {'sensitivity':12s} {'ε claimed':>9s} "
        f"{'ε lower bound':>13s}  result  ({args.runs} runs per input, {1 - args.alpha:.0%} confidence)"
    )
    failed = 0
    for m in configs:
        res = audit(m, runs=args.runs, alpha=args.alpha, seed=args.seed or 0)
        d = res.config
        failed += not res.passed
        print(
            f"{res.mechanism:10s} {d.get('transform', '-'):9s} {d.get('k', '-')!s:>3s} "
            f"{d.get('sensitivity', '-'):12s} {res.epsilon_claimed:9.3g} {res.epsilon_lower_bound:13.3f}  "
            f"{'ok' if res.passed else 'VIOLATED'}"
        )
    return 1 if failed else 0


@_command("heatmap")
def _heatmap(args: argparse.Namespace) -> int:
    from .events import EventBatch
    from .kernels.geometry import CAMERA_FOV_DEG, degrees_to_norm
    from .privacy import secure_generator
    from .privacy.heatmap import HeatmapGaussian, HeatmapLaplace, gaze_map, optimal_cap
    from .readers import read_recording
    from .stages.events import EventConfig, EventDetector

    try:
        h, w = (int(v) for v in args.shape.lower().split("x"))
    except ValueError:
        raise StreamdpError(f"--shape must be HEIGHTxWIDTH, e.g. 48x64, got {args.shape!r}") from None
    maps = []
    for path in args.paths:
        rec = read_recording(path)
        fov = CAMERA_FOV_DEG[rec.camera or "pupil_core_720p"]
        det = EventDetector(EventConfig(fov_deg=fov))
        ev = EventBatch.concat([det.update(rec.gaze), det.flush()])
        nx, ny = degrees_to_norm(ev.fixations.x, ev.fixations.y, fov)
        maps.append(gaze_map(nx, ny, (h, w), cap=10**9))
    arr = np.asarray(maps)
    cap_note = "public"
    if args.cap == "auto":
        probe = HeatmapGaussian(epsilon=args.epsilon, delta=args.delta, cap=1, n_observers=len(maps), shape=(h, w))
        cap = optimal_cap(arr, probe.sigma)
        cap_note = "chosen from the data by Liu et al. Algorithm 1: NOT covered by the guarantee"
    else:
        cap = _int_option("--cap", args.cap)
    mech: HeatmapGaussian | HeatmapLaplace
    if args.mechanism == "gaussian":
        gauss = HeatmapGaussian(epsilon=args.epsilon, delta=args.delta, cap=cap, n_observers=len(maps), shape=(h, w))
        guarantee = f"({args.epsilon:g}, {args.delta:g})-DP per observer, σ = {gauss.sigma:.4g}"
        mech = gauss
    else:
        lap = HeatmapLaplace(epsilon=args.epsilon, cap=cap, n_observers=len(maps), shape=(h, w))
        guarantee = f"{args.epsilon:g}-DP per observer, Laplace scale {lap.scale:.4g}"
        mech = lap
    noisy = mech.privatize(arr, secure_generator(args.seed))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, noisy)
    png = Path(args.png) if args.png else out.with_suffix(".png")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(w / 8 + 1.5, h / 8 + 0.8))
    im = ax.imshow(noisy, cmap="inferno", extent=(0, 1, 0, 1), aspect="auto")
    ax.set_title(f"{mech.name}: {len(maps)} observers, cap {cap}", fontsize=9)
    fig.colorbar(im, ax=ax, label="fixations per observer")
    fig.savefig(png, dpi=120, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {out} and {png}: {guarantee}; cap m = {cap} ({cap_note})", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamdp",
        description="Differentially private eye-movement features for Pupil Labs headsets.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "features",
        help="UNSANITIZED features of a recording to a local file (for research only)",
        description="Write the raw, unsanitized 52 features of a recording to a local file. The "
        "output is NOT differentially private: keep it local.",
    )
    p.add_argument("path", nargs="?", help="recording folder or file (default: synthetic gaze)")
    p.add_argument("--out", required=True, help="output file, .csv or .npz")
    p.add_argument("--synthetic", type=float, metavar="SECONDS", help="length of synthetic gaze when no path")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic gaze")
    _add_pipeline_options(p)

    p = sub.add_parser(
        "demo",
        help="simulated Capture → relay → subscriber on loopback: sanitized chunks and their ledger",
    )
    p.add_argument("--seconds", type=float, default=150.0, help="length of the synthetic gaze (default 150)")
    p.add_argument("--speed", type=float, default=0.0, help="playback speed, 0 = as fast as possible (default)")
    p.add_argument("--offline", action="store_true", help="run the pipeline in-process, without sockets")
    _add_mechanism_options(p)

    p = sub.add_parser("simulate", help="a stand-in Pupil Capture speaking the Network API")
    p.add_argument("path", nargs="?", help="recording to play (default: synthetic gaze)")
    p.add_argument("--synthetic", type=float, metavar="SECONDS", help="length of synthetic gaze when no path")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=50020, help="Pupil Remote port (default 50020)")
    p.add_argument("--speed", type=float, default=1.0, help="1 = real time, 0 = as fast as possible")
    p.add_argument("--loop", action="store_true", help="play the recording over and over")
    p.add_argument("--stay", action="store_true", help="keep serving after the recording ends")
    p.add_argument("--no-wait", action="store_true", help="publish even before anyone subscribes to gaze")

    p = sub.add_parser("relay", help="Pupil Capture's gaze in, sanitized chunks out on a ZeroMQ topic")
    p.add_argument("--remote", default="tcp://127.0.0.1:50020", help="Pupil Remote (default %(default)s)")
    p.add_argument("--bind", default="tcp://127.0.0.1:5570", help="where subscribers connect (default %(default)s)")
    p.add_argument("--to-backbone", action="store_true", help="also publish onto Capture's backbone (recorded)")
    p.add_argument("--curve-secret", help="relay's CURVE secret certificate (zmq.auth format)")
    p.add_argument("--curve-clients", help="folder of allowed clients' public certificates")
    p.add_argument("--insecure", action="store_true", help="allow a non-loopback bind without CURVE")
    p.add_argument("--status-interval", type=float, default=10.0, help="seconds between status messages")
    p.add_argument(
        "--blinks",
        choices=("confidence", "given"),
        default="confidence",
        help="detect blinks from confidence or use Capture's blink detector",
    )
    p.add_argument(
        "--neon",
        nargs="?",
        const="",
        default=None,
        metavar="HOST[:PORT]",
        help="take gaze from a Neon or Invisible (realtime API) instead of Pupil Capture; "
        "without an address the device is discovered",
    )
    p.add_argument("--invisible", action="store_true", help="the device is a Pupil Invisible (scene 1088×1080)")
    _add_mechanism_options(p)

    p = sub.add_parser("subscribe", help="print the sanitized chunks a relay publishes")
    p.add_argument("endpoint", help="the relay's address, e.g. tcp://127.0.0.1:5570")
    p.add_argument("--topic", default="streamdp.features.")
    p.add_argument("--count", type=int, default=0, help="stop after this many chunks (0: never)")
    p.add_argument("--timeout", type=float, default=3600.0, help="stop after this many seconds without a message")
    p.add_argument("--curve-server-key", help="the relay's public certificate")
    p.add_argument("--curve-client-cert", help="this client's secret certificate")

    p = sub.add_parser("replay", help="recorded sessions through the private pipeline, sanitized features to files")
    p.add_argument("paths", nargs="+", help="recordings (any format streamdp reads)")
    p.add_argument("--out", required=True, help="output folder (refused if it exists, unless --overwrite)")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--jobs", type=int, help="local worker processes (default: all cores)")
    p.add_argument("--executor", choices=("processes", "dask"), default="processes")
    p.add_argument("--scheduler", help="dask.distributed scheduler address, with --executor dask")
    p.add_argument("--blinks", choices=("confidence", "given"), default="confidence")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_mechanism_options(p)

    p = sub.add_parser("evaluate", help="utility, re-identification and task accuracy over mechanisms × ε × n")
    p.add_argument("--manifest", help="CSV with recording,participant,task (default: synthetic people)")
    p.add_argument("--out", default="evaluation", help="output folder (default %(default)s)")
    p.add_argument(
        "--mechanisms",
        nargs="+",
        default=["lpa", "fpa", "cfpa", "dcfpa"],
        choices=("lpa", "fpa", "cfpa", "dcfpa", "steil"),
    )
    p.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0, 100.0, 1000.0])
    p.add_argument("--chunk-lengths", nargs="+", type=int, default=[32])
    p.add_argument("--people", type=int, default=6, help="synthetic people without a manifest")
    p.add_argument("--seconds", type=float, default=240.0, help="seconds per synthetic recording")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true")

    p = sub.add_parser("audit", help="empirical privacy audit: a high-confidence lower bound on ε")
    p.add_argument(
        "--mechanisms", nargs="+", default=["lpa", "cfpa", "dcfpa", "steil"], choices=("lpa", "cfpa", "dcfpa", "steil")
    )
    p.add_argument("--transforms", nargs="+", default=["dft", "dct"], choices=("dft", "dct"))
    p.add_argument("--sensitivities", nargs="+", default=["bound", "tight"], choices=("bound", "tight"))
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--chunk-length", type=int, default=32)
    p.add_argument("--k", type=int, default=2)
    p.add_argument("--feature", default="fixation_rate", help="the feature whose bounds are audited")
    p.add_argument("--runs", type=int, default=20000, help="runs per neighbouring input")
    p.add_argument("--alpha", type=float, default=0.01, help="1 - confidence of the bound")
    p.add_argument("--seed", type=int, default=0)

    p = sub.add_parser("heatmap", help="differentially private fixation heatmap over many recordings (Liu et al.)")
    p.add_argument("paths", nargs="+", help="recordings, one per observer")
    p.add_argument("--out", required=True, help="output .npy (a PNG is written beside it)")
    p.add_argument("--png", help="PNG picture path (default: --out with .png)")
    p.add_argument("--mechanism", choices=("gaussian", "laplace"), default="gaussian")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--cap", default="1", help="per-pixel cap m (public), or 'auto' for Algorithm 1 (not private)")
    p.add_argument("--shape", default="24x32", help="HEIGHTxWIDTH of the map (default 24x32)")
    p.add_argument("--seed", type=int, help="seed (default: OS entropy)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        return _COMMANDS[args.command](args)
    except StreamdpError as exc:
        print(f"streamdp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        # invalid option values reach the validated configs; name them as the user typed them
        print(f"streamdp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (e.g. `streamdp demo | head`): not an error of ours
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
