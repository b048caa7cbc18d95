"""How long a plain TCP transfer takes alone and while another worker loads the other direction.

On the shaped topology of ``tracetool measure`` (one namespace per task, tbf both ways), worker 0
downloads (uploads) S bytes after an idle half second, once on a quiet link and once one second
after worker 1 began a bulk upload (download) that outlasts it. Each pair is repeated three times
and the medians printed, with the rate as a share of the line and the time the load added.

What it shows: a transfer's ACKs cross the other direction. Where that direction's queue stands
full (uploads meet the buffer at the switch port towards the PS; downloads leave the PS's own
interface, where TCP small queues keep it short), a download restarting after idle ramps its
window against the queue's round trip instead of the idle one. No TensorFlow; prints figures, not
a test:

    python benchmarks/reverse_load.py 25mbit 100ms cubic
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.cluster.parent_death import child_environment  # noqa: E402
from tracetool.cluster.processes import python_module_argv  # noqa: E402
from tracetool.cluster.topology import ShapedTopology, parse_bandwidth_bps, parse_queue  # noqa: E402
from tracetool.measure.network_probe import AGENT, PORT, _ProbeCluster  # noqa: E402

SIZES_MB = (0.1, 0.3, 1.0, 2.3, 6.0)
REPEATS = 3
PAYLOAD_SHARE = 0.95  # of the line rate, for sizing the bulk load only


def timed(cluster: _ProbeCluster, direction: str, size: int, load: str | None, rate: float) -> float:
    """Seconds worker 0's transfer took, with worker 1 loading direction ``load`` (or nothing)."""
    t0 = cluster.now() + cluster.lead_s
    plans = {0: [{"op": direction, "bytes": size, "at": t0 + 1.0}]}
    if load is not None:
        plans[1] = [{"op": load, "bytes": int(rate * (size / rate + 2.0)), "at": t0}]
    result = cluster.run(plans)[0][0]
    return result["end"] - result["start"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bandwidth", help="line rate both ways, e.g. 25mbit")
    parser.add_argument("queue", help="the shaped link's buffer, e.g. 100ms")
    parser.add_argument("congestion_control", help="cubic, bbr, ...")
    args = parser.parse_args()
    bandwidth = parse_bandwidth_bps(args.bandwidth)
    rate = bandwidth / 8 * PAYLOAD_SHARE
    with ShapedTopology(2, bandwidth, args.congestion_control, parse_queue(args.queue)) as topology:
        server = subprocess.Popen(topology.command_in("ps", 0, python_module_argv(AGENT, "serve", str(PORT))),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_environment())
        try:
            time.sleep(0.3)
            cluster = _ProbeCluster(topology, timeout_s=300.0)
            for direction, load in (("down", "up"), ("up", "down")):
                for megabytes in SIZES_MB:
                    size = int(megabytes * 1e6)
                    alone = statistics.median(timed(cluster, direction, size, None, rate) for _ in range(REPEATS))
                    loaded = statistics.median(timed(cluster, direction, size, load, rate) for _ in range(REPEATS))
                    print(f"{direction:<4} {megabytes:5.2f} MB: alone {alone * 1e3:7.1f} ms "
                          f"({size / alone / rate:4.2f} of the line), with {load} load {loaded * 1e3:7.1f} ms "
                          f"({size / loaded / rate:4.2f}); added {(loaded - alone) * 1e3:7.1f} ms", flush=True)
        finally:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
