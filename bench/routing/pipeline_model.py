#!/usr/bin/env python3
"""A timing model of paged GPU decode under a recorded routing: what a token costs when the host,
the GPU's compute stream and one copy engine take turns as the deepseek4 GPU path makes them.

    bench/routing/pipeline_model.py TRACE [--slots 32,64,128] [--tokens 257] [--arms A,B,...]
        [--set CONSTANT=VALUE ...] [--fit] [--json OUT]

A model, not a measurement: it replays the trace's first TOKENS positions through per-layer LRU
pools (prefetched experts inserted most recently used, proposals already cached left alone, the
current token's experts safe from a prefetch's eviction, as pager-core does) and times each step
from a handful of constants (below; fitted to the H200 grid of
bench/results/2026-12-07-h200.md). Its use is to rank pipeline variants before
spending device time on them, and to say where a token's time goes. Every figure it prints is
modelled.

Per token: the hash layers' experts are hinted at the step's start. Per layer l, in host order:
  1. the host launches layer l's work before its experts (mHC, attention, router: PRE us of GPU);
     on a scored layer it then waits for the router's ids (the GPU done with them, + READBACK us);
  2. acquire: each missing expert gets the least recently used slot and a copy queued on the copy
     engine, in order (ACQUIRE us + SUBMIT us per copy of host time);
  3. the experts launch, those in slots first; the GPU takes EXPERT us per expert, each pending
     one once its bytes landed (LAUNCH us of host time per launch);
  4. the host waits for every read layer l uses (acquire_finish), then goes on (WAKE us); in the
     deferred arms (arch.defer_acquire_finish) it goes on at once and finishes the layers once the
     step is queued, when their reads have long landed. The model put these arms 1.5-3.2% faster
     (1.7-4.0% at 12.5-50% since its refit to the H200 grid); on an H100 the option was 1-6% slower
     (bench/results/2026-12-07-deferral-and-top-m.md): something the model leaves out outweighs the
     host's saved wake-ups there; which, that page's candidates and the next driver
     (2026-12-07-h200/next-deferral-50.sh) are to tell.
Layer l+1's predictions (the trace's p lines, top M; the oracle arms: layer l+1's own request) are hinted at one of three moments: observe
(after step 4: the default), acquire (after step 2) or launched (after step 3). A hint costs HINT
us + SUBMIT us per copy of host time, and its copies queue on the copy engine in order.
After the last layer the GPU runs the head (HEAD us) and the host waits for the token.

Two arm flags model options that remove host round trips (the arms named *-slot, *-ra):
- slot (arch.slot_table): a scored layer whose every expert sits landed in its pool when the
  router has run is looked up on the device: the host neither waits for its ids nor acquires nor
  wakes (it pays LAUNCH us to queue the layer) and the GPU computes the experts right after the
  router. A layer with a miss (a prefetch still in flight counts as one: the device's table lists
  landed experts only) takes the host path above. The ideal of the design: the measured first
  serving had its own delays (bench/results/2026-12-07-slot-table-first-run.md).
- run_ahead (arch.run_ahead): layer 0's work before its experts (the step's front) is queued behind
  the previous token's head, so it runs while the pick travels to the host.
"""
import argparse
import json
import lzma

# Constants in microseconds, fitted to the 2026-12-07 H200 grid (12-layer Flash slice, mapped
# transport, resident 451.3 tok/s; MEASURED below) by --fit over FIT_GRID (sum of squared relative
# errors 0.0011 over the nine arms and resident); the others were read off the kernel tables of
# 2026-12-04-decode-host-path.md (the head) or kept from the 2026-12-04 fit.
DEFAULTS = {
    "expert_mb": 13.369344,  # bytes of one expert, MB
    "copy_gb_s": 54.0,       # the link's rate (the pinned copy measured 54.0-54.9 GB/s beside the grids)
    "copy_setup": 10.0,      # link time per expert copy beyond its bytes (one copy per expert)
    "pre": 110.0,            # GPU time of a layer before its experts
    "expert": 5.0,           # GPU time of one expert at one token
    "head": 100.0,           # GPU time of the head and the next token's embedding
    "readback": 30.0,        # the router's ids reaching the host after the GPU wrote them
    "acquire": 10.0,         # host: one acquire's planning
    "submit": 8.0,           # host: queueing one expert's copy
    "launch": 4.0,           # host: one expert launch
    "hint": 5.0,             # host: one hint's planning
    "wake": 30.0,            # host: back from a wait
}


def load_trace(path, tokens):
    """Returns (layers, experts, steps): steps[t] = {"h": {l: [e]}, "a": {l: [e]}, "p": {l: [e]}}."""
    opener = lzma.open if path.endswith(".xz") else open
    steps = []
    try:
        f = opener(path, "rt", encoding="ascii")
    except OSError as e:
        raise SystemExit(f"{path}: cannot open: {e.strerror or e}") from None
    line_no = 1
    try:
        with f:
            header = f.readline().split()
            if len(header) < 3 or header[1] != "moepage-trace" or header[2] != "v4":
                raise SystemExit(f"{path}: expected a moepage-trace v4 file, first line {' '.join(header)!r}")
            meta = dict(field.split("=", 1) for field in header[3:] if "=" in field)
            if "layers" not in meta or "experts" not in meta:
                raise SystemExit(f"{path}: the header names no layers= or experts=")
            for line_no, line in enumerate(f, start=2):
                fields = line.split()
                if not fields or fields[0] == "#":
                    continue
                if fields[0] == "t":
                    if len(steps) == tokens:
                        break
                    steps.append({"h": {}, "a": {}, "p": {}})
                    continue
                if fields[0] in ("h", "a", "p") and steps:
                    steps[-1][fields[0]].setdefault(int(fields[1]), []).extend(int(v) for v in fields[2:])
    except (ValueError, IndexError, UnicodeDecodeError, lzma.LZMAError, EOFError) as e:
        raise SystemExit(f"{path}: line {line_no}: not a valid trace line ({e})") from None
    if len(steps) < tokens:
        raise SystemExit(f"{path}: {len(steps)} positions, fewer than the {tokens} asked for")
    layers = int(meta["layers"])
    for t, step in enumerate(steps):
        missing = [layer for layer in range(layers) if not step["a"].get(layer)]
        if missing:
            raise SystemExit(f"{path}: position {t} has no 'a' line for layer {missing[0]}")
    return layers, int(meta["experts"]), steps


class Pool:
    """One layer's slots as pager-core keeps them: expert -> the copy its bytes come by (None:
    landed long ago), victims by lru (least recent use) or lfru (least decayed use count, half
    life 4 x slots pool events; ties to the least recent), never one of `protected`."""

    def __init__(self, slots, policy="lru"):
        self.slots, self.policy = slots, policy
        self.entries = {}
        self.clock = 0
        self.last_use = {}
        self.score, self.updated = {}, {}
        self.half_life = 4.0 * slots
        self.filling = set()  # prefetched since the layer's last acquire: not yet anyone's victim

    def value(self, e):
        return self.score.get(e, 0.0) * 2.0 ** (-(self.clock - self.updated.get(e, 0)) / self.half_life)

    def insert(self, e, copy_id, used=False):
        """A prefetch (used False) or a demand miss, which counts as a use at the same tick."""
        self.clock += 1
        self.entries[e] = copy_id
        self.last_use[e] = self.clock
        if used:
            self.access(e, tick=False)

    def access(self, e, tick=True):
        self.clock += tick
        if self.policy == "lfru":
            self.score[e] = self.value(e) + 1.0
            self.updated[e] = self.clock
        self.last_use[e] = self.clock

    def evict_for(self, protected):
        """Frees one slot; False when every resident expert is protected."""
        candidates = [e for e in self.entries if e not in protected and e not in self.filling]
        if not candidates:
            return False
        if self.policy == "lfru":
            victim = min(candidates, key=lambda e: (self.value(e), self.last_use[e]))
        else:
            victim = min(candidates, key=lambda e: self.last_use[e])
        del self.entries[victim]
        return True


def copy_us(c):
    """Link time of one expert's copy."""
    return c["expert_mb"] / c["copy_gb_s"] * 1e3 + c["copy_setup"]


class CopyEngine:
    """Host-to-device copies on two lanes, demand and prefetch, each in order. sharing: both lanes
    copy at once and split the link's rate (the mapped transport's two streams); fifo: one queue,
    prefetches and demand in submission order; yield: a prefetch copies only while no demand
    copy is waiting (strict priority, the limit of a chunked prefetch that yields)."""

    def __init__(self, copy_us, mode):
        self.copy_us, self.mode = copy_us, mode
        self.lanes = ([], [])  # per lane: [copy id, work left in us, submitted at]
        self.now = 0.0
        self.done = {}  # copy id -> time it landed
        self.next_id = 0
        self.busy = 0.0

    def submit(self, lane, t):
        self.advance(t)
        if self.mode == "fifo":
            lane = 0
        self.lanes[lane].append([self.next_id, self.copy_us, t])
        self.next_id += 1
        return self.next_id - 1

    def _rates(self):
        d, p = bool(self.lanes[0]), bool(self.lanes[1])
        if self.mode == "sharing" and d and p:
            return 0.5, 0.5
        if self.mode == "yield" and d:
            return 1.0, 0.0
        return (1.0 if d else 0.0), (1.0 if p else 0.0)

    def advance(self, t, until_id=None):
        """Runs the copies up to time t (or until copy until_id lands, however long it takes). Only
        the host's clock may run the engine (it never goes back); a time before the engine's clock
        runs nothing."""
        if until_id is None and t <= self.now:
            return
        while True:
            if until_id is not None and until_id in self.done:
                return
            rd, rp = self._rates()
            if rd == 0 and rp == 0:
                if until_id is None:
                    self.now = max(self.now, t)
                return
            steps = [lane[0][1] / r for lane, r in zip(self.lanes, (rd, rp)) if lane and r > 0]
            dt = min(steps)
            if until_id is None and self.now + dt > t:
                for lane, r in zip(self.lanes, (rd, rp)):
                    if lane and r > 0:
                        lane[0][1] -= (t - self.now) * r
                self.busy += t - self.now
                self.now = t
                return
            self.now += dt
            self.busy += dt
            for lane, r in zip(self.lanes, (rd, rp)):
                if lane and r > 0:
                    lane[0][1] -= dt * r
                    if lane[0][1] <= 1e-9:
                        self.done[lane[0][0]] = self.now
                        lane.pop(0)

    def landing_time(self, copy_id):
        """When copy copy_id lands if nothing more is submitted, without running the engine: a
        question asked at a time the host has not reached (the GPU's clock, or a wait the host
        does not make) must not move the engine past submissions the host has yet to make."""
        if copy_id in self.done:
            return self.done[copy_id]
        queued = [c[0] for lane in self.lanes for c in lane]
        saved = (tuple([c[:] for c in lane] for lane in self.lanes), self.now, self.busy)
        self.advance(0.0, until_id=copy_id)
        at = self.done[copy_id]
        for i in queued:
            self.done.pop(i, None)
        self.lanes, self.now, self.busy = saved
        return at

    def landed_by(self, copy_id, t):
        return self.landing_time(copy_id) <= t

    def land(self, copy_id):
        """The host waits for copy copy_id: the engine runs until it lands."""
        if copy_id not in self.done:
            self.advance(0.0, until_id=copy_id)
        return self.done[copy_id]


class Model:
    def __init__(self, layers, steps, slots, arm, c):
        self.layers, self.steps, self.c = layers, steps, c
        self.timing, self.top, self.oracle = arm["timing"], arm["top"], arm.get("oracle", False)
        self.deferred = arm.get("deferred", False)
        self.lead = arm.get("lead", 1)  # observe timing: layers ahead hinted after each layer
        self.slot, self.run_ahead = arm.get("slot", False), arm.get("run_ahead", False)
        self.front_queued = False  # run_ahead: this token's layer 0 front follows the last head
        self.slot_layers = 0  # scored layer steps the device looked up without the host
        self.pools = [Pool(slots, arm.get("policy", "lru")) for _ in range(layers)]
        self.engine = CopyEngine(copy_us(c), arm.get("copies", "sharing"))
        self.t_host = self.t_gpu = 0.0
        self.reads = self.accesses = self.hits = 0
        self.used = [set() for _ in range(layers)]  # this token's experts per layer
        self.layer_reads = [0] * layers  # expert copies per layer, prefetches included
        self.token_reads = [0] * layers  # the same, this token's
        self.token_bounds_us = 0.0  # sum over tokens of each token's own bound

    def queue_copy(self, lane, layer):
        copy_id = self.engine.submit(lane, self.t_host)
        self.reads += 1
        self.layer_reads[layer] += 1
        self.token_reads[layer] += 1
        self.t_host += self.c["submit"]
        return copy_id

    def hint(self, layer, experts):
        if layer >= self.layers or not experts:
            return
        self.t_host += self.c["hint"]
        pool = self.pools[layer]
        for e in experts:
            if e in pool.entries:
                continue
            if len(pool.entries) >= pool.slots and not pool.evict_for(self.used[layer]):
                break
            pool.insert(e, self.queue_copy(1, layer))
            pool.filling.add(e)

    def predicted(self, token, layer):
        if self.oracle:  # the layer's own request: a predictor that is never wrong
            return self.steps[token]["a"][layer] if layer < self.layers and layer not in self.steps[token]["h"] else []
        return self.steps[token]["p"].get(layer, [])[: self.top]

    def run_token(self, token):
        c, step = self.c, self.steps[token]
        for u in self.used:
            u.clear()
        for layer, experts in sorted(step["h"].items()):
            self.hint(layer, experts)
        for layer in range(self.layers):
            if self.timing == "observe" and layer > 0:
                for ahead in range(self.lead):
                    self.hint(layer + ahead, self.predicted(token, layer + ahead))
            request = step["a"][layer]
            front = layer == 0 and self.front_queued
            self.t_gpu = (self.t_gpu if front else max(self.t_gpu, self.t_host)) + c["pre"]
            scored = layer not in step["h"]
            if scored and self.slot and self.all_landed(layer, request):
                self.look_up_on_device(token, layer, request)
                continue
            if scored:
                self.t_host = max(self.t_host, self.t_gpu + c["readback"])
            self.t_host += c["acquire"]
            pool = self.pools[layer]
            pool.filling.clear()  # the acquire commits the layer's prefetches
            copies = []  # the copy ids this request waits for (None: in place)
            self.accesses += len(request)
            self.used[layer].update(request)
            for e in request:  # hits first, as the slot pool counts them
                if e in pool.entries:
                    self.hits += 1
                    pool.access(e)
                    copies.append(pool.entries[e])
            for e in request:
                if e in pool.entries:
                    continue
                if len(pool.entries) >= pool.slots:
                    pool.evict_for(set(request))
                pool.insert(e, self.queue_copy(0, layer), used=True)
                copies.append(pool.entries[e])
            if self.timing == "acquire":
                self.hint(layer + 1, self.predicted(token, layer + 1))
            # Hits first: the experts whose bytes are in launch now, each pending one after.
            pending = [i for i in copies if i is not None and not self.engine.landed_by(i, self.t_host)]
            self.t_host += c["launch"] * (1 + len(pending))
            launched_at = self.t_host
            if self.timing == "launched":
                self.hint(layer + 1, self.predicted(token, layer + 1))
            # acquire_finish: the host waits for every copy the request uses (deferred: not here).
            # (deferred: the host does not wait, so the landing times are asked, not waited for)
            lands = sorted(self.engine.landing_time(i) if self.deferred else self.engine.land(i) for i in pending)
            self.t_gpu = max(self.t_gpu, launched_at) + c["expert"] * (len(copies) - len(pending))
            for t in lands:
                self.t_gpu = max(self.t_gpu, t) + c["expert"]
            if not self.deferred:
                self.t_host = max([self.t_host] + lands) + c["wake"]
        self.t_gpu = max(self.t_gpu, self.t_host) + c["head"]
        self.t_host = self.t_gpu + c["readback"]
        self.front_queued = self.run_ahead
        self.token_bounds_us += self.bound_of(self.token_reads, 1)
        self.token_reads = [0] * self.layers

    def all_landed(self, layer, request):
        """Whether every expert of the request is in the layer's pool with its bytes landed by the
        time the router has run (the device's table lists landed experts only)."""
        pool = self.pools[layer]
        return all(e in pool.entries and (pool.entries[e] is None or self.engine.landed_by(pool.entries[e], self.t_gpu))
                   for e in request)

    def look_up_on_device(self, token, layer, request):
        """A scored layer whose experts all hit under the slot table: the host only queues it."""
        c, pool = self.c, self.pools[layer]
        self.t_host += c["launch"]
        pool.filling.clear()
        self.accesses += len(request)
        self.hits += len(request)
        self.used[layer].update(request)
        for e in request:
            pool.access(e)
        if self.timing in ("acquire", "launched"):
            self.hint(layer + 1, self.predicted(token, layer + 1))
        self.t_gpu += c["expert"] * len(request)
        self.slot_layers += 1

    def bound_of(self, layer_reads, n):
        """Sum over layers of max(the layer's resident time, its reads / n on the link), + the head."""
        per_layer = self.c["pre"] + self.c["expert"] * max(len(v) for v in self.steps[0]["a"].values())
        return sum(max(per_layer, reads / n * copy_us(self.c)) for reads in layer_reads) + self.c["head"]

    def bound_us(self, n):
        return self.bound_of(self.layer_reads, n)

    def run(self):
        for t in range(len(self.steps)):
            self.run_token(t)
        n = len(self.steps)
        us = self.t_host / n
        return {
            "tok_s": round(1e6 / us, 2),
            "us_per_token": round(us, 1),
            "hit_rate": round(self.hits / self.accesses, 4),
            "mb_per_token": round(self.reads * self.c["expert_mb"] / n, 1),
            "reads_per_token": self.reads / n,
            "copy_share": round(self.engine.busy / self.t_host, 4),
            # issue 16's bound: per layer the longer of its resident time and its copies on the
            # link, summed, plus the head; this arm's time over it
            "over_bound": round(us / self.bound_us(n), 4),
            # the same bound per token, from that token's own copies (max() is convex: misses that
            # bunch into few tokens make it larger than the even spread's), averaged
            "over_token_bound": round(us / (self.token_bounds_us / n), 4),
            "slot_layers_per_token": round(self.slot_layers / n, 2),
        }


ARMS = {
    "lru": {"timing": "observe", "top": 0},
    "observe3": {"timing": "observe", "top": 3},
    "acquire3": {"timing": "acquire", "top": 3},
    "launched3": {"timing": "launched", "top": 3},
    "observe3-fifo": {"timing": "observe", "top": 3, "copies": "fifo"},
    "launched3-fifo": {"timing": "launched", "top": 3, "copies": "fifo"},
    "observe3-yield": {"timing": "observe", "top": 3, "copies": "yield"},
    "launched3-yield": {"timing": "launched", "top": 3, "copies": "yield"},
    "launched6-yield": {"timing": "launched", "top": 6, "copies": "yield"},
    "lfru": {"timing": "observe", "top": 0, "policy": "lfru"},
    "lfru-observe2": {"timing": "observe", "top": 2, "policy": "lfru"},
    "lfru-observe3": {"timing": "observe", "top": 3, "policy": "lfru"},
    "lfru-launched3": {"timing": "launched", "top": 3, "policy": "lfru"},
    "deferred": {"timing": "observe", "top": 0, "deferred": True},
    "lfru-observe3-deferred": {"timing": "observe", "top": 3, "policy": "lfru", "deferred": True},
    "lfru-launched3-fifo": {"timing": "launched", "top": 3, "policy": "lfru", "copies": "fifo"},
    "lfru-launched3-yield": {"timing": "launched", "top": 3, "policy": "lfru", "copies": "yield"},
    # Predictions that are never wrong (the request itself), as an upper bound on what any
    # predictor buys in this pipeline.
    "oracle-observe": {"timing": "observe", "top": 6, "oracle": True},
    # ... and one that also knows the layer after next (what a predictor two layers ahead buys)
    "lfru-oracle-observe": {"timing": "observe", "top": 6, "oracle": True, "policy": "lfru"},
    "lfru-oracle2-observe": {"timing": "observe", "top": 6, "oracle": True, "policy": "lfru", "lead": 2},
    "oracle-launched-fifo": {"timing": "launched", "top": 6, "oracle": True, "copies": "fifo"},
    "lfru-oracle-launched-fifo": {"timing": "launched", "top": 6, "oracle": True, "policy": "lfru", "copies": "fifo"},
    "lfru-oracle-launched-fifo-deferred": {"timing": "launched", "top": 6, "oracle": True, "policy": "lfru",
                                           "copies": "fifo", "deferred": True},
    # The host round trips arch.slot_table and arch.run_ahead remove (the module's docstring).
    "lru-ra": {"timing": "observe", "top": 0, "run_ahead": True},
    "lru-slot": {"timing": "observe", "top": 0, "slot": True},
    "lru-slot-ra": {"timing": "observe", "top": 0, "slot": True, "run_ahead": True},
    "lfru-observe3-ra": {"timing": "observe", "top": 3, "policy": "lfru", "run_ahead": True},
    "lfru-observe3-slot": {"timing": "observe", "top": 3, "policy": "lfru", "slot": True},
    "lfru-observe3-slot-ra": {"timing": "observe", "top": 3, "policy": "lfru", "slot": True, "run_ahead": True},
}

# The H200 figures the constants were fitted to (decode tok/s, means of two runs; bench/results/
# 2026-12-07-h200.md call 2, mapped transport, one copy per expert): the 12-layer, 256-expert
# Flash slice under tests/data/ds4-flash-routing-heldout.trace.xz, resident at MEASURED_RESIDENT.
MEASURED = {
    (32, "lru"): 69.85, (32, "lfru"): 73.89, (32, "lfru-observe3"): 76.04,
    (64, "lru"): 91.48, (64, "lfru"): 99.29, (64, "lfru-observe3"): 102.65,
    (128, "lru"): 156.26, (128, "lfru"): 159.41, (128, "lfru-observe3"): 166.62,
}
MEASURED_RESIDENT = 451.25


# The grid --fit searches (constants not named keep their DEFAULTS).
FIT_GRID = {"pre": [110, 125, 140], "expert": [5, 8], "copy_setup": [0, 10, 20, 30], "readback": [15, 30],
            "wake": [15, 30, 60]}


def resident_run(layers, n_experts, steps, c):
    model = Model(layers, steps, n_experts, ARMS["lru"], c)
    for pool in model.pools:  # every expert in place from the start
        pool.entries = {e: None for e in range(n_experts)}
    return model.run()


def fit(layers, n_experts, steps, resident_tok_s=MEASURED_RESIDENT):
    """The FIT_GRID point whose modelled tok/s are closest to MEASURED and the resident rate (sum of
    squared relative errors)."""
    import itertools
    best = None
    for values in itertools.product(*FIT_GRID.values()):
        c = dict(DEFAULTS, **dict(zip(FIT_GRID, values)))
        err = (resident_run(layers, n_experts, steps, c)["tok_s"] / resident_tok_s - 1) ** 2
        for (slots, arm), measured in MEASURED.items():
            err += (Model(layers, steps, slots, ARMS[arm], c).run()["tok_s"] / measured - 1) ** 2
        if best is None or err < best[0]:
            best = (err, c)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--slots", default="32,64,128")
    p.add_argument("--tokens", type=int, default=257, help="positions replayed (a run of 1 + 256 tokens)")
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--set", action="append", default=[], metavar="KEY=US", help="override a constant")
    p.add_argument("--json")
    p.add_argument("--fit", action="store_true", help="search FIT_GRID for the constants closest to MEASURED")
    args = p.parse_args()
    c = dict(DEFAULTS)
    for kv in args.set:
        key, _, value = kv.partition("=")
        if key not in c:
            raise SystemExit(f"--set {kv}: unknown constant {key!r}; known: {', '.join(c)}")
        try:
            c[key] = float(value)
        except ValueError:
            raise SystemExit(f"--set {kv}: expected a number after '='") from None
        if not c[key] > 0 and key in ("expert_mb", "copy_gb_s"):
            raise SystemExit(f"--set {kv}: {key} must be above 0")
    try:
        slot_counts = [int(v) for v in args.slots.split(",")]
    except ValueError:
        raise SystemExit(f"--slots {args.slots}: expected comma-separated slot counts") from None
    if args.tokens < 1 or any(v < 1 for v in slot_counts):
        raise SystemExit("--tokens and --slots must be at least 1")
    layers, n_experts, steps = load_trace(args.trace, args.tokens)
    top_k = max(len(v) for step in steps for v in step["a"].values())
    if min(slot_counts) < top_k:
        raise SystemExit(f"--slots {args.slots}: a layer needs at least its top-k ({top_k}) slots")
    if args.fit:
        if (layers, n_experts) != (12, 256):
            raise SystemExit(f"--fit: MEASURED is the 12-layer, 256-expert Flash slice's; {args.trace} has "
                             f"{layers} layers of {n_experts} experts")
        err, c = fit(layers, n_experts, steps)
        print(f"fitted over {FIT_GRID}: sum of squared relative errors {err:.4f}")
    print(f"model of {args.trace}: {layers} layers, {len(steps)} positions; constants {c}")
    res = resident_run(layers, n_experts, steps, c)
    print(f"resident (modelled): {res['tok_s']} tok/s")
    print("| slots | arm | modelled tok/s | / lru | measured | hit rate | MB/token | copy engine busy | / bound "
          "| / token bound | device lookups / token |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    results = []
    for slots in slot_counts:
        lru = None
        for name in args.arms.split(","):
            if name not in ARMS:
                raise SystemExit(f"--arms: unknown arm {name!r}; known: {', '.join(ARMS)}")
            r = Model(layers, steps, slots, ARMS[name], c).run()
            lru = r["tok_s"] if name == "lru" else lru
            ratio = f"{r['tok_s'] / lru:.3f}" if lru else "-"
            m = MEASURED.get((slots, name)) if (layers, n_experts) == (12, 256) else None
            print(f"| {slots} | {name} | {r['tok_s']} | {ratio} | {m if m else '-'} | {r['hit_rate']:.2%} | "
                  f"{r['mb_per_token']} | {r['copy_share']:.0%} | {r['over_bound']:.3f} | "
                  f"{r['over_token_bound']:.3f} | {r['slot_layers_per_token']} |")
            results.append(dict(r, slots=slots, arm=name, measured=m))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"constants": c, "resident": res, "arms": results}, fh, indent=1)


if __name__ == "__main__":
    main()
