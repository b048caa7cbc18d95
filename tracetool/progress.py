"""Progress of long work: a bar on a terminal, one line per phase in a log.

A redrawn bar written into a log file or a CI console becomes hundreds of carriage-return
fragments; there the reader wants to know when each phase started and how long it took.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm


class StepProgress:
    """Counts steps through named phases (warmup, untraced, traced, ...)."""

    def __init__(self, total: int, label: str, enabled: bool = True, stream: TextIO | None = None,
                 unit: str = "step") -> None:
        self.stream = stream or sys.stderr
        self.label = label
        self.unit = unit
        self.enabled = enabled
        self.on_terminal = enabled and self.stream.isatty()
        self.bar = tqdm(total=total, desc=label, unit=unit, file=self.stream) if self.on_terminal else None
        self.phase = ""
        self.phase_started = time.monotonic()
        self.done = 0

    def update(self, done: int, phase: str) -> None:
        """``done`` steps so far over all workers; ``phase`` is what the workers are doing now."""
        if phase != self.phase:
            if self.bar is not None:
                self.bar.set_postfix_str(phase)
            elif self.enabled:
                took = f" ({self.phase} took {time.monotonic() - self.phase_started:.1f} s)" if self.phase else ""
                print(f"{self.label}: {phase}, {done} {self.unit}s done{took}", file=self.stream, flush=True)
            self.phase, self.phase_started = phase, time.monotonic()
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled and self.phase:
            print(f"{self.label}: {self.done} {self.unit}s done ({self.phase} took "
                  f"{time.monotonic() - self.phase_started:.1f} s)", file=self.stream, flush=True)

    def __enter__(self) -> StepProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        elif self.bar is not None:
            self.bar.close()
