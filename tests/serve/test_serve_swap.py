"""`moepage serve` with an API key, and POST /admin/profile: a swap from the resident pager to LRU
at a small budget while a client streams (the stream finishes on the old pager, the next request
runs on the new one and misses, greedy ids do not change), a swap the budget refuses (the old
profile keeps serving), and the key on every protected route."""
import json
import threading
import unittest

from serve_fixture import Server, metric_sum, parse_args, run_text, stream_text

ARGS, UNITTEST_ARGV = parse_args()
PROMPT = "To install the package, run"
KEY = "test-key-7f3a"
AUTH = {"Authorization": "Bearer " + KEY}


class ServeSwap(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.moepage, ARGS.source, extra=["--api-key", KEY])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def complete(self, max_tokens=24):
        status, body = self.server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": max_tokens}, AUTH)
        self.assertEqual(status, 200, body)
        return body

    def test_key_is_required_where_it_is_set(self):
        for headers, what in [({}, "missing"), ({"Authorization": "Bearer wrong"}, "wrong"),
                              ({"Authorization": KEY}, "not a bearer")]:
            with self.subTest(what):
                for path, body in [("/v1/completions", {"prompt": "x"}), ("/v1/chat/completions",
                                   {"messages": [{"role": "user", "content": "x"}]}),
                                   ("/admin/profile", {"profile": "configs/lru.yaml"})]:
                    status, answer = self.server.post(path, body, headers)
                    self.assertEqual(status, 401, (path, answer))
                    self.assertEqual(answer["error"]["code"], "invalid_api_key")
                status, answer = self.server.request("GET", "/v1/models", headers=headers)
                self.assertEqual(status, 401, answer)
        status, answer = self.server.request("GET", "/v1/models", headers=AUTH)
        self.assertEqual((status, answer["data"][0]["id"]), (200, "ds4-debian-tiny"))
        self.complete(2)

    def test_swap_resident_to_lru_while_a_client_streams(self):
        baseline = self.complete()
        self.assertEqual(baseline["moepage"]["profile"], "default")
        rss_resident = self.server.rss_kib()
        swap_answer = {}

        def swap():
            swap_answer["status"], swap_answer["body"] = self.server.post(
                "/admin/profile", {"profile": "configs/lru.yaml", "set": ["pager.budget=2MiB"]}, AUTH)

        swapper = threading.Thread(target=swap)

        def on_event(i, payload):
            if i == 0:
                swapper.start()
            return True

        before = self.server.metrics()
        events = self.server.stream("/v1/completions", {"prompt": PROMPT, "max_tokens": 48}, AUTH, on_event)
        swapper.join(timeout=60)
        self.assertEqual(events[-1], "[DONE]")
        text, final = stream_text(events, chat=False)
        self.assertEqual(final["usage"]["completion_tokens"], 48)
        self.assertEqual(final["moepage"]["profile"], "default")  # finished on the old pager
        self.assertEqual(text, run_text(ARGS.moepage, ARGS.source, PROMPT, 48)[0])
        self.assertEqual(swap_answer.get("status"), 200, swap_answer)
        self.assertEqual(swap_answer["body"]["profile"], "lru")

        after_swap = self.complete()
        self.assertEqual(after_swap["moepage"]["profile"], "lru")
        self.assertEqual(after_swap["moepage"]["token_ids"], baseline["moepage"]["token_ids"])
        # The resident pager held every expert (13 MB); LRU holds 2 MiB of slots: the rest went back.
        rss_lru = self.server.rss_kib()
        print("RSS on the resident pager %d KiB, on LRU at 2 MiB %d KiB" % (rss_resident, rss_lru))
        self.assertLess(rss_lru, rss_resident - 6 * 1024)
        after = self.server.metrics()
        self.assertGreater(metric_sum(after, "moepage_pager_layer_misses_total", profile="lru"), 0)
        self.assertGreater(metric_sum(after, "moepage_pager_layer_miss_bytes_total", profile="lru"), 0)
        self.assertGreater(metric_sum(after, "moepage_pager_bytes_read_total", profile="lru"), 0)
        self.assertEqual(metric_sum(after, "moepage_pager_layer_misses_total", profile="default"),
                         metric_sum(before, "moepage_pager_layer_misses_total", profile="default"))
        self.assertEqual(metric_sum(after, "moepage_active_profile_info", profile="lru", pager="lru"), 1)
        self.assertEqual(metric_sum(after, "moepage_active_profile_info", profile="default"), 0)
        self.assertEqual(metric_sum(after, "moepage_requests_total", profile="lru"), 1)

        # A budget below what top-k needs: the same error as at load, and LRU keeps serving.
        status, answer = self.server.post(
            "/admin/profile", {"profile": "configs/lru.yaml", "set": ["pager.budget=1MiB"], "name": "tiny-budget"},
            AUTH)
        self.assertEqual(status, 422, answer)
        self.assertIn("minimum budget", answer["error"]["message"])
        again = self.complete()
        self.assertEqual((again["moepage"]["profile"], again["moepage"]["token_ids"]),
                         ("lru", baseline["moepage"]["token_ids"]))
        metrics = self.server.metrics()
        self.assertEqual(metric_sum(metrics, "moepage_profile_swaps_total", result="failed"), 1)
        self.assertGreaterEqual(metric_sum(metrics, "moepage_profile_swaps_total", result="ok"), 1)

        # Bad swap requests are refused before anything is torn down.
        for body, status in [({"profile": "configs/no-such.yaml"}, 400), ({"set": []}, 400),
                             ({"profile": "configs/lru.yaml", "set": ["pager.budget=lots"]}, 400)]:
            with self.subTest(json.dumps(body)):
                got, answer = self.server.post("/admin/profile", body, AUTH)
                self.assertEqual(got, status, answer)
        self.assertEqual(self.complete()["moepage"]["profile"], "lru")


if __name__ == "__main__":
    unittest.main(argv=UNITTEST_ARGV, verbosity=2)
