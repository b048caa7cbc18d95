"""Rewrite the README's two validation tables from the campaign's saved validations.

    python benchmarks/readme_tables.py [ROOT] [--readme README.md] [--check]

The README's environment table (every point's newest validation, per environment, held out,
with the graph twin, in all and per model) and its per-point table of the graph twin's points
are ``turns_table.py``'s ``--by-workers --by-model`` and ``--by-point`` outputs with the
README's labels. Hand-copying them after every point let a row go stale; this rewrites the
lines between the ``<!-- table: NAME -->`` and ``<!-- /table: NAME -->`` markers, and the
counts the text around them quotes (``<!-- count: NAME -->...<!-- /count -->``), from the
files. ``--check`` rewrites nothing and exits 1 if the README is behind the results.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GRAPH_TWIN = "graph-twin-again,graph-twin-pulls,graph-twin-gap-rule,graph-twin,graph-twin-threads-fresh"
NEWEST_FIRST = GRAPH_TWIN + ",settled-here,settled-twin-probe,settled"
ENVIRONMENTS = {"cubic-5ms": "CUBIC, 5 ms buffer", "cubic-100ms": "CUBIC, 100 ms buffer",
                "bbr-100ms": "BBR, 100 ms buffer"}
POINT_ENVIRONMENTS = {"cubic-5ms": "CUBIC 5 ms", "cubic-100ms": "CUBIC 100 ms", "bbr-100ms": "BBR 100 ms"}
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                "nineteen", "twenty", "twenty-one", "twenty-two", "twenty-three", "twenty-four",
                "twenty-five", "twenty-six", "twenty-seven", "twenty-eight", "twenty-nine", "thirty",
                "thirty-one", "thirty-two", "thirty-three", "thirty-four", "thirty-five", "thirty-six"]


def turns_table(root: Path, *options: str) -> list[str]:
    """``turns_table.py``'s table lines (those that start with ``|``) for these options."""
    result = subprocess.run([sys.executable, str(HERE / "turns_table.py"), str(root), "--prediction", "now",
                             *options], capture_output=True, text=True, check=True)
    return [line for line in result.stdout.splitlines() if line.startswith("|")]


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def environment_table(root: Path) -> list[str]:
    """The summary table, environments in the README's order, then held out, the graph twin,
    all and the models."""
    lines = turns_table(root, "--folder", NEWEST_FIRST, "--by-workers", "--by-model")
    header, rule, rows = lines[0], lines[1], lines[2:]
    by_label = {cells(row)[0]: row for row in rows}
    ordered = [by_label[name].replace(f"| {name} |", f"| {label} |", 1) for name, label in ENVIRONMENTS.items()
               if name in by_label]
    for row in rows:
        label = cells(row)[0]
        if label in ENVIRONMENTS:
            continue
        if label == "with the graph twin":
            row = row.replace("| with the graph twin |", "| with the graph twin (validate's default) |", 1)
        ordered.append(row)
    return [header, rule, *ordered]


def point_table(root: Path) -> list[str]:
    """A line per graph-twin point, environments in the README's order, without the folder."""
    lines = turns_table(root, "--folder", GRAPH_TWIN, "--by-point")
    counts = cells(lines[0])[2:]
    out = ["| point | " + " | ".join(count.replace(" workers", "").replace(" worker", "") for count in counts[:-1])
           + f" | {counts[-1]} |", "|---|" + "---|" * len(counts)]
    order = list(POINT_ENVIRONMENTS)
    rows = sorted((cells(line) for line in lines[2:]),
                  key=lambda c: (order.index(c[0].split("/")[0]), c[0].split("/")[1].split("-")[0],
                                 int(re.sub(r"\D", "", c[0].split("-")[-1]))))
    for row in rows:
        environment, point = row[0].split("/")
        model, bandwidth = point.split("-")
        errors = [re.sub(r"^\((.*), CPU-saturated\)$", r"saturated (\1)", error) for error in row[2:]]
        out.append(f"| {POINT_ENVIRONMENTS[environment]}, {model} {bandwidth} | " + " | ".join(errors) + " |")
    return out


def graph_twin_totals(root: Path) -> str:
    """The graph twin's rows and their summary (``N rows, median A%, max B%, none over 8%``)."""
    for line in turns_table(root, "--folder", GRAPH_TWIN):
        row = cells(line)
        if row[0] == "probe: graph twin":
            median, rest = row[4].split(" / ")
            maximum, over = rest.split(", ")
            over_text = "none over 8%" if over.startswith("0 ") else over
            return f"{row[1]} rows, median {median}, max {maximum}, {over_text}"
    raise SystemExit("turns_table.py printed no graph-twin row: no point validated with the graph twin")


def replace_block(text: str, name: str, lines: list[str]) -> str:
    pattern = re.compile(rf"(<!-- table: {re.escape(name)} -->\n).*?(<!-- /table: {re.escape(name)} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"README has no '<!-- table: {name} -->' ... '<!-- /table: {name} -->' markers; add them "
                         "around the table")
    return pattern.sub(lambda m: m.group(1) + "\n".join(lines) + "\n" + m.group(2), text)


def replace_count(text: str, name: str, value: str) -> str:
    pattern = re.compile(rf"(<!-- count: {re.escape(name)} -->).*?(<!-- /count -->)", re.S)
    return pattern.sub(lambda m: m.group(1) + value + m.group(2), text)


def rewritten(readme: str, root: Path) -> str:
    points = point_table(root)
    graph_points = len(points) - 2
    totals = graph_twin_totals(root)
    environments = environment_table(root)
    text = replace_block(readme, "environments", environments)
    text = replace_block(text, "graph-twin-points", points)
    text = replace_count(text, "graph-twin-points", NUMBER_WORDS[graph_points])
    text = replace_count(text, "graph-twin-points-capital", NUMBER_WORDS[graph_points].capitalize())
    return replace_count(text, "graph-twin-totals", totals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, nargs="?", default=HERE / "results" / "environments")
    parser.add_argument("--readme", type=Path, default=HERE.parent / "README.md")
    parser.add_argument("--check", action="store_true", help="exit 1 if the README is behind the results")
    args = parser.parse_args()
    before = args.readme.read_text()
    after = rewritten(before, args.root)
    if args.check:
        print("README is up to date" if after == before else "README's tables are behind the results")
        raise SystemExit(0 if after == before else 1)
    if after != before:
        with tempfile.NamedTemporaryFile("w", dir=args.readme.parent, delete=False, suffix=".tmp") as handle:
            handle.write(after)
        shutil.copymode(args.readme, handle.name)
        Path(handle.name).replace(args.readme)
    print(f"{args.readme}: {'rewritten' if after != before else 'already up to date'}")


if __name__ == "__main__":
    main()
