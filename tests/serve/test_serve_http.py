"""`moepage serve` over HTTP with curl and http.client: whole and streamed completions and chats
equal to `moepage run`, /metrics as Prometheus text moving with traffic, every bad input answered
with its 4xx while the server keeps serving, a client dropping mid-stream, SIGTERM."""
import json
import socket
import subprocess
import threading
import time
import unittest

from serve_fixture import CALL_TIMEOUT_S, Server, metric_sum, parse_args, run_text, stream_text

ARGS, UNITTEST_ARGV = parse_args()
PROMPT = "To install the package, run"


class ServeHttp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.moepage, ARGS.source)
        cls.url = "http://127.0.0.1:%d" % cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def curl(self, path, body, *extra):
        out = subprocess.run(["curl", "-sS", "-N", "--max-time", str(CALL_TIMEOUT_S), self.url + path,
                              "-H", "Content-Type: application/json", "-d", json.dumps(body), *extra],
                             capture_output=True, text=True, timeout=CALL_TIMEOUT_S + 5, check=True)
        return out.stdout

    def assert_serving(self):
        status, body = self.server.post("/v1/completions", {"prompt": "Debian", "max_tokens": 2})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["usage"]["completion_tokens"], 2)

    def test_completion_whole_and_streamed_equal_run(self):
        expected_text, expected_ids = run_text(ARGS.moepage, ARGS.source, PROMPT, 12)
        whole = json.loads(self.curl("/v1/completions", {"model": "ds4-debian-tiny", "prompt": PROMPT,
                                                         "max_tokens": 12, "temperature": 0}))
        self.assertEqual(whole["object"], "text_completion")
        self.assertEqual(whole["choices"][0]["text"], expected_text)
        self.assertEqual(whole["moepage"]["token_ids"], expected_ids)
        self.assertEqual(whole["choices"][0]["finish_reason"], "length")
        self.assertEqual(whole["usage"], {"prompt_tokens": whole["usage"]["prompt_tokens"], "completion_tokens": 12,
                                          "total_tokens": whole["usage"]["prompt_tokens"] + 12})

        raw = self.curl("/v1/completions", {"prompt": PROMPT, "max_tokens": 12, "stream": True})
        events = [line[len("data: "):] for line in raw.split("\n") if line.startswith("data: ")]
        self.assertEqual(events[-1], "[DONE]")
        self.assertTrue(raw.endswith("data: [DONE]\n\n"))
        text, final = stream_text(events, chat=False)
        self.assertEqual(text, expected_text)
        self.assertEqual(final["choices"][0]["finish_reason"], "length")
        self.assertEqual(final["usage"]["completion_tokens"], 12)

    def test_chat_plain_format_equals_run_of_its_rendering(self):
        messages = [{"role": "system", "content": "You answer questions about Debian."},
                    {"role": "user", "content": "How do I list installed packages?"}]
        rendered = ("System: You answer questions about Debian.\n\nUser: How do I list installed packages?\n\n"
                    "Assistant:")
        expected_text, expected_ids = run_text(ARGS.moepage, ARGS.source, rendered, 10)
        whole = json.loads(self.curl("/v1/chat/completions", {"messages": messages, "max_tokens": 10}))
        self.assertEqual(whole["object"], "chat.completion")
        self.assertEqual(whole["choices"][0]["message"], {"role": "assistant", "content": expected_text})
        self.assertEqual(whole["moepage"]["token_ids"], expected_ids)
        events = self.server.stream("/v1/chat/completions", {"messages": messages, "max_tokens": 10})
        text, final = stream_text(events, chat=True)
        self.assertEqual(text, expected_text)
        self.assertEqual(json.loads(events[0])["choices"][0]["delta"]["role"], "assistant")
        self.assertEqual(final["usage"]["total_tokens"], final["usage"]["prompt_tokens"] + 10)

    def test_stop_strings_end_the_reply_before_them(self):
        full, _ = run_text(ARGS.moepage, ARGS.source, PROMPT, 16)
        stop = full[5:9]  # a piece of what greedy decoding will say
        status, body = self.server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 16, "stop": [stop]})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["choices"][0]["text"], full[:full.index(stop)])
        self.assertEqual(body["choices"][0]["finish_reason"], "stop")
        events = self.server.stream("/v1/completions", {"prompt": PROMPT, "max_tokens": 16, "stop": stop})
        self.assertEqual(stream_text(events, chat=False)[0], full[:full.index(stop)])

    def test_metrics_parse_and_move_with_traffic(self):
        before = self.server.metrics()
        status, body = self.server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 5})
        self.assertEqual(status, 200)
        self.server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": -1})
        after = self.server.metrics()

        def moved(name, **labels):
            return metric_sum(after, name, **labels) - metric_sum(before, name, **labels)

        self.assertEqual(moved("moepage_requests_total", endpoint="completions", profile="default"), 1)
        self.assertEqual(moved("moepage_generated_tokens_total", profile="default"), 5)
        self.assertEqual(moved("moepage_prompt_tokens_total"), body["usage"]["prompt_tokens"])
        self.assertGreater(moved("moepage_pager_layer_hits_total", profile="default", layer="0"), 0)
        self.assertEqual(moved("moepage_pager_layer_misses_total", profile="default"), 0)  # resident
        self.assertEqual(moved("moepage_request_errors_total", status="400"), 1)
        self.assertGreater(metric_sum(after, "moepage_decode_tokens_per_second", profile="default"), 0)
        self.assertGreater(metric_sum(after, "moepage_prefill_tokens_per_second", profile="default"), 0)
        self.assertIn(("moepage_queue_length", frozenset()), after)
        self.assertEqual(metric_sum(after, "moepage_active_profile_info", profile="default", pager="resident"), 1)

    def test_bad_input_gets_its_4xx_and_the_server_keeps_serving(self):
        long_prompt = "word " * 5000  # more tokens than the 4096 positions of the context
        cases = [
            ("malformed JSON", b'{"prompt": "x", ', 400, "invalid_json"),
            ("prompt of the wrong type", {"prompt": {"text": "x"}}, 400, "invalid_value"),
            ("max_tokens of the wrong type", {"prompt": "x", "max_tokens": "8"}, 400, "invalid_value"),
            ("temperature of the wrong type", {"prompt": "x", "temperature": [1]}, 400, "invalid_value"),
            ("stream of the wrong type", {"prompt": "x", "stream": "yes"}, 400, "invalid_value"),
            ("unknown model", {"prompt": "x", "model": "gpt-4o"}, 404, "model_not_found"),
            ("negative max_tokens", {"prompt": "x", "max_tokens": -5}, 400, "invalid_value"),
            ("huge max_tokens", {"prompt": "x", "max_tokens": 10 ** 15}, 400, "invalid_value"),
            ("n above 1", {"prompt": "x", "n": 3}, 400, "unsupported_value"),
            ("token id outside the vocabulary", {"prompt": [1, 99999999]}, 400, "invalid_value"),
            ("prompt longer than the context", {"prompt": long_prompt, "max_tokens": 4}, 400,
             "context_length_exceeded"),
            ("10 MB body", b'{"prompt": "' + b"a" * (10 * 1000 * 1000) + b'"}', 413, None),
        ]
        for what, body, status, code in cases:
            with self.subTest(what):
                got, answer = self.server.post("/v1/completions", body)
                self.assertEqual(got, status, answer)
                self.assertIsInstance(answer["error"]["message"], str)
                if code:
                    self.assertEqual(answer["error"]["code"], code)
                self.assert_serving()
        got, answer = self.server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": 5}]})
        self.assertEqual(got, 400, answer)
        got, answer = self.server.post("/v1/chat/completions", {"messages": "hello"})
        self.assertEqual(got, 400, answer)
        got, answer = self.server.request("GET", "/v1/nothing")
        self.assertEqual(got, 404, answer)
        got, answer = self.server.post("/admin/profile", {"profile": "configs/lru.yaml"})
        self.assertEqual((got, answer["error"]["code"]), (403, "admin_disabled"))  # no --api-key: no swaps
        self.assert_serving()

    def test_client_dropping_mid_stream_stops_its_generation(self):
        before = self.server.metrics()
        max_tokens = 3000
        events = self.server.stream("/v1/completions", {"prompt": PROMPT, "max_tokens": max_tokens},
                                    on_event=lambda i, payload: i < 2)  # read three events, then hang up
        self.assertEqual(len(events), 3)
        deadline = time.monotonic() + 20
        cancelled = 0
        while time.monotonic() < deadline and cancelled == 0:
            time.sleep(0.1)
            after = self.server.metrics()
            cancelled = (metric_sum(after, "moepage_requests_total", finish_reason="cancelled") -
                         metric_sum(before, "moepage_requests_total", finish_reason="cancelled"))
        self.assertEqual(cancelled, 1, "the generation did not stop after its client left")
        generated = (metric_sum(after, "moepage_generated_tokens_total") -
                     metric_sum(before, "moepage_generated_tokens_total"))
        self.assertLess(generated, max_tokens / 10)
        self.assert_serving()


class ServeLimits(unittest.TestCase):
    def test_requests_beyond_the_connection_limit_get_429(self):
        server = Server(ARGS.moepage, ARGS.source, extra=["--max-connections", "1"])
        try:
            refused = {}

            def on_event(i, payload):  # the one slot is held by this stream, far from its end
                refused["status"], refused["body"] = server.post("/v1/completions", {"prompt": "x"})
                return False  # then hang up: the slot frees once the server sees it

            server.stream("/v1/completions", {"prompt": PROMPT, "max_tokens": 3000}, on_event=on_event)
            self.assertEqual(refused["status"], 429, refused)
            self.assertEqual(refused["body"]["error"]["code"], "too_many_connections")
            deadline, status = time.monotonic() + 20, 429
            while status == 429 and time.monotonic() < deadline:
                status, body = server.post("/v1/completions", {"prompt": "x", "max_tokens": 2})
                time.sleep(0.05)
            self.assertEqual(status, 200, body)
        finally:
            self.assertEqual(server.stop(), 0, server.errors())


class ServeSigterm(unittest.TestCase):
    def test_sigterm_finishes_the_running_stream_then_exits_0(self):
        server = Server(ARGS.moepage, ARGS.source)
        try:
            signalled = threading.Event()

            def on_event(i, payload):
                if i == 0:
                    server.proc.send_signal(15)
                    signalled.set()
                return True

            events = server.stream("/v1/completions", {"prompt": PROMPT, "max_tokens": 40}, on_event=on_event)
            self.assertTrue(signalled.is_set())
            self.assertEqual(events[-1], "[DONE]")
            text, final = stream_text(events, chat=False)
            self.assertEqual(final["usage"]["completion_tokens"], 40)
            self.assertEqual(text, run_text(ARGS.moepage, ARGS.source, PROMPT, 40)[0])
            self.assertEqual(server.proc.wait(timeout=30), 0, server.errors())
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main(argv=UNITTEST_ARGV, verbosity=2)
