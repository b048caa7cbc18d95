"""Which configurations the compiled kernel replays, and in which words to say what it does not.

The kernel holds every built-in policy: each synchronization discipline (``async``, ``ssp``,
``sync``, ``backup``, ``cutoff`` with a static, gradient-count or dynamic cutoff, and
``saps``), each sharing model (``fair``, ``fair-per-transfer``, ``fifo`` and ``seniority``, the
default, with its overtakes, released groups or fair downloads; with or without
``--max-streams``), each direction by the model the reference gives it, and each transfer order
(``trace``, ``priority``, ``random``: where the link chooses, under ``fifo`` or a stream cap,
the random ranks are the reference's Python generator's, drawn before the run), with workers of
equal or unequal speeds (``--worker-speeds``, ``--slowdown``) and interfaces
(``--worker-bandwidths``, in one direction or both), with or without timeline recording. What
it refuses is a policy object that is not one of these: a subclass of a built-in policy or a
policy written in Python, which the kernel cannot call per event without losing its speed, so
those replays stay with the reference engine, as do links with a request queue (a deep upload
buffer that parameter requests wait behind) on graphs with a download that follows no PS op.
Policies are compared by exact type: a subclass is another policy, which the kernel does not
know. This module only inspects settings and graphs; it imports no numba.
"""

from __future__ import annotations

from replay.engine.compiled import KIND_DOWNLOAD, KIND_PS, CompiledGraph
from replay.engine.link import LinkConfig
from replay.engine.order import OrderPolicy, PriorityOrder, RandomOrder, TraceOrder
from replay.engine.sharing import FairSharing, FifoSharing, SenioritySharing, SharingModel, TransferFairSharing
from replay.sync.base import AsyncTraining, SyncDiscipline
from replay.sync.cutoff import Cutoff
from replay.sync.saps import StragglerAware
from replay.sync.ssp import StaleSynchronous
from replay.sync.sync_replicas import SyncReplicas

# Integer codes of the sharing models inside the kernel.
SHARING_FAIR = 0
SHARING_FIFO = 1
SHARING_SENIORITY = 2
# fair-per-transfer: processor sharing where the workers' interfaces do not bind, per-transfer
# max-min fairness under them where they do (the reference's two links of the model)
SHARING_PROCESSOR = 3
SHARING_MAXMIN = 4

# Integer codes of the disciplines inside the kernel (sync and backup are one: R of N).
DISCIPLINE_ASYNC = 0
DISCIPLINE_SSP = 1
DISCIPLINE_SYNC = 2
DISCIPLINE_CUTOFF = 3
DISCIPLINE_SAPS = 4
# The cutoff's rules, by their ``--cutoff`` kind.
CUTOFF_RULES = {"static": 0, "gradients": 1, "dynamic": 2}
_DISCIPLINE_CODES = {SyncDiscipline: DISCIPLINE_ASYNC, AsyncTraining: DISCIPLINE_ASYNC,
                     StaleSynchronous: DISCIPLINE_SSP, SyncReplicas: DISCIPLINE_SYNC, Cutoff: DISCIPLINE_CUTOFF,
                     StragglerAware: DISCIPLINE_SAPS}


def shares_fairly(sharing: SharingModel | None, d: int) -> bool:
    """Whether direction ``d`` (0 downloads, 1 uploads) is shared as ``fair`` shares it: under
    ``fair`` (None is the reference's default, fair), and ``seniority``'s downloads where it keeps
    them fair (``fair_downloads``)."""
    if type(sharing) in (FairSharing, type(None)):
        return True
    return type(sharing) is SenioritySharing and d == 0 and sharing.fair_downloads


def direction_codes(sharing: SharingModel | None, link: LinkConfig, workers: int) -> tuple[int, int]:
    """The kernel's code of each direction's link (downloads, uploads), as the reference's
    ``new_download_link`` and ``new_upload_link`` choose it: ``fair`` sharing of unequal worker
    interfaces is the reference's seniority link of weight 1 (weighted water-filling under each
    worker's cap), so the kernel's seniority state serves that direction too."""
    codes = []
    for d, upload in enumerate((False, True)):
        caps = link.worker_payload_caps(workers, upload=upload)
        if type(sharing) is FifoSharing:
            codes.append(SHARING_FIFO)
        elif type(sharing) is TransferFairSharing:
            capacity = link.upload_payload_bps() if upload else link.download_payload_bps()
            binds = isinstance(caps, list) or caps < capacity
            codes.append(SHARING_MAXMIN if binds else SHARING_PROCESSOR)
        elif shares_fairly(sharing, d) and not isinstance(caps, list):
            codes.append(SHARING_FAIR)
        else:
            codes.append(SHARING_SENIORITY)
    return codes[0], codes[1]


def downloads_follow_ps(compiled: CompiledGraph) -> bool:
    """Whether every download of the graph has a PS op among its predecessors (TensorFlow's
    always do: the PS sends what its ops read)."""
    follows = [False] * compiled.n
    for i in range(compiled.n):
        if compiled.kind[i] == KIND_PS:
            for s in compiled.successors[i]:
                follows[s] = True
    return all(follows[i] for i in range(compiled.n) if compiled.kind[i] == KIND_DOWNLOAD)


def discipline_code(discipline: SyncDiscipline | None) -> int:
    """The kernel's code of a supported discipline (None is asynchronous training)."""
    return DISCIPLINE_ASYNC if discipline is None else _DISCIPLINE_CODES[type(discipline)]


def unsupported_setting(
    *,
    sharing: SharingModel | None = None,
    order: OrderPolicy | None = None,
    discipline: SyncDiscipline | None = None,
    link: LinkConfig | None = None,
    compiled: CompiledGraph | None = None,
) -> str | None:
    """The first setting of this replay that the kernel does not hold, in the command line's
    words, or None when the kernel replays it exactly as the reference engine does: a
    discipline, sharing model or order that is not a built-in one, and a link whose parameter
    requests wait behind a deep upload queue (``LinkConfig.request_queue_s``) on a graph where
    some download follows no PS op: the kernel delays a step's PS ops, which every traced
    download follows, but not the downloads of synthetic graphs that start with the step."""
    if link is not None and link.request_queue_s > 0.0 and compiled is not None and not downloads_follow_ps(compiled):
        return "a request queue on a graph with a download no PS op precedes"
    if discipline is not None and type(discipline) not in _DISCIPLINE_CODES:
        return f"--sync {discipline.name}"
    if sharing is not None and type(sharing) not in (FairSharing, FifoSharing, SenioritySharing,
                                                     TransferFairSharing):
        return f"--sharing {sharing.name}"
    if order is not None and type(order) not in (TraceOrder, PriorityOrder, RandomOrder):
        return f"--order {order.name}"
    return None
