"""The ``replay`` command: argument parsing only; ``predict`` calls ``replay.run.run_predict``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from replay.cli_analytic import add_analytic_commands
from replay.cli_cluster import add_cluster_commands
from replay.cli_words import parse_worker_speeds, parse_workers
from replay.engine.sharing import DEFAULT_SHARING
from replay.sync.disciplines import SYNC_DISCIPLINES
from tracetool.cli_support import OneLineParser, run_command


def _link_profile(args: argparse.Namespace):  # noqa: ANN202 - a LinkProfile or None
    """The measured network of ``--link-profile``, read once per command."""
    if not getattr(args, "link_profile", ""):
        return None
    if getattr(args, "_loaded_link_profile", None) is None:
        from replay.link_profile import load_link_profile

        args._loaded_link_profile = load_link_profile(args.link_profile)
    return args._loaded_link_profile


def _profiled_sharing(args: argparse.Namespace) -> dict[str, float | None]:
    """Seniority and overtake law: given options first, then the link profile's, else None (the defaults)."""
    profile = _link_profile(args)
    measured = profile.sharing_parameters() if profile is not None and args.sharing == "seniority" else {}
    given = {"seniority": args.seniority, "overtake": args.overtake, "overtake_time_s": args.overtake_time}
    return {key: value if value is not None else measured.get(key) for key, value in given.items()}


def _sharing_source(args: argparse.Namespace) -> str:
    profile = _link_profile(args)
    if profile is not None:
        return "link profile step fits" if profile.step_fits else "link profile"
    given = (args.seniority, args.overtake, args.overtake_time)
    return "defaults" if all(v is None for v in given) else "given"


def replay_settings(args: argparse.Namespace, **discipline: object):  # noqa: ANN201 - a ReplaySettings
    """The settings the shared options give; ``discipline`` overrides sync, staleness, R and cutoff."""
    from replay.sweep import ReplaySettings

    return ReplaySettings(
        sharing=args.sharing,
        order=args.order,
        max_streams=args.max_streams,
        **_profiled_sharing(args),
        link_profile=getattr(args, "link_profile", "") or "",
        sharing_source=_sharing_source(args),
        join_window_s=args.join_window,
        leader_weight=args.leader_weight,
        measured_steps=args.steps,
        warmup_steps=args.warmup,
        seeds=args.seeds,
        seed=args.seed,
        deterministic=args.deterministic,
        jobs=args.jobs,
        calibrate=not args.no_calibration,
        worker_speeds=parse_worker_speeds(args.worker_speeds),
        slowdown=args.slowdown,
        shared_cores=getattr(args, "shared_cores", 0),
        engine=getattr(args, "engine", "auto"),
        **{"sync": getattr(args, "sync", "async"), "staleness": args.staleness,
           "replicas_to_aggregate": args.replicas_to_aggregate, "cutoff": args.cutoff, **discipline},
    )


def link_arguments(args: argparse.Namespace) -> dict[str, object]:
    """The link the shared options describe, as keyword arguments of ``target_link``."""
    from replay.units import parse_bandwidth_bps, parse_latency_s
    from tracetool.cli_support import parse_bytes

    profile = _link_profile(args)
    if not args.bandwidth and profile is None:
        from tracetool.errors import ToolError

        raise ToolError("give --bandwidth (e.g. 1gbit, or 'profiled') or a measured --link-profile")
    if args.bandwidth:
        bandwidth = None if args.bandwidth.strip().lower() == "profiled" else parse_bandwidth_bps(args.bandwidth)
    else:
        bandwidth = profile.line_rate_bps
    contention, *reverse = _profiled_efficiencies(args, profile, bandwidth)
    by_workers, reverse_by_workers = _profiled_by_workers(args, profile, bandwidth)
    if args.contention_efficiency is not None:
        # a count's relaxed reverse loss was fitted beside loss-free contention: it goes with the profile's
        contention, by_workers, reverse_by_workers = args.contention_efficiency, (), ()
    return {
        "bandwidth_bps": bandwidth,
        "latency_s": parse_latency_s(args.latency) if args.latency else (profile.latency_s if profile else 0.0),
        "worker_bandwidth_bps": parse_bandwidth_bps(args.worker_bandwidth) if args.worker_bandwidth else None,
        "worker_bandwidths_bps": tuple(parse_bandwidth_bps(part) for part in args.worker_bandwidths.split(",")
                                       if part.strip()),
        "mtu": args.mtu,
        "contention_efficiency": contention,
        "reverse_efficiencies": tuple(reverse),
        "contention_by_workers": by_workers,
        "reverse_by_workers": reverse_by_workers,
        "request_queue_s": _request_queue_s(args, profile),
        "burst_bytes": parse_bytes(args.link_burst) if getattr(args, "link_burst", "") else 0.0,
    }


def _request_queue_s(args: argparse.Namespace, profile) -> float:  # noqa: ANN001 - a LinkProfile or None
    """``--request-queue``: a duration, the link profile's ('profile'), or none."""
    from replay.units import parse_latency_s
    from tracetool.errors import ToolError

    text = (getattr(args, "request_queue", "") or "").strip().lower()
    if not text:
        return 0.0
    if text == "profile":
        if profile is None:
            raise ToolError("--request-queue profile needs a --link-profile to take the standing upload queue from")
        return profile.request_queue_s
    try:
        return parse_latency_s(text)  # LinkConfig refuses a queue past an hour
    except ToolError:
        raise ToolError(f"--request-queue '{args.request_queue}': give how long requests may wait, like 70ms or "
                        "0.07, or 'profile' for the link profile's standing upload queue") from None


def _profiled_efficiencies(args: argparse.Namespace, profile, bandwidth_bps: float | None,  # noqa: ANN001
                           ) -> tuple[float, float, float]:
    """(contention, download reverse, upload reverse) efficiencies of the link profile for this
    graph's step: its step fits depend on how long the step's transfers take at the bandwidth
    (the profile's when not given); 1 without a profile."""
    if profile is None:
        return 1.0, 1.0, 1.0
    if not profile.step_fits:
        return profile.efficiencies(0.0, 0.0)
    return profile.efficiencies(*_transfer_times(args, profile, bandwidth_bps))


def _profiled_by_workers(args: argparse.Namespace, profile, bandwidth_bps: float | None,  # noqa: ANN001
                         ) -> tuple[tuple[tuple[int, float], ...], tuple[tuple[int, float, float], ...]]:
    """The profile's contention efficiency and relaxed reverse efficiencies per worker count for
    this graph's step, where its step fits have them (TensorFlow's reference step); none otherwise."""
    if profile is None or not profile.step_fits:
        return (), ()
    times = _transfer_times(args, profile, bandwidth_bps)
    return profile.contention_by_workers(*times), profile.reverse_by_workers(*times)


def _transfer_times(args: argparse.Namespace, profile, bandwidth_bps: float | None,  # noqa: ANN001
                    ) -> tuple[float, float]:
    """How long this graph's step moves its bytes each way alone at the bandwidth (the profile's when
    not given): the step fits are interpolated by it. The graph is read once per command."""
    from replay.engine.link import payload_efficiency_for_mtu
    from tracetool.graph.stepgraph import load_stepgraph

    if getattr(args, "_loaded_graph_bytes", None) is None:
        graph = load_stepgraph(Path(args.graph))
        args._loaded_graph_bytes = (graph.bytes_of_kind("download"), graph.bytes_of_kind("upload"))
    payload_bps = (bandwidth_bps or profile.line_rate_bps) * payload_efficiency_for_mtu(args.mtu)
    download_s, upload_s = (8.0 * size / payload_bps for size in args._loaded_graph_bytes)
    return download_s, upload_s


def cmd_predict(args: argparse.Namespace) -> int:
    from replay.run import PredictRequest, run_predict

    request = PredictRequest(
        graph_path=Path(args.graph),
        workers=parse_workers(args.workers),
        out_dir=Path(args.out),
        **link_arguments(args),
        settings=replay_settings(args),
        timelines=not args.no_timelines,
        timeline_steps=args.timeline_steps,
    )
    outcome = run_predict(request)
    print(outcome.table)
    print()
    print(f"wrote {', '.join(str(p) for p in outcome.files[:3])}{' ...' if len(outcome.files) > 3 else ''}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from replay.compare import CompareRequest, parse_discipline_list, run_compare

    base = replay_settings(args, sync="async", staleness=None, replicas_to_aggregate=None, cutoff=None)
    request = CompareRequest(
        graph_path=Path(args.graph),
        workers=parse_workers(args.workers),
        out_dir=Path(args.out),
        link=link_arguments(args),
        variants=parse_discipline_list(args.sync, base, args.staleness, args.replicas_to_aggregate, args.cutoff),
    )
    outcome = run_compare(request)
    print(outcome.table)
    print()
    print(f"wrote {', '.join(str(p) for p in outcome.files)}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from replay.compare import parse_discipline_list
    from replay.grid import SweepRequest, run_grid

    bandwidths = [part.strip() for part in args.bandwidth.split(",") if part.strip()] or [""]
    links = [link_arguments(argparse.Namespace(**{**vars(args), "bandwidth": b})) for b in bandwidths]
    base = replay_settings(args, sync="async", staleness=None, replicas_to_aggregate=None, cutoff=None)
    request = SweepRequest(
        graphs=[Path(g) for g in args.graphs],
        bandwidths_bps=[link.pop("bandwidth_bps") for link in links],
        disciplines=[(v.label, v.settings) for v in
                     parse_discipline_list(args.sync, base, args.staleness, args.replicas_to_aggregate, args.cutoff)],
        workers=parse_workers(args.workers),
        link=links[0],
        out_dir=Path(args.out),
        jobs=args.jobs,
        backend=args.backend,
        address=args.address,
    )
    outcome = run_grid(request)
    print(outcome.table)
    print()
    print(f"wrote {', '.join(str(p) for p in outcome.files)}")
    return 0


def add_replay_options(p: argparse.ArgumentParser) -> None:
    """The options every replay command shares: the link, the engine, the workers and the discipline's knobs."""
    from replay.sweep import DEFAULT_MEASURED_STEPS, DEFAULT_SEEDS, DEFAULT_WARMUP_STEPS, default_jobs

    p.add_argument(
        "--bandwidth",
        default="",
        help="PS link bandwidth per direction in bits/s: 1gbit, 100mbit, 10gbit/s, 1e9; "
        "'profiled' for the profiled link (default: the line rate of --link-profile)",
    )
    p.add_argument(
        "--link-profile", default="", metavar="FILE",
        help="a network measured by 'tracetool probe': its line rate, latency (round trip and standing queue), "
        "contention efficiency and seniority sharing parameters, wherever the options here do not give them "
        "(docs/network-probe.md)",
    )
    p.add_argument(
        "--request-queue", default="", metavar="SECONDS|profile",
        help="let a step's parameter requests wait behind other workers' gradients in a deep upload queue, up to "
        "this long (e.g. 70ms), or as deep as --link-profile's standing upload queue stands beyond the latency "
        "('profile'); off by default: a link profile's step fits were made without it (docs/network-probe.md)",
    )
    p.add_argument(
        "--link-burst", default="", metavar="BYTES",
        help="a token bucket in front of each direction of the PS link (a tbf shaper's burst, a cloud policer's): "
        "after idling, a direction passes this much at once, e.g. 16kib (default: none)",
    )
    p.add_argument("--latency", default="", help="one-way link latency: 0.2ms, 200us, 0.0002 "
                   "(default: --link-profile's, else 0)")
    p.add_argument(
        "--mtu", type=int, default=1500,
        help="the link's MTU: TCP/IP and Ethernet headers of each frame take their share of --bandwidth (default 1500)",
    )
    p.add_argument(
        "--contention-efficiency", type=float, default=None, metavar="E",
        help="share of a direction's rate that arrives while two or more workers send on it at once (TCP losses "
        "at the shared queue; default: --link-profile's, else 1: no loss)",
    )
    p.add_argument(
        "--worker-bandwidth", default=None, help="each worker's own interface (default: same as the PS link)"
    )
    p.add_argument(
        "--worker-bandwidths", default="", metavar="B1,B2,...",
        help="the first workers' own interfaces, e.g. 1gbit,1gbit,100mbit for a third worker on a slower link; "
        "workers past the list have --worker-bandwidth (default: none)",
    )
    p.add_argument(
        "--sharing",
        choices=["fair", "fair-per-transfer", "fifo", "seniority"],
        default=DEFAULT_SHARING,
        help="how concurrent transfers share a direction (default %(default)s; see docs/replay.md)",
    )
    p.add_argument(
        "--seniority",
        type=float,
        default=None,
        help="with --sharing seniority: weight of a connection over the next younger one (default: measured value)",
    )
    p.add_argument(
        "--overtake",
        type=float,
        default=None,
        help="with --sharing seniority: the most chance that a connection joining a busy direction overtakes the "
        "incumbents (default: measured value; 0: strict seniority)",
    )
    p.add_argument(
        "--overtake-time",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --sharing seniority: the overtake chance is this over the time one step's transfers in a direction "
        "take alone, capped by --overtake (default: measured value; inf: a constant --overtake)",
    )
    p.add_argument(
        "--join-window",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --sharing seniority: connections joining within this long of a group's first share as one released "
        "group, without seniority among them (default: measured value for sync, backup and cutoff, where an update "
        "starts workers together; 0 for the others; 0: no groups)",
    )
    p.add_argument(
        "--leader-weight",
        type=float,
        default=None,
        metavar="W",
        help="with --join-window: the weight of a released group's first joiner against each other member "
        "(default: measured value; 1: the group shares fairly)",
    )
    p.add_argument(
        "--order",
        choices=["trace", "random", "priority"],
        default="trace",
        help="which waiting transfer is served next",
    )
    p.add_argument(
        "--max-streams",
        type=int,
        default=None,
        help="with fair or seniority sharing, at most this many concurrent transfers per direction",
    )
    p.add_argument(
        "--steps", type=int, default=DEFAULT_MEASURED_STEPS, help="measured steps per worker (default %(default)s)"
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=DEFAULT_WARMUP_STEPS,
        help="warm-up steps per worker, not measured (default %(default)s)",
    )
    p.add_argument(
        "--seeds",
        type=int,
        default=DEFAULT_SEEDS,
        help="replays per worker count, for the spread (default %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0, help="first seed (default %(default)s)")
    p.add_argument(
        "--deterministic", action="store_true",
        help="use mean op durations and evenly spread worker start times instead of drawing them; under --sharing "
        "seniority the overtake draws stay random, so seeds can still differ (add --overtake 0 for identical seeds); "
        "prediction.json lists what varies in settings.varies_with_seed"
    )
    p.add_argument(
        "--jobs", type=int, default=default_jobs(), help="parallel processes for the sweep (default %(default)s)"
    )
    p.add_argument(
        "--no-calibration",
        action="store_true",
        help="use traced durations as they are (no tracing-overhead correction)",
    )
    p.add_argument(
        "--shared-cores", type=int, default=0, metavar="CORES",
        help="let every worker's compute share this many cores, as when all the workers of a validation run on one "
        "machine (each op at most one core; with more ops running than cores each slows to cores / running); "
        "not with --sync cutoff or saps; on the Python engine (default 0: each worker on a machine of its own)",
    )
    p.add_argument(
        "--worker-speeds", default="", metavar="S1,S2,...",
        help="compute speed of the first workers relative to the profiled one, e.g. 1,1,1,0.5 for a fourth worker "
        "at half speed; workers past the list run at 1 (default: all 1)",
    )
    p.add_argument(
        "--slowdown", default="none", metavar="SPEC",
        help="per-step slowdowns of every worker's compute: none, lognormal:SIGMA, exponential, straggler:K:P "
        "(K times slower with chance P), persistent:K:P:STEPS (slow periods of STEPS steps on average), or "
        "trace:FILE.csv (measured worker,step,seconds); see docs/replay.md (default none)",
    )
    p.add_argument("--replicas-to-aggregate", type=int, default=None, metavar="R",
                   help="with --sync sync or backup: gradients per update (default N for sync, N - 1 for backup)")
    p.add_argument("--staleness", type=int, default=None, metavar="S",
                   help="with --sync ssp: how many steps a worker may run ahead of the slowest (0: lock-step); "
                   "with --sync saps: how many PS updates old a step may get before its worker is restarted")
    p.add_argument("--cutoff", default=None, metavar="RULE",
                   help="with --sync cutoff: static:SECONDS (close each round that long after it opens), "
                   "gradients:R (close when R gradients are in) or dynamic (a cutoff per round from a run-time "
                   "model fitted as the replay goes; docs/replay.md)")


def build_parser() -> argparse.ArgumentParser:
    from replay.run import TIMELINE_EVENT_BUDGET, TIMELINE_STEPS

    parser = OneLineParser(
        prog="replay",
        description="Predict asynchronous parameter-server training throughput for N workers by replaying a "
        "single-worker step graph (made by 'tracetool graph') on a shared PS link.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "predict",
        help="predict throughput for several worker counts and write a report",
        description="Replay the step graph for each worker count and write DIR/prediction.json, "
        "DIR/throughput.png and DIR/timeline-<N>.json (Chrome trace format, opens in Perfetto).",
    )
    p.add_argument("graph", help="step-graph JSON made by 'tracetool graph'")
    p.add_argument(
        "--workers", default="1,2,4,8,16", help="worker counts, e.g. 1,2,4,8,16 or 1-8 (default %(default)s)"
    )
    add_replay_options(p)
    p.add_argument(
        "--sync", default="async", choices=list(SYNC_DISCIPLINES),
        help="how workers coordinate: async (default; TensorFlow's asynchronous SGD), ssp (bounded staleness: "
        "a worker more than --staleness steps ahead of the slowest waits), sync (SyncReplicasOptimizer: one update "
        "per R gradients, stale gradients dropped), backup (sync with R = N - 1 by default), cutoff (rounds closed "
        "at --cutoff, late workers interrupted) or saps (asynchronous; a worker whose step is more than "
        "--staleness updates old is restarted)",
    )
    p.add_argument(
        "--engine", choices=["auto", "python", "compiled"], default="auto",
        help="event loop: auto (default; the compiled kernel where it holds the configuration and numba runs, else "
        "the Python engine), python (the reference) or compiled (the kernel, or an error naming what it lacks)",
    )
    p.add_argument("--no-timelines", action="store_true", help="do not write timeline-<N>.json")
    p.add_argument(
        "--timeline-steps",
        type=int,
        default=TIMELINE_STEPS,
        help="steps per worker in each timeline (default %(default)s; fewer where a timeline would pass "
        f"{TIMELINE_EVENT_BUDGET:,} op events)",
    )
    p.add_argument("--out", required=True, help="output folder")
    p.set_defaults(func=cmd_predict)

    c = sub.add_parser(
        "compare",
        help="replay several synchronization disciplines side by side",
        description="Replay the step graph under each discipline for each worker count and write "
        "DIR/comparison.json and DIR/comparison.png (PS updates and gradients applied per second against "
        "workers, and the staleness of applied gradients).",
    )
    c.add_argument("graph", help="step-graph JSON made by 'tracetool graph'")
    c.add_argument("--workers", default="1,2,4,8", help="worker counts (default %(default)s)")
    c.add_argument(
        "--sync", default="async,sync,backup,cutoff,ssp,saps", metavar="LIST",
        help="disciplines to compare, each NAME or NAME:PARAMETER: ssp:S and saps:S (staleness bound; default "
        "--staleness or 2), sync:R and backup:R (gradients per update), cutoff:RULE (static:SECONDS, gradients:R "
        "or dynamic; default --cutoff or dynamic); default %(default)s",
    )
    add_replay_options(c)
    c.add_argument("--out", required=True, help="output folder")
    c.set_defaults(func=cmd_compare)

    g = sub.add_parser(
        "sweep",
        help="replay a grid of graphs x bandwidths x disciplines x worker counts x seeds",
        description="Replay every cell of the grid (one graph, bandwidth, discipline, worker count and seed each) "
        "as an independent task, on local processes or a Dask or Ray cluster, and write DIR/sweep.csv and "
        "DIR/sweep.json: one row per cell. --bandwidth takes a comma-separated list here.",
    )
    g.add_argument("graphs", nargs="+", metavar="GRAPH", help="step-graph JSON files made by 'tracetool graph'")
    g.add_argument("--workers", default="1,2,4,8,16", help="worker counts (default %(default)s)")
    g.add_argument("--sync", default="async", metavar="LIST",
                   help="disciplines, as for 'replay compare': async,sync,backup:2,ssp:3,... (default %(default)s)")
    add_replay_options(g)
    g.add_argument("--backend", choices=["local", "dask", "ray"], default="local",
                   help="where the replays run: local processes (default), a Dask cluster or a Ray cluster "
                   "(optional extras tfsim[dask], tfsim[ray]; docs/replay.md)")
    g.add_argument("--address", default="", metavar="ADDRESS",
                   help="with --backend dask: the scheduler (tcp://host:8786); with ray: the cluster (host:6379); "
                   "default: start one on this machine with --jobs workers")
    g.add_argument("--out", required=True, help="output folder")
    g.set_defaults(func=cmd_sweep)

    add_analytic_commands(sub)
    add_cluster_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return run_command(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
