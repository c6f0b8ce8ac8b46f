#!/usr/bin/env python3
"""Checks of everything in tools/train that runs without torch (stdlib only, a few seconds):

    python3 tools/train/selftest.py

Tensor naming and storage kinds, the size budget, config.json, the safetensors writer/reader,
the scalar FP8/FP4/E8M0 decoders the GPU run checks its torch codecs against, the routing
trace formats (v3 and v4 of one trace hold the same events; the v4 converter) and statistics,
corpus loading from .xz and the bundle splitting.
"""
import json
import math
import lzma
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_data  # noqa: E402
import ds4_layout as layout  # noqa: E402
import routing_trace  # noqa: E402
import trace_events  # noqa: E402
import trace_to_v4  # noqa: E402
import train  # noqa: E402  (imports no torch at module level)

CFG = layout.tiny_config(8192)


class Naming(unittest.TestCase):
    def test_every_hugging_face_tensor_has_one_released_name(self):
        shapes = layout.released_shapes(CFG)
        hf = layout.hf_param_shapes(CFG)
        experts = sum(1 for n in hf if layout.expert_layer(n))
        self.assertEqual(experts, 2 * CFG["num_hidden_layers"])
        # 3 expert parts per expert, one released name per other tensor, no collisions.
        self.assertEqual(len(shapes), len(hf) - experts + 3 * CFG["n_routed_experts"] * CFG["num_hidden_layers"])

    def test_released_names_follow_the_reference_spelling(self):
        names = set(layout.released_shapes(CFG))
        for expected in ["embed.weight", "head.weight", "norm.weight", "hc_head_fn", "hc_head_base", "hc_head_scale",
                         "layers.0.hc_attn_fn", "layers.0.hc_ffn_scale", "layers.0.attn_norm.weight",
                         "layers.0.ffn_norm.weight", "layers.0.attn.wq_a.weight", "layers.0.attn.q_norm.weight",
                         "layers.0.attn.wq_b.weight", "layers.0.attn.wkv.weight", "layers.0.attn.kv_norm.weight",
                         "layers.0.attn.wo_a.weight", "layers.0.attn.wo_b.weight", "layers.0.attn.attn_sink",
                         "layers.0.ffn.gate.weight", "layers.0.ffn.gate.tid2eid", "layers.3.ffn.gate.bias",
                         "layers.2.attn.compressor.wkv.weight", "layers.2.attn.compressor.wgate.weight",
                         "layers.2.attn.compressor.ape", "layers.2.attn.compressor.norm.weight",
                         "layers.2.attn.indexer.wq_b.weight", "layers.2.attn.indexer.weights_proj.weight",
                         "layers.2.attn.indexer.compressor.wkv.weight", "layers.2.attn.indexer.compressor.ape",
                         "layers.2.attn.indexer.compressor.norm.weight", "layers.3.attn.compressor.ape",
                         "layers.7.ffn.experts.63.w1.weight", "layers.7.ffn.experts.63.w2.weight",
                         "layers.0.ffn.shared_experts.w3.weight"]:
            self.assertIn(expected, names)
        self.assertNotIn("layers.0.attn.compressor.wkv.weight", names)  # sliding layer
        self.assertNotIn("layers.3.attn.indexer.wq_b.weight", names)   # HCA has no indexer
        self.assertNotIn("layers.3.ffn.gate.tid2eid", names)           # scored routing
        self.assertNotIn("layers.2.ffn.gate.bias", names)              # hash routing

    def test_storage_kinds_match_the_released_checkpoint(self):
        kind = layout.storage_kind
        self.assertEqual(kind("layers.1.attn.wq_a.weight"), "fp8")
        self.assertEqual(kind("layers.2.attn.indexer.wq_b.weight"), "fp8")
        self.assertEqual(kind("layers.1.ffn.shared_experts.w2.weight"), "fp8")
        self.assertEqual(kind("layers.1.ffn.experts.5.w3.weight"), "fp4")
        self.assertEqual(kind("layers.2.attn.compressor.wkv.weight"), "bf16")
        self.assertEqual(kind("layers.2.attn.indexer.weights_proj.weight"), "bf16")
        self.assertEqual(kind("layers.2.attn.indexer.compressor.wgate.weight"), "bf16")
        self.assertEqual(kind("layers.1.ffn.gate.weight"), "bf16")
        self.assertEqual(kind("embed.weight"), "bf16")
        self.assertEqual(kind("layers.1.attn.kv_norm.weight"), "bf16")
        for f32 in ["layers.1.hc_attn_fn", "layers.1.hc_ffn_base", "hc_head_scale", "layers.2.attn.compressor.ape",
                    "layers.2.attn.indexer.compressor.ape", "layers.1.attn.attn_sink", "layers.4.ffn.gate.bias"]:
            self.assertEqual(kind(f32), "f32", f32)
        self.assertEqual(kind("layers.0.ffn.gate.tid2eid"), "i64")

    def test_scale_names_drop_the_weight_suffix(self):
        self.assertEqual(layout.scale_name("layers.1.attn.wq_a.weight"), "layers.1.attn.wq_a.scale")

    def test_shapes_follow_the_config(self):
        s = layout.released_shapes(CFG)
        d, q = CFG["hidden_size"], CFG["q_lora_rank"]
        self.assertEqual(s["layers.0.attn.wq_a.weight"], ("fp8", (q, d)))
        self.assertEqual(s["layers.0.attn.wo_a.weight"][1], (CFG["o_groups"] * CFG["o_lora_rank"], 4 * 64 // 2))
        self.assertEqual(s["layers.2.attn.compressor.ape"][1], (4, 2 * CFG["head_dim"]))
        self.assertEqual(s["layers.3.attn.compressor.ape"][1], (16, CFG["head_dim"]))
        self.assertEqual(s["layers.5.ffn.experts.0.w2.weight"], ("fp4", (d, CFG["moe_intermediate_size"])))
        self.assertEqual(s["layers.1.ffn.gate.tid2eid"], ("i64", (8192, 6)))


class Budget(unittest.TestCase):
    def test_the_checkpoint_fits_in_30_mb(self):
        size = layout.estimated_checkpoint_bytes(CFG)
        self.assertLess(size, 29_000_000, size)  # leaves room for the safetensors header

    def test_stored_bytes_count_scales(self):
        self.assertEqual(layout.stored_bytes("fp8", (300, 200)), 300 * 200 + 3 * 2)
        self.assertEqual(layout.stored_bytes("fp4", (64, 256)), 64 * 128 + 64 * 8)
        self.assertEqual(layout.stored_bytes("i64", (10, 6)), 480)


class Config(unittest.TestCase):
    def test_released_config_has_the_legacy_keys_and_the_schedule(self):
        c = layout.released_config(CFG)
        self.assertEqual(c["compress_ratios"], [0, 0, 4, 16, 4, 16, 4, 16])
        self.assertEqual(c["layer_types"][:3], [layout.SLIDING, layout.SLIDING, layout.CSA])
        self.assertEqual(c["num_hash_layers"], 3)
        self.assertEqual(c["qk_rope_head_dim"], 16)
        self.assertEqual(c["rope_scaling"]["type"], "yarn")
        self.assertEqual(c["quantization_config"]["weight_block_size"], [128, 128])
        self.assertEqual((c["bos_token_id"], c["eos_token_id"]), (0, 1))
        json.dumps(c)  # serialisable

    def test_geometry_satisfies_the_model_constraints(self):
        rope = CFG["head_dim"] * CFG["partial_rotary_factor"]
        self.assertEqual(rope % 2, 0)
        self.assertLessEqual(rope, CFG["index_head_dim"])
        self.assertEqual(CFG["num_attention_heads"] * CFG["head_dim"] % CFG["o_groups"], 0)
        self.assertEqual(CFG["moe_intermediate_size"] % layout.FP4_GROUP, 0)
        self.assertEqual(CFG["hidden_size"] % layout.FP4_GROUP, 0)


class Safetensors(unittest.TestCase):
    def test_written_files_read_back_with_aligned_data(self):
        tensors = [("b", "F32", (2,), struct.pack("<2f", 1.5, -2.0)), ("a", "I8", (3,), b"\x01\xff\x10"),
                   ("c.scale", "F8_E8M0", (1, 1), b"\x7f"), ("d", "I64", (1,), struct.pack("<q", -7))]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.safetensors")
            size = layout.write_safetensors(path, tensors, {"format": "pt"})
            self.assertEqual(size, os.path.getsize(path))
            with open(path, "rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
            self.assertEqual(n % 8, 0)
            back, meta = layout.read_safetensors(path)
        self.assertEqual(meta, {"format": "pt"})
        self.assertEqual(back["a"], ("I8", (3,), b"\x01\xff\x10"))
        self.assertEqual(struct.unpack("<2f", back["b"][2]), (1.5, -2.0))
        self.assertEqual(list(back), ["a", "b", "c.scale", "d"])

    def test_a_wrong_byte_count_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp, self.assertRaises(ValueError):
            layout.write_safetensors(os.path.join(tmp, "x"), [("w", "BF16", (3,), b"\x00" * 4)])


class ScalarDecoders(unittest.TestCase):
    def test_e4m3(self):
        self.assertEqual(layout.e4m3_to_float(0x38), 1.0)
        self.assertEqual(layout.e4m3_to_float(0x7E), 448.0)
        self.assertEqual(layout.e4m3_to_float(0xFE), -448.0)
        self.assertEqual(layout.e4m3_to_float(0x01), 2.0 ** -9)
        self.assertEqual(layout.e4m3_to_float(0x08), 2.0 ** -6)
        self.assertNotEqual(layout.e4m3_to_float(0x7F), layout.e4m3_to_float(0x7F))  # NaN

    def test_e8m0_and_e2m1(self):
        self.assertEqual(layout.e8m0_to_float(127), 1.0)
        self.assertEqual(layout.e8m0_to_float(130), 8.0)
        self.assertEqual([layout.e2m1_to_float(c) for c in range(8)], [0, 0.5, 1, 1.5, 2, 3, 4, 6])
        self.assertEqual(layout.e2m1_to_float(0xF), -6.0)

    def test_fp4_low_nibble_is_the_even_column(self):
        row = [0xF2] + [0] * 15  # columns 0 and 1: code 2 (1.0) low, code 0xF (-6.0) high
        scales = [128]  # 2^1
        self.assertEqual(layout.fp4_element(row, scales, 0), 2.0)
        self.assertEqual(layout.fp4_element(row, scales, 1), -12.0)
        self.assertEqual(layout.fp4_element(row, scales, 2), 0.0)

    def test_fp8_block_scale_index(self):
        q = [[0x38] * 130 for _ in range(130)]
        scales = [[127, 128], [129, 130]]
        self.assertEqual(layout.fp8_element(q, scales, 0, 0), 1.0)
        self.assertEqual(layout.fp8_element(q, scales, 0, 129), 2.0)
        self.assertEqual(layout.fp8_element(q, scales, 129, 0), 4.0)
        self.assertEqual(layout.fp8_element(q, scales, 128, 128), 8.0)


class Trace(unittest.TestCase):
    CHOICES = [[[5, 1], [2, 3], [1, 5]], [[0, 7], [7, 6], [0, 1]]]

    def test_format_is_token_major_and_parses_back(self):
        text = routing_trace.format_trace(self.CHOICES, 8, 2, {"model": "m"})
        lines = text.splitlines()
        self.assertEqual(lines[0], "# moepage-trace v1 layers=2 experts=8 top_k=2 model=m")
        self.assertEqual(lines[1], "token,layer,expert")
        self.assertEqual(lines[2:6], ["0,0,1", "0,0,5", "0,1,0", "0,1,7"])
        meta, parsed = routing_trace.parse_trace(text)
        self.assertEqual(meta["experts"], "8")
        self.assertEqual(parsed, [[sorted(c) for c in layer] for layer in self.CHOICES])

    def test_repeated_or_out_of_range_experts_are_refused(self):
        with self.assertRaises(ValueError):
            routing_trace.format_trace([[[1, 1]]], 8, 2)
        with self.assertRaises(ValueError):
            routing_trace.format_trace([[[1, 9]]], 8, 2)

    def test_statistics(self):
        uniform = [[e] for e in range(10)] * 3
        self.assertAlmostEqual(routing_trace.top_share(uniform, 10), 0.1)
        skewed = [[0]] * 9 + [[1]]
        self.assertAlmostEqual(routing_trace.top_share(skewed, 10), 0.9)
        self.assertEqual(routing_trace.lru_hit_rate([[0], [1], [2]] * 4, 2), 0.0)  # cycle longer than the cache
        self.assertAlmostEqual(routing_trace.lru_hit_rate([[0], [1]] * 5, 2), 0.8)
        self.assertAlmostEqual(routing_trace.load_entropy(uniform, 10), math.log2(10))
        self.assertEqual(routing_trace.load_entropy([[3]] * 5, 10), 0.0)
        lines, shares, rates, _ = routing_trace.routing_report(self.CHOICES, 8, ["hash_moe", "moe"])
        self.assertEqual(len(shares), 2)
        self.assertIn("mean", lines[-1])


class TraceV4(unittest.TestCase):
    # Two tokens, 3 layers, 8 experts: layer 0 hash-routed (hinted), layers 1 and 2 predicted; token
    # 1's prediction for layer 2 is empty, so neither format writes it.
    ROUTES = [[[5, 1], [0, 6]], [[7, 2], [3, 4]], [[3, 6], [1, 2]]]
    HINTS = {0: [[5, 1], [6, 0]]}
    PREDICTIONS = {1: [[7, 2, 0], [3]], 2: [[6, 4], []]}

    def traces(self):
        args = (self.ROUTES, self.HINTS, self.PREDICTIONS, 8, 2, {"model": "m"})
        return routing_trace.format_trace_v3(*args), routing_trace.format_trace_v4(*args)

    def test_v3_and_v4_of_one_trace_hold_the_same_events(self):
        v3, v4 = self.traces()
        fields3, version3, events3, _ = trace_events.read_events(v3)
        fields4, version4, events4, outcomes = trace_events.read_events(v4)
        self.assertEqual((version3, version4, outcomes), (3, 4, False))
        self.assertEqual(fields3, fields4)
        self.assertEqual(trace_events.data_events(events3), trace_events.data_events(events4))
        self.assertEqual(events4[:6], [("t", 0), ("h", 0, (5, 1)), ("a", 0, (1, 5)), ("p", 1, (7, 2, 0)),
                                       ("a", 1, (2, 7)), ("p", 2, (6, 4))])
        self.assertNotIn(("p", 2, ()), events4)
        self.assertEqual(v4.splitlines()[:3], ["# moepage-trace v4 layers=3 experts=8 top_k=2 model=m", "t 0", "h 0 5 1"])

    def test_the_converter_writes_what_the_v4_writer_writes(self):
        v3, v4 = self.traces()
        self.assertEqual(trace_to_v4.convert(v3), v4)
        self.assertEqual(trace_to_v4.convert(v4), v4)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.trace.xz")
            with open(path, "wb") as f:
                f.write(lzma.compress(v3.encode()))
            trace_to_v4.write_text(path, trace_to_v4.convert(trace_to_v4.read_text(path)))  # in place
            self.assertEqual(trace_to_v4.read_text(path), v4)
            self.assertEqual(os.listdir(tmp), ["t.trace.xz"])

    def test_v3_requests_split_where_the_cpp_reader_splits_them(self):
        v3 = ("# moepage-trace v3 layers=2 experts=8\n# kept\n0,0,1\n0,0,2\nhint,0,1,3,0\nhint,0,1,4,1\n"
              "0,0,3\n0,1,3\n2,1,5\n2,1,6\n")
        _, _, events, _ = trace_events.read_events(v3)
        self.assertEqual(events, [("#", "# kept"), ("t", 0), ("a", 0, (1, 2)), ("h", 1, (3, 4)), ("a", 0, (3,)),
                                  ("a", 1, (3,)), ("t", 2), ("a", 1, (5, 6))])

    def test_bad_traces_and_outcomes_are_refused(self):
        h = "# moepage-trace v3 layers=2 experts=8\n"
        for bad in (h + "0,0,1\n0,0,1\n", h + "hint,0,0,1,1\n", h + "1,0,1\n0,0,2\n", h + "0,x,1\n",
                    "# moepage-trace v5 layers=1 experts=1\n", "# moepage-trace v4 layers=1 experts=2\na 0 1\n",
                    "# moepage-trace v4 layers=1 experts=2\nt 1\nt 1\n"):
            with self.subTest(bad=bad), self.assertRaises(trace_events.TraceError):
                trace_to_v4.convert(bad)
        with self.assertRaisesRegex(ValueError, "--drop-outcomes"):
            trace_to_v4.convert(h + "0,0,1,1,0\n")
        self.assertEqual(trace_to_v4.convert(h + "0,0,1,1,0\n", drop_outcomes=True),
                         "# moepage-trace v4 layers=2 experts=8\nt 0\na 0 1\n")


class TracePacking(unittest.TestCase):
    def test_the_packed_trace_decompresses_to_the_choices_and_shrinks_to_fit(self):
        import argparse
        import random
        rng = random.Random(3)
        choices = [[rng.sample(range(64), 6) for _ in range(16)] for _ in range(8)]
        args = argparse.Namespace(name="m", seq=4)
        packed, kept = train.pack_trace(choices, CFG, args)
        self.assertEqual(kept, 16)
        meta, parsed = routing_trace.parse_trace(lzma.decompress(packed).decode())
        self.assertEqual(meta["windows"], "4")
        self.assertEqual(parsed, [[sorted(c) for c in layer] for layer in choices])
        packed, kept = train.pack_trace(choices, CFG, args, limit=10)
        self.assertEqual(kept, 4)  # halved down to one window


class CorpusAndBundle(unittest.TestCase):
    def test_corpus_reads_the_xz_copy_when_the_text_is_absent(self):
        with tempfile.TemporaryDirectory() as tmp:
            with lzma.open(os.path.join(tmp, "heldout.txt.xz"), "wt", encoding="utf-8") as f:
                f.write("first paragraph\nsecond café\n")
            self.assertEqual(corpus_data.read_lines(tmp, "heldout"), ["first paragraph", "second café"])
            with self.assertRaises(SystemExit):
                corpus_data.read_lines(tmp, "train")

    def test_bundle_parts_concatenate_to_one_tar(self):
        import io
        import tarfile
        files = {"models/m/a.bin": os.urandom(5000), "tests/data/t.xz": b"trace"}
        with tempfile.TemporaryDirectory() as tmp:
            old = train.PART_BYTES
            train.PART_BYTES = 4096
            try:
                parts, digest, total = train.write_bundle(files, tmp)
            finally:
                train.PART_BYTES = old
            self.assertGreater(len(parts), 1)
            data = b""
            for part in parts:
                with open(part, "rb") as f:
                    data += f.read()
            self.assertEqual(len(data), total)
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                self.assertEqual(sorted(tar.getnames()), sorted(files))
                self.assertEqual(tar.extractfile("tests/data/t.xz").read(), b"trace")


if __name__ == "__main__":
    unittest.main(verbosity=1)
