"""Tests of scripts/fusion_table.py on made-up results of one run (no GPU needed)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "fusion_table.py")


def doc(gpu, rows):
    return {
        "schema_version": 3,
        "program": "chNN_bench",
        "kind": "benchmark",
        "chapter": "chNN",
        "device": {"name": gpu},
        "spec_ceilings": {},
        "measured_ceilings": {},
        "results": rows,
    }


def row(op, shape, impl, us, nbytes=1e6):
    return {
        "op": op,
        "shape": shape,
        "impl": impl,
        "role": "solution",
        "outcome": "pass",
        "median_us": us,
        "bytes": nbytes,
    }


class FusionTable(unittest.TestCase):
    def run_tool(self, *docs, extra=()):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i, x in enumerate(docs):
                paths.append(os.path.join(d, f"r{i}.json"))
                with open(paths[-1], "w") as f:
                    json.dump(x, f)
            p = subprocess.run([sys.executable, TOOL, *paths, *extra], capture_output=True, text=True)
            return p.returncode, p.stdout, p.stderr

    def test_speedup_and_bytes_from_the_fastest_fused_step(self):
        ln = "residual_layernorm/bf16"
        shape = "N=1000 C=500 pad=0"
        rc, out, err = self.run_tool(
            doc(
                "GPU X",
                [
                    row(ln, shape, "unfused_add_then_norm", 30.0),
                    row(ln, shape, "v3_warp_shuffle", 20.0),
                    row(ln, shape, "v6_persistent", 15.0),
                ],
            )
        )
        self.assertEqual(rc, 0, err)
        line = next(x for x in out.splitlines() if x.startswith("| Residual + LayerNorm"))
        self.assertIn("15.0 (v6_persistent)", line)
        self.assertIn("2.00×", line)
        self.assertIn("2.0 MB", line)  # 2 x 2 bytes x 1000 x 500
        self.assertIn("Measured on GPU X", out)

    def test_conv_bytes_use_the_output_size(self):
        op = "conv2d_bn_relu/bf16"
        shape = "N=2 H=9 W=9 C=8 K=16 R=3 S=3 stride=2 pad=1 residual=0"  # P = Q = 5
        rc, out, err = self.run_tool(
            doc("GPU X", [row(op, shape, "cudnn_three_kernels", 50.0), row(op, shape, "v4_implicit_gemm_mma", 25.0)])
        )
        self.assertEqual(rc, 0, err)
        line = next(x for x in out.splitlines() if x.startswith("| Conv + BN + ReLU"))
        self.assertIn("2.00×", line)
        self.assertIn("0.0 MB", line)  # 2 intermediates x 2 x 2 x 2 x 5 x 5 x 16 = 6400 bytes

    def test_the_conv_row_takes_the_three_kernel_form_as_separate(self):
        op = "conv2d_bn_relu/bf16"
        shape = "N=2 H=9 W=9 C=8 K=16 R=3 S=3 stride=1 pad=1 residual=0"
        rows = [
            row(op, shape, "cudnn_separate", 30.0),  # conv, then one bias + BN + ReLU kernel: not the lecture's row
            row(op, shape, "cudnn_three_kernels", 45.0),
            row(op, shape, "v13_implicit_gemm_im2col_tma", 15.0),
            row(op, shape, "v6_implicit_gemm_pipelined", 25.0),
        ]
        rc, out, err = self.run_tool(doc("GPU X", rows))
        self.assertEqual(rc, 0, err)
        line = next(x for x in out.splitlines() if x.startswith("| Conv + BN + ReLU"))
        self.assertIn("45.0 (cudnn_three_kernels)", line)
        self.assertIn("15.0 (v13_implicit_gemm_im2col_tma)", line)
        self.assertIn("3.00×", line)

    def test_the_shape_that_saves_most_bytes_heads_the_row_with_the_library_beside_it(self):
        op = "conv2d_bn_relu/bf16"
        small = "N=2 H=9 W=9 C=512 K=16 R=1 S=1 stride=1 pad=0 residual=0"  # the most input bytes
        big = "N=2 H=30 W=30 C=8 K=64 R=3 S=3 stride=1 pad=1 residual=0"  # the largest output
        rows = []
        for shape in (small, big):
            rows += [row(op, shape, "cudnn_three_kernels", 40.0), row(op, shape, "v4_implicit_gemm_mma", 20.0)]
        rows.append(row(op, big, "cudnn_fused", 10.0))
        rc, out, err = self.run_tool(doc("GPU X", rows))
        self.assertEqual(rc, 0, err)
        line = next(x for x in out.splitlines() if x.startswith("| Conv + BN + ReLU"))
        self.assertIn("H=30", line)
        self.assertIn("10.0 (cudnn_fused), 4.00×", line)

    def test_missing_rows_say_why(self):
        rc, out, _ = self.run_tool(
            doc("GPU X", [row("attention/bf16", "B=1 H=2 Sq=8 Sk=8 D=64", "cublas_unfused", 9.0)])
        )
        self.assertEqual(rc, 0)
        self.assertIn("not timed in these results", next(x for x in out.splitlines() if x.startswith("| Attention")))
        self.assertIn("no op of the book runs it", out)

    def test_two_gpus_are_refused(self):
        rc, _, err = self.run_tool(doc("GPU X", []), doc("GPU Y", []))
        self.assertEqual(rc, 2)
        self.assertIn("different GPUs", err)

    def test_a_missing_file_is_refused_and_nothing_is_written(self):
        with tempfile.TemporaryDirectory() as d:
            md = os.path.join(d, "t.md")
            p = subprocess.run(
                [sys.executable, TOOL, os.path.join(d, "none.json"), "--markdown", md], capture_output=True, text=True
            )
            self.assertEqual(p.returncode, 2)
            self.assertIn("no such file", p.stderr)
            self.assertFalse(os.path.exists(md))


if __name__ == "__main__":
    unittest.main()
