"""Measuring real clusters and comparing them with predictions: the measurement, its worker
side, repeated runs and their statistics, the network-only link probe, and validation.

``validate`` is the one module here that calls ``collect`` (to profile) and ``replay`` (to
predict); the rest measures only.
"""
