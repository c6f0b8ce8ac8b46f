"""Expert-routing traces in the text formats `moepage simulate` reads (plugins/support/pager-core trace.hpp):

    # moepage-trace v1 layers=L experts=E top_k=K [key=value ...]
    token,layer,expert
    0,0,17
    ...

Rows are token-major (token, then layer, then the token's experts at that layer in ascending
order), so token never decreases and each (token, layer) request lists distinct experts. v3 adds
hint and predict rows; v4 (format_trace_v4, what routing_study.py writes) holds the same events
with one line per token, request, hint call and prediction, a third of v3's size once compressed.
Also the two routing statistics the issue asks for: the share of accesses taken by the most-used
10 % of experts, and the LRU hit rate with a quarter of each layer's experts resident.
"""
import math
from collections import OrderedDict


def header(version, layers, experts, top_k, extra=None):
    """The first line of a trace, with the extra key=value pairs after the geometry."""
    line = f"# moepage-trace v{version} layers={layers} experts={experts} top_k={top_k}"
    for key, value in (extra or {}).items():
        line += f" {key}={value}"
    return line


def checked_request(chosen, experts, token, layer):
    """A request's experts in ascending order, or ValueError if one repeats or is out of range."""
    chosen = sorted(chosen)
    if len(set(chosen)) != len(chosen) or not all(0 <= e < experts for e in chosen):
        raise ValueError(f"token {token} layer {layer}: bad expert list {chosen} (experts 0..{experts - 1}, distinct)")
    return chosen


def format_trace(choices, experts, top_k, extra=None):
    """choices[layer][token] = list of expert ids. Returns the trace text."""
    layers = len(choices)
    tokens = len(choices[0]) if layers else 0
    for layer, per_token in enumerate(choices):
        if len(per_token) != tokens:
            raise ValueError(f"layer {layer} has {len(per_token)} tokens, layer 0 has {tokens}")
    out = [header(1, layers, experts, top_k, extra), "token,layer,expert"]
    for token in range(tokens):
        for layer in range(layers):
            out.extend(f"{token},{layer},{e}" for e in checked_request(choices[layer][token], experts, token, layer))
    return "\n".join(out) + "\n"


def parse_trace(text):
    """Inverse of format_trace (for the self-check): (meta dict, choices[layer][token])."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# moepage-trace v1 "):
        raise ValueError("missing the '# moepage-trace v1' header")
    meta = dict(field.split("=", 1) for field in lines[0].split()[3:])
    layers = int(meta["layers"])
    choices = [[] for _ in range(layers)]
    last = None
    for line in lines[1:]:
        if not line or line.startswith("#") or line == "token,layer,expert":
            continue
        token, layer, expert = (int(v) for v in line.split(","))
        if (token, layer) != last:
            if len(choices[layer]) != token:
                raise ValueError(f"token {token} layer {layer} out of order")
            choices[layer].append([])
            last = (token, layer)
        choices[layer][token].append(expert)
    return meta, choices


def top_share(per_token, experts, fraction=0.1):
    """Share of one layer's accesses that go to its most-used `fraction` of experts."""
    counts = [0] * experts
    for chosen in per_token:
        for expert in chosen:
            counts[expert] += 1
    total = sum(counts)
    keep = max(1, round(fraction * experts))
    return sum(sorted(counts, reverse=True)[:keep]) / total if total else 0.0


def load_entropy(per_token, experts):
    """Entropy (bits) of one layer's expert load; log2(experts) when perfectly balanced."""
    counts = [0] * experts
    for chosen in per_token:
        for expert in chosen:
            counts[expert] += 1
    total = sum(counts)
    return -sum(c / total * math.log2(c / total) for c in counts if c) if total else 0.0


def lru_hit_rate(per_token, slots):
    """Hit rate of one layer's accesses with `slots` experts kept by least-recent use."""
    cache = OrderedDict()
    hits = accesses = 0
    for chosen in per_token:
        for expert in chosen:
            accesses += 1
            if expert in cache:
                hits += 1
                cache.move_to_end(expert)
            else:
                cache[expert] = True
                if len(cache) > slots:
                    cache.popitem(last=False)
    return hits / accesses if accesses else 0.0


def routing_report(choices, experts, mlp_layer_types):
    """Lines of text with the per-layer statistics and their means."""
    slots = max(1, experts // 4)
    lines = [f"routing: per layer, share of accesses to the top 10% of experts (uniform would be "
             f"{max(1, round(0.1 * experts)) / experts:.3f}) and LRU hit rate with {slots}/{experts} slots"]
    shares, rates, entropies = [], [], []
    for layer, per_token in enumerate(choices):
        share, rate = top_share(per_token, experts), lru_hit_rate(per_token, slots)
        entropy = load_entropy(per_token, experts)
        shares.append(share)
        rates.append(rate)
        entropies.append(entropy)
        lines.append(f"  layer {layer} ({mlp_layer_types[layer]}): top-10% share {share:.3f}  load entropy "
                     f"{entropy:.3f} of {math.log2(experts):.3f} bits  LRU@25% hit rate {rate:.3f}")
    lines.append(f"  mean: top-10% share {sum(shares) / len(shares):.3f}  LRU@25% hit rate {sum(rates) / len(rates):.3f}")
    return lines, shares, rates, entropies


def format_trace_v3(routes, hints, predictions, experts, top_k, extra=None):
    """A v3 trace: per token, the hash layers' hint rows (the token's experts, known before the
    step, in the order the engine hints them), then per layer its access rows followed by the
    predictor's rows for the next layer, as the engine's pager sees them in a decode step.

    routes[layer][token] = expert ids; hints[layer][token] = ranked ids (hash layers only, else
    absent); predictions[layer][token] = ranked ids proposed for `layer` after layer - 1 (absent
    for layers nothing predicts). Returns the text.
    """
    layers = len(routes)
    tokens = len(routes[0]) if layers else 0
    out = [header(3, layers, experts, top_k, extra), "token,layer,expert"]
    hint_layers = sorted(hints)
    for token in range(tokens):
        for layer in hint_layers:
            out.extend(f"hint,{token},{layer},{e},{rank}" for rank, e in enumerate(hints[layer][token]))
        for layer in range(layers):
            chosen = checked_request(routes[layer][token], experts, token, layer)
            out.extend(f"{token},{layer},{e}" for e in chosen)
            following = predictions.get(layer + 1)
            if following is not None:
                out.extend(f"predict,{token},{layer + 1},{e},{rank}"
                           for rank, e in enumerate(following[token]))
    return "\n".join(out) + "\n"


def format_trace_v4(routes, hints, predictions, experts, top_k, extra=None):
    """format_trace_v3's events in v4: per token a 't' line, a line per hash layer's hint call
    ('h LAYER EXPERTS...' in rank order), then per layer its request ('a LAYER EXPERTS...',
    ascending) and the prediction for the next layer ('p LAYER EXPERTS...' in rank order).
    Same inputs as format_trace_v3; empty lists write no line, as they write no row there.
    """
    layers = len(routes)
    tokens = len(routes[0]) if layers else 0
    out = [header(4, layers, experts, top_k, extra)]
    hint_layers = sorted(hints)

    def call(kind, layer, ids):
        if ids:
            out.append(f"{kind} {layer} " + " ".join(map(str, ids)))

    for token in range(tokens):
        out.append(f"t {token}")
        for layer in hint_layers:
            call("h", layer, hints[layer][token])
        for layer in range(layers):
            call("a", layer, checked_request(routes[layer][token], experts, token, layer))
            following = predictions.get(layer + 1)
            if following is not None:
                call("p", layer + 1, following[token])
    return "\n".join(out) + "\n"
