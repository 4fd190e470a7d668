#!/usr/bin/env python3
"""Host tests of the results reader (scripts/lib/wb_results.py) and the JSON Schema
(harness/report/results.schema.json); ctest runs them as results.reader (label host).

Documents written by the C++ writer are checked too when WB_RESULTS_SAMPLE_DIR names a folder
of them (ctest's fixture results.sample_documents writes it with harness_host_tests)."""
import contextlib
import copy
import glob
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import wb_results as R  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "tools", "fixtures")
DECODER = os.path.join(ROOT, "tests", "leaderboard", "decoder")

try:
    import jsonschema
except ImportError:
    jsonschema = None

DEVICE = {
    "name": "NVIDIA H100 80GB HBM3",
    "uuid": "GPU-x",
    "compute_capability": "9.0",
    "sms": 132,
    "sm_clock_mhz": 1980.0,
    "mem_clock_mhz": 2619.0,
    "driver": "13.0",
    "runtime": "13.0",
}


def header(program, kind):
    return {
        "schema_version": 3,
        "program": program,
        "kind": kind,
        "date": "2026-11-28T10:00:00",
        "commit": "abc1234",
        "device": dict(DEVICE),
    }


def result(op, shape, impl, role, **fields):
    """One row of a document's results: the case, then its fields in the order given."""
    return {"op": op, "shape": shape, "impl": impl, "role": role, **fields}


def benchmark_doc():
    doc = header("ch01_bench", "benchmark")
    doc.update(
        {
            "chapter": "ch01",
            "title": "thread indexing",
            "seed": 42,
            "spec_ceilings": {
                "dram_gbps": 3352.0,
                "fp32_tflops": 66.9,
                "fp16_tflops": 989.4,
                "bf16_tflops": 989.4,
                "int8_tops": 1978.9,
            },
            "measured_ceilings": {
                "copy_gbps": 3036.0,
                "fp32_tflops": 51.0,
                "fp16_tflops": 0,
                "bf16_tflops": 0,
                "int8_tops": 0,
                "cache": "/tmp/c.json",
                "from_cache": True,
            },
            "timing": {"repetitions": 5, "min_time_s": 0.01, "iterations": None, "statistic": "median"},
            "context": {
                "date": "2026-11-28T10:00:00",
                "host_name": "h",
                "num_cpus": 16,
                "mhz_per_cpu": 3000,
                "caches": [],
                "load_avg": [0.5, 0.4, 0.3],
            },
            "benchmarks": [
                {
                    "name": "vector_add/f32/n16777216/cublas_geam/manual_time",
                    "family_index": 0,
                    "per_family_instance_index": 0,
                    "run_name": "vector_add/f32/n16777216/cublas_geam/manual_time",
                    "run_type": "iteration",
                    "repetitions": 5,
                    "repetition_index": 0,
                    "threads": 1,
                    "iterations": 180,
                    "real_time": 66.4,
                    "cpu_time": 80.1,
                    "time_unit": "us",
                    "bytes_per_second": 3.03e12,
                }
            ],
            "results": [
                {
                    "op": "vector_add/f32",
                    "shape": "n=16777216",
                    "impl": "cublas_geam",
                    "role": "reference",
                    "dtype": "f32",
                    "benchmark": "vector_add/f32/n16777216/cublas_geam",
                    "bytes": 201326592.0,
                    "flops": 16777216.0,
                    "peak": "fp32",
                    "outcome": "pass",
                    "median_us": 66.4,
                    "cv_pct": 0.3,
                    "repetitions": 5,
                    "samples": 900,
                    "hot_median_us": 64.0,
                    "gbps": 3032.0,
                    "tflops": 0.25,
                    "roofline_spec_pct": 90.4,
                    "roofline_measured_pct": 99.8,
                    "vs_reference": 1.0,
                    "sm_clock_mhz": 1980.0,
                    "throttled": False,
                },
                result(
                    "vector_add/f32",
                    "n=16777216",
                    "student",
                    "student",
                    dtype="f32",
                    benchmark="vector_add/f32/n16777216/student",
                    bytes=201326592.0,
                    flops=16777216.0,
                    peak="fp32",
                    outcome="not_implemented",
                    message="ex1: not implemented yet",
                ),
            ],
        }
    )
    return doc


def tuned(config, **fields):
    """A row of the tuning document: one point of v5_radix_select's sweep."""
    return result("softmax_topk/f32", "B=64,V=128256,k=50", "v5_radix_select", "solution", config=config, **fields)


def tuning_doc():
    doc = header("ch07_tune", "tuning")
    doc.update(
        {
            "chapter": "ch07",
            "results": [
                tuned(
                    {"threads": 256, "splits": 8},
                    outcome="pass",
                    median_us=14.2,
                    samples=60,
                    gbps=2300.0,
                    tflops=0.0,
                ),
                tuned({"threads": 1024, "splits": 64}, outcome="skipped", message="too much shared memory"),
            ],
        }
    )
    return doc


def model_doc():
    doc = header("gpt2", "model")
    doc.update(
        {
            "tool": "gpt2",
            "runs": [
                {"kernels": "library", "ttft_ms": 4.0, "decode_tok_s": 1000.0},
                {
                    "kernels": "student",
                    "ttft_ms": 5.0,
                    "decode_tok_s": 2000.0,
                    "int8": True,
                    "batch": [{"batch": 4, "tok_s": 3000.0}],
                },
            ],
        }
    )
    return doc


class Schema(unittest.TestCase):
    def test_the_schema_is_json_and_names_its_version(self):
        s = R.schema()
        self.assertEqual(s["properties"]["schema_version"], {"const": R.SCHEMA_VERSION})
        self.assertEqual(set(s["properties"]["kind"]["enum"]), set(R.KINDS))

    def test_documents_of_every_kind_conform(self):
        for doc in (benchmark_doc(), tuning_doc(), model_doc()):
            with self.subTest(kind=doc["kind"]):
                self.assertEqual(R.validate(doc), [])

    def test_what_breaks_the_schema(self):
        cases = []
        d = benchmark_doc()
        del d["program"]
        cases.append((d, "no 'program'"))
        d = benchmark_doc()
        d["kind"] = "bench"
        cases.append((d, "is not one of"))
        d = benchmark_doc()
        del d["measured_ceilings"]
        cases.append((d, "no 'measured_ceilings'"))
        d = benchmark_doc()
        d["results"][0]["outcome"] = "PASS"
        cases.append((d, "results[0].outcome"))
        d = benchmark_doc()
        del d["results"][0]["gbps"]
        cases.append((d, "has 'median_us' but no 'gbps'"))
        d = benchmark_doc()
        d["results"][0]["median_us"] = 0
        cases.append((d, "is not above 0"))
        d = benchmark_doc()
        d["results"][1]["role"] = "teacher"
        cases.append((d, "results[1].role"))
        d = benchmark_doc()
        d["benchmarks"][0]["time_unit"] = "h"
        cases.append((d, "benchmarks[0].time_unit"))
        d = benchmark_doc()
        d["chapter"] = "1"
        cases.append((d, "does not match"))
        d = benchmark_doc()
        d["seed"] = True
        cases.append((d, "is not integer"))
        d = model_doc()
        del d["runs"][0]["ttft_ms"]
        cases.append((d, "runs[0]: no 'ttft_ms'"))
        d = model_doc()
        d["schema_version"] = 1
        cases.append((d, "is not 3"))
        for doc, words in cases:
            with self.subTest(words=words):
                problems = R.validate(doc)
                self.assertTrue(any(words in p for p in problems), problems)

    @unittest.skipIf(jsonschema is None, "python3-jsonschema is not installed")
    def test_the_small_validator_agrees_with_jsonschema(self):
        s = R.schema()
        validator = jsonschema.Draft202012Validator(s)
        docs = [benchmark_doc(), tuning_doc(), model_doc()]
        broken = benchmark_doc()
        broken["results"][0]["outcome"] = "PASS"
        del broken["results"][0]["gbps"]
        docs.append(broken)
        for doc in docs + list(sample_documents().values()):
            with self.subTest(program=doc.get("program")):
                theirs = sorted(e.message for e in validator.iter_errors(doc))
                self.assertEqual(bool(theirs), bool(R.validate(doc)), theirs)


def sample_documents():
    """The documents the C++ writer wrote for this run (WB_RESULTS_SAMPLE_DIR), by file name."""
    folder = os.environ.get("WB_RESULTS_SAMPLE_DIR")
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))) if folder else []:
        with open(path) as f:
            out[os.path.basename(path)] = json.load(f)
    return out


class WrittenByTheHarness(unittest.TestCase):
    def setUp(self):
        self.docs = sample_documents()
        if not self.docs:
            self.skipTest("WB_RESULTS_SAMPLE_DIR names no documents (run through ctest: results.reader)")

    def test_they_conform_to_the_schema(self):
        for name, doc in self.docs.items():
            with self.subTest(name=name):
                self.assertEqual(R.validate(doc), [])

    def test_they_read(self):
        for name in self.docs:
            with self.subTest(name=name):
                doc = R.load(os.path.join(os.environ["WB_RESULTS_SAMPLE_DIR"], name))
                self.assertIn(doc["kind"], R.KINDS)
                for r in R.rows(doc):
                    self.assertEqual(r["verdict"], r["outcome"].replace("_", " "))
                if doc["kind"] == "benchmark" and not doc["timing"].get("listed_only"):
                    self.assertTrue(any(R.measured(r) for r in R.rows(doc)))
                    self.assertEqual(R.ceilings(doc, "fp32")[2], doc["measured_ceilings"]["copy_gbps"])


class Reading(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_current_documents_read_as_written(self):
        doc = R.load(self.write(json.dumps(benchmark_doc())))
        self.assertEqual((doc["kind"], doc["program"]), ("benchmark", "ch01_bench"))
        self.assertEqual(R.find_row(doc, "student")["verdict"], "not implemented")
        self.assertEqual([R.measured(r) for r in R.rows(doc)], [True, False])
        self.assertEqual(R.ceilings(doc, "fp32"), (3352.0, 66.9, 3036.0, 51.0))
        self.assertEqual(R.largest_shape(doc, "vector_add/f32"), "n=16777216")

    def test_older_files_read_in_the_current_shape(self):
        for path in sorted(glob.glob(os.path.join(FIXTURES, "results-*.json"))):
            with self.subTest(path=os.path.basename(path)):
                doc = R.load(path)
                self.assertEqual(doc["kind"], "benchmark")
                self.assertEqual(doc["program"], doc["chapter"] + "_bench")
                for r in R.rows(doc):
                    self.assertIn("outcome", r)
                    self.assertNotIn(" ", r["outcome"])
        doc = R.load(os.path.join(DECODER, "faster.json"))  # the gpt2 tool's schema 1
        self.assertEqual(
            (doc["kind"], doc["program"], doc["device"]["name"]), ("model", "gpt2", "NVIDIA H100 80GB HBM3")
        )
        self.assertEqual(R.rows(doc), [])

    def test_which_versions_are_read(self):
        self.assertIsNone(R.unreadable(benchmark_doc()))
        self.assertIsNone(R.unreadable(model_doc(), "model"))
        old = {"schema_version": 2, "chapter": "ch01", "results": []}
        self.assertIsNone(R.unreadable(old, "benchmark"))
        self.assertEqual(R.unreadable(old, "benchmark", (3,)), "has schema_version 2, not 3")
        decoder = {"schema_version": 2, "tool": "gpt2", "runs": []}
        self.assertEqual(R.unreadable(decoder, "model"), "has schema_version 2, not 1 or 3")
        self.assertEqual(R.unreadable(model_doc(), "benchmark"), "is a model results file, not a benchmark one")
        self.assertIsNone(R.unreadable({"chapter": "ch01", "results": []}, "benchmark", (1, 2, 3)))
        self.assertEqual(R.unreadable([]), "is not a JSON object")

    def test_what_is_not_a_results_file(self):
        for text, words in (
            ('{"chapter": "ch01", "results": [', "does not parse as JSON (line 1, column"),
            ('{"hello": 1}', "not a benchmark results file"),
            ("[1, 2]", "not a results file"),
            ('{"chapter": "ch01", "results": [{"op": "x"}], "spec_ceilings": {}}', "results[0] lacks"),
            ('{"schema_version": 3, "kind": "model", "tool": "gpt2"}', "no 'runs' list"),
        ):
            with self.subTest(words=words):
                with self.assertRaises(R.ResultsError) as e:
                    R.load(self.write(text))
                self.assertIn(words, str(e.exception))
        with self.assertRaises(R.ResultsError) as e:
            R.load("/nonexistent/r.json")
        self.assertIn("no such file", str(e.exception))

    def test_parse_leaves_the_caller_a_copy(self):
        doc = benchmark_doc()
        text = json.dumps(doc)
        R.parse(text)
        self.assertEqual(json.loads(text), doc)
        self.assertEqual(R.upgrade(copy.deepcopy(doc))["results"][0]["verdict"], "pass")

    def test_command_line(self):
        good = self.write(json.dumps(benchmark_doc()))
        bad = benchmark_doc()
        bad["results"][0]["outcome"] = "PASS"
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            self.assertEqual(R.main(["check", "--strict", good]), 0)
            self.assertEqual(R.main(["check", "--strict", self.write(json.dumps(bad))]), 2)
            self.assertEqual(R.main(["check", self.write(json.dumps(bad))]), 0, "without --strict: the shape only")
            self.assertEqual(R.main([]), 2)
            self.assertEqual(R.main(["summary", good, good]), 0)
        text = out.getvalue()
        self.assertIn("benchmark results of ch01_bench, schema_version 3, 2 rows", text)
        self.assertIn('$.results[0].outcome: "PASS" is not one of', text)
        self.assertIn("  vector_add/f32  n=16777216  cublas_geam  66us  3032 GB/s  0.25 TF  99.8%  x1.00", text)
        self.assertNotIn("student  ", text)

    def test_run_to_run(self):
        first, second = benchmark_doc(), benchmark_doc()
        first["results"][0]["median_us"] = 200.0
        second["results"][0]["median_us"] = 210.0
        self.assertEqual(R.run_to_run(first, second), ["    vector_add/f32 n=16777216 cublas_geam: +5.0%"])
        self.assertEqual(R.run_to_run(benchmark_doc(), benchmark_doc()), [], "66 us is under the 100 us cut")


if __name__ == "__main__":
    unittest.main()
