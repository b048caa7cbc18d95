"""Reports of a prediction: the console table, ``prediction.json``, ``throughput.png`` and the
per-N timelines. Every file is written atomically (temporary file in the same folder, then
rename), and the output folder is only touched once everything has been computed.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

from replay.engine.sharing import DEFAULT_OVERTAKE, DEFAULT_OVERTAKE_TIME_S, DEFAULT_SENIORITY
from replay.sweep import Point, Prediction
from replay.units import format_bandwidth
from tracetool.atomic_files import write_text_atomically


def format_table(prediction: Prediction) -> str:
    link = prediction.link
    gated = prediction.settings.sync != "async"  # workers can wait for each other: show for how long
    lines = [
        f"model {prediction.model.get('name', '?')}, batch {prediction.batch_size}, "
        f"{prediction.download_bytes_per_step} B down / {prediction.upload_bytes_per_step} B up per step",
        f"link {format_bandwidth(link.download_bandwidth_bps)} down / "
        f"{format_bandwidth(link.upload_bandwidth_bps)} up "
        f"({100 * link.payload_efficiency:.1f}% of it tensor payload), "
        f"latency {link.latency_s * 1e3:g} ms, per-transfer overhead {link.per_transfer_overhead_s * 1e6:.0f} us"
        + (f", requests wait up to {link.request_queue_s * 1e3:.1f} ms behind queued gradients"
           if link.request_queue_s > 0.0 else "")
        + (f", a {link.burst_bytes / 1024:g} KiB bucket passes at once after idle" if link.burst_bytes > 0.0 else "")
        + "; "
        + (f"sharing {prediction.settings.sharing}, order {prediction.settings.order}" if prediction.method == "replay"
           else "closed queueing network solved by mean value analysis"),
        *_sharing_line(prediction),
        f"calibration: op durations x {prediction.calibration.compute_scale:.4f} ({prediction.calibration.note})",
        f"link-capacity bound {prediction.link_bound_steps_per_second:.2f} steps/s",
        *_unequal_workers_line(prediction),
        *_shared_cores_line(prediction),
        *_sync_line(prediction),
        "",
        f"{'workers':>7} {'steps/s':>9} {'± std':>7} {'examples/s':>11} {'step ms':>8} {'compute':>8} "
        f"{'wait par':>8} {'wait lnk':>8} {'down%':>6} {'up%':>6} {'ps%':>6}"
        + (f" {'wait peers':>10}" if gated else ""),
    ]
    for p in prediction.points:
        lines.append(
            f"{p.workers:>7} {p.steps_per_second:>9.2f} {p.steps_per_second_std:>7.2f} {p.examples_per_second:>11.1f} "
            f"{p.step_time_s * 1e3:>8.1f} {p.compute_s * 1e3:>8.1f} {p.waiting_for_parameters_s * 1e3:>8.1f} "
            f"{p.waiting_for_link_s * 1e3:>8.1f} {100 * p.downlink_utilization:>6.1f} "
            f"{100 * p.uplink_utilization:>6.1f} "
            f"{100 * p.ps_utilization:>6.1f}" + (f" {p.waiting_for_peers_s * 1e3:>10.1f}" if gated else "")
        )
    lines += ["", "training progress (staleness: PS updates between a worker's read and its gradient's update):",
              format_progress_table(prediction)]
    return "\n".join(lines)


def sharing_parameters(prediction: Prediction) -> dict[str, float]:
    """The seniority sharing parameters a prediction ran with, defaults resolved."""
    s = prediction.settings
    return {
        "seniority": s.seniority if s.seniority is not None else DEFAULT_SENIORITY,
        "overtake": s.overtake if s.overtake is not None else DEFAULT_OVERTAKE,
        "overtake_time_s": s.overtake_time_s if s.overtake_time_s is not None else DEFAULT_OVERTAKE_TIME_S,
        "contention_efficiency": prediction.link.contention_efficiency,
    }


def _sharing_line(prediction: Prediction) -> list[str]:
    """Which sharing parameters the prediction assumed, and where they came from."""
    s = prediction.settings
    if prediction.method != "replay" or s.sharing != "seniority":
        return []
    p = sharing_parameters(prediction)
    law = (f"{p['overtake']:g}" if math.isinf(p["overtake_time_s"])
           else f"min({p['overtake']:g}, {p['overtake_time_s']:g} s / T)")
    if s.sharing_source == "link profile step fits":
        source = (f"efficiencies from the link profile {s.link_profile}'s step fits at this step's transfer times, "
                  "seniority and overtake law the defaults")
    elif s.sharing_source == "link profile":
        source = f"from the link profile {s.link_profile}, where no option gave them"
    elif s.sharing_source == "defaults":
        source = ("assumed: fitted on a 5 ms-queue CUBIC link; measure yours with 'tracetool probe' and give "
                  "--link-profile")
    else:
        source = "as given"
    down, up = prediction.link.download_reverse_efficiency, prediction.link.upload_reverse_efficiency
    reverse = f", reverse efficiencies {down:g} (download) / {up:g} (upload)" if min(down, up) < 1.0 else ""
    by_workers = "".join(f", {e:g} from {n} workers" for n, e in prediction.link.contention_by_workers)
    reverse += "".join(f", reverse {d:g} / {u:g} from {n} workers" for n, d, u in prediction.link.reverse_by_workers)
    return [f"sharing parameters: seniority {p['seniority']:g}, overtake chance {law}, contention efficiency "
            f"{p['contention_efficiency']:g}{by_workers}{reverse} ({source})"]


def min_max_error_bars(points: list[Point], batch: int) -> list[list[float]]:
    """Lower and upper error bars from the mean to the min and max over seeds, never negative.

    matplotlib refuses a negative bar, and rounding can make one: when all seeds give the same
    rate, the mean (rounded sum over the count) may lie an ulp outside [min, max], and a
    prediction read back from an older ``prediction.json`` may carry such a mean."""
    return [
        [max(0.0, (p.steps_per_second - p.steps_per_second_min) * batch) for p in points],
        [max(0.0, (p.steps_per_second_max - p.steps_per_second) * batch) for p in points],
    ]


def _unequal_workers_line(prediction: Prediction) -> list[str]:
    settings = prediction.settings
    if not settings.worker_speeds and settings.slowdown == "none":
        return []
    speeds = ",".join(f"{s:g}" for s in settings.worker_speeds) or "all 1"
    return [f"unequal workers: speeds {speeds} (the rest 1), slowdown {settings.slowdown}"]


def _shared_cores_line(prediction: Prediction) -> list[str]:
    cores = prediction.settings.shared_cores
    if not cores:
        return []
    return [f"shared cores: every worker's compute shares {cores} core(s), as on one machine (each op at most one)"]


def _sync_line(prediction: Prediction) -> list[str]:
    settings = prediction.settings
    if settings.sync == "async":
        return []
    if settings.sync in ("ssp", "saps"):
        what = {"ssp": "steps ahead of the slowest", "saps": "PS updates a step may age before its worker restarts"}
        return [f"sync discipline {settings.sync}, staleness bound {settings.staleness} {what[settings.sync]}; "
                "'wait peers': ms per step held back by it"]
    if settings.sync == "cutoff":
        return [f"sync discipline cutoff {settings.cutoff}: rounds closed at the cutoff, late workers interrupted; "
                "'wait peers': ms per step waiting for the next round"]
    return [f"sync discipline {settings.sync} (R = {settings.replicas_to_aggregate or 'default'}); 'wait peers': ms "
            "per step waiting for a token"]


def format_progress_table(prediction: Prediction) -> str:
    """What the steps achieve: PS updates, gradients applied and dropped, staleness, the least busy worker."""
    lines = [f"{'workers':>7} {'updates/s':>10} {'applied/s':>10} {'dropped/s':>10} {'stale mean':>10} "
             f"{'p99':>6} {'max':>5} {'least busy worker computes':>27}"]
    for p in prediction.points:
        shares = p.worker_compute_share
        idle = (f"{100 * min(shares):.0f}% (worker {shares.index(min(shares))})" if shares else "-")
        lines.append(f"{p.workers:>7} {p.updates_per_second:>10.2f} {p.gradients_applied_per_second:>10.2f} "
                     f"{p.gradients_dropped_per_second:>10.2f} {p.staleness_mean:>10.2f} {p.staleness_p99:>6.1f} "
                     f"{p.staleness_max:>5d} {idle:>27}")
    return "\n".join(lines)


def throughput_png(prediction: Prediction) -> bytes:
    """Predicted throughput against workers, with the link-capacity bound and N x one worker."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    points = prediction.points
    workers = [p.workers for p in points]
    batch = prediction.batch_size or 1
    unit = "examples/s" if prediction.batch_size else "steps/s"
    fig = Figure(figsize=(7, 4.5), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    ax.errorbar(
        workers,
        [p.steps_per_second * batch for p in points],
        yerr=min_max_error_bars(points, batch),
        marker="o",
        capsize=3,
        label="predicted (min-max over seeds)",
    )
    top = max(workers)
    one = points[0].steps_per_second / points[0].workers if points else 0.0
    # Many points, so the line keeps its shape on the logarithmic worker axis.
    xs = [top ** (k / 48) for k in range(49)]
    ax.plot(xs, [x * one * batch for x in xs], linestyle=":", color="gray", label="N x one worker")
    bound = prediction.link_bound_steps_per_second
    if math.isfinite(bound):
        ax.axhline(bound * batch, linestyle="--", color="red", label="link capacity (bandwidth / bytes per step)")
    ax.set_xlabel("workers")
    ax.set_ylabel(unit)
    ax.set_xscale("log", base=2)
    ax.set_xticks(workers)
    ax.set_xticklabels([str(w) for w in workers])
    ceiling = max([p.steps_per_second_max * batch for p in points] + [bound * batch if math.isfinite(bound) else 0.0])
    ax.set_ylim(0, ceiling * 1.15 if ceiling > 0 else 1)
    link = prediction.link
    ax.set_title(
        f"{prediction.model.get('name', 'model')}: {format_bandwidth(link.download_bandwidth_bps)} PS link, "
        f"{prediction.settings.sharing}/{prediction.settings.order}"
    )
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def write_outputs(out_dir: Path, prediction: Prediction, timelines: dict[int, dict[str, Any]]) -> list[Path]:
    """Write prediction.json, throughput.png and timeline-<N>.json; everything is rendered first."""
    rendered: list[tuple[Path, str | bytes]] = [
        (out_dir / "prediction.json", json.dumps(prediction.to_json_dict(), indent=1) + "\n"),
        (out_dir / "throughput.png", throughput_png(prediction)),
    ]
    for workers, document in sorted(timelines.items()):
        rendered.append((out_dir / f"timeline-{workers}.json", json.dumps(document, separators=(",", ":")) + "\n"))
    for path, content in rendered:
        write_text_atomically(path, content)
    return [path for path, _ in rendered]
