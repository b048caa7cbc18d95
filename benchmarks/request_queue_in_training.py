"""How deep the upload queue stands when TensorFlow's workers start their steps: the wait the
replay's request queue (``LinkConfig.request_queue_s``, growing at ``request_queue_growth``)
stands for, read off the shaped qdisc while a real cluster trains.

    python benchmarks/request_queue_in_training.py OUT MODEL BANDWIDTH_MBIT QUEUE CC WORKERS
        [--batch-size B] [--duration S] [--settle S] [--interval-ms MS]
    python benchmarks/request_queue_in_training.py OUT --report
    python benchmarks/request_queue_in_training.py OUT --replay FOLDER WORKERS [--seeds N]

MODEL is a zoo name or a model file (a validation's ``probe_model.py`` runs the probe instead).
One run as ``tracetool measure`` makes it (a fresh shaped cluster, a window of ``--duration``
seconds opening ``--settle`` s after the last worker is warm), while a thread samples the
backlog of both shaped qdiscs every ``--interval-ms`` over rtnetlink
(``tracetool.cluster.qdisc_backlog``). Each worker's step starts (its window's step spans) are
matched with the upload backlog then: that backlog, in ms of the line rate, is what the step's
first requests to the PS wait behind. Writes OUT/<model>-<bw>mbit-<queue>-<cc>-<N>w.json.gz (the
window's samples); ``--report`` prints every run in OUT as a table and draws
OUT/request-queue-in-training.png. Takes a real TensorFlow cluster for about ``--settle`` +
``--duration`` + 40 s: run it alone.

``--replay FOLDER`` replays a validation's folder (its ``prediction.json`` link with its request
queue, and ``graph.json``; or a ``validation.json`` alone, which names both) for WORKERS over
``--seeds`` seeds and prints the same figures for the replay's waits
(``TimelineRecord.request_waits``): what the model says the steps' requests wait.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository, for benchmarks.* too

from tracetool.cluster.qdisc_backlog import BacklogSampler  # noqa: E402
from tracetool.cluster.topology import ShapedTopology, parse_queue  # noqa: E402
from tracetool.measure.measurement import MeasureRequest, measure_point  # noqa: E402


def measure(model: str, bandwidth_mbit: float, queue_text: str, cc: str, workers: int, batch_size: int | None,
            duration_s: float, settle_s: float, interval_s: float) -> dict:
    """One measured run with both directions' backlog sampled through it."""
    bandwidth = bandwidth_mbit * 1e6
    queue = parse_queue(queue_text)
    batch = batch_size or 32
    with tempfile.TemporaryDirectory(prefix="rq-in-training-") as scratch:
        request = MeasureRequest(model=model, batch_size=batch, workers=(workers,), out_dir=Path(scratch),
                                 bandwidth_bps=bandwidth, duration_s=duration_s, settle_s=settle_s,
                                 tcp_congestion_control=cc, queue=queue)
        request.check()
        with ShapedTopology(workers, bandwidth, cc, queue) as topology, \
                BacklogSampler(topology.bridge_namespace, "vps", interval_s) as up, \
                BacklogSampler(topology.ps.namespace, "eth0", interval_s) as down:
            point = measure_point(request, workers, topology, print, trace=False)
    window_start = point.get("window_start_unix_s")
    return {"model": model, "batch_size": batch, "bandwidth_bps": bandwidth, "queue": queue.as_dict(),
            "tcp_congestion_control": cc, "workers": workers, "duration_s": duration_s, "settle_s": settle_s,
            "steps_per_s": point["steps_per_second"], "window_start_unix_s": window_start,
            "per_worker": [{"task_index": e["task_index"], "step_spans_s": e["step_spans_s"]}
                           for e in point["per_worker"]],
            "link": point.get("link"), "upload": up.samples.as_dict(), "download": down.samples.as_dict(),
            "sampler_errors": [str(e) for e in (up.error, down.error) if e is not None]}


def compact(run: dict, margin_s: float = 1.0) -> dict:
    """The run with its samples cut to the window (``margin_s`` either side) and without the
    packet counts: what the figures use, some 20 times smaller."""
    start = run["window_start_unix_s"] - margin_s
    end = run["window_start_unix_s"] + run["duration_s"] + margin_s
    kept = dict(run)
    for direction in ("upload", "download"):
        samples = run[direction]
        pairs = [(t, b) for t, b in zip(samples["unix_s"], samples["backlog_bytes"], strict=True) if start <= t <= end]
        kept[direction] = {"device": samples["device"], "unix_s": [round(t, 4) for t, _ in pairs],
                           "backlog_bytes": [b for _, b in pairs]}
    return kept


def save(run: dict, path: Path) -> None:
    """Gzipped JSON, through a temporary file so that a cut-off run leaves nothing half-written."""
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt") as out:
        json.dump(compact(run), out, separators=(",", ":"))
    tmp.replace(path)


def load(path: Path) -> dict:
    with gzip.open(path, "rt") as source:
        return json.load(source)


def backlog_ms_at(samples: dict, unix_s: float, bandwidth_bps: float) -> float | None:
    """The backlog the last sample at or before ``unix_s`` saw, in ms of the line rate."""
    times = samples["unix_s"]
    k = bisect.bisect_right(times, unix_s) - 1
    if k < 0:
        return None
    return samples["backlog_bytes"][k] * 8.0 / bandwidth_bps * 1e3


def window_backlog_ms(samples: dict, start: float, end: float, bandwidth_bps: float) -> list[float]:
    return [b * 8.0 / bandwidth_bps * 1e3 for t, b in zip(samples["unix_s"], samples["backlog_bytes"], strict=True)
            if start <= t <= end]


def summarise(run: dict) -> dict:
    """Upload backlog over the window and at the workers' step starts, in ms."""
    bw = run["bandwidth_bps"]
    start = run["window_start_unix_s"]
    end = start + run["duration_s"]
    at_starts = []
    for entry in run["per_worker"]:
        for offset, _ in entry["step_spans_s"]:
            value = backlog_ms_at(run["upload"], start + offset, bw)
            if value is not None:
                at_starts.append(value)
    over_window = window_backlog_ms(run["upload"], start, end, bw)
    down_window = window_backlog_ms(run["download"], start, end, bw)

    def quartiles(values: list[float]) -> list[float]:
        if len(values) < 4:
            return [float("nan")] * 3
        q = statistics.quantiles(values, n=4)
        return [q[0], statistics.median(values), q[2]]

    return {"steps": len(at_starts), "at_step_starts_ms": quartiles(at_starts),
            "at_step_starts_mean_ms": statistics.fmean(at_starts) if at_starts else float("nan"),
            "upload_mean_ms": statistics.fmean(over_window) if over_window else float("nan"),
            "upload_quartiles_ms": quartiles(over_window),
            "download_mean_ms": statistics.fmean(down_window) if down_window else float("nan"),
            "samples": len(over_window)}


def report(out: Path) -> None:
    runs = [load(p) for p in sorted(out.glob("*.json.gz"))]
    if not runs:
        raise SystemExit(f"no runs in {out}; measure one first")
    print("| run | steps/s | upload backlog at step starts, ms (q1 / median / q3; mean) "
          "| upload backlog over the window, ms (mean; median) | download mean, ms |")
    print("|---|---|---|---|---|")
    for run in runs:
        s = summarise(run)
        q = s["at_step_starts_ms"]
        name = f"{Path(run['model']).stem} {run['bandwidth_bps'] / 1e6:g}mbit {run['tcp_congestion_control']} " \
               f"{run['workers']}w"
        print(f"| {name} | {run['steps_per_s']:.3f} | {q[0]:.1f} / {q[1]:.1f} / {q[2]:.1f}; "
              f"{s['at_step_starts_mean_ms']:.1f} | {s['upload_mean_ms']:.1f}; {s['upload_quartiles_ms'][1]:.1f} "
              f"| {s['download_mean_ms']:.1f} |")
    plot(runs, out / "request-queue-in-training.png")


def plot(runs: list[dict], path: Path, slice_s: float = 6.0) -> None:
    """Each run's first ``slice_s`` seconds of the window: the upload backlog, and every step start."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(10, 2.4 * len(runs)), squeeze=False)
    for ax, run in zip(axes[:, 0], runs, strict=True):
        bw, start = run["bandwidth_bps"], run["window_start_unix_s"]
        pairs = [(t - start, b * 8.0 / bw * 1e3) for t, b in zip(run["upload"]["unix_s"],
                                                                  run["upload"]["backlog_bytes"], strict=True)
                 if 0.0 <= t - start <= slice_s]
        ax.plot([p[0] for p in pairs], [p[1] for p in pairs], lw=0.8, color="tab:blue", label="upload backlog")
        for entry in run["per_worker"]:
            starts = [o for o, _ in entry["step_spans_s"] if o <= slice_s]
            ax.vlines(starts, 0, run["queue"]["ms"] or 100, colors=f"C{entry['task_index'] + 1}", lw=0.8,
                      label=f"worker {entry['task_index']} step starts")
        ax.set_title(f"{Path(run['model']).stem}, {run['bandwidth_bps'] / 1e6:g}mbit, "
                     f"{run['tcp_congestion_control']}, {run['workers']} workers", fontsize=9)
        ax.set_ylabel("ms of queue")
        ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("seconds into the window")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def replayed_waits(folder: Path, workers: int, seeds: int) -> None:
    """The replay's request waits at its steps' starts after warm-up, over seeds, in ms."""
    from benchmarks.request_queue_fit import recorded_link, recorded_settings
    from replay.engine.loop import DurationModel, one_step_time_s, simulate
    from replay.sweep import prepare
    from tracetool.graph.stepgraph import load_stepgraph

    graph = folder / "graph.json"
    if (folder / "prediction.json").exists():
        prediction = json.loads((folder / "prediction.json").read_text())
    else:  # a re-prediction that kept only its validation.json, which names the link and graph
        validation = json.loads((folder / "validation.json").read_text())
        prediction = {"link": validation["prediction_link"], "settings": validation["prediction_settings"]}
        graph = graph if graph.exists() else Path(validation["profile"])
    link0 = recorded_link(prediction)
    settings = recorded_settings(prediction)
    compiled, link, sharing, order, calibration = prepare(load_stepgraph(graph), link0, settings)
    one_step = one_step_time_s(compiled, link, sharing=sharing, order=order, compute_scale=calibration.compute_scale)
    durations = DurationModel(compute_scale=calibration.compute_scale)
    waits: list[float] = []
    rates = []
    for seed in range(seeds):
        steps = settings.warmup_steps + settings.measured_steps
        result = simulate(compiled, workers, link.for_workers(workers), sharing=sharing, order=order,
                          durations=durations, measured_steps=settings.measured_steps,
                          warmup_steps=settings.warmup_steps, seed=seed, stagger_s=one_step, record_steps=steps)
        assert result.timeline is not None
        waits += [w * 1e3 for _, step, _, w in result.timeline.request_waits if step >= settings.warmup_steps]
        rates.append(result.steps_per_second)
    q = statistics.quantiles(waits, n=4) if len(waits) >= 4 else [float("nan")] * 3
    print(f"replay of {folder}, {workers} workers, request queue {link.request_queue_s * 1e3:.1f} ms, growth "
          f"{link.request_queue_growth:g}: {statistics.fmean(rates):.3f} steps/s ({min(rates):.2f}-{max(rates):.2f}); "
          f"wait at step starts q1 / median / q3 {q[0]:.1f} / {statistics.median(waits):.1f} / {q[2]:.1f} ms, "
          f"mean {statistics.fmean(waits):.1f} ms over {len(waits)} steps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("model", nargs="?")
    parser.add_argument("bandwidth_mbit", nargs="?", type=float)
    parser.add_argument("queue", nargs="?")
    parser.add_argument("cc", nargs="?")
    parser.add_argument("workers", nargs="?", type=int)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--settle", type=float, default=20.0)
    parser.add_argument("--interval-ms", type=float, default=2.0)
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--replay", type=Path, metavar="FOLDER")
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_intermixed_args()
    if args.report:
        report(args.out)
        return
    if args.replay is not None:
        replayed_waits(args.replay, int(args.model or 2), args.seeds)
        return
    if None in (args.model, args.bandwidth_mbit, args.queue, args.cc, args.workers):
        parser.error("give MODEL BANDWIDTH_MBIT QUEUE CC WORKERS, or --report")
    run = measure(args.model, args.bandwidth_mbit, args.queue, args.cc, args.workers, args.batch_size,
                  args.duration, args.settle, args.interval_ms / 1e3)
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"{Path(args.model).stem}-{args.bandwidth_mbit:g}mbit-{args.queue}-{args.cc}-{args.workers}w"
    path = args.out / f"{name}.json.gz"
    save(run, path)
    s = summarise(run)
    print(f"wrote {path}: {run['steps_per_s']:.3f} steps/s; upload backlog at step starts "
          f"{s['at_step_starts_ms'][1]:.1f} ms median, {s['at_step_starts_mean_ms']:.1f} ms mean; "
          f"over the window {s['upload_mean_ms']:.1f} ms mean")


if __name__ == "__main__":
    main()
