"""A model's variables without running it: what a TF2 capture needs to size its transfers.

``tracetool graph capture.xplane.pb --model keras:resnet50`` builds the model's training graph
in this process, exactly as a profile's worker would (same builder, same placement rules), and
lists its variables with how a worker reads them. No server starts and no step runs.
"""

from __future__ import annotations

from typing import Any

from tracetool.collect.model_loader import check_model_arguments, check_model_name, model_label, require_collector
from tracetool.graph.variables_file import ModelVariables, variables_from_list

# Placement only: the replica device setter needs a cluster to place variables on a PS.
_PLACEMENT_CLUSTER = {"ps": ["localhost:1"], "worker": ["localhost:2"]}


def model_variables(model: str, batch_size: int, model_kwargs: dict[str, Any]) -> ModelVariables:
    check_model_name(model)
    check_model_arguments(model, model_kwargs)
    require_collector(model)
    from tracetool.tf_import import import_tensorflow_quietly

    import_tensorflow_quietly().get_logger().setLevel("ERROR")  # no deprecation notices of graph building
    from tracetool.collect.training_graph import build_training_graph

    training = build_training_graph(model, batch_size, "sgd", _PLACEMENT_CLUSTER, 0, model_kwargs=model_kwargs)
    facts = {"model": model_label(model), "batch_size": batch_size}
    return variables_from_list(training.variables, facts, f"--model {model}")
