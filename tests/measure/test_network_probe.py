"""``tracetool probe``: reading join trials, the link profile document, and the probe on a real shaped link."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from replay.link_profile import (
    QUEUE_WAIT_CAP_S,
    DirectionProfile,
    LinkProfile,
    StepFit,
    link_profile_from_json,
    load_link_profile,
)
from tests.conftest import SLOW_TESTS, needs_root
from tracetool.cluster.topology import QueueSize
from tracetool.errors import ToolError
from tracetool.measure.network_probe import (
    JoinTrial,
    loaded_phase_usable,
    queue_delay_s,
    read_join_trial,
    settled_round_trips,
    summarize_trials,
)

RATE = 1_000_000.0  # bytes/s of one connection alone


def test_a_join_trial_where_the_incumbent_keeps_two_thirds():
    """A sends 1 MB from t=0; B joins at 0.25 s. At 2:1 A's remaining 750 KB take 1.125 s (A ends at
    1.375 s); B has sent 375 KB by then and its last 625 KB take 0.625 s alone (B ends at 2.0 s)."""
    trial = read_join_trial({"start": 0.0, "end": 1.375}, {"start": 0.25, "end": 2.0}, 1_000_000, RATE)
    assert trial is not None
    assert trial.incumbent_share == pytest.approx(2 / 3)
    assert trial.efficiency == pytest.approx(1.0)
    assert not trial.overtaken


def test_a_join_trial_where_the_joiner_overtakes():
    """B joins at 0.25 s and takes 3/4 of the link: its 1 MB is done at 1.583 s; A has sent 250 KB +
    333 KB by then, and its last 417 KB take 0.417 s alone."""
    b_end = 0.25 + 1.0 / 0.75
    a_end = b_end + (1.0 - 0.25 - 0.25 * (b_end - 0.25)) / 1.0
    trial = read_join_trial({"start": 0.0, "end": a_end}, {"start": 0.25, "end": b_end}, 1_000_000, RATE)
    assert trial is not None
    assert trial.incumbent_share == pytest.approx(0.25)
    assert trial.overtaken


def test_a_lossy_overlap_shows_as_contention_efficiency():
    """Both at 1:1 but only 80% of the rate between them while they overlap."""
    # A: 250 KB alone, then 0.4 MB/s; A's 750 KB end at 0.25 + 1.875 s; B has 750 KB then, 250 KB alone
    a_end = 0.25 + 0.75 / 0.4
    trial = read_join_trial({"start": 0.0, "end": a_end}, {"start": 0.25, "end": a_end + 0.25}, 1_000_000, RATE)
    assert trial is not None
    assert trial.incumbent_share == pytest.approx(0.5)
    assert trial.efficiency == pytest.approx(0.8)


def test_transfers_that_never_overlap_are_not_read():
    assert read_join_trial({"start": 0.0, "end": 1.0}, {"start": 1.5, "end": 2.5}, 1_000_000, RATE) is None


def test_trials_summarize_to_seniority_overtake_and_efficiency():
    trials = [JoinTrial(2 / 3, 0.9), JoinTrial(0.8, 1.0), JoinTrial(0.3, 0.8), JoinTrial(2 / 3, 0.95)]
    seniority, overtake, efficiency = summarize_trials(trials)
    assert seniority == pytest.approx(2.0)  # median of 2, 4, 2 over the trials not overtaken
    assert overtake == pytest.approx(0.25)
    assert efficiency == pytest.approx(0.925)
    assert summarize_trials([]) == (1.0, 0.0, 1.0)


def test_the_standing_queue_is_the_loaded_round_trip_less_the_idle_one():
    assert queue_delay_s([0.105, 0.1, 0.11], [0.0002, 0.0003, 0.0001]) == pytest.approx(0.1048)
    assert queue_delay_s([0.0001], [0.0003]) == 0.0


def test_only_pings_of_the_settled_transfer_count_however_late_it_started():
    """A transfer planned at 4 s that ran from 5.2 to 8.15 s: the pings before it, those of its first
    second (a queue still filling) and the one answered after it ended are left out."""
    times = [4.0 + 0.1 * k for k in range(50)]
    rtts = [0.0003 if t < 5.2 else min(0.09, 0.05 * (t - 5.2)) if t < 8.15 else 0.0003 for t in times]
    kept = settled_round_trips({"times": times, "rtts": rtts}, transfer_start=5.2, transfer_end=8.15)
    expected = [rtt for t, rtt in zip(times, rtts, strict=True) if t >= 6.2 and t + rtt <= 8.15]
    assert kept == expected and len(kept) == 19
    assert min(kept) >= 0.05 and queue_delay_s(kept, [0.0003]) > 0.05
    assert settled_round_trips({"times": times, "rtts": rtts}, 8.0, 8.9) == []  # too short to settle


def test_a_loaded_phase_runs_again_only_when_a_transfer_started_late():
    assert loaded_phase_usable(90, 30, late_s=3.0)  # enough pings, however late
    assert loaded_phase_usable(90, 4, late_s=0.1)  # a deep buffer's long round trips: no retry helps
    assert not loaded_phase_usable(90, 4, late_s=1.2)  # the upload began late and was missed
    assert not loaded_phase_usable(90, 0, late_s=0.1)  # nothing to read at all


def _profile(**direction: float) -> LinkProfile:
    base = dict(payload_bps=95.6e6, line_rate_bps=100e6, queue_delay_s=0.005, contention_efficiency=0.95,
                seniority=2.0, overtake_short=0.4, overtake_long=0.1, short_transfer_s=0.1, long_transfer_s=0.5,
                trials=16)
    one = DirectionProfile(**{**base, **direction})
    return LinkProfile(one, one, 0.0002, {"kind": "emulated"})


def test_the_profile_gives_the_replay_its_link_and_sharing_law():
    profile = _profile()
    assert profile.latency_s == pytest.approx(0.0001 + 0.005)
    # a deep buffer's standing queue (78 ms) delays a transfer by no more than the cap
    assert _profile(queue_delay_s=0.078).latency_s == pytest.approx(0.0001 + 0.005)
    assert _profile(queue_delay_s=0.002).latency_s == pytest.approx(0.0001 + 0.002)
    # the rest of a deep upload queue is what a worker's requests wait behind other workers' gradients
    assert _profile(queue_delay_s=0.078).request_queue_s == pytest.approx(0.073)
    assert _profile(queue_delay_s=0.002).request_queue_s == 0.0
    assert _profile(queue_delay_s=0.0083).request_queue_s == 0.0  # within twice the latency's share: none
    assert profile.request_queue_s == 0.0
    overtake, overtake_time_s = profile.overtake()
    assert overtake == pytest.approx(0.4)
    assert min(overtake, overtake_time_s / 0.5) == pytest.approx(0.1)  # the law passes through the long chance
    assert _profile(overtake_long=0.5).overtake() == (0.5, math.inf)


# two reference steps whose transfers take 2 and 8 ms: the conftest graph's 50 kB take 4.18 ms at 100mbit
SHORT_FIT = StepFit(0.72, 0.69, 0.86, "probe rates", 25_000, 25_000, 0.012, 0.002, ((1, 40.0), (2, 61.5)))
LONG_FIT = StepFit(0.80, 0.85, 0.90, "probe rates", 100_000, 100_000, 0.012, 0.008)


def _fitted_profile(**direction: float) -> LinkProfile:
    profile = _profile(**direction)
    return LinkProfile(profile.download, profile.upload, profile.rtt_idle_s, profile.environment,
                       (SHORT_FIT, LONG_FIT))


def _per_count_profile() -> LinkProfile:
    """Step fits of TensorFlow's reference step: three workers lose less than four on the short
    step, more on the long one, and the long fit has no four-worker value of its own. On the short
    step three workers pipelined past two workers' reverse loss: their contention is loss-free
    and their reverse losses smaller, and four keep the fit's one reverse loss."""
    from dataclasses import replace

    profile = _fitted_profile()
    short = replace(SHORT_FIT, contention_by_workers=((3, 1.0), (4, 0.60)),
                    reverse_by_workers=((3, 0.95, 0.97), (4, 0.69, 0.86)))
    long = replace(LONG_FIT, contention_by_workers=((3, 0.70),))
    return replace(profile, step_fits=(short, long))


def _fitted_profile_without_trials() -> LinkProfile:
    from dataclasses import replace

    profile = _fitted_profile()
    return replace(profile, download=replace(profile.download, trials=0), upload=replace(profile.upload, trials=0))


@pytest.mark.parametrize("profile", [_profile(), _fitted_profile(), _fitted_profile_without_trials(),
                                     _per_count_profile()])
def test_a_profile_round_trips_through_json(tmp_path: Path, profile: LinkProfile):
    path = tmp_path / "link.json"
    path.write_text(json.dumps(profile.to_json_dict()))
    assert load_link_profile(path) == profile


def test_step_fits_give_the_link_efficiencies_by_transfer_time_and_leave_the_sharing_law_to_the_defaults():
    """With step fits the join trials' contention, seniority and overtakes give way: the fits'
    efficiencies are what carried over between models, taken at the step's transfer times (linear
    in log time between the fits, each outer fit's beyond it); without them nothing changes."""
    fitted = _fitted_profile()
    assert fitted.efficiencies(0.001, 0.001) == (0.72, 0.69, 0.86)
    # contention at the mean transfer time, 4 ms: halfway between the fits in log time
    assert fitted.efficiencies(0.002, 0.006) == pytest.approx((0.76, 0.69, 0.86 + 0.04 * math.log(3) / math.log(4)))
    assert fitted.efficiencies(0.004, 0.02) == pytest.approx((0.80, 0.77, 0.90))
    assert fitted.efficiencies(1.0, 1.0) == (0.80, 0.85, 0.90)
    assert fitted.sharing_parameters() == {}
    assert _profile().efficiencies(0.1, 0.1) == (0.95, 1.0, 1.0)
    assert _profile().sharing_parameters()["seniority"] == 2.0


def test_per_count_step_fits_give_each_worker_count_its_contention_at_the_steps_transfer_time():
    """Each count is interpolated like the one efficiency; a fit without a count of its own gives
    it the efficiency of its largest fitted count below (the long fit's four workers: its three's
    0.70), and below three workers the one efficiency holds. Fits without counts give none."""
    profile = _per_count_profile()
    assert profile.contention_by_workers(0.001, 0.001) == ((3, 1.0), (4, 0.60))
    assert profile.contention_by_workers(0.1, 0.1) == ((3, 0.70), (4, 0.70))
    halfway = profile.contention_by_workers(0.002, 0.006)  # 4 ms: halfway in log time
    assert [n for n, _ in halfway] == [3, 4] and [e for _, e in halfway] == pytest.approx([0.85, 0.65])
    assert profile.step_fits[1].contention_for(2) == 0.80 and profile.step_fits[1].contention_for(9) == 0.70
    assert _fitted_profile().contention_by_workers(0.004, 0.004) == ()


def test_per_count_reverse_losses_are_interpolated_per_direction_at_its_own_transfer_time():
    """Three workers' relaxed reverse efficiencies hold on the short step and meet the long fit's
    one reverse loss (0.85 down, 0.90 up) by its transfer time, each direction at its own; a count
    the short fit left at two workers' loss (four) interpolates that. Fits without counts give none."""
    profile = _per_count_profile()
    assert profile.reverse_by_workers(0.001, 0.001) == ((3, 0.95, 0.97), (4, 0.69, 0.86))
    assert profile.reverse_by_workers(0.1, 0.1) == ((3, 0.85, 0.90), (4, 0.85, 0.90))
    (three, down, up), (four, down4, up4) = profile.reverse_by_workers(0.004, 0.002)  # download halfway in log time
    assert (three, four) == (3, 4)
    assert (down, up) == pytest.approx((0.90, 0.97)) and (down4, up4) == pytest.approx((0.77, 0.86))
    assert profile.step_fits[0].reverse_for(2) == (0.69, 0.86) and profile.step_fits[0].reverse_for(9) == (0.69, 0.86)
    assert _fitted_profile().reverse_by_workers(0.004, 0.004) == ()


def test_a_profile_with_one_step_fit_from_before_there_were_two_still_reads():
    """Its transfer time comes from its bytes at the download payload rate."""
    data = _profile().to_json_dict()
    data["step_fit"] = {key: value for key, value in SHORT_FIT.__dict__.items()
                        if key not in ("transfer_s", "runs", "contention_by_workers", "reverse_by_workers")}
    del data["step_fits"]
    profile = link_profile_from_json(data, "link.json")
    assert len(profile.step_fits) == 1
    assert profile.step_fits[0].transfer_s == pytest.approx(8 * 25_000 / profile.download.payload_bps)
    assert profile.efficiencies(5.0, 0.001) == (0.72, 0.69, 0.86)


@pytest.mark.parametrize("profile,mutate,words", [
    (_profile, lambda d: d.update(schema="tfsim.step-graph"), "is not a link profile"),
    (_profile, lambda d: d.update(schema_version=7), "version 7"),
    (_profile, lambda d: d["download"].update(payload_bps=-1.0), "payload_bps"),
    (_profile, lambda d: d["upload"].pop("seniority"), "seniority"),
    (_profile, lambda d: d["download"].update(overtake_short=1.5), "overtake_short"),
    (_profile, lambda d: d["upload"].update(trials=0), "neither join trials nor step fits"),
    (_fitted_profile, lambda d: d["step_fits"][0].update(contention_efficiency=0.05),
     r"step_fits\[0\] field 'contention_efficiency' is 0.05"),
    (_fitted_profile, lambda d: d["step_fits"][1].update(upload_reverse_efficiency=1.5), "upload_reverse_efficiency"),
    (_fitted_profile, lambda d: d["step_fits"][0].pop("download_reverse_efficiency"), "download_reverse_efficiency"),
    (_fitted_profile, lambda d: d["step_fits"][1].update(transfer_s=0.0), r"step_fits\[1\] field 'transfer_s' is 0"),
    (_fitted_profile, lambda d: d["step_fits"].reverse(), "increasing transfer time"),
    (_fitted_profile, lambda d: d["step_fits"][0].update(runs=[[1, 40.0, 3]]), "runs' is not a list of"),
    (_fitted_profile, lambda d: d["step_fits"][0].update(runs=[[0, 40.0]]), "worker count below 1"),
    (_fitted_profile, lambda d: d["step_fits"][0].update(runs=[["one", 40.0]]), "runs' is not a list of"),
    (_fitted_profile, lambda d: d.update(step_fits={"a": 0.7}), "step_fits"),
    (_per_count_profile, lambda d: d["step_fits"][0].update(contention_by_workers=[[2, 0.5]]),
     "contention_by_workers' is not a list of"),
    (_per_count_profile, lambda d: d["step_fits"][0].update(contention_by_workers=[[4, 0.5], [3, 0.6]]),
     "fewest first"),
    (_per_count_profile, lambda d: d["step_fits"][0].update(contention_by_workers=[[3, 0.05]]), "efficiencies 0.1-1"),
    (_per_count_profile, lambda d: d["step_fits"][1].update(contention_by_workers=[[3]]), "pairs"),
    (_per_count_profile, lambda d: d["step_fits"][1].update(contention_by_workers=[["three", 0.5]]), "pairs"),
    (_per_count_profile, lambda d: d["step_fits"][0].update(reverse_by_workers=[[2, 0.9, 0.9]]),
     "reverse_by_workers' is not a list of"),
    (_per_count_profile, lambda d: d["step_fits"][0].update(reverse_by_workers=[[4, 0.9, 0.9], [3, 0.9, 0.9]]),
     "fewest first"),
    (_per_count_profile, lambda d: d["step_fits"][0].update(reverse_by_workers=[[3, 0.9, 1.2]]),
     "efficiencies 0.1-1"),
    (_per_count_profile, lambda d: d["step_fits"][0].update(reverse_by_workers=[[3, 0.9]]), "reverse efficiencies"),
    (_per_count_profile, lambda d: d["step_fits"][0].update(reverse_by_workers=[[3, "high", 0.9]]),
     "reverse efficiencies"),
    (_fitted_profile, lambda d: d.update(step_fit=[0.7]), "step_fit"),
])
def test_bad_profiles_are_refused_in_one_line(profile, mutate, words: str):
    data = profile().to_json_dict()
    mutate(data)
    with pytest.raises(ToolError, match=words) as caught:
        link_profile_from_json(data, "link.json")
    assert "\n" not in str(caught.value)


def test_replay_predict_takes_link_rate_latency_and_sharing_from_the_profile(tmp_path: Path, graph_file: Path,
                                                                            capsys):
    from replay.cli import main

    path = tmp_path / "link.json"
    path.write_text(json.dumps(_profile(queue_delay_s=0.1).to_json_dict()))
    assert main(["predict", str(graph_file), "--workers", "1,2", "--link-profile", str(path), "--seeds", "1",
                 "--steps", "4", "--no-timelines", "--out", str(tmp_path / "p")]) == 0
    assert "requests wait" not in capsys.readouterr().out  # the request queue is off by default
    prediction = json.loads((tmp_path / "p" / "prediction.json").read_text())
    link, settings = prediction["link"], prediction["settings"]
    assert link["download_bandwidth_bps"] == pytest.approx(100e6)
    assert link["latency_s"] == pytest.approx(0.0001 + QUEUE_WAIT_CAP_S)  # a deep queue adds at most the cap
    assert link["contention_efficiency"] == pytest.approx(0.95)
    assert link["request_queue_s"] == 0.0
    assert settings["seniority"] == 2.0 and settings["overtake"] == 0.4
    assert settings["overtake_time_s"] == pytest.approx(0.05)
    assert settings["sharing_source"] == "link profile"
    # options still win over the profile
    assert main(["predict", str(graph_file), "--workers", "1", "--link-profile", str(path), "--bandwidth", "1gbit",
                 "--seniority", "3", "--seeds", "1", "--steps", "4", "--no-timelines",
                 "--out", str(tmp_path / "q")]) == 0
    second = json.loads((tmp_path / "q" / "prediction.json").read_text())
    assert second["link"]["download_bandwidth_bps"] == pytest.approx(1e9)
    assert second["settings"]["seniority"] == 3.0


def test_replay_predict_lets_requests_wait_behind_the_profiles_upload_queue_when_asked(tmp_path: Path,
                                                                                     graph_file: Path, capsys):
    from replay.cli import main

    path = tmp_path / "link.json"
    path.write_text(json.dumps(_profile(queue_delay_s=0.1).to_json_dict()))
    common = [str(graph_file), "--workers", "1,2", "--seeds", "1", "--steps", "4", "--no-timelines"]
    assert main(["predict", *common, "--link-profile", str(path), "--request-queue", "profile",
                 "--out", str(tmp_path / "p")]) == 0
    assert "requests wait up to 95.0 ms behind queued gradients" in capsys.readouterr().out
    link = json.loads((tmp_path / "p" / "prediction.json").read_text())["link"]
    assert link["request_queue_s"] == pytest.approx(0.1 - QUEUE_WAIT_CAP_S)  # the rest of the standing queue
    assert main(["predict", *common, "--bandwidth", "100mbit", "--request-queue", "40ms",
                 "--out", str(tmp_path / "q")]) == 0
    assert json.loads((tmp_path / "q" / "prediction.json").read_text())["link"]["request_queue_s"] == 0.04


@pytest.mark.parametrize("value,words", [("profile", "needs a --link-profile"), ("soon", "like 70ms"),
                                         ("7200s", "between 0 and 3600 s")])
def test_a_request_queue_that_cannot_be_read_is_refused_in_one_line(tmp_path: Path, graph_file: Path, value: str,
                                                                    words: str):
    result = subprocess.run([sys.executable, "-m", "replay.cli", "predict", str(graph_file), "--bandwidth", "100mbit",
                             "--request-queue", value, "--out", str(tmp_path / "p")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and words in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "p").exists()


def test_replay_predict_takes_the_step_fits_efficiencies_at_the_graphs_transfer_time(tmp_path: Path,
                                                                                      graph_file: Path, capsys):
    """The conftest graph's 50 kB each way take 4.18 ms at the profile's 100mbit (payload 95.6%):
    between the 2 ms and the 8 ms fits; at 1gbit given as an option, 0.42 ms: the short fit's."""
    from replay.cli import main
    from replay.engine.link import payload_efficiency_for_mtu
    from replay.engine.sharing import DEFAULT_OVERTAKE, DEFAULT_SENIORITY

    path = tmp_path / "link.json"
    profile = _fitted_profile(seniority=8.0, overtake_short=0.0)
    path.write_text(json.dumps(profile.to_json_dict()))
    assert main(["predict", str(graph_file), "--workers", "1,2", "--link-profile", str(path), "--seeds", "1",
                 "--steps", "4", "--no-timelines", "--out", str(tmp_path / "p")]) == 0
    prediction = json.loads((tmp_path / "p" / "prediction.json").read_text())
    link, settings = prediction["link"], prediction["settings"]
    transfer_s = 8 * 50_000 / (100e6 * payload_efficiency_for_mtu(1500))
    weight = math.log(transfer_s / 0.002) / math.log(4)
    contention, down, up = (a + weight * (b - a) for a, b in ((0.72, 0.80), (0.69, 0.85), (0.86, 0.90)))
    assert link["contention_efficiency"] == pytest.approx(contention)
    assert link["download_reverse_efficiency"] == pytest.approx(down)
    assert link["upload_reverse_efficiency"] == pytest.approx(up)
    assert settings["seniority"] == DEFAULT_SENIORITY and settings["overtake"] == DEFAULT_OVERTAKE
    assert settings["sharing_source"] == "link profile step fits"
    report = capsys.readouterr().out
    assert f"contention efficiency {contention:g}, reverse efficiencies {down:g} (download)" in report
    assert "step fits at this step's transfer times, seniority and overtake law the defaults" in report
    assert main(["predict", str(graph_file), "--workers", "1", "--link-profile", str(path), "--bandwidth", "1gbit",
                 "--seeds", "1", "--steps", "4", "--no-timelines", "--out", str(tmp_path / "q")]) == 0
    fast = json.loads((tmp_path / "q" / "prediction.json").read_text())["link"]
    assert (fast["contention_efficiency"], fast["download_reverse_efficiency"]) == (0.72, 0.69)


def test_replay_predict_takes_each_worker_counts_contention_from_per_count_step_fits(tmp_path: Path,
                                                                                     graph_file: Path, capsys):
    """The short fit's counts hold at 1gbit (0.42 ms transfers): three workers replay loss-free
    with their own smaller reverse losses, four at 0.60 with the fit's, which the report names;
    --contention-efficiency replaces them all, and the relaxed reverse losses fitted beside them go."""
    from replay.cli import main

    path = tmp_path / "link.json"
    path.write_text(json.dumps(_per_count_profile().to_json_dict()))
    common = ["--workers", "1,3,4", "--link-profile", str(path), "--bandwidth", "1gbit", "--seeds", "1",
              "--steps", "4", "--no-timelines"]
    assert main(["predict", str(graph_file), *common, "--out", str(tmp_path / "p")]) == 0
    link = json.loads((tmp_path / "p" / "prediction.json").read_text())["link"]
    assert link["contention_efficiency"] == 0.72
    assert [list(pair) for pair in link["contention_by_workers"]] == [[3, 1.0], [4, 0.60]]
    assert [list(entry) for entry in link["reverse_by_workers"]] == [[3, 0.95, 0.97], [4, 0.69, 0.86]]
    report = capsys.readouterr().out
    assert "contention efficiency 0.72, 1 from 3 workers, 0.6 from 4 workers" in report
    assert "reverse 0.95 / 0.97 from 3 workers, reverse 0.69 / 0.86 from 4 workers" in report
    assert main(["predict", str(graph_file), *common, "--contention-efficiency", "0.5",
                 "--out", str(tmp_path / "q")]) == 0
    link = json.loads((tmp_path / "q" / "prediction.json").read_text())["link"]
    assert link["contention_efficiency"] == 0.5 and link["contention_by_workers"] == []
    assert link["reverse_by_workers"] == []


@pytest.mark.cluster
@needs_root
def test_probe_recovers_the_line_rate_and_tells_a_deep_queue_from_a_shallow_one():
    """On a real 100mbit tbf link: the line rate within 2% both ways. Uploads meet the buffer at a
    switch port (here a bridge port), which CUBIC keeps standing near full: over 25 ms of queue
    under load with a 100 ms buffer (79-81 ms in four probes alone, 41 ms once in a full suite),
    under 10 ms with a 5 ms one. Downloads leave the PS's own interface,
    where TCP small queues hold back what a sender queues, so their queue stays short either way."""
    from tracetool.measure.network_probe import probe_network

    shallow = probe_network(100e6, QueueSize(ms=5), "cubic", trials=1, step_fit=False, progress=print)
    deep = probe_network(100e6, QueueSize(ms=100), "cubic", trials=1, step_fit=False, progress=print)
    for profile in (shallow, deep):  # the probes' logs (each bulk transfer's rate) show if this fails
        for direction in (profile.download, profile.upload):
            assert direction.line_rate_bps == pytest.approx(100e6, rel=0.02)
    assert shallow.upload.queue_delay_s < 0.010 < 0.025 < deep.upload.queue_delay_s
    assert shallow.download.queue_delay_s < 0.010 and deep.download.queue_delay_s < 0.010
    assert shallow.environment["shaping"]["queue"] == {"ms": 5.0, "bytes": None}


@pytest.mark.cluster
@needs_root
@pytest.mark.parametrize("transport", ["tcp", "grpc"] if SLOW_TESTS else ["tcp"])
def test_probe_of_real_hosts_runs_on_each_host_and_ends_by_itself(tmp_path: Path, transport: str):
    """The --cluster mode on four namespaces standing in for hosts: the PS serves, workers 1 and 2
    follow, worker 0 orchestrates and writes the profile, with the reference step probed by one to
    three workers over either transport (gRPC: to the PS's next port); the PS and the followers
    end when worker 0 is done. A real link's buffer is unknown, so the contention efficiency is
    the least-squares one. Join trials run where asked for (here with TCP), else none."""
    trials = ["--trials", "2"] if transport == "tcp" else []
    import subprocess
    import sys

    from tracetool.cluster.topology import ShapedTopology

    cluster = tmp_path / "cluster.json"
    out = tmp_path / "link.json"
    with ShapedTopology(workers=3, bandwidth_bps=50e6) as topology:
        cluster.write_text(json.dumps({"ps": [f"{topology.ps.address}:5003"],
                                       "worker": [t.address + ":5004" for t in topology.worker_tasks]}))

        def start(job: str, index: int, *extra: str) -> subprocess.Popen:
            argv = [sys.executable, "-m", "tracetool.cli", "probe", "--cluster", str(cluster), "--job", job,
                    "--task-index", str(index), *trials, *extra]
            return subprocess.Popen(topology.command_in(job, index, argv), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)

        procs = [start("ps", 0), start("worker", 1), start("worker", 2),
                 start("worker", 0, "--transport", transport, "--step-window", "4", "--out", str(out))]
        try:
            results = [p.communicate(timeout=400) for p in reversed(procs)]
        finally:
            for p in procs:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0, 0, 0], results
    profile = load_link_profile(out)
    assert profile.environment["kind"] == "hosts"
    for direction in (profile.download, profile.upload):
        assert direction.line_rate_bps == pytest.approx(50e6, rel=0.02), results[0]  # worker 0's log
        assert direction.trials == (4 if trials else 0)
    assert [fit.transfer_s for fit in profile.step_fits] == [0.25]
    assert sorted(workers for workers, _ in profile.step_fits[0].runs) == [1, 2, 3]
    for fit in profile.step_fits:
        assert fit.contention_source == "least squares"
        assert 8 * fit.download_bytes / profile.download.payload_bps == pytest.approx(fit.transfer_s, rel=0.03)
        assert 0.1 <= min(fit.contention_efficiency, fit.download_reverse_efficiency, fit.upload_reverse_efficiency)
    assert f"1 to 3 workers over {transport}" in results[0][0] + results[0][1]
    assert profile.environment["step_transport"] == transport


def test_join_trials_run_by_default_only_where_no_step_fit_gives_the_sharing():
    from tracetool.measure.network_probe import DEFAULT_TRIALS, join_trials

    assert join_trials(None, step_fit=True) == 0
    assert join_trials(None, step_fit=False) == DEFAULT_TRIALS
    assert join_trials(3, step_fit=True) == 3
    with pytest.raises(ToolError, match="--trials 0 with --no-step-fit"):
        join_trials(0, step_fit=False)
    with pytest.raises(ToolError, match="between 0 and 100, got 101"):
        join_trials(101, step_fit=True)


def test_the_probe_of_real_hosts_uses_up_to_four_workers():
    from tracetool.measure.network_probe import probe_hosts, probing_workers

    def cluster(workers: int) -> dict[str, list[str]]:
        return {"ps": ["10.0.0.1:5000"], "worker": [f"10.0.0.{i + 2}:5000" for i in range(workers)]}

    assert [probing_workers(cluster(n)) for n in (2, 3, 4, 9)] == [2, 3, 4, 4]
    with pytest.raises(ToolError, match="needs a PS and two workers"):
        probing_workers(cluster(1))
    with pytest.raises(ToolError, match="uses workers 0 to 2; worker 3 has nothing to do"):
        probe_hosts(cluster(3), "worker", 3)


def test_a_ps_whose_transfer_port_is_taken_refuses_in_one_line(tmp_path: Path):
    """The PS's probe server listens on its cluster port and the next (the gRPC transfers). With
    the next port held by a connection's source port, as another program's can be, ``tracetool
    probe --job ps`` says which port in one line after its first (what it serves), exits 2, and
    neither a traceback nor gRPC's own log line follows."""
    import socket

    with socket.socket() as listener, socket.socket() as client:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        client.connect(listener.getsockname())
        taken = client.getsockname()[1]
        cluster = tmp_path / "cluster.json"
        cluster.write_text(json.dumps({"ps": [f"127.0.0.1:{taken - 1}"],
                                       "worker": ["127.0.0.1:1", "127.0.0.1:2"]}))
        result = subprocess.run([sys.executable, "-m", "tracetool.cli", "probe", "--cluster", str(cluster),
                                 "--job", "ps"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[1:] == [
        f"error: the probe server cannot listen on port {taken - 1}: port {taken}, the next one, is taken "
        "(the probe's gRPC transfers listen there); give the PS a port whose next one is free"]


@pytest.mark.cluster
@needs_root
def test_the_reference_step_fit_runs_on_a_real_shaped_link():
    """The reference step over a 50mbit link with a 100 ms buffer and BBR, one to three workers:
    a quarter second each way at the payload rate, and a queue that deep lets the probe's rates
    set the contention efficiency."""
    from tracetool.measure.link_step_fit import emulated_step_prober, fit_reference_step, reference_step

    down, up, compute_s = reference_step(50e6, 0.25)
    assert down == up and 8 * down / 50e6 == pytest.approx(0.25 * 0.956, rel=0.01)
    prober = emulated_step_prober(50e6, QueueSize(ms=100), "bbr")
    fit = fit_reference_step(50e6, 0.002, QueueSize(ms=100).delay_s(50e6), prober, "bbr", workers=(1, 2, 3),
                             min_window_s=5.0)
    assert fit.contention_source == "probe rates"
    assert 0.1 <= fit.contention_efficiency <= 1.0
    assert 0.1 <= fit.download_reverse_efficiency <= 1.0 and 0.1 <= fit.upload_reverse_efficiency <= 1.0
    assert (fit.download_bytes, fit.upload_bytes, fit.compute_s, fit.transfer_s) == (down, up, compute_s, 0.25)


@pytest.mark.cluster
@needs_root
def test_tensorflow_runs_the_reference_step_on_a_real_shaped_link(tmp_path: Path):
    """TensorFlow's reference step of 0.1 s each way over a 50mbit link with a 100 ms buffer and
    CUBIC, by one and three workers: one worker steps no faster than its two transfers and
    compute allow, three no faster than the busier direction allows, and three workers set the
    contention efficiency; the measurement's folder is the caller's."""
    from tracetool.measure.tensorflow_step_fit import tensorflow_reference_step_fit

    work = tmp_path / "work"
    fit = tensorflow_reference_step_fit(50e6, 0.002, QueueSize(ms=100), "cubic", 0.1, work, workers=(1, 3),
                                        min_window_s=4.0, settle_s=2.0)
    assert (fit.transfer_s, fit.download_bytes) == (0.1, fit.upload_bytes)
    assert 8 * fit.download_bytes / 50e6 == pytest.approx(0.1 * 0.956, rel=0.01)
    rates = dict(fit.runs)
    assert sorted(rates) == [1, 3]
    assert 0.5 / 0.212 < rates[1] < 1.02 / 0.212  # each step: 0.1 s down, 12 ms compute, 0.1 s up, alone
    assert rates[1] < rates[3] < 1.02 / 0.1  # three share each direction: at best one step per 0.1 s
    assert fit.contention_source == "probe rates"
    # one contended count: its efficiency is the fit's, with none of its own per count
    assert fit.contention_by_workers == () and 0.1 <= fit.contention_efficiency <= 1.0
    assert (work / "probe_model.py").exists() and (work / "probe-measured" / "measured.json").exists()
    measured = json.loads((work / "probe-measured" / "measured.json").read_text())
    assert measured["settle_s"] == 2.0 and all(1.5 <= run["settled_s"] <= 4.5 for point in measured["points"]
                                               for run in point.get("runs", [point]))


def test_tensorflow_reference_steps_need_the_emulated_link(tmp_path: Path):
    import subprocess
    import sys

    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"ps": ["10.0.0.1:2222"], "worker": ["10.0.0.2:2222", "10.0.0.3:2222"]}))
    result = subprocess.run([sys.executable, "-m", "tracetool.cli", "probe", "--cluster", str(cluster), "--job",
                             "worker", "--transport", "tensorflow", "--out", str(tmp_path / "p.json")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "--transport tensorflow runs its reference steps on the emulated link only" in result.stderr
    assert not (tmp_path / "p.json").exists()


def test_reference_steps_are_read_in_increasing_transfer_time():
    from tracetool.measure.link_step_fit import REFERENCE_TRANSFERS_S, parse_reference_steps

    assert parse_reference_steps("0.8, 0.25") == (0.25, 0.8)
    assert parse_reference_steps("0.25") == REFERENCE_TRANSFERS_S
