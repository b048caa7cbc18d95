"""``tracetool probe``: measure a network's line rate, queue and TCP sharing, without TensorFlow.

What the replay must know of a network and a one-worker profile cannot show (``replay.link_profile``):

1. **Line rate each way**: one connection's bulk goodput (the best second of three 2 s transfers at
   the receiving end, ``bulk_rate``), with TCP/IP and Ethernet headers added back for an MTU of 1500.
2. **Round trip and standing queue**: 1-byte round trips on an idle link, then while another
   worker's bulk transfer keeps the direction busy. The difference is the queue a loaded
   direction keeps standing: most of the buffer for loss-based TCP on a drop-tail queue, little
   for BBR. Every transfer's last byte waits behind it, so the replay adds it to the latency.
   Only round trips from a settled transfer count (``settled_round_trips``).
3. **Sharing**: join trials per direction. Worker 0 starts a transfer; worker 1 starts one of the
   same size 20-50% of its duration later. From the start and end times, and the rate of one
   connection alone, follow the bytes each sent while both did: the incumbent's share (its rate
   over the joiner's is ``seniority``), whether the joiner took the lead (``overtake``), and what
   both delivered together (``contention_efficiency``). Short (0.1 s) and long (0.5 s) transfers,
   since a joiner's slow start matters less the longer the transfer lasts.

4. **Reference steps** (``link_step_fit``): one to four workers stepping over the link, whose
   replayed fits give the replay's contention and reverse efficiencies.

Runs on the emulated link of ``tracetool measure`` (one namespace per task, tbf both ways, the
same queue and congestion control; its processes and namespaces end with the call), or on the
hosts of a real cluster (``probe_hosts``): the PS host serves, workers 1 to 3 follow plans they
fetch from the PS, worker 0 orchestrates and writes the profile. Times are on the PS's clock,
which every client estimates its offset to.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from replay.engine.link import payload_efficiency_for_mtu
from replay.link_profile import DirectionProfile, LinkProfile
from tracetool.cluster.parent_death import child_environment
from tracetool.cluster.processes import python_module_argv
from tracetool.cluster.topology import (
    DEFAULT_QUEUE,
    DEFAULT_TCP_CONGESTION_CONTROL,
    QueueSize,
    ShapedTopology,
    format_bandwidth,
)
from tracetool.errors import ToolError
from tracetool.measure import probe_agent
from tracetool.measure.bulk_rate import best_window_rate
from tracetool.measure.link_probe import (
    DEFAULT_TRANSPORT,
    MAX_STEP_WORKERS,
    STEP_WARMUP_S,
    ProbePoint,
    check_probe_repeats,
    summarize_spans,
)
from tracetool.measure.transports import TENSORFLOW_TRANSPORT

PORT = 5002
LEAD_S = 0.5  # plans start this long after they are made: time for the clients to start and connect
AGENT = "tracetool.measure.probe_agent"
BULK_S = 2.0
BULK_RUNS = 3
BULK_WINDOW_S = 1.0  # the bulk rate's window (``bulk_rate``): half a transfer
SHORT_TRANSFER_S = 0.1
LONG_TRANSFER_S = 0.5
DEFAULT_TRIALS = 8
MTU = 1500
DEFAULT_STEP_REPEATS = 1  # probe runs per reference step and worker count
# The loaded round trips: worker 1 downloads, then uploads, for these long each; worker 0 pings
# throughout, and only the pings at least LOADED_SETTLE_S into a transfer count. CUBIC leaves
# slow start early (HyStart) and then grows its window 5% a round trip until its first loss, so
# a deep queue fills at about 50 ms a second: 100 ms of buffer takes 1.5-2 s, then the queue
# saws between 72 and 102 ms (25-100mbit here). Pings at fixed times of the plan read 15-26 ms
# for the same buffer when a client started late (docs/network-probe.md, "The standing queue,
# read from settled transfers").
LOADED_DOWNLOAD_S = 3.0
LOADED_UPLOAD_S = 4.0
LOADED_SETTLE_S = 1.0
LOADED_PING_INTERVAL_S = 0.02
LOADED_LATE_S = 1.5  # how late a client may start its transfers and still be pinged through them
LOADED_MIN_PINGS = 8  # settled pings each direction needs, else the phase runs again
LOADED_ATTEMPTS = 2


@dataclass(frozen=True)
class JoinTrial:
    """One join trial's reading: the incumbent's share while both sent, and their rate together."""

    incumbent_share: float
    efficiency: float

    @property
    def overtaken(self) -> bool:
        return self.incumbent_share < 0.5


def read_join_trial(incumbent: dict[str, float], joiner: dict[str, float], size_bytes: int,
                    alone_bytes_per_s: float) -> JoinTrial | None:
    """What each connection sent while both did, assuming each runs at the one-connection rate
    whenever it sends alone; None when the two did not overlap."""
    joined_after = joiner["start"] - incumbent["start"]
    first_end = min(incumbent["end"], joiner["end"])
    overlap_s = first_end - joiner["start"]
    if joined_after < 0 or overlap_s <= 0:
        return None
    rate = alone_bytes_per_s
    if incumbent["end"] <= joiner["end"]:
        incumbent_bytes = size_bytes - rate * joined_after
        joiner_bytes = size_bytes - rate * (joiner["end"] - incumbent["end"])
    else:
        joiner_bytes = float(size_bytes)
        incumbent_bytes = size_bytes - rate * joined_after - rate * (incumbent["end"] - joiner["end"])
    incumbent_bytes, joiner_bytes = max(0.0, incumbent_bytes), max(0.0, joiner_bytes)
    together = incumbent_bytes + joiner_bytes
    if together <= 0:
        return None
    return JoinTrial(incumbent_bytes / together, min(1.0, together / (rate * overlap_s)))


def summarize_trials(trials: list[JoinTrial]) -> tuple[float, float, float]:
    """``(seniority, overtake chance, contention efficiency)`` of a set of join trials."""
    if not trials:
        return 1.0, 0.0, 1.0
    held = [t.incumbent_share for t in trials if not t.overtaken]
    seniority = statistics.median(s / max(1e-6, 1.0 - s) for s in held) if held else 1.0
    overtake = sum(t.overtaken for t in trials) / len(trials)
    return min(10.0, max(1.0, seniority)), overtake, statistics.median(t.efficiency for t in trials)


def queue_delay_s(loaded_rtts: list[float], idle_rtts: list[float]) -> float:
    return max(0.0, statistics.median(loaded_rtts) - statistics.median(idle_rtts))


def settled_round_trips(pings: dict[str, list[float]], transfer_start: float, transfer_end: float,
                        settle_s: float = LOADED_SETTLE_S) -> list[float]:
    """The round trips of the pings sent at least ``settle_s`` after a transfer began and
    answered before it ended (all on one clock). Anchored to the transfer's own times, not to
    when it was planned: a client that starts late, or a window still ramping, would otherwise
    put idle or half-filled-queue pings into the reading."""
    return [rtt for sent, rtt in zip(pings["times"], pings["rtts"], strict=True)
            if sent >= transfer_start + settle_s and sent + rtt <= transfer_end]


def loaded_phase_usable(down_pings: int, up_pings: int, late_s: float) -> bool:
    """Whether the loaded phase's settled round trips can stand for its queues. Few pings from
    transfers that started on time mean long round trips (a buffer of several hundred ms), which
    another attempt would not change; few from a transfer that started late mean the phase missed
    its window, and runs again."""
    if min(down_pings, up_pings) >= LOADED_MIN_PINGS:
        return True
    return min(down_pings, up_pings) >= 1 and late_s <= LOADED_LATE_S / 2


class _ProbeCluster:
    """The probe server on the PS and clients on two workers of a shaped topology."""

    lead_s = LEAD_S

    def __init__(self, topology: ShapedTopology, timeout_s: float) -> None:
        self.topology = topology
        self.timeout_s = timeout_s

    @staticmethod
    def now() -> float:
        return time.monotonic()  # the namespaces share this machine's clock with the server

    def run(self, plans: dict[int, list[dict[str, Any]]]) -> dict[int, list[dict[str, Any]]]:
        procs = {
            worker: subprocess.Popen(
                self.topology.command_in("worker", worker, python_module_argv(
                    AGENT, "run", self.topology.ps.address, str(PORT), json.dumps(plan))),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_environment())
            for worker, plan in plans.items()
        }
        results = {}
        try:
            for worker, proc in procs.items():
                out, err = proc.communicate(timeout=self.timeout_s)
                if proc.returncode != 0:
                    last = (err.strip().splitlines() or ["no output"])[-1]
                    raise ToolError(f"the probe client on worker {worker} failed: {last}")
                results[worker] = json.loads(out)
        except subprocess.TimeoutExpired:
            raise ToolError("a probe client did not finish in time; is the shaped link passing traffic?") from None
        finally:
            for proc in procs.values():
                proc.kill()
                proc.wait()
        return results


class _HostsProbeCluster:
    """Worker 0 of a real cluster orchestrating: its own client runs here, the other workers'
    plans and results pass through the PS server's mailbox."""

    lead_s = 1.0
    report_margin_s = 300.0  # how long past a plan's last time a following worker may take to report

    def __init__(self, address: str, port: int, workers: int, transport: str = DEFAULT_TRANSPORT) -> None:
        self.address, self.port, self.transport = address, port, transport
        self.link: probe_agent.ServerLink | None = probe_agent.ServerLink(address, port, timeout_s=120.0)
        self.sequence = dict.fromkeys(range(1, workers), 0)  # per following worker: the plans it has been given

    def now(self) -> float:
        return self.link.now()

    def run(self, plans: dict[int, list[dict[str, Any]]]) -> dict[int, list[dict[str, Any]]]:
        others = [worker for worker in plans if worker != 0]
        for worker in others:
            self.link.put(f"plan-{self.sequence[worker]}-{worker}", json.dumps(plans[worker]))
        results = {0: probe_agent.run(self.address, self.port, plans.get(0, []))}
        last = max((float(action.get("until", action.get("at", 0.0))) for plan in plans.values() for action in plan),
                   default=0.0)
        for worker in others:
            wait_s = max(0.0, last - self.now()) + self.report_margin_s
            try:
                results[worker] = json.loads(self.link.get(f"result-{self.sequence[worker]}-{worker}", wait_s))
            except TimeoutError:
                self.link.close()  # the server still owes this connection the answer: a fresh one ends the probe
                try:
                    self.link = probe_agent.ServerLink(self.address, self.port)
                except OSError:
                    self.link = None  # the server is gone: nothing left to stop
                raise ToolError(f"worker {worker} did not report within {wait_s:.0f} s; run 'tracetool probe "
                                f"--cluster ... --job worker --task-index {worker}' on its host") from None
            self.sequence[worker] += 1
        return results

    def probe_step(self, workers: int, download: int, upload: int, compute_s: float, window_s: float) -> ProbePoint:
        """Workers 0 to ``workers - 1`` step together for the window (a ``link_step_fit.StepProber``)."""
        t0 = self.now() + self.lead_s
        plan = [{"op": "steps", "download": download, "upload": upload, "compute": compute_s, "at": t0,
                 "warm_until": t0 + STEP_WARMUP_S, "until": t0 + STEP_WARMUP_S + window_s,
                 "transport": self.transport}]
        results = self.run(dict.fromkeys(range(workers), plan))
        return summarize_spans([[tuple(span) for span in results[worker][0]["spans"]] for worker in range(workers)],
                               download, upload)

    def close(self) -> None:
        if self.link is None:
            return
        for worker, sequence in self.sequence.items():
            self.link.put(f"plan-{sequence}-{worker}", json.dumps("stop"))
        self.link.quit()
        self.link.close()


def _guess_rate(cluster: Any) -> float:
    """A download rate to size the bulk transfers by, on a link of unknown rate: transfers grow
    eightfold until one lasts half a second."""
    size = 256 * 1024
    while True:
        result = cluster.run({0: [{"op": "down", "bytes": size}]})[0][0]
        seconds = result["end"] - result["first"]
        if seconds >= 0.5 or size >= 1 << 34:
            return size / max(seconds, 1e-6)
        size *= 8


def _bulk_rates(cluster: Any, guess_bytes_per_s: float, say: Callable[[str], None]
                ) -> tuple[float, float, list[float]]:
    """One connection's payload rate each way: the best one-second window at the receiving end of
    BULK_RUNS transfers (``bulk_rate``). A CPU stall at either end (a busy host) only ever slows a
    transfer, the line never speeds one up."""
    size = int(guess_bytes_per_s * BULK_S)
    transfers = [{"op": "down", "bytes": size, "timeline": True}, {"op": "up", "bytes": size, "timeline": True}]
    result = cluster.run({0: [{"op": "ping", "count": 30, "interval": 0.02}, *transfers * BULK_RUNS]})[0]
    idle = result[0]["rtts"]
    round_trip = statistics.median(idle)
    downs = [_transfer_rate(r, size, r["end"] - r["first"]) for r in result[1::2]]
    ups = [_transfer_rate(r, size, r["end"] - r["start"] - round_trip) for r in result[2::2]]
    down, up = max(downs), max(ups)
    runs = {name: ", ".join(f"{8 * r / 1e6:.2f}" for r in rates) for name, rates in (("down", downs), ("up", ups))}
    say(f"  one connection, the best {BULK_WINDOW_S:g} s of {BULK_RUNS} transfers: {8 * down / 1e6:.2f} Mbit/s down "
        f"({runs['down']}), {8 * up / 1e6:.2f} up ({runs['up']}) (payload); idle round trip {round_trip * 1e3:.2f} ms")
    return down, up, idle


def _transfer_rate(result: dict[str, Any], size: int, seconds: float) -> float:
    """A bulk transfer's rate at its receiving end; its average where its segment readings span
    less than a window (a link so fast that a transfer sized by ``_guess_rate`` ends sooner) or the
    kernel gave no count."""
    best = best_window_rate(result.get("segments", []), result.get("transfer_segments", 0), size, BULK_WINDOW_S)
    return best if best is not None else size / max(seconds, 1e-9)


def _loaded_round_trips(cluster: Any, down_rate: float, up_rate: float,
                        say: Callable[[str], None]) -> tuple[list[float], list[float]]:
    """Worker 0's round trips while worker 1 downloads, and while it uploads: each only from the
    settled part of its transfer. Runs again if a client started too late for enough of them."""
    for attempt in range(1, LOADED_ATTEMPTS + 1):
        t0 = cluster.now() + cluster.lead_s
        upload_at = t0 + LOADED_DOWNLOAD_S + 1.0
        last = upload_at + LOADED_UPLOAD_S + LOADED_LATE_S
        result = cluster.run({
            1: [{"op": "down", "bytes": int(down_rate * LOADED_DOWNLOAD_S), "at": t0},
                {"op": "up", "bytes": int(up_rate * LOADED_UPLOAD_S), "at": upload_at}],
            0: [{"op": "ping", "count": int((last - t0) / LOADED_PING_INTERVAL_S) + 1,
                 "interval": LOADED_PING_INTERVAL_S, "at": t0, "until": last}],
        })
        download, upload = result[1]
        pings = result[0][0]
        loaded_down = settled_round_trips(pings, download["first"], download["end"])
        loaded_up = settled_round_trips(pings, upload["start"], upload["end"])
        late_s = max(download["first"] - t0, upload["start"] - upload_at)
        if loaded_phase_usable(len(loaded_down), len(loaded_up), late_s):
            return loaded_down, loaded_up
        say(f"  only {len(loaded_down)} and {len(loaded_up)} round trips fell in the settled transfers "
            f"(attempt {attempt} of {LOADED_ATTEMPTS}); a transfer started {late_s:.1f} s late")
    raise ToolError("the round trips under load missed the transfers they measure twice: this machine is too busy; "
                    "run the probe again when it is idle")


def _join_trials(cluster: Any, direction: str, rate: float, transfer_s: float, trials: int
                 ) -> list[JoinTrial]:
    size = max(1, int(rate * transfer_s))
    slot = 2.5 * transfer_s + 0.4
    t0 = cluster.now() + cluster.lead_s
    incumbent, joiner = [], []
    for k in range(trials):
        start = t0 + k * slot
        lag = (0.2 + 0.3 * k / max(1, trials - 1)) * transfer_s
        incumbent.append({"op": direction, "bytes": size, "at": start})
        joiner.append({"op": direction, "bytes": size, "at": start + lag})
    result = cluster.run({0: incumbent, 1: joiner})
    read = [read_join_trial(a, b, size, rate) for a, b in zip(result[0], result[1], strict=True)]
    return [r for r in read if r is not None]


def _measure(cluster: Any, guess_bytes_per_s: float, trials: int, say: Callable[[str], None]
             ) -> tuple[DirectionProfile, DirectionProfile, float]:
    """Both directions' profiles and the idle round trip, on a cluster of a PS and two workers."""
    efficiency = payload_efficiency_for_mtu(MTU)
    down_rate, up_rate, idle = _bulk_rates(cluster, guess_bytes_per_s, say)
    say("  round trips under load")
    loaded_down, loaded_up = _loaded_round_trips(cluster, down_rate, up_rate, say)
    directions = {}
    for direction, rate, loaded in (("down", down_rate, loaded_down), ("up", up_rate, loaded_up)):
        readings: dict[float, list[JoinTrial]] = {SHORT_TRANSFER_S: [], LONG_TRANSFER_S: []}
        for transfer_s in (SHORT_TRANSFER_S, LONG_TRANSFER_S) if trials else ():
            say(f"  join trials, {'downloads' if direction == 'down' else 'uploads'} of {transfer_s * 1e3:.0f} ms")
            readings[transfer_s] = _join_trials(cluster, direction, rate, transfer_s, trials)
        both = readings[SHORT_TRANSFER_S] + readings[LONG_TRANSFER_S]
        seniority, _, contention = summarize_trials(both)
        directions[direction] = DirectionProfile(
            payload_bps=8 * rate, line_rate_bps=8 * rate / efficiency,
            queue_delay_s=queue_delay_s(loaded, idle), contention_efficiency=contention,
            seniority=seniority, overtake_short=summarize_trials(readings[SHORT_TRANSFER_S])[1],
            overtake_long=summarize_trials(readings[LONG_TRANSFER_S])[1],
            short_transfer_s=SHORT_TRANSFER_S, long_transfer_s=LONG_TRANSFER_S, trials=len(both))
    for name, d in (("down", directions["down"]), ("up", directions["up"])):
        sharing = (f", seniority {d.seniority:.2f}, overtaken {d.overtake_short:.0%} (short) {d.overtake_long:.0%} "
                   f"(long), contention efficiency {d.contention_efficiency:.3f}") if trials else ""
        say(f"  {name}: line rate {d.line_rate_bps / 1e6:.2f} Mbit/s, standing queue {d.queue_delay_s * 1e3:.1f} ms"
            + sharing)
    return directions["down"], directions["up"], statistics.median(idle)


class _ProbeServer:
    """The probe agent serving on the PS of a shaped topology, for as long as the block runs."""

    def __init__(self, topology: ShapedTopology) -> None:
        self.topology = topology
        self.server: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _ProbeServer:
        self.server = subprocess.Popen(self.topology.command_in("ps", 0, python_module_argv(AGENT, "serve", str(PORT))),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_environment())
        time.sleep(0.3)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.kill()
            self.server.wait()


def probe_upload_queue_s(bandwidth_bps: float, queue: QueueSize, tcp_congestion_control: str,
                         progress: Callable[[str], None] | None = None) -> float:
    """The standing queue of the emulated link's upload direction alone (the profile's
    ``upload.queue_delay_s``): one worker's round trips while another uploads, less the idle
    ones, some 15 s. What validate needs of the network besides the model's own probe."""
    say = progress or (lambda text: None)
    guess = bandwidth_bps * payload_efficiency_for_mtu(MTU) / 8
    with ShapedTopology(2, bandwidth_bps, tcp_congestion_control, queue) as topology, _ProbeServer(topology):
        say(f"probing the standing queue of {format_bandwidth(bandwidth_bps)}, {queue.describe()} queue, "
            f"TCP {tcp_congestion_control}")
        cluster = _ProbeCluster(topology, 120.0)
        down_rate, up_rate, idle = _bulk_rates(cluster, guess, say)
        _, loaded_up = _loaded_round_trips(cluster, down_rate, up_rate, say)
    return queue_delay_s(loaded_up, idle)


def join_trials(trials: int | None, step_fit: bool) -> int:
    """How many join trials to run per direction and transfer length. By default none where the
    reference steps are probed: the replay then takes its efficiencies from the step fits and
    keeps the default seniority and overtake law, so the trials' minute and a half would measure
    nothing it uses (their seniority and overtakes predicted deep buffers 20-50% fast,
    docs/network-probe.md). Without the step fit they are the profile's only measure of sharing."""
    if trials is None:
        return 0 if step_fit else DEFAULT_TRIALS
    if not 0 <= trials <= 100:
        raise ToolError(f"--trials must be between 0 and 100, got {trials}")
    if trials == 0 and not step_fit:
        raise ToolError("--trials 0 with --no-step-fit leaves the profile no measure of how connections share the "
                        "link; give --trials 1 or more, or drop --no-step-fit")
    return trials


def _created_at() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def probe_network(bandwidth_bps: float, queue: QueueSize = DEFAULT_QUEUE,
                  tcp_congestion_control: str = DEFAULT_TCP_CONGESTION_CONTROL, trials: int | None = None,
                  progress: Callable[[str], None] | None = None, step_fit: bool = True,
                  step_repeats: int = DEFAULT_STEP_REPEATS, reference_steps_s: tuple[float, ...] | None = None,
                  transport: str = DEFAULT_TRANSPORT, step_window_s: float | None = None) -> LinkProfile:
    """Probe the emulated PS link of this machine; with ``step_fit`` also the reference steps of
    one to four workers over ``transport`` (``link_probe.TRANSPORTS``, or TensorFlow itself:
    ``tensorflow_step_fit``) for windows of at least ``step_window_s``, whose replayed fits give
    the profile's link efficiencies (``link_step_fit``)."""
    trials = join_trials(trials, step_fit)
    check_probe_repeats(step_repeats, "--step-repeats")
    say = progress or (lambda text: None)
    guess = bandwidth_bps * payload_efficiency_for_mtu(MTU) / 8
    timeout_s = 120.0 + 4 * trials * (2.5 * LONG_TRANSFER_S + 0.4)
    with ShapedTopology(2, bandwidth_bps, tcp_congestion_control, queue) as topology, _ProbeServer(topology):
        say(f"probing {format_bandwidth(bandwidth_bps)} both ways, {queue.describe()} queue, "
            f"TCP {tcp_congestion_control}: bulk rates")
        down, up, rtt = _measure(_ProbeCluster(topology, timeout_s), guess, trials, say)
        shaping = topology.shaping_facts()
    environment = {"kind": "emulated", "bandwidth_bps": bandwidth_bps, "queue": queue.as_dict(),
                   "tcp_congestion_control": tcp_congestion_control, "shaping": shaping, "created_at": _created_at()}
    profile = LinkProfile(down, up, rtt, environment)
    if not step_fit:
        return profile
    from tracetool.measure.link_step_fit import (
        MIN_STEP_WINDOW_S,
        REFERENCE_TRANSFERS_S,
        emulated_step_prober,
        fit_reference_steps,
    )

    say(f"probing reference steps of 1 to {MAX_STEP_WORKERS} workers over {transport}")
    transfers_s = reference_steps_s or REFERENCE_TRANSFERS_S
    if transport == TENSORFLOW_TRANSPORT:
        from tracetool.measure.tensorflow_step_fit import (
            DEFAULT_TENSORFLOW_STEP_WINDOW_S,
            TENSORFLOW_STEP_SETTLE_S,
            tensorflow_reference_step_fits,
        )

        window_s = DEFAULT_TENSORFLOW_STEP_WINDOW_S if step_window_s is None else step_window_s
        fits = tensorflow_reference_step_fits(bandwidth_bps, profile.latency_s, queue, tcp_congestion_control,
                                              transfers_s, say, repeats=step_repeats, min_window_s=window_s)
        environment = {**environment, "step_settle_s": TENSORFLOW_STEP_SETTLE_S}
    else:
        window_s = MIN_STEP_WINDOW_S if step_window_s is None else step_window_s
        prober = emulated_step_prober(bandwidth_bps, queue, tcp_congestion_control, transport)
        fits = fit_reference_steps(bandwidth_bps, profile.latency_s, queue.delay_s(bandwidth_bps), prober,
                                   tcp_congestion_control, progress=say, repeats=step_repeats,
                                   transfers_s=transfers_s, min_window_s=window_s)
    environment = {**environment, "step_transport": transport, "step_window_s": window_s}
    return replace(profile, environment=environment, step_fits=fits)


def _split_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ToolError(f"cluster address '{text}' is not host:port")
    return host.strip("[]"), int(port)


def probing_workers(cluster: dict[str, list[str]]) -> int:
    """How many of the cluster's workers the probe uses: the first four (the reference steps run
    one to four workers), at least two (the join trials)."""
    if len(cluster.get("worker", [])) < 2 or len(cluster.get("ps", [])) < 1:
        raise ToolError("probing real hosts needs a PS and two workers in the cluster file")
    return min(MAX_STEP_WORKERS, len(cluster["worker"]))


def probe_hosts(cluster: dict[str, list[str]], job: str, task_index: int, trials: int | None = None,
                progress: Callable[[str], None] | None = None, step_fit: bool = True,
                step_repeats: int = DEFAULT_STEP_REPEATS, reference_steps_s: tuple[float, ...] | None = None,
                transport: str = DEFAULT_TRANSPORT, step_window_s: float | None = None) -> LinkProfile | None:
    """This host's part of probing a real cluster's PS link: the PS serves on its cluster address
    until the probe ends; workers 1 to 3 follow plans; worker 0 orchestrates and returns the
    profile, with ``step_fit`` fitted to reference steps of one to as many workers as it uses.

    A real link's buffer is unknown, so the contention efficiency stays the least-squares one
    (``rates_set_contention``): the standing queue the probe measures does not tell the buffer
    (BBR keeps a 100 ms buffer's at 3-10 ms, and CUBIC's behind tbf's 5 ms queue read 6-45 ms)."""
    trials = join_trials(trials, step_fit)
    check_probe_repeats(step_repeats, "--step-repeats")
    say = progress or (lambda text: None)
    workers = probing_workers(cluster)
    address, port = _split_address(cluster["ps"][0])
    if job == "ps":
        say(f"probe server at {cluster['ps'][0]}; it ends when worker 0 has finished")
        try:
            probe_agent.serve(port)
        except OSError as exc:
            raise ToolError(f"the probe server cannot listen on port {port}: {exc.strerror}") from None
        return None
    if 1 <= task_index < workers:
        say(f"worker {task_index} following the probe's plans from {cluster['ps'][0]}")
        probe_agent.follow_plans(address, port, task_index)
        return None
    if task_index != 0:
        raise ToolError(f"the probe uses workers 0 to {workers - 1}; worker {task_index} has nothing to do")
    try:
        hosts = _HostsProbeCluster(address, port, workers, transport)
    except OSError as exc:
        raise ToolError(f"cannot reach the probe server at {cluster['ps'][0]}: {exc}") from None
    congestion_control = _local_congestion_control()
    environment = {"kind": "hosts", "cluster": cluster, "tcp_congestion_control": congestion_control,
                   "created_at": _created_at()}
    try:
        say(f"probing the PS link of {cluster['ps'][0]}: sizing transfers")
        guess = _guess_rate(hosts)
        say("  bulk rates")
        profile = LinkProfile(*_measure(hosts, guess, trials, say), environment)
        if step_fit:
            from tracetool.measure.link_step_fit import MIN_STEP_WINDOW_S, REFERENCE_TRANSFERS_S, fit_reference_steps

            window_s = MIN_STEP_WINDOW_S if step_window_s is None else step_window_s
            say(f"probing reference steps of 1 to {workers} workers over {transport}")
            profile = replace(profile, environment={**environment, "step_transport": transport,
                                                    "step_window_s": window_s},
                              step_fits=fit_reference_steps(
                profile.line_rate_bps, profile.latency_s, None, hosts.probe_step, congestion_control,
                progress=say, workers=tuple(range(1, workers + 1)), repeats=step_repeats,
                transfers_s=reference_steps_s or REFERENCE_TRANSFERS_S, min_window_s=window_s))
    finally:
        hosts.close()
    return profile


def _local_congestion_control() -> str:
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as handle:
            return handle.read().strip()
    except OSError:
        return ""
