"""The ``tracetool`` command: argument parsing only; each subcommand calls one library function."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from tracetool.cli_support import MODEL_HELP, OneLineParser, parse_model_kwargs, run_command
from tracetool.errors import ToolError


def cmd_profile(args: argparse.Namespace) -> int:
    from tracetool.collect.profile import ProfileRequest, run_profile

    request = ProfileRequest(
        model=args.model,
        batch_size=args.batch_size,
        traced_steps=args.steps,
        out_dir=Path(args.out),
        optimizer=args.optimizer,
        warmup_steps=args.warmup,
        untraced_steps=args.untraced_steps,
        intra_op_threads=args.intra_op_threads,
        inter_op_threads=args.inter_op_threads,
        model_kwargs=parse_model_kwargs(args.model_arg),
        command_line=shlex.join(["tracetool", *sys.argv[1:]]),
        allow_loopback=args.allow_loopback,
        workers=args.workers,
        device=args.device,
    )
    out = run_profile(request, show_progress=not args.quiet)
    print(f"profile written to {out}")
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    from tracetool.graph.builder import build_stepgraph_from_path
    from tracetool.graph.stepgraph import save_stepgraph
    from tracetool.outputs import check_output_file, register_written_file

    out = Path(args.out)
    check_output_file(out)
    if args.variables and args.model:
        raise ToolError("give the variables either from a file (--variables) or from the model (--model), not both")
    variables = None
    if args.variables:
        from tracetool.graph.variables_file import load_variables

        variables = load_variables(Path(args.variables))
    elif args.model:
        from tracetool.collect.model_variables import model_variables

        variables = model_variables(args.model, args.batch_size, parse_model_kwargs(args.model_arg))
    graph = build_stepgraph_from_path(Path(args.input), variables)
    save_stepgraph(graph, out)
    register_written_file(out)
    downloads = graph.bytes_of_kind("download")
    uploads = graph.bytes_of_kind("upload")
    print(
        f"step graph written to {args.out}: {len(graph.nodes)} nodes, {len(graph.edges)} edges, "
        f"{downloads} bytes down, {uploads} bytes up per step"
    )
    if not graph.source.get("has_ps_transfers"):
        print("note: the trace has no parameter-server transfers (single-device trace); the graph holds compute only")
    match = graph.source.get("variables")
    if match:
        print(f"variables from {match['from']}: {match['downloaded']} downloaded; the ops of "
              f"{match['first_use_matched']} and the gradients of {match['gradient_matched']} found by layer name "
              "(the rest wait for or follow the whole step); transfers untimed: give replay --bandwidth")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from tracetool.graph.stepgraph import load_stepgraph
    from tracetool.graph.summary import format_summary, summarize

    if args.top < 0:
        raise ToolError(f"--top {args.top}: give how many of the longest ops to list, 0 or more")
    print(format_summary(summarize(load_stepgraph(Path(args.graph)), top=args.top)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="tracetool",
        description="Profile a TensorFlow model on one worker and one PS, and turn its traces into a step graph.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "profile",
        help="run a model on a real 1-PS/1-worker cluster and trace steps",
        description="Start a PS and a worker process (in a private network namespace when root), "
        "warm up, time untraced steps, then trace steps with FULL_TRACE.",
    )
    p.add_argument(
        "--model",
        required=True,
        help=MODEL_HELP,
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=5, help="traced steps (default 5)")
    p.add_argument("--warmup", type=int, default=5, help="untimed warm-up steps (default 5)")
    p.add_argument("--untraced-steps", type=int, default=20, help="timed steps without tracing (default 20)")
    p.add_argument("--optimizer", default="sgd", help="sgd (default), momentum or adam")
    p.add_argument("--intra-op-threads", type=int, default=1)
    p.add_argument("--inter-op-threads", type=int, default=1)
    p.add_argument(
        "--model-arg",
        action="append",
        default=[],
        metavar="NAME=INT",
        help="keyword passed to the model's build(), e.g. width=16 or image_size=64",
    )
    p.add_argument("--out", required=True, help="profile folder to write")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker tasks to trace at once (default 1); with more, each worker's traces go to DIR/worker-<i>/, "
        "for comparing a contended cluster with a replay",
    )
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                   help="where the worker's ops run: cpu (default) or gpu (its first GPU; refused in one line when "
                   "TensorFlow sees none)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--allow-loopback",
        action="store_true",
        help="without root, run the servers on loopback ports instead of a private namespace "
        "(TF servers then listen on all interfaces)",
    )
    p.set_defaults(func=cmd_profile)

    g = sub.add_parser(
        "graph",
        help="build a step graph from a profile folder, a RunMetadata, a Chrome timeline or a TF2 profile",
        description="Turn traces into a dependency graph of downloads, compute ops, uploads and PS "
        "ops, saved as step-graph JSON (docs/stepgraph-schema.md). A TF2 profiler capture "
        "(.xplane.pb, .trace.json.gz) times ops but sizes no transfer: give the model's variables "
        "with --variables or --model (docs/tf2-profiles.md).",
    )
    g.add_argument("input", help="profile folder, RunMetadata (.pb/.pbtxt), TF Chrome timeline (.json/.json.gz), "
                   "or TF2 profiler capture (.xplane.pb/.trace.json.gz)")
    g.add_argument("--out", required=True, help="step-graph JSON to write")
    g.add_argument("--variables", metavar="PATH", help="for a TF2 capture: the model's variables, from a profile "
                   "folder or its meta.json, or a JSON list of {name, bytes, trainable}")
    g.add_argument("--model", help="for a TF2 capture: build this model to list its variables; " + MODEL_HELP)
    g.add_argument("--batch-size", type=int, default=32, help="with --model: the batch the capture trained on")
    g.add_argument("--model-arg", action="append", default=[], metavar="NAME=INT",
                   help="with --model: keyword passed to the model's build(), e.g. input_size=64")
    g.set_defaults(func=cmd_graph)

    s = sub.add_parser("show", help="summarize a step graph")
    s.add_argument("graph")
    s.add_argument("--top", type=int, default=10, help="how many of the longest ops to list")
    s.set_defaults(func=cmd_show)

    from tracetool.cli_measure import add_measure_commands, add_probe_command

    add_measure_commands(sub)
    add_probe_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # TensorFlow's C++ start-up chatter would bury the one line a user needs to read.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    parser = build_parser()
    args = parser.parse_args(argv)
    return run_command(args.func, args, interrupted="interrupted; all processes and namespaces were cleaned up")


if __name__ == "__main__":
    sys.exit(main())
