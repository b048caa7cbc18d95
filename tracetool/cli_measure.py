"""Argument parsing for ``tracetool measure`` and ``tracetool validate``."""

from __future__ import annotations

import argparse


def add_measure_commands(sub: argparse._SubParsersAction) -> None:
    """Register the measurement subcommands on the ``tracetool`` parser."""
