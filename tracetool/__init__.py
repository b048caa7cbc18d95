"""Collector and dependency-graph builder: single-node TensorFlow traces in, step graphs out.

Importing this package must not import TensorFlow: the graph schema and readers of saved
files are used by the replay engine on machines without it.
"""

__version__ = "0.1.0"
