"""Argument parsing for ``tracetool measure`` and ``tracetool validate``.

Each command builds one request object and calls one library function
(``tracetool.measure.measurement``, ``tracetool.measure.validate``); no logic lives here.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from tracetool.cli_support import MODEL_HELP, parse_model_kwargs
from tracetool.cluster.task_spec import MIN_SETTLE_S
from tracetool.errors import ToolError
from tracetool.measure.transports import (
    DEFAULT_MODEL_PROBE_TRANSPORT,
    DEFAULT_TRANSPORT,
    DEFAULT_TWIN_SHAPE,
    MODEL_PROBE_TRANSPORTS,
    TENSORFLOW_TRANSPORT,
    TWIN_SHAPES,
)
from tracetool.measure.windows import (
    MEASURE_SETTLE_S,
    MEASURE_WINDOW_S,
    VALIDATE_SETTLE_S,
    VALIDATE_WINDOW_S,
    default_window,
)


def _measure_request(args: argparse.Namespace, out_dir: Path):  # noqa: ANN202 - lazy import keeps --help fast
    from tracetool.cluster.topology import parse_bandwidth_bps, parse_latency_s, parse_queue
    from tracetool.measure.measurement import MeasureRequest, parse_worker_counts
    from tracetool.measure.slow_workers import parse_slow_worker

    repeats = args.repeats if args.repeats is not None else (2 if args.command == "validate" else 1)
    window_s, settle_s = default_window(args.command)
    return MeasureRequest(
        model=args.model,
        batch_size=args.batch_size,
        workers=parse_worker_counts(args.workers) if args.workers else (),
        out_dir=out_dir,
        bandwidth_bps=parse_bandwidth_bps(args.bandwidth) if args.bandwidth else None,
        latency_s=parse_latency_s(args.latency) if args.latency else None,
        duration_s=args.duration if args.duration is not None else window_s,
        settle_s=args.settle if args.settle is not None else settle_s,
        warmup_steps=args.warmup,
        optimizer=args.optimizer,
        intra_op_threads=args.intra_op_threads,
        inter_op_threads=args.inter_op_threads,
        model_kwargs=parse_model_kwargs(args.model_arg),
        command_line=shlex.join(["tracetool", *sys.argv[1:]]),
        tcp_congestion_control=args.tcp_congestion_control,
        queue=parse_queue(args.queue),
        trace_steps=getattr(args, "trace_steps", 0),
        repeats=repeats,
        **_more_runs(args, repeats),
        sync=args.sync,
        replicas_to_aggregate=args.replicas_to_aggregate,
        slow_workers=tuple(parse_slow_worker(text) for text in args.slow_worker),
    )


def _more_runs(args: argparse.Namespace, repeats: int) -> dict[str, object]:
    """``--max-standard-error`` and ``--max-repeats``: validate runs more clusters of a count whose
    runs' mean is uncertain by over 4% (up to eight runs); measure does only when asked. 0 turns
    it off."""
    from tracetool.measure.repeats import VALIDATE_MAX_REPEATS, VALIDATE_MAX_STANDARD_ERROR

    text = args.max_standard_error
    if text is None:
        limit = VALIDATE_MAX_STANDARD_ERROR if args.command == "validate" else None
    else:
        try:
            limit = float(text.strip().removesuffix("%")) / 100.0
        except ValueError:
            raise ToolError(f"bad --max-standard-error '{text}': give a percentage of the mean, e.g. 4%, "
                            "or 0 for exactly --repeats runs") from None
        limit = limit or None
    if limit is None:
        if args.max_repeats is not None:
            raise ToolError("--max-repeats caps the runs --max-standard-error adds; give that too")
        return {}
    most = args.max_repeats if args.max_repeats is not None else max(repeats, VALIDATE_MAX_REPEATS)
    return {"max_standard_error": limit, "max_repeats": most}


def cmd_measure(args: argparse.Namespace) -> int:
    from tracetool.measure.measurement import measure_on_host, run_measure

    if args.cluster:
        if args.job is None:
            raise ToolError("--cluster needs --job ps|worker and --task-index of the task this host runs")
        if args.repeats not in (None, 1) or args.max_standard_error is not None:
            raise ToolError("--repeats and --max-standard-error run local clusters only; on real hosts start the "
                            "measurement again for each run")
        args.workers = args.workers or "1"
        request = _measure_request(args, Path(args.out))
        out = measure_on_host(request, Path(args.cluster), args.job, args.task_index)
    else:
        if not args.workers:
            raise ToolError("--workers is required, e.g. --workers 1,2,3,4")
        out = run_measure(_measure_request(args, Path(args.out)))
    if out is not None:
        print(f"measurements written to {out}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from tracetool.measure.validate import ValidateRequest, run_validate

    request = ValidateRequest(
        measure=_measure_request(args, Path(args.out) / "measured"),
        out_dir=Path(args.out),
        traced_steps=args.steps,
        from_profile=Path(args.from_profile) if args.from_profile else None,
        from_measured=Path(args.from_measured) if args.from_measured else None,
        order=args.order,
        seeds=args.seeds,
        probe_duration_s=args.probe_duration,
        probe_repeats=args.probe_repeats,
        probe_transport=args.probe_transport,
        from_link_probe=Path(args.from_link_probe) if args.from_link_probe else None,
        request_queue=args.request_queue,
        link_burst=args.link_burst,
        link_fit_workload=args.link_fit_workload,
        twin_shape=args.twin_shape,
        **_contention_efficiency(args.contention_efficiency),
    )
    out = run_validate(request)
    print(f"validation written to {out}")
    return 0


def _contention_efficiency(text: str) -> dict[str, object]:
    """``--contention-efficiency``: a number, ``probe`` to measure it on the shaped link, or ``auto``
    (the default): probe where there is a shaped link and workers to contend on it."""
    if text.strip().lower() == "auto":
        return {"probe_link": None}
    if text.strip().lower() == "probe":
        return {"probe_link": True}
    try:
        return {"contention_efficiency": float(text)}
    except ValueError:
        raise ToolError(f"--contention-efficiency {text!r}: give a number in [0.1, 1] or 'probe'") from None


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help=MODEL_HELP)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", default="", help="worker counts, e.g. 1,2,3,4 or 1-4")
    p.add_argument("--bandwidth", default="", help="shape the PS link to this rate in both directions (tc syntax: "
                   "100mbit, 1gbit); without it every task shares one unshaped loopback namespace")
    p.add_argument("--latency", default="", help="one-way link latency (e.g. 0.2ms); this kernel cannot emulate it, "
                   "so it is only recorded (and used by the prediction in validate)")
    p.add_argument("--tcp-congestion-control", default="cubic", metavar="ALGORITHM",
                   help="TCP congestion control of the shaped cluster's tasks (default cubic, Linux's own; the "
                   "host's default otherwise leaks in, and it decides how workers share the PS link)")
    p.add_argument("--queue", default="5ms", metavar="TIME|BYTES",
                   help="the shaped link's buffer, as a time of traffic at the line rate (default 5ms: a shallow "
                   "switch port) or bytes (64kb, 1mib); 100ms and more is a deep buffer that loss-based TCP keeps "
                   "full")
    p.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                   help=f"seconds of the measurement window (default: {MEASURE_WINDOW_S:g} for measure; "
                   f"{VALIDATE_WINDOW_S:g} for validate, whose contended clusters pass between regimes about "
                   "once a minute)")
    p.add_argument("--repeats", type=int, default=None, metavar="R",
                   help="independent clusters per worker count (default: 1 for measure; 2 for validate, whose "
                   "points with several workers can settle into either of two regimes); with 2 or more the "
                   "point is their mean and its interval is the spread between runs")
    p.add_argument("--max-standard-error", default=None, metavar="PCT",
                   help="run more clusters of a worker count, one at a time, while the standard error of their "
                   "mean rate is over PCT of it (default: 4%% for validate, where two runs more than 8%% apart "
                   "split between regimes; off for measure; 0 turns it off)")
    p.add_argument("--max-repeats", type=int, default=None, metavar="M",
                   help="with --max-standard-error: at most M runs per worker count (default 8: runs split half and "
                   "half between two regimes 18%% apart need six for a mean known to 4%%)")
    p.add_argument("--warmup", type=int, default=5, help="steps each worker runs before it counts as warm (default 5)")
    p.add_argument("--settle", type=float, default=None, metavar="SECONDS",
                   help="seconds every worker keeps training after the last one is warm, before the window opens "
                   f"(at least {MIN_SETTLE_S:g}; default {MEASURE_SETTLE_S:g} for measure, {VALIDATE_SETTLE_S:g} "
                   "for validate): behind a deep buffer the first 20 s of contention ran up to 25%% apart from "
                   "where the link settles (docs/network-probe.md)")
    p.add_argument("--sync", default="async", metavar="async|sync|backup",
                   help="async (default): between-graph replication, every gradient applied as it arrives; sync or "
                   "backup: TensorFlow's SyncReplicasOptimizer, one PS update per R gradients, stale ones dropped "
                   "(see docs/measure.md)")
    p.add_argument("--replicas-to-aggregate", type=int, default=None, metavar="R",
                   help="gradients per update with --sync sync (default: the worker count N) or backup (default "
                   "N - 1); a given R holds for every worker count")
    p.add_argument("--slow-worker", action="append", default=[], metavar="I:FACTOR",
                   help="run worker I (0 to N - 1) FACTOR times slower, for real: its process gets 1/FACTOR of a "
                   "core through a cgroup CPU quota; the slowdown the quota really gives is measured first and "
                   "recorded (repeatable)")
    p.add_argument("--optimizer", default="sgd", help="sgd (default), momentum or adam")
    p.add_argument("--intra-op-threads", type=int, default=1)
    p.add_argument("--inter-op-threads", type=int, default=1)
    p.add_argument("--model-arg", action="append", default=[], metavar="NAME=INT",
                   help="keyword passed to the model's build(), e.g. width=16")
    p.add_argument("--out", required=True, help="folder to write")


def cmd_probe(args: argparse.Namespace) -> int:
    from tracetool.atomic_files import write_json_atomically
    from tracetool.cluster import tcp_settings
    from tracetool.cluster.topology import parse_bandwidth_bps, parse_queue
    from tracetool.measure.link_step_fit import MAX_STEP_WINDOW_S, MIN_PROBE_WINDOW_S, parse_reference_steps
    from tracetool.measure.network_probe import probe_hosts, probe_network
    from tracetool.outputs import check_output_file

    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    writes = not args.cluster or (args.job == "worker" and args.task_index == 0)
    out = Path(args.out) if args.out else None
    if writes and out is None:
        raise ToolError("--out is required: the link profile JSON to write")
    if out is not None:
        check_output_file(out)
    reference_steps = parse_reference_steps(args.reference_steps)
    # TensorFlow's reference step came closest in every environment of the campaign; real hosts would
    # need TensorFlow started on each of them, so they keep the network-only probe
    transport = args.transport or (DEFAULT_TRANSPORT if args.cluster else TENSORFLOW_TRANSPORT)
    if args.step_window is not None and not MIN_PROBE_WINDOW_S <= args.step_window <= MAX_STEP_WINDOW_S:
        raise ToolError(f"--step-window must be between {MIN_PROBE_WINDOW_S:g} and {MAX_STEP_WINDOW_S:g} seconds, "
                        f"got {args.step_window:g}")
    if args.cluster:
        from tracetool.measure.measurement import load_cluster_file

        if args.job is None:
            raise ToolError("--cluster needs --job ps|worker and --task-index of the task this host runs")
        if args.bandwidth or args.queue != "5ms" or args.tcp_congestion_control != "cubic":
            raise ToolError("--bandwidth, --queue and --tcp-congestion-control shape the emulated link; "
                            "real hosts are probed as they are")
        if transport == TENSORFLOW_TRANSPORT and not args.no_step_fit:
            raise ToolError("--transport tensorflow runs its reference steps on the emulated link only; on real "
                            "hosts give --transport tcp or grpc")
        profile = probe_hosts(load_cluster_file(Path(args.cluster)), args.job, args.task_index, args.trials, say,
                              step_fit=not args.no_step_fit, step_repeats=args.step_repeats,
                              reference_steps_s=reference_steps, transport=transport,
                              step_window_s=args.step_window)
        if profile is None:
            return 0
    else:
        if not args.bandwidth:
            raise ToolError("--bandwidth is required: the emulated link's line rate (e.g. 100mbit)")
        bandwidth_bps = parse_bandwidth_bps(args.bandwidth)
        queue = parse_queue(args.queue)
        tcp_settings.check_tcp_congestion_control(args.tcp_congestion_control)
        profile = probe_network(bandwidth_bps, queue, args.tcp_congestion_control, args.trials, progress=say,
                                step_fit=not args.no_step_fit, step_repeats=args.step_repeats,
                                reference_steps_s=reference_steps, transport=transport,
                                step_window_s=args.step_window)
    assert out is not None
    write_json_atomically(out, profile.to_json_dict())
    sharing = profile.sharing_parameters()
    if profile.step_fits:
        fits = "; ".join(f"{fit.transfer_s:.2f} s transfers: contention efficiency {fit.contention_efficiency:.3f}"
                         + "".join(f", {e:.3f} from {n} workers" for n, e in fit.contention_by_workers)
                         + "".join(f", reverse {d:.2f} / {u:.2f} from {n} workers"
                                   for n, d, u in fit.reverse_by_workers)
                         + f", reverse efficiencies {fit.download_reverse_efficiency:.2f} (download) and "
                         f"{fit.upload_reverse_efficiency:.2f} (upload)" for fit in profile.step_fits)
        shared = f"{fits}; the default seniority and overtake law"
    else:
        shared = (f"seniority {sharing['seniority']:.2f}, overtake {sharing['overtake']:.2f}, contention efficiency "
                  f"{sharing['contention_efficiency']:.3f}")
    print(f"link profile written to {out}: line rate {profile.line_rate_bps / 1e6:.2f} Mbit/s, latency "
          f"{profile.latency_s * 1e3:.2f} ms (round trip {profile.rtt_idle_s * 1e3:.2f} ms, standing queue included), "
          f"{shared}")
    return 0


def add_probe_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "probe", help="measure a network's line rate, standing queue and TCP sharing, without a model",
        description="On an emulated PS link (one namespace per task, tbf both ways, as measure builds it; needs "
                    "root) or on the hosts of a real cluster (--cluster, run on the PS and on workers 0 to 3, or "
                    "all the cluster has if fewer): one connection's bulk rate each way, idle and loaded round trips "
                    "(the standing queue), a reference step of one to four workers, run by TensorFlow itself on the "
                    "emulated link (the link's contention and reverse efficiencies) and, with --trials or "
                    "--no-step-fit, join trials of two workers (how a busy direction is shared). "
                    "Writes a link profile JSON for replay predict --link-profile (docs/network-probe.md).")
    p.add_argument("--bandwidth", default="", help="the emulated link's rate both ways (tc syntax: 100mbit, 1gbit)")
    p.add_argument("--queue", default="5ms", metavar="TIME|BYTES",
                   help="the link's buffer: a time of traffic at the line rate (default 5ms) or bytes (256kb)")
    p.add_argument("--tcp-congestion-control", default="cubic", metavar="ALGORITHM",
                   help="TCP congestion control of the tasks (default cubic)")
    p.add_argument("--trials", type=int, default=None,
                   help="join trials of two workers per direction and transfer length (default 0, or 8 with "
                        "--no-step-fit: the replay takes its sharing from the step fits where they exist)")
    p.add_argument("--no-step-fit", action="store_true",
                   help="skip the reference step of one to four workers (about 1.5 minutes a run) whose replayed fit "
                        "gives the profile's contention and reverse efficiencies")
    p.add_argument("--step-repeats", type=int, default=1,
                   help="probe runs of each reference step per worker count (default 1); two or three average out "
                        "the runs' spread, which the profile records, at that many times the minutes")
    p.add_argument("--reference-steps", default="0.25", metavar="SECONDS[,SECONDS]",
                   help="transfer time each way of the reference steps (default 0.25); with several the replay "
                        "interpolates their fits by the model's transfer time (docs/network-probe.md)")
    p.add_argument("--transport", choices=MODEL_PROBE_TRANSPORTS, default=None,
                   help="how the reference steps move their bytes: TensorFlow itself moving PS variables of the "
                        "step's size (the default on the emulated link: validate's 60 s windows after 20 s of "
                        "settling, one contention efficiency per worker count; needs the collector's TensorFlow), "
                        "one TCP send each way (the default on real "
                        "hosts), or gRPC calls of several tensors, as TensorFlow's workers make (on real hosts the "
                        "PS then also listens on the port after its own); docs/network-probe.md")
    p.add_argument("--step-window", type=float, default=None, metavar="SECONDS",
                   help="each worker count's reference-step window, at least (default 60 with TensorFlow, else "
                        "10; deep buffers settle slowly, docs/network-probe.md)")
    p.add_argument("--out", default="", help="link profile JSON to write (with --cluster: on worker 0)")
    p.add_argument("--cluster", default="", help="JSON file {\"ps\": [\"host:port\"], \"worker\": [...]} of real "
                   "hosts; run the command on the PS and on workers 0 to 3 (all the file lists, if fewer) with "
                   "their --job and --task-index")
    p.add_argument("--job", choices=("ps", "worker"), help="with --cluster: the task this host runs")
    p.add_argument("--task-index", type=int, default=0, help="with --cluster: index of this host's task")
    p.set_defaults(func=cmd_probe)


def add_measure_commands(sub: argparse._SubParsersAction) -> None:
    """Register the measurement subcommands on the ``tracetool`` parser."""
    m = sub.add_parser(
        "measure", help="measure real asynchronous PS clusters of 1..N workers",
        description="For each worker count, start one PS and N worker processes running the profiled training "
                    "graph, shape the PS link with tc when --bandwidth is given (each task in its own network "
                    "namespace on a bridge), and measure steady-state steps/s with a 95%% confidence interval and "
                    "the CPU use of every process. Writes OUT/measured.json. Needs root. With --cluster, run this "
                    "host's task of a real multi-host cluster instead (see docs/measure.md).")
    _common(m)
    m.add_argument("--cluster", default="", help="JSON file {\"ps\": [\"host:port\"], \"worker\": [...]} of a real "
                   "multi-host cluster; run the command on every host with its --job and --task-index")
    m.add_argument("--job", choices=("ps", "worker"), help="with --cluster: the task this host runs")
    m.add_argument("--task-index", type=int, default=0, help="with --cluster: index of this host's task")
    m.add_argument("--trace-steps", type=int, default=0, metavar="K",
                   help="after its window, each worker traces K steps while the others keep training, into "
                        "OUT/traces/workers-N/worker-I/ (RunMetadata and Chrome timeline, as profile writes); "
                        "compare them with replay's synthetic timelines (default 0: no tracing)")
    m.set_defaults(func=cmd_measure)

    v = sub.add_parser(
        "validate", help="profile one worker, predict N workers, measure them, and compare",
        description="Profile the model on one PS and one worker, build its step graph, predict throughput for "
                    "each worker count with the replay engine, measure real clusters at the same bandwidth, and "
                    "write OUT/validation.json, OUT/validation.png and a table of prediction errors.")
    _common(v)
    v.add_argument("--steps", type=int, default=5, help="traced steps of the profile (default 5)")
    v.add_argument("--order", default="", help="transfer order policy for the prediction (replay's default if empty)")
    v.add_argument("--seeds", type=int, default=5, help="replay seeds per worker count (default 5)")
    v.add_argument("--contention-efficiency", default="auto", metavar="E|probe|auto",
                   help="the shaped link's share of its rate that arrives while several workers send on one "
                   "direction, for the prediction; 'probe' fits it, with the reverse efficiencies (a lone "
                   "transfer's rate under the other direction's load), to a probe of the model's step on the "
                   "same shaped link: TensorFlow carrying the model's tensors (see --probe-transport), its runs "
                   "taking turns with the model's, and more runs of both where their means disagree; 'auto' "
                   "(default) probes when --bandwidth is given and a worker count is 2 or more, else takes 1")
    v.add_argument("--probe-duration", type=float, default=None, metavar="SECONDS",
                   help="with --contention-efficiency probe: seconds of each worker count's probe window "
                   "(default: 10, or longer where the step is long: three steps of every worker sharing the link; "
                   "at least 20 with TensorFlow's probe)")
    v.add_argument("--probe-repeats", type=int, default=None, metavar="R",
                   help="with --contention-efficiency probe: probe runs per worker count, each on a fresh link "
                   "and each a point of the fit (default 2: one window is noisy, and three or more workers "
                   "settle into either of two regimes)")
    v.add_argument("--probe-transport", choices=MODEL_PROBE_TRANSPORTS, default=DEFAULT_MODEL_PROBE_TRANSPORT,
                   help="with --contention-efficiency probe: what runs the probe of the model's step: TensorFlow "
                        "itself carrying the model's tensors with a sleep for its compute (default), or a "
                        "network-only program: one TCP send each way (tcp) or gRPC calls of several tensors (grpc)")
    v.add_argument("--from-profile", default="", help="reuse this profile folder, or the step graph (graph.json) an "
                   "earlier validate wrote beside its prediction, instead of profiling again")
    v.add_argument("--from-measured", default="", help="reuse this measured.json instead of measuring again")
    v.add_argument("--from-link-probe", default="", help="with --contention-efficiency probe: reuse this "
                   "link-probe.json of an earlier validation of the same model and link instead of probing again")
    v.add_argument("--request-queue", action=argparse.BooleanOptionalAction, default=False,
                   help="measure the shaped link's standing upload queue (about 15 s, where its buffer can stand "
                   "deeper than 10 ms) and let the replay's parameter requests wait behind other workers' "
                   "gradients there, when it fits the probe and when it predicts (default: off, as replay predict; "
                   "docs/network-probe.md, 'Requests wait behind the other workers' gradients')")
    v.add_argument("--link-burst", action=argparse.BooleanOptionalAction, default=True,
                   help="replay the shaper's token bucket as tbf holds it: after idling, a direction passes its "
                   "burst at once (default: on; docs/network-probe.md, 'The shaper's bucket')")
    v.add_argument("--link-fit-workload", choices=("model", "chain"), default="model",
                   help="what the link fit replays to meet the TensorFlow probe's rates: the model's own step graph "
                   "with the prediction's link and shared cores (default), or the probe's chain step (download, "
                   "compute fitted to the probe's lone worker, upload), as before")
    v.add_argument("--twin-shape", choices=TWIN_SHAPES, default=DEFAULT_TWIN_SHAPE,
                   help="the TensorFlow probe's compute: groups of the model's ops that wait only for their own "
                   "inputs, so that compute overlaps the transfers as in the model (default), or stages in a "
                   "chain, each waiting for the one before, as before (docs/network-probe.md, 'The graph twin "
                   "becomes the default')")
    v.set_defaults(func=cmd_validate)
