"""Find a model's ``build`` function from a zoo name, a Keras application (``keras:NAME``) or a
user's Python file (with ``build(batch_size)`` returning the loss, or ``build_keras()`` returning a
Keras model and its loss).

Kept free of TensorFlow imports at module level so argument checking (unknown name, missing
file, no ``build``) fails fast, before a cluster is started.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from models import KERAS_APPLICATIONS, ZOO_MODELS
from tracetool.errors import ToolError

KERAS_PREFIX = "keras:"

# Far above any batch a profile of one worker uses; past it a zoo model's input alone outgrows
# memory, and TensorFlow fails inside the worker with a shape error instead of a clear line.
MAX_BATCH_SIZE = 65_536


def is_model_file(model: str) -> bool:
    return (model.endswith(".py") or "/" in model) and not is_keras_application(model)


def is_keras_application(model: str) -> bool:
    return model.startswith(KERAS_PREFIX)


def model_choices() -> str:
    """What --model accepts, for error messages."""
    keras = ", ".join(KERAS_PREFIX + name for name in KERAS_APPLICATIONS)
    return f"{', '.join(ZOO_MODELS)}, {keras} or a .py file"


def require_collector(model: str) -> None:
    """The collector's packages, checked before any process starts: ``replay`` installs without
    them (``pip install tfsim``), so a profile or measurement must say what to add."""
    if not _installed("tensorflow"):
        raise ToolError("profiling and measuring need TensorFlow, which is not installed; "
                        "install the collector with: pip install 'tfsim[collector]'")
    if is_keras_application(model) and not _installed("tf_keras"):
        raise ToolError(f"--model {model} needs the tf-keras package, which is not installed; "
                        "install the collector with: pip install 'tfsim[collector]'")


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ImportError:  # an import hook that refuses the package says as much
        return False


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
            raise ToolError(f"model file {model} defines no build(batch_size) function returning the loss "
                            "nor a build_keras() returning a Keras model and its loss")
    elif is_keras_application(model):
        if model[len(KERAS_PREFIX):] not in KERAS_APPLICATIONS:
            raise ToolError(f"unknown Keras application '{model}'; choose one of "
                            f"{', '.join(KERAS_PREFIX + name for name in KERAS_APPLICATIONS)}")
    elif model not in ZOO_MODELS:
        raise ToolError(f"unknown model '{model}'; choose one of {model_choices()}")


def model_source_path(model: str) -> Path:
    """The file that defines the model, found without importing it (and so without TensorFlow)."""
    if is_model_file(model):
        return Path(model)
    spec = importlib.util.find_spec("models.keras_applications" if is_keras_application(model) else f"models.{model}")
    if spec is None or spec.origin is None:
        raise ToolError(f"zoo model '{model}' has no source file; reinstall the package")
    return Path(spec.origin)


def check_model_arguments(model: str, model_kwargs: dict[str, object]) -> None:
    """Refuse ``--model-arg`` names that the model's ``build()`` does not take, before a cluster starts.

    Read from the source (``ast``), since importing a model imports TensorFlow: seconds the user
    would wait for an error the file already shows."""
    if is_keras_application(model):
        from models.keras_applications import check_arguments

        try:
            check_arguments(model[len(KERAS_PREFIX):], **{k: v for k, v in model_kwargs.items()
                                                          if k in ("input_size", "classes")})
        except ValueError as exc:
            raise ToolError(str(exc)) from None
    if not model_kwargs:
        return
    tree = ast.parse(model_source_path(model).read_bytes())
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    build = functions.get("build") or functions.get("build_keras")
    if build is None or build.args.kwarg is not None:
        return  # built some other way, or takes any keyword: the task will tell
    taken = [a.arg for a in (*build.args.posonlyargs, *build.args.args, *build.args.kwonlyargs)
             if a.arg not in ("batch_size", "application")]
    unknown = [name for name in model_kwargs if name not in taken]
    if unknown:
        choices = ", ".join(taken) or "none"
        raise ToolError(f"--model-arg {unknown[0]}: {model_label(model)}'s {build.name}() takes no such argument "
                        f"(it takes: {choices})")


def model_label(model: str) -> str:
    """``resnet50`` for keras:resnet50, the file's stem for a model file, the name for the zoo."""
    if is_keras_application(model):
        return model[len(KERAS_PREFIX):]
    return Path(model).stem


def load_model_module(model: str) -> ModuleType:
    check_model_name(model)
    if is_keras_application(model):
        return importlib.import_module("models.keras_applications")
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
    build_keras = getattr(module, "build_keras", None)
    if callable(build_keras) and not callable(getattr(module, "build", None)):
        from tracetool.collect.keras_models import keras_build_function

        if is_keras_application(model):
            application = model[len(KERAS_PREFIX):]
            return keras_build_function(functools.partial(build_keras, application),
                                        {"source": model, "keras_application": application})
        return keras_build_function(build_keras, {"source": str(model)})
    build = getattr(module, "build", None)
    if not callable(build):
        raise ToolError(f"model {model} has no build(batch_size) function returning the loss")
    if "batch_size" not in inspect.signature(build).parameters:
        raise ToolError(f"model {model}: build must take a batch_size argument")
    return build
