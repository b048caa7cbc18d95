"""The line a measurement says before its first cluster: how many runs, about how long, at most how long."""

from __future__ import annotations

from pathlib import Path

from tracetool.cli import build_parser
from tracetool.cli_measure import _measure_request
from tracetool.measure.run_plan import RUN_OVERHEAD_S, describe_plan, format_minutes


def request(*argv: str):
    return _measure_request(build_parser().parse_args(list(argv)), Path("out"))


def test_validate_says_its_turns_take_about_twenty_minutes_and_at_most_hours():
    model = request("validate", "--model", "mlp", "--workers", "1-4", "--bandwidth", "25mbit", "--out", "v")
    # validate's TensorFlow probe runs the contended counts in turns with the model, alike
    probe = request("validate", "--model", "mlp", "--workers", "2-4", "--bandwidth", "25mbit", "--out", "v")
    line = describe_plan([model, probe])
    run_s = 60 + 20 + RUN_OVERHEAD_S
    assert line.startswith("14 run(s) of 60 s after 20 s of settling")
    assert f"about {format_minutes(14 * run_s)}" in line
    assert f"up to {format_minutes(56 * run_s)} if every count's runs disagree and 56 are run" in line
    assert format_minutes(14 * run_s) == "23 min" and format_minutes(56 * run_s) == "1 h 33 min"


def test_measure_without_more_runs_names_no_upper_end():
    line = describe_plan([request("measure", "--model", "mlp", "--workers", "1,2", "--out", "m")])
    assert line == f"2 run(s) of 20 s after 2 s of settling: about {format_minutes(2 * (22 + RUN_OVERHEAD_S))}"
    assert "up to" not in line
