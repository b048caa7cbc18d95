"""The timeline's rows in the kernel (``timeline``) and the reference's ``TimelineRecord`` made of
them. Imports no numba, so ``entry`` can read the rows without loading the kernel's modules."""

from __future__ import annotations

from typing import Any

from replay.engine.loop import TimelineRecord

OUTCOME_APPLIED = 0
OUTCOME_DROPPED = 1
OUTCOME_ABORTED = 2
OUTCOMES = ("applied", "dropped", "aborted")
# Counters: rows filled, and the steps recorded per worker.
C_OPS = 0
C_TRANSFERS = 1
C_STEPS = 2
C_RECORD_STEPS = 3


def timeline_record(timeline: tuple) -> TimelineRecord:
    """The kernel's rows as the reference's lists of tuples (Python ints and floats). Columns are
    turned into lists one by one: a table's ``tolist()`` makes a list per row, and the garbage
    collector's passes over them cost more than the replay."""
    counts, op_i, op_f, tr_i, tr_f, st_i, st_f = timeline[:7]
    ops = list(zip(*_columns(op_i, counts[C_OPS], (0, 1)), *_columns(op_f, counts[C_OPS], (0, 1)),
                   *_columns(op_i, counts[C_OPS], (2,)), strict=True))
    transfers = list(zip(*_columns(tr_i, counts[C_TRANSFERS], (0, 1)),
                         *_columns(tr_f, counts[C_TRANSFERS], (0, 1, 2, 3)),
                         *_columns(tr_i, counts[C_TRANSFERS], (2,)), strict=True))
    outcomes = [OUTCOMES[code] for code in st_i[:counts[C_STEPS], 2].tolist()]
    steps = list(zip(*_columns(st_i, counts[C_STEPS], (0, 1)), *_columns(st_f, counts[C_STEPS], (0, 1)), outcomes,
                     strict=True))
    return TimelineRecord(ops=ops, transfers=transfers, steps=steps)


def _columns(table: Any, rows: int, columns: tuple[int, ...]) -> list[list[Any]]:
    """The first ``rows`` rows of ``columns`` of a table, each column a list."""
    return [table[:rows, c].tolist() for c in columns]
