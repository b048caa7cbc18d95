"""Prediction errors across network environments, with and without a probed link profile.

    python benchmarks/environment_table.py ROOT

ROOT holds ``<environment>/<model>-<bandwidth>/validation.json`` (``tracetool validate`` runs,
one environment per queue and congestion control) and ``probes/<environment>-<bandwidth>.json``
(``tracetool probe`` of the same link). For every measured point it prints the error of:

V0  validate's own prediction: the default sharing law, the contention efficiency of the
    model-shaped probe, the buffer's nominal time as latency;
V1  a re-prediction from the link profile alone (line rate, latency with the measured standing
    queue, contention efficiency, seniority and overtaking from join trials);
V2  V0 with the link profile's latency (half the round trip plus the measured standing queue).
re  the checkout's validate on the same profile, measurement and probe
    (``benchmarks/environment_repredict.sh`` writes it to ``<point>/repredicted/``);
one the checkout's validate on the same profile and measurement with the link probed again in
    the step shape the checkout gives, one run per worker count, and its reverse efficiencies
    fitted by replaying it (``environment_repredict.sh ROOT reprobed --probe``, then with
    ``LINK_PROBE=reprobed/link-probe.json`` into ``<point>/calibrated/``);
now the same with two probe runs per worker count, validate's default (``--probe-repeats 2``):
    a second run (``PROBE_REPEATS=1 environment_repredict.sh ROOT reprobed2 --probe``) merged
    with the first (``benchmarks/combine_link_probes.py`` into ``<point>/two-fresh-probes/``),
    then with ``LINK_PROBE=two-fresh-probes/link-probe.json`` into ``<point>/two-probes/``;
P   a re-prediction from the link profile alone, probed again with the checkout's ``tracetool
    probe``, whose reference step gives the link efficiencies (``benchmarks/environment_profiles.sh``
    into ``probes-step/<environment>-<bandwidth>.json``; predictions in ``<point>/re-P/``);
P2  the same from profiles with the two reference steps (0.25 and 0.8 s each way), whose fits
    the replay interpolates by each model's transfer time (``environment_profiles.sh ROOT
    probes-two``; predictions in ``<point>/re-P2/``);
P3  the same from profiles whose reference steps ran three times per worker count
    (``tracetool probe --step-repeats 3``, in ``probes-three/``; predictions in ``<point>/re-P3/``);
PG  the same from profiles whose reference step ran over gRPC (eight tensors each way, as
    TensorFlow's calls) with 20-second windows (``PROBE_ARGS="--transport grpc --step-window 20
    --trials 1" environment_profiles.sh ROOT probes-grpc``; predictions in ``<point>/re-PG/``);
VG  validate's defaults with its probe over gRPC, 20-second windows (``VALIDATE_ARGS="--probe-transport
    grpc --probe-duration 20" environment_repredict.sh ROOT grpc-probes --probe``, into
    ``<point>/grpc-probes/``);
VW  the same with raw TCP and 20-second windows (``VALIDATE_ARGS="--probe-duration 20"
    environment_repredict.sh ROOT tcp20-probes --probe``, into ``<point>/tcp20-probes/``);
S   validate's defaults with the probe's workers starting spread evenly over a lone step, as the
    replay starts its workers, rather than together (commit f2509d1, reverted: measured, not
    adopted; ``environment_repredict.sh ROOT spread --probe`` into ``<point>/spread/``);
T   validate with its probe run by TensorFlow itself on the model's tensors, one run per worker count
    (``VALIDATE_ARGS="--probe-transport tensorflow --probe-repeats 1" environment_repredict.sh ROOT tf-probe
    --probe``, into ``<point>/tf-probe/``), the contention efficiency one for three and four workers;
TC  the same probes (``LINK_PROBE=tf-probe/link-probe.json environment_repredict.sh ROOT tf-probe-per-count``)
    with one contention efficiency per probed worker count, validate's way with TensorFlow's probe;
T2  TC with two TensorFlow probe runs per worker count, the default of ``--probe-repeats``: a second
    run of each point's probe model (``tracetool measure --model <point>/tf-probe*/probe_model.py
    --batch-size 1 --workers 2,3,4 --duration 20`` on the point's link, into ``<point>/tf-probe-run2/``)
    merged with the first (``combine_link_probes.py POINT tf-probe-per-count/link-probe.json
    tf-probe-run2/link-probe.json --out tf-probe-merged``), then ``LINK_PROBE=tf-probe-merged/link-probe.json
    environment_repredict.sh ROOT tf-probe-2runs``;
A   T2 where validate's rule for runs that disagree is applied to both sides: a worker count whose two
    runs (of the model, or of the TensorFlow probe) are more than 8% apart gets more runs, one at a
    time, until their mean's standard error is within 4% or four runs are in
    (``benchmarks/environment_more_runs.py ROOT``, into ``<point>/more-runs/``), then
    ``MEASURED=more-runs/measured.json LINK_PROBE=more-runs/link-probe.json environment_repredict.sh
    ROOT more-runs-predicted``; its errors are against the measurement with the extra runs;
TT  validate run again whole with its defaults of today, from the point's step graph: the model's
    runs and its TensorFlow probe's taking turns on one link, both run again where either's runs,
    or their two means, disagree (``benchmarks/environment_turns.sh ROOT ENV/POINT ...``, into
    ``<point>/turns/``); its errors are against its own measurement;
ST  TT with validate's settled windows: 60 seconds opening 20 s after the last worker is warm
    (``environment_turns.sh`` with today's defaults, into ``<point>/settled/``); its errors are
    against its own measurement;
PT  a re-prediction from the link profile alone, whose reference step TensorFlow ran (``PROBE_ARGS="--transport
    tensorflow" environment_profiles.sh ROOT probes-tf``; predictions in ``<point>/re-PT/``);
deep the same two-run probes where the shaped queue is deeper than the replay's latency lets the
    probe's three- and four-worker rates set the contention efficiency (validate's default:
    ``link_calibration.rates_set_contention``), into ``<point>/deep-rates/``.

and the median and max |error| per environment and variant, points with the CPU saturated left out.
``VARIANTS=TC,T2,PT`` (comma-separated names) restricts the table to those columns, and replays
only what they need.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("envval")
REPLAY = "replay"
ONLY = {name for name in os.environ.get("VARIANTS", "").split(",") if name}


def wanted(name: str) -> bool:
    return not ONLY or name in ONLY


def predict(graph: Path, workers: list[int], extra: list[str], out: Path) -> dict[int, float]:
    if not (out / "prediction.json").exists():
        subprocess.run([REPLAY, "predict", str(graph), "--workers", ",".join(map(str, workers)), "--steps", "40",
                        "--warmup", "2", "--seeds", "5", "--no-timelines", "--out", str(out), *extra],
                       check=True, capture_output=True, text=True)
    return {p["workers"]: p["steps_per_second"] for p in json.loads((out / "prediction.json").read_text())["points"]}


def main() -> None:
    rows = []
    for vfile in sorted(ROOT.glob("*/*/validation.json")):
        env, point = vfile.parent.parent.name, vfile.parent.name
        v = json.loads(vfile.read_text())
        bw = point.rsplit("-", 1)[1]
        profile = ROOT / "probes" / f"{env}-{bw}.json"
        workers = [r["workers"] for r in v["rows"]]
        graph = vfile.parent / "graph.json"
        link = v["prediction_link"]
        variants = {"V0": {r["workers"]: r["predicted"] for r in v["rows"]}}
        # a variant measured again (more runs) is compared with its own measurement
        own_measured: dict[str, dict[int, float]] = {}
        for name, folder in (("A", "more-runs-predicted"), ("TT", "turns"), ("ST", "settled")):
            again = vfile.parent / folder / "validation.json"
            if again.exists():
                again_rows = json.loads(again.read_text())["rows"]
                variants[name] = {r["workers"]: r["predicted"] for r in again_rows}
                own_measured[name] = {r["workers"]: r["measured"] for r in again_rows}
        for name, folder in (("re", "repredicted"), ("one", "calibrated"), ("now", "two-probes"),
                             ("deep", "deep-rates"), ("VG", "grpc-probes"),
                             ("VW", "tcp20-probes"), ("S", "spread"), ("T", "tf-probe"),
                             ("TC", "tf-probe-per-count"), ("T2", "tf-probe-2runs")):
            redone = vfile.parent / folder / "validation.json"
            if redone.exists():
                variants[name] = {r["workers"]: r["predicted"] for r in json.loads(redone.read_text())["rows"]}
        if profile.exists() and (wanted("V1") or wanted("V2")):
            lp = json.loads(profile.read_text())["derived"]
            variants["V1"] = predict(graph, workers, ["--link-profile", str(profile)], vfile.parent / "re-V1")
            variants["V2"] = predict(graph, workers, ["--bandwidth", str(v["bandwidth_bps"]), "--latency",
                                                      f"{lp['latency_s']}s", "--contention-efficiency",
                                                      str(link["contention_efficiency"])], vfile.parent / "re-V2")
        for name, folder in (("P", "probes-step"), ("P2", "probes-two"), ("P3", "probes-three"), ("PG", "probes-grpc"),
                             ("PT", "probes-tf")):
            stepped = ROOT / folder / f"{env}-{bw}.json"
            if stepped.exists() and wanted(name):
                variants[name] = predict(graph, workers, ["--link-profile", str(stepped)], vfile.parent / f"re-{name}")
        for name in ("T", "TC", "T2"):
            # BBR's TensorFlow probes ran 2 to 4 workers; one worker's prediction does not depend on
            # the probe (the same in every variant where both ran), so it is the default's
            if name in variants and "deep" in variants:
                variants[name] = {**{w: p for w, p in variants["deep"].items() if w == 1}, **variants[name]}
        variants = {k: p for k, p in variants.items() if wanted(k) or k == "deep"}
        for r in v["rows"]:
            w = r["workers"]
            errs = {k: 100 * (p[w] / own_measured.get(k, {}).get(w, r["measured"]) - 1)
                    for k, p in variants.items() if w in p}
            rows.append((env, point, w, r["measured"], r.get("cpu_saturated", False), errs))
            shown = " ".join(f"{k} {e:+6.1f}%" for k, e in errs.items())
            cpu = " CPU" if r.get("cpu_saturated") else ""
            print(f"{env:12s} {point:18s} {w} {r['measured']:7.3f} {shown}{cpu}", flush=True)
    for env in sorted({r[0] for r in rows}):
        sub = [r for r in rows if r[0] == env and not r[4]]
        for k in ("V0", "V1", "V2", "re", "one", "now", "deep", "S", "VG", "VW", "T", "TC", "T2", "A", "TT", "ST", "P",
                  "P2", "P3", "PG", "PT"):
            e = [abs(r[5][k]) for r in sub if k in r[5]]
            if e:
                print(f"{env:12s} {k}: {len(e)} points, median {statistics.median(e):.1f}%, max {max(e):.1f}%")
        latest = "deep" if any("deep" in r[5] for r in sub) else "now"
        for variant in (latest, "S", "VG", "VW", "T", "TC", "T2", "A", "TT", "ST", "P", "P2", "P3", "PG", "PT"):
            for n in sorted({r[2] for r in sub}):
                signed = [r[5][variant] for r in sub if r[2] == n and variant in r[5]]
                if signed:
                    print(f"{env:12s} {variant}, {n} worker(s): median |error| "
                          f"{statistics.median(map(abs, signed)):.1f}%, max {max(map(abs, signed)):.1f}%, "
                          f"signed {', '.join(f'{e:+.1f}' for e in signed)}")


if __name__ == "__main__":
    main()
