"""Running TensorFlow task processes on this machine: namespaces, the shaped topology, task
processes and their specs, machine facts and limits, and what killed runs leave behind.

Starts processes and builds networks; knows nothing of models, traces or predictions.
Must not import ``collect``, ``graph``, ``measure`` or ``replay``.
"""
