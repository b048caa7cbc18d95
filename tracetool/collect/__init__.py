"""Collecting a profile: a real PS and worker run the model and the worker traces its steps.

Holds the profile command, the worker's side of it, the training graph every task builds and
model loading (``tracetool.tf_task``, the task entry point, calls into it). TensorFlow is
imported only inside the task processes and the functions they call, never at import time of
``profile``. Must not import ``tracetool.measure`` or ``replay``.
"""
