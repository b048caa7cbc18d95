"""Tracing-overhead correction: one scale factor on op durations so that a replay of one worker
on the profiled link takes the untraced step time the collector measured.

The traced ops run slower than untraced ones (tracing costs a few percent per step), and the
replay does not reproduce every wait of the real executor, so neither the traced durations nor
the replay's step time equal the real untraced step. The factor multiplies every worker and PS
op's duration and gap; transfers are left to the link model. The deterministic one-worker step
time is a non-decreasing, piecewise-linear function of the factor, so a bracketed false-position
search (Illinois variant) finds it in a handful of one-step replays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.engine.compiled import KIND_COMPUTE, KIND_DOWNLOAD, KIND_PS, KIND_UPLOAD, CompiledGraph
from replay.engine.link import LinkConfig
from replay.engine.loop import one_step_time_s
from replay.engine.order import OrderPolicy
from replay.engine.sharing import SharingModel
from tracetool.errors import ToolError

_RELATIVE_TOLERANCE = 1e-6
_MAX_REPLAYS = 60
# Traced durations a billion times shorter than the untraced step are not tracing overhead but a
# damaged graph; the bound also keeps the bracket search to at most 30 doublings.
MAX_COMPUTE_SCALE = 1e9


@dataclass(frozen=True)
class Calibration:
    compute_scale: float
    target_step_time_s: float | None
    unscaled_step_time_s: float
    calibrated_step_time_s: float
    replays: int
    note: str

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "compute_scale": self.compute_scale,
            "target_step_time_s": self.target_step_time_s,
            "unscaled_step_time_s": self.unscaled_step_time_s,
            "calibrated_step_time_s": self.calibrated_step_time_s,
            "replays": self.replays,
            "note": self.note,
        }


def untraced_step_time_s(model: dict[str, Any]) -> float | None:
    """The untraced step time the collector measured, if the graph carries one."""
    facts = model.get("untraced_step_time_s")
    if isinstance(facts, dict) and facts.get("mean"):
        value = float(facts["mean"])
        return value if value > 0 else None
    rate = model.get("untraced_steps_per_second")
    if rate:
        return 1.0 / float(rate)
    return None


def ops_take_time(compiled: CompiledGraph) -> bool:
    """Whether any worker or PS op has a mean duration or gap for the scale to stretch."""
    return any(
        compiled.mean_us[i] > 0.0 or compiled.gap_us[i] > 0.0
        for i in range(compiled.n)
        if compiled.kind[i] in (KIND_COMPUTE, KIND_PS)
    )


def transfers_take_time(compiled: CompiledGraph, link: LinkConfig) -> bool:
    """Whether a step on ``link`` takes time with every op scaled to zero. The engine cannot
    replay a step of no time at all (it never ends), so such a floor is known without a replay."""
    transfers = any(k in (KIND_DOWNLOAD, KIND_UPLOAD) for k in compiled.kind)
    delay_s = link.latency_s + link.per_transfer_overhead_s
    return compiled.download_bytes + compiled.upload_bytes > 0 or (transfers and delay_s > 0.0)


def calibrate_compute_scale(
    compiled: CompiledGraph,
    model: dict[str, Any],
    profiled: LinkConfig,
    sharing: SharingModel | None = None,
    order: OrderPolicy | None = None,
) -> Calibration:
    """Find the duration scale that makes the one-worker replay on ``profiled`` take the untraced step time."""

    def step(scale: float) -> float:
        return one_step_time_s(compiled, profiled, sharing=sharing, order=order, compute_scale=scale)

    unscaled = step(1.0)
    target = untraced_step_time_s(model)
    if target is None:
        return Calibration(
            1.0,
            None,
            unscaled,
            unscaled,
            1,
            "the graph has no untraced step time; durations used as traced (scale 1.0)",
        )
    if abs(unscaled - target) <= _RELATIVE_TOLERANCE * target:
        return Calibration(
            1.0, target, unscaled, unscaled, 1, "the traced durations already give the untraced step time"
        )
    if not ops_take_time(compiled):
        return Calibration(
            1.0, target, unscaled, unscaled, 1, "the graph's ops take no time, so no scale of them changes the step"
        )
    replays = 1
    floor = step(0.0) if transfers_take_time(compiled, profiled) else 0.0
    replays += 1
    if floor >= target:
        return Calibration(
            0.0,
            target,
            unscaled,
            floor,
            replays,
            "the profiled link alone takes longer than the untraced step; op durations scaled to zero",
        )
    lo, f_lo = 0.0, floor - target
    if unscaled < target:
        hi, f_hi = 1.0, unscaled - target
        while f_hi < 0:
            if hi >= MAX_COMPUTE_SCALE:
                raise ToolError(
                    f"the graph's op durations would need scaling by over {MAX_COMPUTE_SCALE:g} to take its untraced "
                    f"step time of {target:g} s: one of them is wrong; rebuild the graph with 'tracetool graph'"
                )
            lo, f_lo = hi, f_hi
            hi *= 2.0
            f_hi = step(hi) - target
            replays += 1
    else:
        hi, f_hi = 1.0, unscaled - target
    # Illinois false position on [lo, hi], f(lo) < 0 <= f(hi).
    side = 0
    scale, value = hi, f_hi
    while replays < _MAX_REPLAYS and hi - lo > 1e-12:
        scale = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        value = step(scale) - target
        replays += 1
        if abs(value) <= _RELATIVE_TOLERANCE * target:
            break
        if value < 0:
            lo, f_lo = scale, value
            if side == -1:
                f_hi /= 2.0
            side = -1
        else:
            hi, f_hi = scale, value
            if side == 1:
                f_lo /= 2.0
            side = 1
    return Calibration(
        scale,
        target,
        unscaled,
        value + target,
        replays,
        "op durations scaled so that one worker on the profiled link takes the untraced step time",
    )
