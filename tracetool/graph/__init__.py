"""From trace files to the step graph: readers, uniform trace records, the builder, the summary.

``stepgraph`` is the versioned contract with ``replay``. Nothing here imports TensorFlow at
import time (the RunMetadata reader imports it inside its function, to parse protobufs).
Must not import ``collect``, ``cluster``, ``measure`` or ``replay``.
"""
