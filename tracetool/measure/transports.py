"""How the link probe's workers move a step's bytes: one ``sendall`` each way per step, or
TensorFlow's gRPC calls (``grpc_probe_code``); validate's probe of a model's step may also run
TensorFlow itself (``tensorflow_probe``). The choices live here, apart from the measuring
code, so that the command line can offer them without importing it (``--help`` stays fast)."""

TRANSPORTS = ("tcp", "grpc")
DEFAULT_TRANSPORT = "tcp"
# validate's model-shaped probe can also run TensorFlow itself on the model's tensors (tensorflow_probe)
TENSORFLOW_TRANSPORT = "tensorflow"
MODEL_PROBE_TRANSPORTS = (*TRANSPORTS, TENSORFLOW_TRANSPORT)
DEFAULT_MODEL_PROBE_TRANSPORT = TENSORFLOW_TRANSPORT
# the TensorFlow probe's compute: groups of the model's ops that wait only for their own inputs
# (probe_graph_schedule), or stages in a chain (probe_schedule), which cannot overlap much compute
# with the transfers as the model's executor does (docs/network-probe.md, "The graph twin becomes
# the default")
TWIN_SHAPES = ("graph", "chain")
DEFAULT_TWIN_SHAPE = "graph"


def default_probe_repeats(transport: str) -> int:
    """validate's probe runs per worker count: two for every probe. One window of the
    network-only probes is noisy; TensorFlow's probe settles into one of the regimes TensorFlow's
    three or four workers do, and a second run took the deep-buffer environments' worst rows
    from 17.6% to 15.6% (BBR) and 13.4% to 10.7% (CUBIC), docs/network-probe.md."""
    return 2
