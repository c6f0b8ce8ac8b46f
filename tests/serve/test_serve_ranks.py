"""`moepage serve` with two expert-parallel ranks (parallel.ranks: 2): whole and streamed completions
equal to a one-rank `moepage run`, /metrics counting both ranks' pagers, and a swap to LRU ranks
(each rank's budget its own) that keeps the greedy ids."""
import unittest

from serve_fixture import Server, metric_sum, parse_args, run_text, stream_text

ARGS, UNITTEST_ARGV = parse_args()
PROMPT = "To install the package, run"
KEY = "ranks-key-21"
AUTH = {"Authorization": "Bearer " + KEY}


class ServeRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.moepage, ARGS.source,
                            extra=["--set", "parallel.ranks=2", "--set", "arch.threads=1", "--api-key", KEY])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def complete(self, max_tokens=12):
        status, body = self.server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": max_tokens}, AUTH)
        self.assertEqual(status, 200, body)
        return body

    def test_completions_equal_one_rank_and_metrics_count_both_ranks(self):
        expected_text, expected_ids = run_text(ARGS.moepage, ARGS.source, PROMPT, 12)
        before = self.server.metrics()
        whole = self.complete()
        self.assertEqual(whole["choices"][0]["text"], expected_text)
        self.assertEqual(whole["moepage"]["token_ids"], expected_ids)
        events = self.server.stream("/v1/completions", {"prompt": PROMPT, "max_tokens": 12}, AUTH)
        text, final = stream_text(events, chat=False)
        self.assertEqual(text, expected_text)
        self.assertEqual(final["usage"]["completion_tokens"], 12)
        after = self.server.metrics()
        # Every (token, routed expert) use is a hit of exactly one rank's resident pager: the sum
        # over layers and ranks is what one rank counts, top-k per token per layer.
        hits = metric_sum(after, "moepage_pager_layer_hits_total") - metric_sum(before, "moepage_pager_layer_hits_total")
        self.assertGreater(hits, 0)
        self.assertEqual(metric_sum(after, "moepage_pager_layer_misses_total"), 0)
        self.assertEqual(metric_sum(after, "moepage_active_profile_info", profile="default", ranks="2"), 1)

    def test_swap_to_lru_ranks_keeps_the_ids(self):
        baseline = self.complete(8)
        status, body = self.server.post("/admin/profile", {"profile": "configs/lru.yaml",
                                                           "set": ["pager.budget=2MiB", "parallel.ranks=2",
                                                                   "arch.threads=1"]}, AUTH)
        self.assertEqual(status, 200, body)
        before = self.server.metrics()
        after_swap = self.complete(8)
        self.assertEqual(after_swap["moepage"]["token_ids"], baseline["moepage"]["token_ids"])
        after = self.server.metrics()
        self.assertEqual(metric_sum(after, "moepage_active_profile_info", pager="lru", ranks="2"), 1)
        self.assertGreater(metric_sum(after, "moepage_pager_layer_misses_total") -
                           metric_sum(before, "moepage_pager_layer_misses_total"), 0)


if __name__ == "__main__":
    unittest.main(argv=UNITTEST_ARGV)
