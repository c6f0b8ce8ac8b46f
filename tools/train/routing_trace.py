"""Expert-routing traces in the text format `moepage simulate` reads (plugins/support/pager-core trace.hpp):

    # moepage-trace v1 layers=L experts=E top_k=K [key=value ...]
    token,layer,expert
    0,0,17
    ...

Rows are token-major (token, then layer, then the token's experts at that layer in ascending
order), so token never decreases and each (token, layer) request lists distinct experts. Also
the two routing statistics the issue asks for: the share of accesses taken by the most-used 10 %
of experts, and the LRU hit rate with a quarter of each layer's experts resident.
"""
from collections import OrderedDict


def format_trace(choices, experts, top_k, extra=None):
    """choices[layer][token] = list of expert ids. Returns the trace text."""
    layers = len(choices)
    tokens = len(choices[0]) if layers else 0
    for layer, per_token in enumerate(choices):
        if len(per_token) != tokens:
            raise ValueError(f"layer {layer} has {len(per_token)} tokens, layer 0 has {tokens}")
    header = f"# moepage-trace v1 layers={layers} experts={experts} top_k={top_k}"
    for key, value in (extra or {}).items():
        header += f" {key}={value}"
    out = [header, "token,layer,expert"]
    for token in range(tokens):
        for layer in range(layers):
            chosen = sorted(choices[layer][token])
            if len(set(chosen)) != len(chosen):
                raise ValueError(f"token {token} layer {layer} repeats an expert: {chosen}")
            for expert in chosen:
                if not 0 <= expert < experts:
                    raise ValueError(f"token {token} layer {layer}: expert {expert} outside 0..{experts - 1}")
                out.append(f"{token},{layer},{expert}")
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
    shares, rates = [], []
    for layer, per_token in enumerate(choices):
        share, rate = top_share(per_token, experts), lru_hit_rate(per_token, slots)
        shares.append(share)
        rates.append(rate)
        lines.append(f"  layer {layer} ({mlp_layer_types[layer]}): top-10% share {share:.3f}  LRU@25% hit rate {rate:.3f}")
    lines.append(f"  mean: top-10% share {sum(shares) / len(shares):.3f}  LRU@25% hit rate {sum(rates) / len(rates):.3f}")
    return lines, shares, rates
