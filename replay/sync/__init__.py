"""Synchronization disciplines: how workers coordinate their steps on the shared PS.

Each discipline is a small policy object behind one interface (``disciplines.SyncDiscipline``)
that the event loop consults; a new discipline is a new class, never a branch in the loop.
Knows nothing of files or the command line; never imports TensorFlow.
"""
