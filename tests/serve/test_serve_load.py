"""8 concurrent clients x 10 requests against one `moepage serve`: every request answered with
the text greedy decoding gives its prompt when it runs alone, none lost, and the server's RSS
after all of them within 5% of its RSS after the first."""
import threading
import unittest

from serve_fixture import Server, metric_sum, parse_args, run_text

ARGS, UNITTEST_ARGV = parse_args()
CLIENTS, REQUESTS = 8, 10
PROMPTS = ["To install the package, run", "The configuration file", "Debian is", "apt-get",
           "The kernel module", "Use the command", "systemd starts", "The manual page"]
MAX_TOKENS = 8


class ServeLoad(unittest.TestCase):
    def test_concurrent_clients_all_answered_and_rss_flat(self):
        server = Server(ARGS.moepage, ARGS.source)
        try:
            # Each prompt alone first: the expected text, and the first request's RSS.
            expected = {}
            rss_first = None
            for chat in (False, True):
                for prompt in PROMPTS:
                    path, body = self.request(prompt, chat)
                    status, answer = server.post(path, body)
                    self.assertEqual(status, 200, answer)
                    expected[(prompt, chat)] = self.text_of(answer, chat)
                    if rss_first is None:
                        rss_first = server.rss_kib()
            self.assertEqual(expected[(PROMPTS[0], False)], run_text(ARGS.moepage, ARGS.source, PROMPTS[0],
                                                                     MAX_TOKENS)[0])
            before = server.metrics()
            failures, answered = [], []
            lock = threading.Lock()

            def client(c):
                for r in range(REQUESTS):
                    prompt, chat = PROMPTS[(c + r) % len(PROMPTS)], (c + r) % 2 == 1
                    path, body = self.request(prompt, chat)
                    try:
                        status, answer = server.post(path, body)
                        ok = status == 200 and self.text_of(answer, chat) == expected[(prompt, chat)]
                        outcome = None if ok else (c, r, status, answer)
                    except Exception as e:  # a lost request is a failure, not a crash of the test
                        outcome = (c, r, repr(e))
                    with lock:
                        (failures if outcome else answered).append(outcome or (c, r))

            threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=240)
            self.assertEqual(failures, [])
            self.assertEqual(len(answered), CLIENTS * REQUESTS)
            after = server.metrics()
            self.assertEqual(metric_sum(after, "moepage_requests_total") - metric_sum(before, "moepage_requests_total"),
                             CLIENTS * REQUESTS)
            self.assertEqual(metric_sum(after, "moepage_queue_length"), 0)
            rss_after = server.rss_kib()
            print("RSS after the first request %d KiB, after %d more %d KiB (%+.2f%%)" %
                  (rss_first, 2 * len(PROMPTS) - 1 + CLIENTS * REQUESTS, rss_after,
                   100.0 * (rss_after - rss_first) / rss_first))
            self.assertLessEqual(abs(rss_after - rss_first), 0.05 * rss_first)
            self.assertEqual(server.stop(), 0, server.errors())
        finally:
            server.stop()

    @staticmethod
    def request(prompt, chat):
        if chat:
            return "/v1/chat/completions", {"messages": [{"role": "user", "content": prompt}], "max_tokens": MAX_TOKENS}
        return "/v1/completions", {"prompt": prompt, "max_tokens": MAX_TOKENS}

    @staticmethod
    def text_of(answer, chat):
        return answer["choices"][0]["message"]["content"] if chat else answer["choices"][0]["text"]


if __name__ == "__main__":
    unittest.main(argv=UNITTEST_ARGV, verbosity=2)
