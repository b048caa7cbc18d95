"""How the kernel's functions are compiled by numba.

The functions the loop calls on every event (the heaps, the links) are passed arrays, the links
tuples of a dozen. numba counts the references of every array a compiled function is passed,
two atomic operations per array and call that LLVM cannot remove across calls, and that was
about 70% of the kernel's time (perf: NRT_incref and NRT_decref; inlining the functions into
the loop removed few of them). These functions allocate nothing, so ``per_event`` compiles them
without numba's runtime (``_nrt=False``): the arrays stay owned by the loop that allocated
them, and the kernel ran 2 to 3 times as fast. One that allocates fails to compile under it
("Only accept returning of array passed into the function as argument"); the links'
constructors and the loop itself use ``njit(cache=True)``.
"""

from __future__ import annotations

from numba import njit

per_event = njit(cache=True, _nrt=False)
