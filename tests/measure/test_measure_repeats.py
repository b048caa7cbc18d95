"""Folding independent runs of one worker count into a point whose interval is the spread between runs."""

from __future__ import annotations

import math

import pytest

from tracetool.measure.measurement import build_point
from tracetool.measure.repeats import (
    ALONGSIDE,
    VALIDATE_MAX_REPEATS,
    VALIDATE_MAX_STANDARD_ERROR,
    below_cap,
    combine_runs,
    compared_rate,
    relative_standard_error,
    runs_this_round,
    runs_to_try,
    twin_runs_disagree,
    twins_disagree,
    why_another_run,
)


def _run(worker_rates: list[float], cores: float, saturated: bool = False, stolen: bool = False) -> dict:
    """A real point from ``build_point``: two 2-second bins per worker at a steady rate."""
    result = {"workers": len(worker_rates), "duration_s": 4.0, "bins": 2, "bin_s": 2.0,
              "bin_counts": [[2.0 * r, 2.0 * r] for r in worker_rates], "cpu_s": [0.4] * len(worker_rates),
              "mean_step_time_s": [1.0 / r for r in worker_rates]}
    cpu = {"window_s": 4.0, "process_cores": {"ps": 0.1, **{f"worker{i}": cores for i in range(len(worker_rates))}},
           "tasks_total_cores": 0.1 + cores * len(worker_rates), "machine_busy_cores": 1.0, "steal_cores": 0.05,
           "machine_cores": 2, "saturated": saturated or stolen, "saturated_by_other_processes": stolen,
           "stolen_by_hypervisor": stolen}
    return build_point(result, 32, cpu)


def test_one_run_is_kept_as_it_is():
    run = _run([1.0, 2.0], 0.3)
    point = combine_runs([run], 32)
    assert point["steps_per_second"] == run["steps_per_second"] == pytest.approx(3.0)
    assert point["repeats"] == 1 and point["run_steps_per_second"] == [pytest.approx(3.0)]
    assert "runs" not in point


def test_runs_give_their_mean_and_a_between_run_interval():
    """Runs at 3, 4 and 5 steps/s: mean 4, std 1, 95% CI t(2) * 1 / sqrt(3) = 2.484 (each run alone has 0)."""
    runs = [_run([1.0, 2.0], 0.2), _run([2.0, 2.0], 0.4), _run([2.0, 3.0], 0.6, saturated=True)]
    assert all(r["steps_per_second_ci95"] == pytest.approx(0.0) for r in runs)
    point = combine_runs(runs, 32)
    assert point["steps_per_second"] == pytest.approx(4.0)
    assert point["examples_per_second"] == pytest.approx(128.0)
    assert point["steps_per_second_std"] == pytest.approx(1.0)
    assert point["steps_per_second_ci95"] == pytest.approx(4.303 / math.sqrt(3))
    assert point["run_steps_per_second"] == pytest.approx([3.0, 4.0, 5.0])
    assert point["repeats"] == 3 and point["runs"] == runs
    assert point["window_s"] == pytest.approx(12.0) and len(point["bin_steps_per_second"]) == 6
    assert [w["steps_per_second"] for w in point["per_worker"]] == pytest.approx([5 / 3, 7 / 3])
    assert point["per_worker"][0]["run_steps_per_second"] == pytest.approx([1.0, 2.0, 2.0])
    assert point["per_worker"][1]["steps_in_window"] == pytest.approx(8 + 8 + 12)  # 4 s at 2, 2 and 3 steps/s
    # CPU is the mean over the runs; a saturated run flags the point
    assert point["cpu"]["process_cores"]["worker0"] == pytest.approx(0.4)
    assert point["cpu"]["tasks_total_cores"] == pytest.approx(0.9)
    assert point["cpu_saturated"] and point["cpu"]["saturated"]
    assert not point["cpu"]["stolen_by_hypervisor"]


def test_runs_disturbed_from_outside_are_left_out_unless_all_are():
    """A run slowed by the hypervisor measured the host: the mean is over the other runs."""
    runs = [_run([1.0, 2.0], 0.2), _run([0.5, 0.5], 0.2, stolen=True), _run([2.0, 3.0], 0.2)]
    point = combine_runs(runs, 32)
    assert point["steps_per_second"] == pytest.approx(4.0)
    assert point["run_steps_per_second"] == pytest.approx([3.0, 5.0])
    assert point["runs_left_out"] == [1] and point["repeats"] == 3 and len(point["runs"]) == 3
    assert not point["cpu_saturated"] and not point["cpu"]["stolen_by_hypervisor"]

    only_one = combine_runs([_run([1.0, 1.0], 0.2, stolen=True), _run([2.0, 2.0], 0.2)], 32)
    assert only_one["steps_per_second"] == pytest.approx(4.0) and only_one["runs_left_out"] == [0]
    assert not only_one["cpu_saturated"]

    every = combine_runs([_run([1.0, 1.0], 0.2, stolen=True), _run([2.0, 2.0], 0.2, stolen=True)], 32)
    assert every["steps_per_second"] == pytest.approx(3.0) and every["runs_left_out"] == []
    assert every["cpu_saturated"] and every["cpu"]["stolen_by_hypervisor"]


def test_the_traced_first_run_keeps_its_traces_on_the_point_when_left_out():
    """Only the first run traces steps. A disturbed first run leaves the rate to the others, but
    its traces of contended steps remain the only ones the point has."""
    traced = {**_run([1.0, 1.0], 0.2, stolen=True), "traces": "traces/workers-2"}
    for others in ([_run([2.0, 2.0], 0.2)], [_run([2.0, 2.0], 0.2), _run([2.0, 3.0], 0.2)]):
        point = combine_runs([traced, *others], 32)
        assert point["runs_left_out"] == [0] and point["traces"] == "traces/workers-2"
    assert "traces" not in combine_runs([_run([1.0, 1.0], 0.2), _run([2.0, 2.0], 0.2)], 32)


def test_no_runs_is_an_error():
    with pytest.raises(ValueError):
        combine_runs([], 32)


def test_disturbed_runs_are_replaced_up_to_as_many_extra_runs_as_asked_for():
    clean, stolen = _run([1.0], 0.2), _run([1.0], 0.2, stolen=True)
    assert runs_to_try(3, []) == 3
    assert runs_to_try(3, [clean, stolen, clean]) == 1
    assert runs_to_try(3, [clean, stolen, clean, clean]) == 0
    assert runs_to_try(3, [stolen] * 5) == 1  # six runs at most
    assert runs_to_try(3, [stolen] * 6) == 0
    assert runs_to_try(1, [clean]) == 0
    assert runs_to_try(1, [stolen]) == 1 and runs_to_try(1, [stolen, stolen]) == 0


def test_runs_that_disagree_get_more_runs_one_at_a_time_up_to_the_cap():
    """Two runs 16% apart (BBR, vgg at 25mbit, two workers: 0.883 and 0.748 steps/s) leave their
    mean uncertain by 8%; runs go on while the standard error is over 4%, up to four."""
    def runs(*rates: float) -> list[dict]:
        return [_run([r], 0.2) for r in rates]

    assert relative_standard_error([0.883, 0.748]) == pytest.approx(0.0675 / 0.8155, rel=1e-3)
    assert relative_standard_error([1.0]) == 0.0
    assert runs_to_try(2, runs(0.883, 0.748), 4, 0.04) == 1
    assert why_another_run(2, runs(0.883, 0.748)) == "the runs' mean is known to 8.3% only"
    assert runs_to_try(2, runs(0.883, 0.748, 0.85), 4, 0.04) == 1  # 4.9% after three runs
    assert runs_to_try(2, runs(0.883, 0.748, 0.85, 0.82), 4, 0.04) == 0  # the cap
    assert runs_to_try(2, runs(1.0, 1.09), 4, 0.04) == 1  # 9% apart: 4.3%
    assert runs_to_try(2, runs(1.0, 1.09, 1.05), 4, 0.04) == 0  # a third run settles the mean: 2.5%
    assert runs_to_try(2, runs(1.0, 1.07), 4, 0.04) == 0  # 7% apart: 3.4%
    assert runs_to_try(2, runs(0.883, 0.748)) == 0  # without a limit, exactly the runs asked for
    # a disturbed run is replaced first, and does not count towards the cap
    stolen = _run([0.5], 0.2, stolen=True)
    assert runs_to_try(2, [*runs(0.883), stolen], 4, 0.04) == 1
    assert why_another_run(2, [*runs(0.883), stolen]) == "a run was disturbed from outside"
    assert runs_to_try(2, [*runs(0.883, 0.748), stolen, *runs(0.85)], 4, 0.04) == 1
    assert runs_to_try(2, [*runs(0.883), stolen, stolen, stolen], 4, 0.04) == 0  # every replacement used


def test_validate_runs_a_count_split_between_two_regimes_until_its_mean_is_known_to_four_percent():
    """vgg at 25mbit, four workers behind a 100 ms buffer with CUBIC: runs fell half and half
    into 0.91 and 1.05 to 1.11 steps/s. After four runs their mean is known to 4.9% only, so
    validate's default cap (eight) runs more; with the same split six meet 4%."""
    def runs(*rates: float) -> list[dict]:
        return [_run([r], 0.2) for r in rates]

    four = [1.107, 0.913, 0.912, 1.047]
    most, limit = VALIDATE_MAX_REPEATS, VALIDATE_MAX_STANDARD_ERROR
    assert relative_standard_error(four) == pytest.approx(0.049, abs=0.001)
    assert runs_to_try(2, runs(*four), 4, limit) == 0  # the cap of before stopped here
    assert runs_to_try(2, runs(*four), most, limit) == 1
    assert why_another_run(2, runs(*four)) == "the runs' mean is known to 4.9% only"
    assert runs_to_try(2, runs(*four, 1.08), most, limit) == 1  # five: 4.1%
    assert runs_to_try(2, runs(*four, 1.08, 0.91), most, limit) == 0  # six, split three and three: 3.8%
    # regimes further apart run to the cap: resnet at 25mbit with three workers (a spread of 12%)
    wide = [7.5, 5.9, 7.6, 6.0, 7.4, 5.8, 7.5, 5.9]
    assert relative_standard_error(wide) > limit
    assert runs_to_try(2, runs(*wide[:7]), most, limit) == 1 and runs_to_try(2, runs(*wide), most, limit) == 0


def test_measurements_taking_turns_run_together_while_either_needs_a_run():
    """The model and its probe on one link: both run their first runs in turn; when the probe's
    two runs disagree (resnet behind a 100 ms buffer, three workers: 6.43 and 7.48 steps/s) the
    model, whose two agree, runs a third alongside it, so both means cover the same minutes."""
    def runs(*rates: float) -> list[dict]:
        return [_run([r], 0.2) for r in rates]

    limit = (4, 0.04)
    assert runs_this_round([(2, [], *limit), (2, [], *limit)]) == ["", ""]  # the runs asked for need no reason
    assert runs_this_round([(2, runs(6.9), *limit), (2, runs(6.43), *limit)]) == ["", ""]
    turn = runs_this_round([(2, runs(6.9, 6.95), *limit), (2, runs(6.43, 7.48), *limit)])
    assert turn == [ALONGSIDE, "the runs' mean is known to 7.5% only"]
    # both agree: nobody runs
    assert runs_this_round([(2, runs(6.9, 6.95), *limit), (2, runs(7.0, 7.1), *limit)]) == [None, None]
    # at its cap the model stops while the probe, a disturbed run not counted, goes on
    stolen = _run([7.0], 0.2, stolen=True)
    capped = runs_this_round([(2, runs(6.9, 6.95, 6.9, 7.0), *limit),
                              (2, [*runs(6.43, 7.48, 6.5), stolen], *limit)])
    assert capped == [None, "the runs' mean is known to 5.0% only"]
    # a measurement without a limit runs exactly its repeats, never alongside
    assert runs_this_round([(2, runs(6.9, 6.95), None, None), (2, runs(6.43, 7.48), *limit)])[0] is None
    assert below_cap(2, runs(6.9, 6.95), *limit) and not below_cap(2, runs(6.9, 6.95), None, None)


def test_a_model_and_its_probe_far_apart_both_run_again():
    """Each pair agrees within itself (the resnet row behind 100 ms with CUBIC: TensorFlow 6.9 and
    7.35 steps/s, its probe 6.14 and 5.95), but their means are 15% apart where twice their runs'
    spread explains 7.1%: both run again, up to the cap. A gap their spread could explain runs
    again too, for only more runs tell it from a bias; a gap under the limit asks for nothing."""
    def runs(*rates: float) -> list[dict]:
        return [_run([r], 0.2) for r in rates]

    reason = twins_disagree([6.9, 7.35], [6.14, 5.95], 0.04)
    assert reason == "the model's and its probe's means are 15.2% apart, beyond their runs' spread"
    assert twins_disagree([6.9, 7.35], [7.0, 7.2], 0.04) is None
    unsettled = twins_disagree([6.31, 7.17, 6.82], [6.55, 6.44, 5.84], 0.04)
    assert unsettled == ("the model's and its probe's means are 7.2% apart, within their runs' spread (5.1%) "
                         "but not yet known")
    assert twins_disagree([6.0, 8.0], [7.5, 7.6], 0.04) is not None  # 7.9% apart, the model's runs spread 14%
    assert twins_disagree([6.9, 7.35, 6.3], [6.9, 7.3], 0.04) is None  # 3.4%: under the limit, however spread
    assert twins_disagree([7.0, 7.0], [7.2, 7.2], 0.04) is None  # 2.9%: under the limit
    assert twins_disagree([], [7.2], 0.04) is None
    # on runs: a run disturbed from outside is not the twin's to answer for
    model, probe = [_run([6.9], 0.2), _run([7.35], 0.2)], [_run([6.14], 0.2), _run([5.95], 0.2)]
    assert twin_runs_disagree(model, probe, 0.04) == reason
    assert twin_runs_disagree([*model[:1], _run([7.35], 0.2, stolen=True)], probe[:1], 0.04) is not None
    assert twin_runs_disagree([_run([6.1], 0.2), _run([9.0], 0.2, stolen=True)], probe, 0.04) is None
    limit = (4, 0.04)
    model, probe = runs(6.9, 7.35), runs(6.14, 5.95)
    assert runs_this_round([(2, model, *limit), (2, probe, *limit)], lambda: reason) == [reason, reason]
    assert runs_this_round([(2, model, *limit), (2, probe, *limit)], lambda: None) == [None, None]
    # a measurement at its cap runs no more for it
    assert runs_this_round([(2, runs(6.9, 7.35, 7.3, 6.95), *limit), (2, runs(6.14, 5.95, 6.0), *limit)],
                           lambda: reason) == [None, reason]


def test_synchronous_runs_are_judged_by_their_updates():
    """With backup workers the steps can agree while the PS updates, which validate compares, do
    not: the runs' mean is judged by the updates (in asynchronous runs the two are one rate)."""
    runs = [{"steps_per_second": 4.0, "updates_per_second": 1.0},
            {"steps_per_second": 4.02, "updates_per_second": 1.2}]
    assert runs_to_try(2, runs, 4, 0.04) == 1
    assert why_another_run(2, runs) == "the runs' mean is known to 9.1% only"
    steady = [{**run, "updates_per_second": 1.0} for run in runs]
    assert runs_to_try(2, steady, 4, 0.04) == 0
    assert compared_rate({"steps_per_second": 3.0}) == 3.0  # a run written before updates were recorded
