"""The layout of the ``seniority`` link's state tuple, shared by ``seniority_link`` (plain
seniority) and ``group_link`` (released groups), which work on the same tuple.

``seniority_link.seniority_new`` builds the tuple; its entries, by position: float fields and
integer fields per direction (below), each worker's clock, per-transfer rate and transfer count,
the transfers' heaps (tag, seq, node), the connections by age, the weights' prefix sums, the
link generator's words and their cursor, each connection's rate and the epoch it got it in,
and for released groups each worker's group, whether it leads it, each direction's weight of
each group rank (``seniority^-k``; all 1 on a direction shared as ``fair``), scratch room for
the connections' weights, order and sort keys, and each worker's interface cap where they differ.
"""

from __future__ import annotations

# Float fields of a direction.
F_CAPACITY = 0
F_WORKER_CAP = 1
F_T_LAST = 2
F_SERVED = 3
F_OVERTAKE = 4
F_JOIN_WINDOW = 5  # 0: every connection is its own group (plain seniority)
F_LEADER_WEIGHT = 6
F_GROUP_OPENED = 7  # when the newest group opened
F_COMPENSATED = 8  # 1: the reference's sum() of floats is compensated (CPython 3.12 on)
F_UNEQUAL = 9  # 1: workers' interfaces differ (``S_CAPS``): weighted water-filling under each cap
N_FLOAT_FIELDS = 10
# Integer fields of a direction.
I_ACTIVE = 0  # transfers in flight
I_CONNECTIONS = 1  # connections in by_age
I_MOVING = 2  # of them, from the oldest, those with a share
I_SEQ = 3
I_EPOCH = 4  # counts full re-ratings: a connection has a share while its epoch is the current one
I_NEWEST_GROUP = 5
N_INT_FIELDS = 6
# Positions in the tuple.
S_FLOATS = 0
S_INTS = 1
S_CLOCKS = 2
S_RATES = 3
S_COUNT = 4
S_TAG = 5
S_SEQ = 6
S_NODE = 7
S_BY_AGE = 8
S_GROUP_WEIGHT = 9
S_WORDS = 10
S_RNG = 11
S_CONNECTION_RATE = 12
S_SHARE_EPOCH = 13
S_GROUP_OF = 14
S_IS_LEADER = 15
S_RANK_WEIGHT = 16
S_WEIGHT = 17
S_ORDER = 18
S_KEY = 19
S_CAPS = 20
