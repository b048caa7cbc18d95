"""The network a replay runs on: per-direction bandwidth, latency and per-transfer overhead.

A transfer of ``b`` bytes occupies its direction of the PS interface (and its worker's interface)
for ``8 b`` bits at the rate the sharing model gives it; it is then delivered after the
direction's latency plus the per-transfer overhead, which model RPC handling and propagation
and do not occupy the link. This module only describes links; it does not simulate them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from replay.units import check_bandwidth_bps
from tracetool.errors import ToolError
from tracetool.stepgraph import StepGraph

# Used when a graph has no link calibration (foreign traces): a fast local link.
DEFAULT_PROFILED_BANDWIDTH_BPS = 10e9


@dataclass(frozen=True)
class LinkConfig:
    """The PS link in both directions. ``worker_bandwidth_bps`` is each worker's own interface
    (both directions); ``None`` means the same bandwidth as the PS interface."""

    download_bandwidth_bps: float
    upload_bandwidth_bps: float
    latency_s: float = 0.0
    per_transfer_overhead_s: float = 0.0
    worker_bandwidth_bps: float | None = None
    description: str = ""

    def __post_init__(self) -> None:
        check_bandwidth_bps(self.download_bandwidth_bps)
        check_bandwidth_bps(self.upload_bandwidth_bps)
        if self.worker_bandwidth_bps is not None:
            check_bandwidth_bps(self.worker_bandwidth_bps)
        if self.latency_s < 0 or self.per_transfer_overhead_s < 0:
            raise ToolError("link latency and per-transfer overhead must be zero or positive")

    def worker_download_bps(self) -> float:
        return self.worker_bandwidth_bps or self.download_bandwidth_bps

    def worker_upload_bps(self) -> float:
        return self.worker_bandwidth_bps or self.upload_bandwidth_bps

    def with_bandwidth(self, bandwidth_bps: float) -> LinkConfig:
        return replace(self, download_bandwidth_bps=bandwidth_bps, upload_bandwidth_bps=bandwidth_bps)


def profiled_link(graph: StepGraph) -> LinkConfig:
    """The effective link of the single-worker profile, from the graph's link calibration."""
    cal = graph.link_calibration
    down = float(cal.get("download_bandwidth_bps", 0.0) or 0.0)
    up = float(cal.get("upload_bandwidth_bps", 0.0) or 0.0)
    if down <= 0 and up <= 0:
        down = up = DEFAULT_PROFILED_BANDWIDTH_BPS
        note = f"profiled link (no calibration in the graph; assumed {DEFAULT_PROFILED_BANDWIDTH_BPS:g} bit/s)"
    else:
        down = down if down > 0 else up
        up = up if up > 0 else down
        note = "profiled link (calibrated from the trace)"
    return LinkConfig(
        download_bandwidth_bps=down,
        upload_bandwidth_bps=up,
        latency_s=0.0,
        per_transfer_overhead_s=max(0.0, float(cal.get("per_transfer_overhead_s", 0.0) or 0.0)),
        description=note,
    )


def target_link(
    graph: StepGraph,
    bandwidth_bps: float | None,
    latency_s: float = 0.0,
    worker_bandwidth_bps: float | None = None,
) -> LinkConfig:
    """The link to predict for: the user's bandwidth (both directions) and latency, with the
    per-transfer overhead calibrated on the profiled link. ``None`` bandwidth means the profiled link."""
    base = profiled_link(graph)
    if bandwidth_bps is None:
        return replace(base, latency_s=latency_s, worker_bandwidth_bps=worker_bandwidth_bps)
    check_bandwidth_bps(bandwidth_bps)
    return LinkConfig(
        download_bandwidth_bps=bandwidth_bps,
        upload_bandwidth_bps=bandwidth_bps,
        latency_s=latency_s,
        per_transfer_overhead_s=base.per_transfer_overhead_s,
        worker_bandwidth_bps=worker_bandwidth_bps,
        description="target link",
    )
