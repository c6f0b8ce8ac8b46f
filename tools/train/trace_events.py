"""Any version of the routing-trace text (v1-v4, plugins/support/pager-core trace.hpp) as a list of
events, and events written as v4: what trace_to_v4.py converts with and selftest.py compares by.

An event is one of
    ("t", token)                 a token begins (tokens strictly increase)
    ("a", layer, (e0, e1, ...))  one request (acquire) of distinct experts
    ("h", layer, (e0, e1, ...))  one hint call, experts in rank order
    ("p", layer, (e0, e1, ...))  one prediction, experts in rank order
    ("#", text)                  a comment line, kept where it stood
Requests of a v1-v3 file are grouped the way the C++ reader groups them: consecutive access rows
with the same token and layer and no hint or predict row between them. Standard library only.
"""

KINDS = {"hint": "h", "predict": "p"}


class TraceError(ValueError):
    """A line that is not a valid trace line; the message names the line number."""


def read_events(text):
    """(header fields after the version, version, events, has_outcomes) of a trace's text."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None or not lines[start].startswith("# moepage-trace v"):
        raise TraceError("line 1: expected the header '# moepage-trace vN layers=L experts=E ...'")
    words = lines[start].split()
    version = int(words[2][1:]) if words[2][1:].isdigit() else 0
    if not 1 <= version <= 4:
        raise TraceError(f"line {start + 1}: trace format {words[2]!r} is not v1, v2, v3 or v4")
    reader = _read_v4 if version == 4 else _read_v3
    events, outcomes = reader(lines, start + 1)
    return words[3:], version, events, outcomes


def data_events(events):
    """The events without the comments: what two traces of the same run must agree on."""
    return [e for e in events if e[0] != "#"]


def format_v4(fields, events):
    """The v4 text of read_events' header fields and events."""
    out = ["# moepage-trace v4 " + " ".join(fields)]
    for event in events:
        if event[0] == "#":
            out.append(event[1])
        elif event[0] == "t":
            out.append(f"t {event[1]}")
        else:
            out.append(f"{event[0]} {event[1]} " + " ".join(map(str, event[2])))
    return "\n".join(out) + "\n"


def _numbers(fields, line_no):
    try:
        values = [int(f) for f in fields]
    except ValueError:
        raise TraceError(f"line {line_no}: expected numbers, got {','.join(fields)!r}") from None
    if any(v < 0 for v in values):
        raise TraceError(f"line {line_no}: negative number in {','.join(fields)!r}")
    return values


def _distinct(experts, what, line_no):
    if len(set(experts)) != len(experts):
        raise TraceError(f"line {line_no}: an expert appears twice in one {what}: {list(experts)}")


def _read_v3(lines, first):
    events, outcomes = [], None
    token, last = None, None  # last: the latest non-comment event, whose list a row may extend
    for line_no, line in enumerate(lines[first:], first + 1):
        if not line or line.startswith("#"):
            if line:
                events.append(("#", line))
            continue
        if line in ("token,layer,expert", "token,layer,expert,hit,prefetched"):
            continue
        fields = line.split(",")
        kind = KINDS.get(fields[0])
        if kind:
            if len(fields) != 5:
                raise TraceError(f"line {line_no}: expected {fields[0]},token,layer,expert,rank, got {line!r}")
            row_token, layer, expert, rank = _numbers(fields[1:], line_no)
        else:
            if len(fields) not in (3, 5):
                raise TraceError(f"line {line_no}: expected token,layer,expert[,hit,prefetched], got {line!r}")
            outcomes = outcomes or len(fields) == 5
            row_token, layer, expert = _numbers(fields[:3], line_no)
            kind, rank = "a", None
        if token is not None and row_token < token:
            raise TraceError(f"line {line_no}: token {row_token} comes after token {token}")
        if row_token != token:
            events.append(("t", row_token))
            token, last = row_token, None
        same_call = last is not None and last[0] == kind and last[1] == layer
        if kind == "a" and same_call:
            last[2].append(expert)
        elif rank is not None and rank > 0:
            if not same_call or len(last[2]) != rank:
                raise TraceError(f"line {line_no}: rank {rank} continues no call of layer {layer}")
            last[2].append(expert)
        else:
            last = (kind, layer, [expert])
            events.append(last)
        _distinct(last[2], "call", line_no)
    return [e if e[0] in "t#" else (e[0], e[1], tuple(e[2])) for e in events], bool(outcomes)


def _read_v4(lines, first):
    events, token = [], None
    for line_no, line in enumerate(lines[first:], first + 1):
        if not line or line.startswith("#"):
            if line:
                events.append(("#", line))
            continue
        fields = line.split(" ")
        if fields[0] == "t" and len(fields) == 2:
            (new_token,) = _numbers(fields[1:], line_no)
            if token is not None and new_token <= token:
                raise TraceError(f"line {line_no}: token {new_token} comes after token {token}")
            token = new_token
            events.append(("t", token))
        elif fields[0] in ("a", "h", "p") and len(fields) >= 3 and token is not None:
            layer, *experts = _numbers(fields[1:], line_no)
            _distinct(experts, "call", line_no)
            events.append((fields[0], layer, tuple(experts)))
        else:
            raise TraceError(f"line {line_no}: expected 't TOKEN' or 'a|h|p LAYER EXPERT...' after a t line, "
                             f"got {line!r}")
    return events, False
