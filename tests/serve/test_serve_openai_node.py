"""The official openai npm client (installed by tools/setup.sh into tests/serve/node) against
`moepage serve` running models/ds4-debian-tiny: a streamed and a whole completion and chat
completion, each equal to `moepage run`'s greedy text for the same prompt."""
import json
import os
import subprocess
import unittest

from serve_fixture import CALL_TIMEOUT_S, Server, parse_args, run_text

ARGS, UNITTEST_ARGV = parse_args()
PROMPT = "To install the package, run"
CHAT_MESSAGE = "How do I remove a package?"
MAX_TOKENS = 12
KEY = "node-test-key"


class ServeOpenAiNode(unittest.TestCase):
    def test_openai_client_streams_and_fetches_what_run_generates(self):
        node_dir = os.path.join(ARGS.source, "tests/serve/node")
        if not os.path.exists(os.path.join(node_dir, "node_modules/openai/package.json")):
            self.fail("the openai npm package is not installed in %s: run tools/setup.sh" % node_dir)
        server = Server(ARGS.moepage, ARGS.source, extra=["--api-key", KEY])
        try:
            out = subprocess.run(["node", "openai_client.mjs", "http://127.0.0.1:%d/v1" % server.port, KEY, PROMPT,
                                  CHAT_MESSAGE, str(MAX_TOKENS)], cwd=node_dir, capture_output=True, text=True,
                                 timeout=CALL_TIMEOUT_S)
            self.assertEqual(out.returncode, 0, out.stderr + server.errors())
            got = json.loads(out.stdout)
            completion, _ = run_text(ARGS.moepage, ARGS.source, PROMPT, MAX_TOKENS)
            chat, _ = run_text(ARGS.moepage, ARGS.source, "User: %s\n\nAssistant:" % CHAT_MESSAGE, MAX_TOKENS)
            self.assertEqual(got["model"], "ds4-debian-tiny")
            self.assertEqual(got["completionStreamed"], completion)
            self.assertEqual(got["completionWhole"], completion)
            self.assertEqual(got["completionFinish"], "length")
            self.assertEqual(got["completionUsage"]["completion_tokens"], MAX_TOKENS)
            self.assertEqual(got["completionWholeUsage"]["completion_tokens"], MAX_TOKENS)
            self.assertEqual(got["chatStreamed"], chat)
            self.assertEqual(got["chatWhole"], chat)
            self.assertEqual(got["chatFinish"], "length")
            self.assertEqual(got["refused"]["status"], 400, got["refused"])
            self.assertIn("max_tokens", got["refused"]["message"])
        finally:
            self.assertEqual(server.stop(), 0, server.errors())


if __name__ == "__main__":
    unittest.main(argv=UNITTEST_ARGV, verbosity=2)
