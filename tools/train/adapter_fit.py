"""Fitting HFADPT prefetch adapters: a low-rank linear map from layer L's hidden state (the mean
of the mHC streams after layer L, which is what the engine hands the pager's observe() hook) to
scores of layer L+1's experts.

Closed-form and streaming: the training positions only contribute sufficient statistics
(X'X and X'Y with a constant column for the intercept, in float64), so millions of positions cost
two small matrices. The fit is ridge regression followed by reduced-rank truncation:

    W    = (X'X + lambda I)^-1 X'Y                       full-rank ridge, [D+1, E]
    V_r  = top-r right singular vectors of the fitted values X W (from W' X'X W, [E, E])
    A    = (W_D V_r)'  [r, D],   B = V_r  [E, r],   bias = w_0 V_r V_r'   [E]

so scores(h) = B (A h) + bias, the form the engine's AdapterScorer evaluates (HFADPT v2 carries
the bias; v1 files have none). Two targets are fitted and compared on held-out recall: the 0/1
indicator of the experts layer L+1's router chose, and the router's own selection scores.

Everything here takes torch tensors; serialization needs only struct and numpy.
"""
import struct

MAGIC = b"HFADPT\0\0"


TARGETS = ("indicator", "router")


class TransitionStats:
    """X'X and X'Y for one transition L -> L+1, accumulated batch by batch, for two targets:
    "indicator" (1 for the experts layer L+1 chose, else 0) and "router" (layer L+1's selection
    scores on its real input, score_fn(logits) + bias, whose top-k is the choice)."""

    def __init__(self, torch, d_model, n_experts, device):
        self.torch = torch
        self.xtx = torch.zeros(d_model + 1, d_model + 1, dtype=torch.float64, device=device)
        self.xty = {t: torch.zeros(d_model + 1, n_experts, dtype=torch.float64, device=device) for t in TARGETS}
        self.count = 0

    def add(self, hidden, chosen, selection, n_experts):
        """hidden [N, D], chosen [N, k] expert ids of layer L+1, selection [N, E] its scores."""
        torch = self.torch
        x = torch.cat([torch.ones(hidden.shape[0], 1, device=hidden.device, dtype=torch.float64),
                       hidden.double()], dim=1)
        y = torch.zeros(hidden.shape[0], n_experts, dtype=torch.float64, device=hidden.device)
        y.scatter_(1, chosen.long(), 1.0)
        self.xtx += x.T @ x
        self.xty["indicator"] += x.T @ y
        self.xty["router"] += x.T @ selection.double()
        self.count += hidden.shape[0]


def fit(torch, stats, rank, ridge=1e-3, target="indicator"):
    """(A [r, D], B [E, r], bias [E]) as float32 tensors; ridge is relative to the mean diagonal."""
    xtx = stats.xtx
    lam = ridge * xtx.diagonal()[1:].mean()
    reg = torch.eye(xtx.shape[0], dtype=xtx.dtype, device=xtx.device) * lam
    reg[0, 0] = 0.0  # no penalty on the intercept
    w = torch.linalg.solve(xtx + reg, stats.xty[target])  # [D+1, E]
    fitted_cov = w.T @ xtx @ w  # [E, E] = (X W)'(X W)
    _, vecs = torch.linalg.eigh(fitted_cov)  # ascending eigenvalues
    v = vecs[:, -rank:].flip(1)  # [E, r], most important first
    a = (w[1:] @ v).T  # [r, D]
    bias = w[0] @ v @ v.T  # [E]
    return a.float(), v.float(), bias.float()


def f16_round(torch, a, b, bias):
    """The weights as the engine reads them: A and B through float16, the bias float32."""
    return a.half().float(), b.half().float(), bias.float()


def scores(hidden, a, b, bias):
    """[N, E] = B (A h) + bias for every row of hidden [N, D]."""
    return (hidden.float() @ a.T) @ b.T + bias


def recall(torch, predicted, chosen):
    """Share of chosen experts ([N, k]) found in predicted ([N, M])."""
    hits = (predicted.unsqueeze(2) == chosen.unsqueeze(1)).any(dim=1).sum().item()
    return hits / chosen.numel()


def serialize(entries, d_model, n_experts, rank, with_bias=True):
    """HFADPT bytes. entries: [(src_layer, A [r, D], B [E, r], bias [E])] as numpy-convertible tensors.

    v2 appends f32 bias[n_exp] to each entry; v1 (with_bias=False) leaves it out.
    """
    import numpy as np
    version = 2 if with_bias else 1
    out = [MAGIC, struct.pack("<5I", version, len(entries), d_model, n_experts, rank)]
    for src, a, b, bias in entries:
        a = np.asarray(a.detach().cpu().numpy(), dtype=np.float32)
        b = np.asarray(b.detach().cpu().numpy(), dtype=np.float32)
        if a.shape != (rank, d_model) or b.shape != (n_experts, rank):
            raise ValueError(f"adapter entry {src}: A {a.shape}, B {b.shape}")
        out.append(struct.pack("<I", src))
        out.append(a.astype("<f2").tobytes())
        out.append(b.astype("<f2").tobytes())
        if with_bias:
            out.append(np.asarray(bias.detach().cpu().numpy(), dtype="<f4").tobytes())
    return b"".join(out)


def parse(data):
    """Inverse of serialize (for the self-check): (version, d_model, n_experts, rank, entries)."""
    import numpy as np
    if data[:8] != MAGIC:
        raise ValueError("not an HFADPT file")
    version, n, d, e, r = struct.unpack_from("<5I", data, 8)
    at = 28
    entries = []
    for _ in range(n):
        (src,) = struct.unpack_from("<I", data, at)
        at += 4
        a = np.frombuffer(data, dtype="<f2", count=r * d, offset=at).reshape(r, d)
        at += 2 * r * d
        b = np.frombuffer(data, dtype="<f2", count=e * r, offset=at).reshape(e, r)
        at += 2 * e * r
        bias = None
        if version >= 2:
            bias = np.frombuffer(data, dtype="<f4", count=e, offset=at)
            at += 4 * e
        entries.append((src, a, b, bias))
    if at != len(data):
        raise ValueError(f"HFADPT: {len(data) - at} trailing bytes")
    return version, d, e, r, entries
