"""An end-to-end privacy audit that can fail.

Each mechanism runs from raw chunks (unclipped, all features) through the
:class:`~streamdp.stages.privatizer.Privatizer` to the published message bytes, on worst-case
neighbouring chunks derived from the public bounds. Three checks, any of which fails the audit:

1. **ε lower bound** (black box): a threshold test on a statistic of one feature's released
   column, chosen on a selection sample and counted on a fresh evaluation sample; Clopper–Pearson
   bounds give ``ε_lb`` with confidence ``1 − α`` (Jagielski et al. 2020; Nasr et al. 2021). A
   bound above the feature's claimed ε fails.
2. **Scale check** (model based, where a black-box test has little power, e.g. LPA): the Laplace
   scale of each group of noisy coordinates, measured with a confidence interval, must be large
   enough for the worst reachable pair's released distance: ``Σ Δ/λ_upper ≤ ε``.
3. **Fields check**: every message field but the noised ones (values; a private k) must be equal
   for every input; one that differs is a raw function of the data (ε = ∞).

The real-time gaze channel's mechanisms are audited the same way, from raw gaze streams through
the :class:`~streamdp.gaze_channel.GazeChannel` to each tick's message bytes
(:func:`audit_gaze_mechanism`; :mod:`.gaze`), with a lattice, an accounting and a publish-time
check besides (:func:`audit_gaze_channel`, :func:`publish_times`; :mod:`.gaze_timing`).
"""

from .channel import Channel, decode, differing_fields
from .core import AuditReport, audit_mechanism, claimed_epsilons
from .gaze import GazeAuditReport, GazePair, audit_gaze_mechanism, gaze_pairs
from .gaze_timing import PublishTimes, audit_gaze_channel, publish_times
from .gaze_wire import GazeWire, WireRuns, gaze_stream
from .model import NoiseModel, noise_model
from .pairs import NeighbourPair, field_probes, neighbour_pairs
from .stats import clopper_pearson_lower, clopper_pearson_upper, epsilon_bound, laplace_scale_interval

__all__ = [
    "AuditReport",
    "Channel",
    "GazeAuditReport",
    "GazePair",
    "GazeWire",
    "NeighbourPair",
    "NoiseModel",
    "PublishTimes",
    "WireRuns",
    "audit_gaze_channel",
    "audit_gaze_mechanism",
    "audit_mechanism",
    "claimed_epsilons",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "decode",
    "differing_fields",
    "epsilon_bound",
    "field_probes",
    "gaze_pairs",
    "gaze_stream",
    "laplace_scale_interval",
    "neighbour_pairs",
    "noise_model",
    "publish_times",
]
