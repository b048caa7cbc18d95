"""How long a run trains before it is measured, and how long it is measured, for measure and validate.

``measure`` keeps the short window it always had (20 s, opening 2 s after the last worker is
warm): it is the command for a quick look at a cluster, and its users choose ``--duration``.

``validate`` compares a prediction of the sustained rate with runs of the real cluster, and a
20-second window opening 2 s after warm-up does not measure that rate where workers contend on
a deep buffer. Measured here (``benchmarks/results/long-windows/``: ten 240-second runs of three
and four workers, eight of TensorFlow and two of its probe, CUBIC and BBR behind 100 ms and CUBIC
behind 5 ms, cut into slices after 20 s of settling):

- the first 20 s of contention ran up to 25% apart from where the cluster settles (alexnet at
  25mbit, three workers: 0.85 steps/s against 1.13), so the window opens 20 s after the last
  worker is warm;
- a cluster passes between regimes (pipeline, bunching) every minute or so rather than holding
  one: 20-second slices of one run spread by a coefficient of variation of 3.3 to 7.4% (median
  6.6%), 60-second slices by 1.4 to 6.3% (median 3.2%). Two 60-second runs thus leave a mean
  known to about 2.3%, where two 20-second runs left 4.7%.

Why 60 s rather than 120: a run costs its window plus about 40 s of start-up, warm-up and
settling, and the spread falls about as the square root of the window, so a long window buys
little over more runs of a shorter one; with 60 s the rule for more runs
(``tracetool.measure.repeats``) stops at two where the runs agree and adds runs only where they
do not. resnet at 25mbit behind 100 ms with CUBIC, two workers: 60-second runs gave 3.73, 3.79
and 3.84 steps/s, 120-second runs 3.89 and 3.90, 20-second runs 3.06 to 3.36.
"""

from __future__ import annotations

from tracetool.cluster.task_spec import MIN_SETTLE_S

MEASURE_WINDOW_S = 20.0
MEASURE_SETTLE_S = MIN_SETTLE_S
VALIDATE_WINDOW_S = 60.0
VALIDATE_SETTLE_S = 20.0


def default_window(command: str) -> tuple[float, float]:
    """(window, settle) in seconds for ``measure`` or ``validate`` when the user gives neither."""
    if command == "validate":
        return VALIDATE_WINDOW_S, VALIDATE_SETTLE_S
    return MEASURE_WINDOW_S, MEASURE_SETTLE_S
