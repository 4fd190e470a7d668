"""crosscheck.py: the leaderboard's own checks of a benchmark's numbers, whatever outcome code a
row has (the measured ceilings, the baseline's bytes and reference times, numbers that follow
from the time, one document only); every chapter's score (several references per shape, the
library first; rows without a reference); chapter 9's whole-model score. Results files of the
schema the programs write now (3) and of the older ones still read (benchmark 2, decoder 1)."""

import json
import os
import shutil
import tempfile
import unittest

from support import DECODER, TRUSTED, TRUSTED_V3, decoder_text, result, trusted
from wb_leaderboard import classify, crosscheck as X
from wb_leaderboard.outcomes import OUTCOME_KIND


class CrossChecks(unittest.TestCase):
    """On a run of schema 2 (older, still read) against a baseline of schema 2."""

    ENTRY, BASELINE = "fast", TRUSTED

    def setUp(self):
        with open(os.path.join(result(self.ENTRY), "bench.json")) as f:
            self.doc = json.load(f)

    def classify(self, doc, base=None):
        return X.classify_bench(0, json.dumps(doc), trusted(self.BASELINE) if base is None else base)

    def student(self, doc, shape="n=16777216", impl="student"):
        return [r for r in doc["results"] if r["role"] == "student" and r["shape"] == shape and r["impl"] == impl][0]

    def test_an_honest_run_passes(self):
        reasons, shapes, notes = self.classify(self.doc)
        self.assertEqual(reasons, [])
        self.assertEqual(len(shapes), 6)

    def test_above_the_measured_copy_ceiling_is_implausible(self):
        self.student(self.doc)["median_us"] = 201326592.0 / (3700 * 1.2) / 1e3  # 120% of the copy ceiling
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("120% of the measured copy ceiling (3700 GB/s)", reasons[0]["detail"])

    def test_a_few_percent_above_is_noise(self):
        self.student(self.doc)["median_us"] = 201326592.0 / (3700 * 1.03) / 1e3
        self.student(self.doc)["gbps"] = 3700 * 1.03
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons, [])

    def test_the_baseline_ceilings_win_over_the_runs_own(self):
        self.doc["measured_ceilings"]["copy_gbps"] = 1e9  # a forged ceiling
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("the leaderboard measured 3700", reasons[0]["detail"])

    def test_without_a_baseline_the_runs_own_ceilings_and_a_note(self):
        reasons, _, notes = X.classify_bench(0, json.dumps(self.doc), None)
        self.assertEqual(reasons, [])
        self.assertIn("no baseline run", " ".join(notes))

    def test_fewer_bytes_than_the_chapter_declares_is_implausible(self):
        self.student(self.doc)["bytes"] = 1.0
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons[0]["kind"], "implausible")

    def test_derived_numbers_must_follow_from_the_time(self):
        self.student(self.doc)["gbps"] = 1.0
        reasons, _, _ = self.classify(self.doc)
        self.assertIn("does not follow from its time", reasons[0]["detail"])

    def test_a_reference_far_from_the_baseline_is_implausible(self):
        for r in self.doc["results"]:
            if r["role"] == "reference":
                r["median_us"] *= 3  # the student slowed the library down in its own process
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("when the leaderboard timed it alone", reasons[0]["detail"])

    def test_compute_above_the_ceiling_is_implausible(self):
        row = self.student(self.doc)
        row["flops"] = 1e15
        base = trusted(self.BASELINE)
        for r in base["results"]:
            r["flops"] = 1e15
        reasons, _, _ = self.classify(self.doc, base)
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("TFLOP/s", reasons[0]["detail"])

    def test_any_code_but_pass_never_ranks(self):
        for code, kind in OUTCOME_KIND.items():
            if code == "pass":
                continue
            doc = json.loads(json.dumps(self.doc))
            self.student(doc)["outcome"] = code
            reasons, _, _ = self.classify(doc)
            with self.subTest(code=code):
                self.assertEqual(reasons[0]["kind"], kind)
        doc = json.loads(json.dumps(self.doc))
        self.student(doc)["outcome"] = "PASS"
        self.assertEqual(self.classify(doc)[0][0]["kind"], "no-result")

    def test_a_second_document_in_the_stream_is_rejected(self):
        text = json.dumps(self.doc) + "\n" + json.dumps(self.doc)
        reasons, _, _ = X.classify_bench(0, text, trusted(self.BASELINE))
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("more than one document", reasons[0]["detail"])

    def test_schema_1_only_for_old_history(self):
        with open(os.path.join(result("schema-v1"), "bench.json")) as f:
            text = f.read()
        self.assertEqual(X.classify_bench(0, text, trusted())[0][0]["kind"], "no-result")
        reasons, shapes, _ = X.classify_bench(0, text, trusted(), legacy=True)
        self.assertEqual((reasons, len(shapes)), ([], 6))

    def test_a_row_whose_names_are_not_plain_text_is_implausible(self):
        for r in self.doc["results"]:
            if r["role"] == "student":
                r["impl"] = r["impl"] + "\n--remeasure"
        reasons, _, _ = X.classify_bench(0, json.dumps(self.doc))
        self.assertIn("implausible", [r["kind"] for r in reasons])


class CrossChecksCurrentSchema(CrossChecks):
    """The same checks on the run as the benchmark writes it now (schema 3: Google Benchmark's
    context and runs beside the rows) against a baseline of schema 3."""

    ENTRY, BASELINE = "current-schema", TRUSTED_V3


class SchemaVersions(unittest.TestCase):
    """Which results files a fresh run may leave is scripts/lib/wb_results.py's to say."""

    def doc(self):
        with open(os.path.join(result("current-schema"), "bench.json")) as f:
            return json.load(f)

    def test_the_same_run_in_schema_2_and_3_scores_the_same(self):
        with open(os.path.join(result("fast"), "bench.json")) as f:
            old = f.read()
        scores = {}
        for name, text in (("2", old), ("3", json.dumps(self.doc()))):
            for base in (TRUSTED, TRUSTED_V3):
                reasons, shapes, _ = X.classify_bench(0, text, trusted(base))
                self.assertEqual(reasons, [], (name, base))
                scores[name, base] = [(s["op"], s["shape"], s["impl"], round(s["vs_reference"], 9)) for s in shapes]
        self.assertEqual(len(set(map(tuple, scores.values()))), 1, scores)

    def test_files_no_version_is_read_in_are_no_result(self):
        cases = []
        d = self.doc()
        d["schema_version"] = 4
        cases.append((d, "has schema_version 4, not 2 or 3"))
        d = self.doc()
        d["kind"] = "tuning"
        cases.append((d, "is a tuning results file, not a benchmark one"))
        d = self.doc()
        d["kind"] = "trace"
        cases.append((d, 'has kind "trace"'))
        d = self.doc()
        del d["schema_version"]
        cases.append((d, "has schema_version null, not 2 or 3"))
        for doc, words in cases:
            with self.subTest(words=words):
                reasons, shapes, _ = X.classify_bench(0, json.dumps(doc), trusted(TRUSTED_V3))
                self.assertEqual((reasons[0]["kind"], shapes), ("no-result", []))
                self.assertIn(words, reasons[0]["detail"])

    def test_a_baseline_is_a_benchmark_or_model_file_in_a_version_still_read(self):
        with open(os.path.join(result("schema-v1"), "bench.json")) as f:
            schema_1 = json.load(f)
        tuning = self.doc()
        tuning["kind"] = "tuning"
        for doc, usable in (
            (trusted(TRUSTED), True),
            (trusted(TRUSTED_V3), True),
            (json.loads(decoder_text("baseline.json")), True),
            (json.loads(decoder_text("baseline-v3.json")), True),
            (json.loads(decoder_text("schema-2.json")), False),
            (schema_1, False),
            (tuning, False),
            ([], False),
            (None, False),
        ):
            with self.subTest(doc=str(doc)[:60]):
                self.assertEqual(X.usable_baseline(doc) is not None, usable)


class ChapterScores(unittest.TestCase):
    """Chapters after the first five: several references per shape (the library first),
    rows without a reference, and chapter 9's whole-model score."""

    def doc(self):
        """A chapter 6-like run: per shape the library (cuDNN), an unfused baseline, a student."""
        rows = []
        for shape, lib_us, unfused_us, student_us in (
            ("N=16384,C=4096", 100.0, 180.0, 80.0),
            ("N=1,C=4096", 4.0, 9.0, 5.0),
        ):
            for impl, role, us in (
                ("cudnn_norm", "reference", lib_us),
                ("unfused_add_then_norm", "reference", unfused_us),
                ("ex2_residual_layernorm", "student", student_us),
            ):
                rows.append(
                    {
                        "op": "residual_layernorm/bf16",
                        "shape": shape,
                        "impl": impl,
                        "role": role,
                        "bytes": 1e6,
                        "flops": 0.0,
                        "peak": "bf16-tensor",
                        "median_us": us,
                        "gbps": 1e6 / (us * 1e3),
                        "outcome": "pass",
                    }
                )
        return {
            "schema_version": 2,
            "chapter": "ch06",
            "measured_ceilings": {"copy_gbps": 3700.0},
            "spec_ceilings": {"dram_gbps": 3352.0},
            "results": rows,
        }

    def base(self):
        d = self.doc()
        d["results"] = [r for r in d["results"] if r["role"] == "reference"]
        return d

    def test_the_library_is_the_first_reference_of_a_shape(self):
        reasons, shapes, _ = X.classify_bench(0, json.dumps(self.doc()), self.base())
        self.assertEqual(reasons, [])
        self.assertEqual([round(s["vs_reference"], 6) for s in shapes], [1.25, 0.8])
        self.assertEqual([s["reference_us"] for s in shapes], [100.0, 4.0])

    def test_each_reference_is_checked_against_its_own_baseline(self):
        doc = self.doc()
        for r in doc["results"]:
            if r["impl"] == "unfused_add_then_norm":
                r["median_us"] *= 2  # the unfused baseline slowed down in the student's process
        reasons, _, _ = X.classify_bench(0, json.dumps(doc), self.base())
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("[unfused_add_then_norm]", reasons[0]["detail"])

    def test_a_run_without_a_reference_the_baseline_timed_is_implausible(self):
        doc = self.doc()
        doc["results"] = [r for r in doc["results"] if not (r["impl"] == "cudnn_norm" and r["shape"] == "N=1,C=4096")]
        reasons, _, _ = X.classify_bench(0, json.dumps(doc), self.base())
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("the baseline timed this reference", reasons[0]["detail"])

    def test_a_row_without_a_library_reference_is_shown_not_scored(self):
        doc = self.doc()
        doc["results"].append(
            {
                "op": "layernorm_decode/bf16",
                "shape": "N=1,C=4096",
                "impl": "ex4",
                "role": "student",
                "bytes": 1e4,
                "flops": 0.0,
                "peak": "bf16-tensor",
                "median_us": 3.0,
                "gbps": 1e4 / 3e3,
                "outcome": "pass",
            }
        )
        reasons, shapes, notes = X.classify_bench(0, json.dumps(doc), self.base())
        self.assertEqual(reasons, [])
        self.assertEqual(len(shapes), 3)
        self.assertIsNone(shapes[2]["vs_reference"])
        self.assertIn("1 timed row(s) have no library reference", " ".join(notes))

    def test_decoder_score_is_the_geomean_of_decode_rate_and_first_token_time(self):
        base = json.loads(decoder_text("baseline.json"))
        reasons, shapes, _ = X.classify_bench(0, decoder_text("faster.json"), base)
        self.assertEqual(reasons, [])
        self.assertEqual([s["shape"] for s in shapes], ["decode", "ttft"])
        self.assertAlmostEqual(shapes[0]["vs_reference"], 2000.0 / 1000.0)
        self.assertAlmostEqual(shapes[1]["vs_reference"], 4.0 / 5.0)
        self.assertAlmostEqual(classify.geomean([s["vs_reference"] for s in shapes]), (2.0 * 0.8) ** 0.5)
        reasons, shapes, _ = X.classify_bench(0, decoder_text("slower.json"), base)
        self.assertEqual(reasons, [])
        self.assertAlmostEqual(
            classify.geomean([s["vs_reference"] for s in shapes]), ((245 / 980) * (4.2 / 16.8)) ** 0.5
        )

    def test_decoder_results_of_schema_3_and_1_score_alike(self):
        for run in ("faster.json", "faster-v3.json"):
            for base in ("baseline.json", "baseline-v3.json"):
                with self.subTest(run=run, base=base):
                    reasons, shapes, notes = X.classify_bench(0, decoder_text(run), json.loads(decoder_text(base)))
                    self.assertEqual(reasons, [])
                    self.assertFalse(any("no baseline" in n for n in notes), notes)
                    self.assertAlmostEqual(classify.geomean([s["vs_reference"] for s in shapes]), (2.0 * 0.8) ** 0.5)
        # A model file is told apart by its kind, and one of another kind is not a decoder's.
        doc = json.loads(decoder_text("faster-v3.json"))
        doc["kind"] = "tuning"
        reasons, _, _ = X.classify_bench(0, json.dumps(doc), json.loads(decoder_text("baseline-v3.json")))
        self.assertEqual(reasons[0]["kind"], "no-result")
        doc["kind"] = "model"
        doc["schema_version"] = 2
        reasons, _, _ = X.classify_bench(0, json.dumps(doc), json.loads(decoder_text("baseline-v3.json")))
        self.assertIn("has schema_version 2, not 1 or 3", reasons[0]["detail"])

    def test_decoder_results_that_cannot_rank(self):
        base = json.loads(decoder_text("baseline.json"))
        for name, kind, words in (
            ("no-student.json", "no-result", "no run of the student kernels"),
            ("two-student-runs.json", "no-result", "two runs of the student kernels"),
            ("zero-rate.json", "no-result", "no valid decode_tok_s"),
            ("library-slowed.json", "implausible", "when the leaderboard ran the library alone"),
            ("schema-2.json", "no-result", "schema_version 2, not 1 or 3"),
        ):
            with self.subTest(name=name):
                reasons, shapes, _ = X.classify_bench(0, decoder_text(name), base)
                self.assertEqual(reasons[0]["kind"], kind, reasons)
                self.assertIn(words, reasons[0]["detail"])
        text = decoder_text("faster.json")
        self.assertEqual(X.classify_bench(0, text + text, base)[0][0]["kind"], "implausible")
        self.assertEqual(X.classify_bench(124, text, base)[0][0]["kind"], "hung")

    def test_a_decoder_chapter_ranks_like_any_other(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        entry = os.path.join(tmp, "entry")
        shutil.copytree(result("fast"), entry)
        with open(os.path.join(entry, "meta.json")) as f:
            meta = json.load(f)
        meta.update(chapter="ch09", chapter_dir="ch09_transformer")
        with open(os.path.join(entry, "meta.json"), "w") as f:
            json.dump(meta, f)
        for run, base in (("faster.json", "baseline.json"), ("faster-v3.json", "baseline-v3.json")):
            shutil.copy(os.path.join(DECODER, run), os.path.join(entry, "bench.json"))
            rec = classify.classify_entry(entry, trusted=json.loads(decoder_text(base)))
            with self.subTest(run=run):
                self.assertEqual(rec["status"], "ranked", rec["reasons"])
                self.assertAlmostEqual(rec["score"]["geomean_vs_reference"], (2.0 * 0.8) ** 0.5)
                self.assertEqual(rec["score"]["shapes"], 2)
                self.assertIsNone(rec["score"]["roofline_measured_pct"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
