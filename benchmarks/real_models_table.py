"""The real networks' table (docs/models.md): parameters, bytes per step, profiled step time and
predicted steps/s from 1 to 64 workers at each predicted bandwidth, and one plot of the curves.

Reads profile folders of ``tracetool profile --model keras:NAME`` holding ``graph.json`` and
``predict-<bandwidth>/prediction.json`` of ``replay predict``:

    python benchmarks/real_models_table.py runs/resnet50-224 runs/vgg16-32 ... --png docs/real-models.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(folder: Path) -> tuple[dict, dict[str, dict]]:
    meta = json.loads((folder / "meta.json").read_text())
    predictions = {p.parent.name.removeprefix("predict-"): json.loads(p.read_text())
                   for p in sorted(folder.glob("predict-*/prediction.json"))}
    return meta, predictions


def label(meta: dict) -> str:
    keras = meta.get("keras") or {}
    name = keras.get("keras_application") or meta["model"]
    size = keras.get("input_size")
    return f"{name} ({size}x{size}, {keras.get('classes', 10)} classes)" if size else name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--png", type=Path, help="write the throughput curves here")
    args = parser.parse_args()
    rows = [load(folder) for folder in args.folders]
    workers = sorted({p["workers"] for _, preds in rows for pred in preds.values() for p in pred["points"]})
    print("| model | parameters | MB each way per step | profiled step (batch 32) | PS link | "
          + " | ".join(f"{w}" for w in workers) + " |")
    print("|---|---|---|---|---|" + "---|" * len(workers))
    for meta, predictions in rows:
        for bandwidth, pred in predictions.items():
            by_workers = {p["workers"]: p["steps_per_second"] for p in pred["points"]}
            step_ms = 1e3 * meta["untraced_step_time_s"]["mean"]
            print(f"| {label(meta)} | {meta['parameter_count']:,} | {pred['download_bytes_per_step'] / 1e6:.1f} | "
                  f"{step_ms:.0f} ms | {bandwidth} | "
                  + " | ".join(f"{by_workers[w]:.2f}" if w in by_workers else "-" for w in workers) + " |")
    if args.png:
        fig, ax = plt.subplots(figsize=(8, 5))
        for index, (meta, predictions) in enumerate(rows):
            for bandwidth, pred in predictions.items():  # one colour per model, dashed at the slower link
                points = pred["points"]
                ax.plot([p["workers"] for p in points], [p["steps_per_second"] * pred["batch_size"] for p in points],
                        marker="o", color=f"C{index}", linestyle="-" if bandwidth.startswith("10") else "--",
                        label=f"{label(meta)}, {bandwidth}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("workers")
        ax.set_ylabel("predicted examples/s (batch 32 per worker)")
        ax.set_title("Real Keras networks on one PS, asynchronous SGD")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)
        print(f"wrote {args.png}", file=sys.stderr)


if __name__ == "__main__":
    main()
