"""Merge single-run link probes of one point into the probe ``--probe-repeats`` would have written.

validate's link probe (``--probe-repeats R``, default 2) probes each worker count R times on fresh
topologies and fits its efficiencies over every run. Probes of one run each, made at other times
with the same step shape (``environment_repredict.sh ROOT NAME --probe`` with ``PROBE_REPEATS=1``),
are the same measurement: this merges their points and refits them with validate's fit, so a
campaign's points can be brought to the default without probing every one again.

    python benchmarks/combine_link_probes.py POINT reprobed/link-probe.json reprobed2/link-probe.json \\
        --out two-fresh-probes

writes ``POINT/two-fresh-probes/link-probe.json``, which ``LINK_PROBE=two-fresh-probes/link-probe.json
benchmarks/environment_repredict.sh ROOT NAME`` then reuses.

TensorFlow's probes (``--probe-transport tensorflow``) hold rates only and neutral efficiencies,
which validate fits by replaying the rates; their points are merged in worker order, as one probe
of R runs lists them, and nothing is refitted.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replay.engine.link import payload_efficiency_for_mtu  # noqa: E402
from tracetool.atomic_files import write_json_atomically  # noqa: E402
from tracetool.measure.link_probe import ProbePoint, fit_link_efficiencies  # noqa: E402

MTU = 1500  # validate's payload rate for the shaped link (benchmarks/probe_noise.py takes the same)
SHAPE = ("bandwidth_bps", "download_bytes", "upload_bytes", "compute_s", "tcp_congestion_control", "transport")
TENSORFLOW = "tensorflow"


def merged_probe(probes: list[dict]) -> dict:
    """One link-probe.json of every run of ``probes``, refitted; refuses probes of other shapes."""
    first = probes[0]
    for other in probes[1:]:
        differing = [key for key in SHAPE if other.get(key) != first.get(key)]
        if differing:
            raise SystemExit("the probes differ in link or step shape: " + ", ".join(
                f"{key} {first.get(key)} / {other.get(key)}" for key in differing))
    points = [point for probe in probes for point in probe["points"]]
    if first.get("transport") == TENSORFLOW:
        return {**first, "points": sorted(points, key=lambda p: p["workers"])}
    names = {f.name for f in fields(ProbePoint)}
    fit = fit_link_efficiencies([ProbePoint(**{k: v for k, v in p.items() if k in names}) for p in points],
                                float(first["bandwidth_bps"]) * payload_efficiency_for_mtu(MTU))
    return {**first, "points": points, "alone_share": fit.alone_share,
            "contended_share": fit.alone_share * fit.contention_efficiency,
            "contention_efficiency": fit.contention_efficiency,
            "download_reverse_efficiency": fit.download_reverse_efficiency,
            "upload_reverse_efficiency": fit.upload_reverse_efficiency}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("point", type=Path, help="a campaign point's folder")
    parser.add_argument("probes", nargs="+", help="link-probe.json files, relative to the point")
    parser.add_argument("--out", required=True, help="folder below the point for the merged link-probe.json")
    args = parser.parse_args()
    probes = [json.loads((args.point / name).read_text()) for name in args.probes]
    merged = merged_probe(probes)
    out = args.point / args.out
    out.mkdir(exist_ok=True)
    write_json_atomically(out / "link-probe.json", merged)
    if merged.get("transport") == TENSORFLOW:
        counts = sorted({p["workers"] for p in merged["points"]})
        print(f"{args.point.name}: " + ", ".join(
            f"{n} workers " + " / ".join(f"{p['steps_per_second']:.3f}" for p in merged["points"] if p["workers"] == n)
            for n in counts) + " steps/s")
        return
    print(f"{args.point.name}: contention efficiency " + " / ".join(f"{p['contention_efficiency']:.3f}" for p in probes)
          + f" -> {merged['contention_efficiency']:.3f}; reverse {merged['download_reverse_efficiency']:.3f} down, "
          f"{merged['upload_reverse_efficiency']:.3f} up")


if __name__ == "__main__":
    main()
