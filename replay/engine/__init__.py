"""The discrete-event core: the event loop (``loop``), its compiled graph, the link model, and
the link-sharing and transfer-order policies it runs with.

A new sharing model is a class in ``sharing``, a new order policy a class in ``order``. Knows
nothing of files, plots, sweeps or the command line; never imports TensorFlow.
"""
