"""How the link probe's workers move a step's bytes: one ``sendall`` each way per step, or
TensorFlow's gRPC calls (``grpc_probe_code``). The choices live here, apart from the measuring
code, so that the command line can offer them without importing it (``--help`` stays fast)."""

TRANSPORTS = ("tcp", "grpc")
DEFAULT_TRANSPORT = "tcp"
