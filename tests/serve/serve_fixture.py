"""A `moepage serve` child process for the serve tests, and the HTTP calls they make.

The server listens on loopback with --port 0 (the kernel picks a free port; the server prints
it), so suites never race for a port. Every call has a timeout; stop() sends SIGTERM and returns
the exit status.
"""
import argparse
import http.client
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

from prometheus_client.parser import text_string_to_metric_families

START_TIMEOUT_S = 60
CALL_TIMEOUT_S = 60


def parse_args():
    """--moepage BIN --source DIR; the rest goes to unittest."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--moepage", required=True)
    parser.add_argument("--source", required=True)
    args, rest = parser.parse_known_args()
    return args, [sys.argv[0]] + rest


class Server:
    def __init__(self, moepage, source, profile="configs/default.yaml", extra=()):
        self.moepage, self.source = moepage, source
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.stderr_text = ""
        self.proc = subprocess.Popen(
            [moepage, "serve", "--profile", os.path.join(source, profile), "--model",
             os.path.join(source, "models/ds4-debian-tiny"), "--port", "0", "--log-level", "warn", *extra],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True, cwd=source)
        deadline = time.monotonic() + START_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline and self.proc.poll() is None:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                break
        if "listening on http://" not in line:
            self.proc.kill()
            raise RuntimeError("the server did not start: " + line + self.errors())
        self.port = int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])

    def errors(self):
        """What the server wrote to stderr (kept after stop())."""
        if not self.stderr.closed:
            self.stderr.seek(0)
            self.stderr_text = self.stderr.read()
        return self.stderr_text

    def connection(self, timeout=CALL_TIMEOUT_S):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or text) of one request on a fresh connection."""
        conn = self.connection()
        hdrs = {"Content-Type": "application/json"}
        hdrs.update(headers or {})
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read().decode()
        finally:
            conn.close()
        ctype = resp.getheader("Content-Type", "")
        return resp.status, json.loads(raw) if ctype.startswith("application/json") else raw

    def post(self, path, body, headers=None):
        return self.request("POST", path, body, headers)

    def stream(self, path, body, headers=None, on_event=None):
        """The data payloads of a streamed response ("[DONE]" included). on_event(i, payload)
        may return False to stop reading and close the connection."""
        conn = self.connection()
        hdrs = {"Content-Type": "application/json"}
        hdrs.update(headers or {})
        conn.request("POST", path, body=json.dumps(dict(body, stream=True)), headers=hdrs)
        resp = conn.getresponse()
        if resp.status != 200:
            raise AssertionError("stream answered %d: %s" % (resp.status, resp.read().decode()))
        events = []
        try:
            while True:
                line = resp.readline()
                if not line:
                    break
                line = line.decode().rstrip("\n")
                if not line.startswith("data: "):
                    continue
                payload = line[len("data: "):]
                events.append(payload)
                if on_event is not None and on_event(len(events) - 1, payload) is False:
                    break
                if payload == "[DONE]":
                    break
        finally:
            resp.close()  # the response holds the socket too: both must let go for the server to see it
            conn.close()
        return events

    def metrics(self):
        """{(sample name, frozenset of labels): value}, parsed as Prometheus text."""
        status, text = self.request("GET", "/metrics")
        assert status == 200, status
        out = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out[(s.name, frozenset(s.labels.items()))] = s.value
        return out

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        finally:
            if not self.stderr.closed:
                self.errors()
                self.proc.stdout.close()
                self.stderr.close()


def metric_sum(metrics, name, **labels):
    """The sum of every sample called `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, l), v in metrics.items() if n == name and want <= set(l))


def stream_text(events, chat):
    """The text a list of stream payloads carries, and the final chunk (with usage)."""
    text, final = "", None
    for payload in events:
        if payload == "[DONE]":
            continue
        chunk = json.loads(payload)
        choice = chunk["choices"][0]
        text += (choice["delta"].get("content") or "") if chat else choice["text"]
        if choice["finish_reason"] is not None:
            final = chunk
    return text, final


def run_text(moepage, source, prompt, max_tokens, profile="configs/default.yaml"):
    """`moepage run --prompt`'s text and token ids for the same model."""
    out = subprocess.run(
        [moepage, "run", "--profile", os.path.join(source, profile), "--model",
         os.path.join(source, "models/ds4-debian-tiny"), "--prompt", prompt, "--max-tokens", str(max_tokens),
         "--log-level", "warn"],
        capture_output=True, text=True, timeout=CALL_TIMEOUT_S, check=True).stdout
    text, ids = out.rsplit("\ntoken ids:", 1)  # stdout: the text, a newline, "token ids: ..."
    return text, [int(i) for i in ids.split()]
