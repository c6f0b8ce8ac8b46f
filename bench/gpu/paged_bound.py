#!/usr/bin/env python3
"""Paged decode against its physical bound, one row per arm of a GPU decode benchmark folder.

paged_bound.py OUT [ARM ...]
  OUT holds resident.json, weights.json, bandwidth.json and one <arm>.json per arm (moepage run
  --stats-json), as bench/gpu/pipeline-sweep.sh and replay-decode.sh write them. Without ARM names,
  every paged arm in OUT.

The bound of a token (issue 16): the sum over layers of max(the layer's resident time, the bytes
the layer read / the slower copy ceiling). The bytes read per layer: each layer's demand misses
times the expert size, plus the prefetch bytes (the pager's total bytes read minus the misses'),
which the stats do not split by layer: they are laid on the hash-routed layers (the only layers
hinted when replay_predictions is 0), or spread over every paged layer in proportion to its misses
when the arm handed predictions to the pager. A layer's resident time is the resident arm's
decode time per token over the layers (the layers of the slice have one shape). The slower ceiling
is the smaller of the pinned host->device copy and the best page-cache read rate measured beside it
(each the best over bandwidth.json and, where the folder has it, paths.json),
except for an arm on the mapped transport (its log's first line names the transport): it copies
straight from the registered page cache with no reader threads, so its ceiling is the pinned copy
alone (on a host whose readers are slow the smaller rate would put such an arm under its bound).

That bound spreads each layer's bytes evenly over the run's tokens. A token's own bound, as the
issue words it, takes the layer's bytes of that token: where an arm's access trace lies beside its
statistics (<arm>.trace, from moepage run --trace), the row also gives token_bound_ms, the mean
over the decoded tokens of each token's sum over layers of max(the layer's resident time, the
experts read for that token's layer / the ceiling), and over_token_bound. An expert counts as read
for the access that missed it or for the first use of its prefetch (the trace's hit = 0 or
prefetched = 1 rows); a prefetch evicted unused counts nowhere, so that bound does not grow with a
predictor's mistakes. As max() is convex, a token's bound is at least the even spread's: misses
that bunch into few tokens are slower than the same misses spread out, and only this bound says so.
"""
import collections
import json
import os
import sys


def load(path):
    with open(path) as fh:
        return json.load(fh)


def trace_reads(path):
    """{token: {layer: experts read}} from a live run's access trace (moepage-trace v1-v3 text, the
    5-field access rows with outcomes); hint and predict rows and comments are skipped."""
    reads = collections.defaultdict(lambda: collections.defaultdict(int))
    with open(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            if line.startswith("#") or not line.strip() or line.startswith(("hint,", "predict,", "token,")):
                continue
            f = line.strip().split(",")
            if len(f) != 5 or not all(x.isdigit() for x in f):
                raise SystemExit(f"{path}:{line_no}: expected token,layer,expert,hit,prefetched (numbers), "
                                 f"got {line.strip()!r}")
            token, layer, _, hit, prefetched = (int(x) for x in f)
            reads[token][layer] += (hit == 0) + (prefetched == 1)
    return reads


def token_bound_ms(reads, steps, n_layers, res_ms_layer, expert_bytes, ceiling):
    """The mean over the trace's last `steps` tokens (the decode steps; the prefill's token ids come
    first, however many it began) of sum over layers of max(res_ms_layer, that token's reads of the
    layer / ceiling)."""
    tokens = sorted(reads)[-steps:] if steps > 0 else []
    if not tokens:
        raise SystemExit("paged_bound.py: the trace holds no decode step's access rows")
    total = 0.0
    for t in tokens:
        total += sum(max(res_ms_layer, 1e3 * reads[t].get(l, 0) * expert_bytes / ceiling) for l in range(n_layers))
    return total / len(tokens)


def arm_row(arm, resident, weights, ceiling, hash_layers, trace=None):
    run, pager, layers = arm["run"], arm["pager"], arm["layers"]
    n_layers = len(layers)
    tokens = run["prompt_tokens"] + run["generated_tokens"]
    expert_bytes = weights["routed_bytes_all"] / (n_layers * 256)
    res_ms_layer = 1e3 * resident["run"]["decode_seconds"] / resident["run"]["generated_tokens"] / n_layers
    miss_bytes = [l["misses"] * expert_bytes for l in layers]
    prefetch_bytes = max(0.0, pager["bytes_read"] - pager["load_bytes_read"] - sum(miss_bytes))
    if pager["predictions"] == 0 and hash_layers:
        extra = [prefetch_bytes / len(hash_layers) if i in hash_layers else 0.0 for i in range(n_layers)]
    else:
        total = sum(miss_bytes) or 1.0
        extra = [prefetch_bytes * m / total for m in miss_bytes]
    bound_ms = sum(max(res_ms_layer, 1e3 * (m + e) / tokens / ceiling) for m, e in zip(miss_bytes, extra))
    ms = 1e3 * run["decode_seconds"] / run["generated_tokens"]
    res_tok_s = resident["run"]["generated_tokens"] / resident["run"]["decode_seconds"]
    read_per_token = (pager["bytes_read"] - pager["load_bytes_read"]) / tokens
    extra_ms = ms - 1e3 / res_tok_s
    per_token = {}
    if trace:
        # decode_seconds covers the decode steps: one fewer than the generated tokens, the first of
        # which the prefill made.
        steps = run["generated_tokens"] - 1
        tb = token_bound_ms(trace_reads(trace), steps, n_layers, res_ms_layer, expert_bytes, ceiling)
        step_ms = 1e3 * run["decode_seconds"] / steps
        per_token = {"token_bound_ms": round(tb, 3), "over_token_bound": round(step_ms / tb, 3)}
    return {
        "decode_tok_s": round(1e3 / ms, 2),
        "ms_per_token": round(ms, 3),
        "bound_ms": round(bound_ms, 3),
        "over_bound": round(ms / bound_ms, 3),
        "bound_tok_s": round(1e3 / bound_ms, 2),
        "of_resident": round(1e3 / ms / res_tok_s, 4),
        "hit_rate": round(pager["hit_rate"], 4),
        "mb_read_per_token": round(read_per_token / 1e6, 1),
        "miss_path_gb_s": round(read_per_token / extra_ms / 1e6, 2) if extra_ms > 0 else None,
        "of_ceiling": round(read_per_token / (extra_ms / 1e3) / ceiling, 4) if extra_ms > 0 else None,
        **per_token,
    }


def is_paged_arm(stats):
    """Whether a JSON file of a benchmark folder is a paged arm's statistics (moepage run
    --stats-json of a pager that pages), not the resident arm or a measurement (paths.json,
    pieces-*.json) that shares the folder."""
    return isinstance(stats, dict) and "run" in stats and "layers" in stats and \
        not stats.get("pager", {}).get("resident", True)


def transport_of(log_path):
    """The transport an arm's log names ("[info] run: model M, arch A, pager P, transport T"), or None."""
    try:
        with open(log_path) as fh:
            for line in fh:
                if "run: model" in line and ", transport " in line:
                    return line.rsplit(", transport ", 1)[1].split()[0].rstrip(",")
    except OSError:
        pass
    return None


def trace_of(out, name):
    """OUT/NAME.trace when the arm's run wrote one, else None."""
    path = os.path.join(out, name + ".trace")
    return path if os.path.isfile(path) else None


class Folder:
    """A benchmark folder's shared measurements: weights, the copy rates and the resident arm."""

    # Hash-routed layers: those whose hit rate a token's hints make (nearly) perfect in the
    # resident-free arms are not knowable from the stats; the flash preset's first 3 layers are.
    HASH_LAYERS = {0, 1, 2}

    def __init__(self, out):
        self.out = out
        self.weights = load(os.path.join(out, "weights.json"))
        self.resident = load(os.path.join(out, "resident.json"))
        # Every measurement of the folder counts, the best of each rate taken: the link and the page
        # cache did at least that in this call. (One 5-rep measurement alone varied by 8% between
        # two calls on one H100, 50.7 and 54.6 GB/s, and moved every ratio with it.)
        measured = [load(os.path.join(out, "bandwidth.json"))]
        if os.path.exists(os.path.join(out, "paths.json")):
            measured.append(load(os.path.join(out, "paths.json")))
        self.pinned = max(m["pinned_to_device"]["bytes_per_s"] for m in measured if "pinned_to_device" in m)
        self.cache = max(r["bytes_per_s"] for m in measured for r in m.get("page_cache", {}).get("runs", []))
        self.ceiling = min(self.pinned, self.cache)

    def resident_tok_s(self):
        return self.resident["run"]["generated_tokens"] / self.resident["run"]["decode_seconds"]

    def rows(self, names=None):
        """(name, arm_row) for each paged arm among NAMES (default: every JSON file of the folder)."""
        names = names or sorted(f[:-5] for f in os.listdir(self.out) if f.endswith(".json"))
        for name in names:
            arm = load(os.path.join(self.out, name + ".json"))
            if not is_paged_arm(arm):
                continue
            mapped = transport_of(os.path.join(self.out, name + ".log")) == "mapped"
            yield name, arm_row(arm, self.resident, self.weights, self.pinned if mapped else self.ceiling,
                                self.HASH_LAYERS, trace_of(self.out, name))


def main():
    folder = Folder(sys.argv[1])
    print(f"ceiling: {folder.ceiling / 1e9:.2f} GB/s (pinned copy {folder.pinned / 1e9:.2f}, page cache best "
          f"{folder.cache / 1e9:.2f}; mapped-transport arms: the pinned copy); resident {folder.resident_tok_s():.1f} tok/s")
    for name, row in folder.rows(sys.argv[2:]):
        print(name, json.dumps(row))


if __name__ == "__main__":
    main()
