"""What every command line of this project shares: one-line errors and their exit codes, and the
readers of the figures several commands take (sizes in bytes).

The promise of the README: a problem the user can fix is one line on stderr starting with
``error:`` and exit code 2, never a usage block or a traceback. argparse's own errors print
the usage first; ``OneLineParser`` prints only the line and points to ``--help``.
Exit codes: 0 success, 2 a problem with the input or the machine, 3 a defect of the tool
itself (still one line; ``TFSIM_TRACEBACK=1`` shows the traceback), 130 interrupted.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import sys
import traceback
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from tracetool.errors import ToolError

# --model of profile, measure and validate (docs/models.md)
MODEL_HELP = ("zoo name (alexnet, vgg, inception, resnet, mlp, widedeep), a Keras application (keras:resnet50, "
              "keras:inception_v3, keras:vgg16, keras:mobilenet_v2) or a .py file with build(batch_size) -> loss or "
              "build_keras() -> (model, loss); docs/models.md")

_BYTE_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "ki": 1024, "mi": 1024**2, "gi": 1024**3}
_BYTES = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(?:(k|m|g|ki|mi|gi)?b)?\s*$")

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line; its subparsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message}; see '{self.prog} --help'", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace,
                interrupted: str = "interrupted") -> int:
    """Run one subcommand and turn every way it can fail into one line and an exit code.

    SIGTERM is turned into KeyboardInterrupt for the whole command, so a run stopped by a
    scheduler or ``kill`` unwinds through the same clean-up as Ctrl-C. SIGINT gets Python's own
    handler even when the command was started with SIGINT ignored (a background job of a
    script inherits that), so ``kill -INT`` always stops it cleanly."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return command(args)
    except ToolError as exc:
        print(f"error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print(f"error: {interrupted}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of our output went away (e.g. '| head'); the files are written already.
        sys.stderr.close()
        return 0
    except OSError as exc:
        # The machine refused something (disk full, permissions changed mid-run): fixable by the user.
        where = f": {exc.filename}" if exc.filename else ""
        print(f"error: {exc.strerror or _one_line(str(exc))}{where}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as exc:  # noqa: BLE001 - a defect still gets one line, and a way to see more
        if os.environ.get("TFSIM_TRACEBACK"):
            traceback.print_exc()
        print(f"error: internal error ({type(exc).__name__}: {_one_line(str(exc))[:300]}); please report it with "
              "the command line (TFSIM_TRACEBACK=1 shows the traceback)", file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def parse_model_kwargs(items: list[str]) -> dict[str, int]:
    """``--model-arg NAME=INT`` options (profile, measure, validate) into build() keywords."""
    kwargs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not value.lstrip("-").isdigit():
            raise ToolError(f"--model-arg expects NAME=INTEGER (e.g. width=16), got '{item}'")
        kwargs[key.replace("-", "_")] = int(value)
    return kwargs


def parse_bytes(text: str) -> float:
    """Read ``16kib``, ``64kb``, ``1mib``, ``16384b`` or ``16384`` (bytes) into bytes: a shaped
    queue's size (``--queue``) and a link's token bucket (``--link-burst``)."""
    match = _BYTES.match(str(text).lower())
    if not match:
        raise ToolError(f"cannot read size '{text}'; write it like 16kib, 64kb, 1mib or 16384 (bytes)")
    value = float(match.group(1)) * _BYTE_UNITS[match.group(2) or ""]
    if not math.isfinite(value):
        raise ToolError(f"size must be a finite number of bytes, got {text}")
    return value
