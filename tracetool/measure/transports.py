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


def default_probe_repeats(transport: str) -> int:
    """validate's probe runs per worker count: two for the network-only probes (one window is
    noisy), one for TensorFlow's, whose one run per count took the environment table."""
    return 1 if transport == TENSORFLOW_TRANSPORT else 2
