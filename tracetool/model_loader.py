"""Find a model's ``build`` function from a zoo name or a user's Python file.

Kept free of TensorFlow imports at module level so argument checking (unknown name, missing
file, no ``build``) fails fast, before a cluster is started.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from models import ZOO_MODELS
from tracetool.errors import ToolError


def is_model_file(model: str) -> bool:
    return model.endswith(".py") or "/" in model


def check_model_name(model: str) -> None:
    """Reject an unknown zoo name or a missing file before any process starts."""
    if is_model_file(model):
        path = Path(model)
        if not path.is_file():
            raise ToolError(
                f"model file {model} does not exist; give a zoo name ({', '.join(ZOO_MODELS)}) or a .py file"
            )
        try:
            source = path.read_bytes()
        except OSError as exc:
            raise ToolError(f"model file {model} cannot be read ({exc.strerror})") from None
        try:
            # Compiled here, so a syntax error is found before a cluster starts, not seconds after.
            compile(source, str(path), "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise ToolError(f"model file {model} has a syntax error at line {exc.lineno}: {exc.msg}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ToolError(f"model file {model} is not Python source ({exc})") from None
        if b"def build" not in source:
            raise ToolError(f"model file {model} defines no build(batch_size) function returning the loss")
    elif model not in ZOO_MODELS:
        raise ToolError(f"unknown model '{model}'; choose one of {', '.join(ZOO_MODELS)} or give a .py file")


def load_model_module(model: str) -> ModuleType:
    check_model_name(model)
    if not is_model_file(model):
        return importlib.import_module(f"models.{model}")
    path = Path(model).resolve()
    spec = importlib.util.spec_from_file_location(f"user_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ToolError(f"cannot import model file {model}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a user's file may fail in any way; report it in one line
        raise ToolError(f"model file {model} failed to import: {type(exc).__name__}: {exc}") from None
    return module


def load_build_function(model: str) -> Callable[..., object]:
    module = load_model_module(model)
    build = getattr(module, "build", None)
    if not callable(build):
        raise ToolError(f"model {model} has no build(batch_size) function returning the loss")
    if "batch_size" not in inspect.signature(build).parameters:
        raise ToolError(f"model {model}: build must take a batch_size argument")
    return build
