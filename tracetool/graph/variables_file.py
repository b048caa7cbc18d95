"""The model's variables, for traces that time ops but do not size transfers (TF2 profiles).

A TF2 profiler capture shows when each op ran, never how many bytes a parameter server would
send: on one machine nothing is sent. The sizes come from the model: the ``variables`` list
that ``tracetool profile`` writes into every profile's ``meta.json`` (give the folder or the
file), a JSON file holding such a list (``[{"name": "dense/kernel", "bytes": 802816,
"trainable": true}, ...]`` or ``{"variables": [...]}``), or the model itself
(``tracetool graph --model``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracetool.errors import ToolError

_HOW = ("give a profile folder or its meta.json (written by 'tracetool profile'), or a JSON list of "
        "{\"name\", \"bytes\", \"trainable\"}")


@dataclass(frozen=True)
class VariableFacts:
    name: str  # "dense/kernel" (a trailing ":0" is dropped)
    bytes: int
    trainable: bool
    # whether a worker's step reads it whole (downloaded) or by rows (an embedding table); neither
    # for variables only the PS reads, such as optimizer slots (training_graph.variable_reads)
    downloaded: bool
    by_rows: bool = False

    @property
    def scope(self) -> tuple[str, ...]:
        """The layer path that names the ops using the variable: ("block1", "conv") of "block1/conv/kernel"."""
        return tuple(self.name.split("/")[:-1])


@dataclass(frozen=True)
class ModelVariables:
    variables: tuple[VariableFacts, ...]
    model: dict[str, Any]  # what else the source says of the model: name, batch_size, optimizer
    source: str

    @property
    def parameter_bytes(self) -> int:
        return sum(v.bytes for v in self.variables if v.downloaded)


def variables_from_list(raw: Any, model: dict[str, Any], source: str) -> ModelVariables:
    if not isinstance(raw, list) or not raw:
        raise ToolError(f"{source} holds no variables list; {_HOW}")
    facts = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ToolError(f"{source}: variable {index} has no name; {_HOW}")
        size = entry.get("bytes")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ToolError(f"{source}: variable {entry['name']!r} has no byte count ('bytes': a whole number >= 0)")
        read = entry.get("read_by_worker")
        if read not in (None, "whole", "rows"):
            raise ToolError(f"{source}: variable {entry['name']!r} has read_by_worker {read!r}; "
                            "use \"whole\", \"rows\" or null")
        name = entry["name"][:-2] if entry["name"].endswith(":0") else entry["name"]
        trainable = bool(entry.get("trainable", True))
        # a list without read_by_worker: every trainable variable is read whole, as profile.py counts
        if "read_by_worker" not in entry:
            read = "whole" if trainable else None
        facts.append(VariableFacts(name, size, trainable, downloaded=read == "whole", by_rows=read == "rows"))
    return ModelVariables(tuple(facts), model, source)


def load_variables(path: Path) -> ModelVariables:
    """Read the variables from a profile folder, its meta.json, or a variables JSON file."""
    if path.is_dir():
        path = path / "meta.json"
    if not path.is_file():
        raise ToolError(f"{path} does not exist; {_HOW}")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ToolError(f"{path} is not JSON; {_HOW}") from None
    if isinstance(data, list):
        return variables_from_list(data, {}, str(path))
    if not isinstance(data, dict):
        raise ToolError(f"{path} holds no variables list; {_HOW}")
    model = {k: data[k] for k in ("model", "batch_size", "optimizer") if k in data}
    return variables_from_list(data.get("variables"), model, str(path))
