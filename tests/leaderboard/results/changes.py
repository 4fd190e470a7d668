# The recorded results of chapter 1 that the leaderboard's tests classify without a GPU, as what
# each case changes in the base files in base/ (fast: a whole entry, ranked; schema3: its
# bench.json as the benchmark writes it now; ncu: a profile that agrees with it). Read as data,
# never run, by tools/leaderboard/wb_leaderboard/recorded.py, which says what each key means and
# makes the folders when a test needs them:
#   python3 -m wb_leaderboard.recorded DEST     (PYTHONPATH=tools/leaderboard)
#
# {case: how its folder is made}. The reason each case is expected to get: expected.json.
{
    "fast": {"what": "a correct submission a little faster than the reference: ranked (the base itself)"},
    "slow": {
        "what": "a correct submission 40 times slower than fast: ranked, below it",
        "meta": {"student": "slow", "student_id": "slow-57e8a777", "source_hash": "424b4f5332ae237e"},
        "bench": {"slower": {"student": 40}},
    },
    "spaces": {
        "what": "a student whose name has spaces, a tenth slower than fast: ranked",
        "meta": {
            "student": "name with spaces",
            "student_id": "name_with_spaces-83dbe693",
            "source_hash": "4143708ff6309573",
        },
        "bench": {"slower": {"student": 1.1}},
    },
    "current-schema": {
        "what": "fast's run with bench.json of schema 3 (Google Benchmark's runs beside the rows): ranked as fast",
        "from": ["fast", "schema3"],
        "meta": {"student": "current-schema", "student_id": "current-schema-3b5e7c10"},
        "append": {"meta.json": "\n"},
    },
    "schema-v1": {
        "what": "bench.json of schema 1 (no schema_version, a verdict per row instead of an outcome): no result",
        "meta": {"student": "schema-v1", "student_id": "schema-v1-1eba622d"},
        "bench": {"drop": ["schema_version"], "rename": {"outcome": "verdict"}},
    },
    "missing": {
        "what": "a student folder without any of the chapter's files (its name starts with a dash): missing files",
        "meta": {
            "student": "-dash ..dots",
            "student_id": "dash_dots-1642b7a4",
            "taken": [],
            "missing": ["ex1_vector_add.cu", "ex2_vector_add_x2.cu", "ex3_rgb_to_grey.cu", "ex4_matrix_add.cu"],
            "source_hash": "",
        },
        "steps": [],
        "without": ["bench.json", "bench.log", "tests.json", "tests.log"],
    },
    "partial": {
        "what": "exercise 4's file missing, so the stub ran in its place: missing files",
        "meta": {
            "student": "partial",
            "student_id": "partial-7777eeee",
            "taken": ["ex1_vector_add.cu", "ex2_vector_add_x2.cu", "ex3_rgb_to_grey.cu"],
            "missing": ["ex4_matrix_add.cu"],
            "source_hash": "7fff7a80ad06c0cf",
        },
        "steps": [["build", 0, 30.0], ["tests", 1, 5.0]],
        "tests": [["Matrices/Ch01MatrixAdd.MatchesFloat64/student_r1_c1", "not_implemented"]],
        "log": """\
[ RUN      ] Matrices/Ch01MatrixAdd.MatchesFloat64/student_r1_c1
/src/chapters/ch01_indexing/tests.cu:103: Failure
Value of: wb_outcome_.passed()
  Actual: false
Expected: true
[not implemented] matrix_add rows=1 cols=1: not implemented yet: write the kernel in chapters/ch01_indexing/ex4_matrix_add.cu and delete the WB_NOT_IMPLEMENTED line in its launcher
  seed 771 (repeat with WORKBOOK_SEED=771)
[  FAILED  ] Matrices/Ch01MatrixAdd.MatchesFloat64/student_r1_c1, where GetParam() = (student, 1x1) (1 ms)
""",
        "without": ["bench.json", "bench.log"],
    },
    "not-compiling": {
        "what": "exercise 2 uses a name it never declared: the build fails (the first error, without folders)",
        "meta": {"student": "not-compiling", "student_id": "not-compiling-2af16141", "source_hash": "677aafcadbc80333"},
        "steps": [["build", 1, 12.0]],
        "files": {
            "build.log": """\
[1/6] Building CUDA object CMakeFiles/ch01_student.dir/chapters/ch01_indexing/ex2_vector_add_x2.cu.o
FAILED: CMakeFiles/ch01_student.dir/chapters/ch01_indexing/ex2_vector_add_x2.cu.o
/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -I/tmp/kernel-workbook-leaderboard.x1/slots/0-ch01/src/chapters/ch01_indexing -c x.cu
/tmp/kernel-workbook-leaderboard.x1/slots/0-ch01/src/chapters/ch01_indexing/ex2_vector_add_x2.cu(11): error: identifier "offset" is undefined
    if (first + 1 < n) c[first + 1] = a[first + 1] + b[first + 1] + offset;
        ^

1 error detected in the compilation.
ninja: build stopped: subcommand failed.
"""
        },
        "without": ["bench.json", "bench.log", "tests.json", "tests.log"],
    },
    "build-timeout": {
        "what": "the build stopped at its time limit (exit code 124): build failed",
        "meta": {"student": "build-timeout", "student_id": "build-timeout-0000aaaa", "source_hash": "6d6b3a5780d628c6"},
        "steps": [["build", 124, 300.0]],
        "files": {"build.log": "[1/6] Building\n"},
        "without": ["bench.json", "bench.log", "tests.json", "tests.log"],
    },
    "wrong-rectangles": {
        "what": "matrix_add leaves most of a 2x3 matrix unwritten: wrong answers",
        "meta": {
            "student": "wrong-rectangles",
            "student_id": "wrong-rectangles-92dd1d34",
            "source_hash": "0c48e9b45c976557",
        },
        "steps": [["build", 0, 30.0], ["tests", 1, 9.0]],
        "tests": [
            ["Sizes/Ch01VectorAdd.MatchesFloat64/student_n1", "pass"],
            ["Matrices/Ch01MatrixAdd.MatchesFloat64/student_r1_c1", "pass"],
            ["Matrices/Ch01MatrixAdd.MatchesFloat64/student_r2_c3", "wrong"],
        ],
        "log": """\
[ RUN      ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1
[       OK ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1 (3 ms)
[ RUN      ] Matrices/Ch01MatrixAdd.MatchesFloat64/student_r1_c1
[       OK ] Matrices/Ch01MatrixAdd.MatchesFloat64/student_r1_c1 (3 ms)
[ RUN      ] Matrices/Ch01MatrixAdd.MatchesFloat64/student_r2_c3
/src/chapters/ch01_indexing/tests.cu:103: Failure
Value of: wb_outcome_.passed()
  Actual: false
Expected: true
[wrong] matrix_add rows=2 cols=3 lda=3 ldb=3 ldc=3 on row=2 col=3: 4 unwritten (poison left in place) (of 6 elements)
  (row 0, col 1): never written (still holds the poison)
  seed 771 (repeat with WORKBOOK_SEED=771)
[  FAILED  ] Matrices/Ch01MatrixAdd.MatchesFloat64/student_r2_c3, where GetParam() = (student, 2x3) (1 ms)
[  FAILED  ] 1 test, listed below:
[  FAILED  ] Matrices/Ch01MatrixAdd.MatchesFloat64/student_r2_c3, where GetParam() = (student, 2x3)
""",
        "without": ["bench.json", "bench.log"],
    },
    "nan": {
        "what": "vector_add writes NaN: the test's outcome code is nan",
        "meta": {"student": "writes nan", "student_id": "writes_nan-5555cccc", "source_hash": "2f44e37b62da6652"},
        "steps": [["build", 0, 30.0], ["tests", 1, 5.0]],
        "tests": [["Sizes/Ch01VectorAdd.MatchesFloat64/student_n1025", "nan"]],
        "log": """\
[ RUN      ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1025
/src/chapters/ch01_indexing/tests.cu:103: Failure
Value of: wb_outcome_.passed()
  Actual: false
Expected: true
[wrong] vector_add n=1025 on i=1025: 10 NaN/Inf (of 1025 elements)
  (i 0): got nan
  seed 771 (repeat with WORKBOOK_SEED=771)
[  FAILED  ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1025, where GetParam() = (student, 1025) (1 ms)
""",
        "without": ["bench.json", "bench.log"],
    },
    "not-implemented": {
        "what": "exercise 3 still the stub: not implemented",
        "meta": {"student": "stub only", "student_id": "stub_only-6666dddd", "source_hash": "4d9aaa3f05e1c8dd"},
        "steps": [["build", 0, 30.0], ["tests", 1, 5.0]],
        "tests": [
            ["Sizes/Ch01VectorAdd.MatchesFloat64/student_n1", "pass"],
            ["Images/Ch01RgbToGrey.MatchesFloat64/student_h1_w1", "not_implemented"],
        ],
        "log": """\
[ RUN      ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1
[       OK ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1 (3 ms)
[ RUN      ] Images/Ch01RgbToGrey.MatchesFloat64/student_h1_w1
/src/chapters/ch01_indexing/tests.cu:103: Failure
Value of: wb_outcome_.passed()
  Actual: false
Expected: true
[not implemented] rgb_to_grey height=1 width=1 pitch=1: not implemented yet: write the kernel in chapters/ch01_indexing/ex3_rgb_to_grey.cu and delete the WB_NOT_IMPLEMENTED line in its launcher
  seed 771 (repeat with WORKBOOK_SEED=771)
[  FAILED  ] Images/Ch01RgbToGrey.MatchesFloat64/student_h1_w1, where GetParam() = (student, 1x1) (1 ms)
""",
        "without": ["bench.json", "bench.log"],
    },
    "skipped": {
        "what": "the tests ran on a machine without a GPU and skipped: skipped",
        "meta": {"student": "no gpu", "student_id": "no_gpu-8888ffff", "source_hash": "043c47fec8d280ac"},
        "steps": [["build", 0, 30.0], ["tests", 0, 1.0]],
        "tests": [["Sizes/Ch01VectorAdd.MatchesFloat64/student_n1", "skipped"]],
        "log": """\
[ RUN      ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1
[  SKIPPED ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1 (0 ms)
""",
        "without": ["bench.json", "bench.log"],
    },
    "faulting": {
        "what": "vector_add writes far outside its output: the kernel faults, the next test cannot allocate: faulted",
        "meta": {"student": "faulting", "student_id": "faulting-89d10dc7", "source_hash": "222168aaf69f0138"},
        "steps": [["build", 0, 30.0], ["tests", 1, 4.0]],
        "tests": [
            ["Sizes/Ch01VectorAdd.MatchesFloat64/student_n1", "fault"],
            ["Sizes/Ch01VectorAdd.MatchesFloat64/student_n2", "fault"],
        ],
        "log": """\
[ RUN      ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1
/src/chapters/ch01_indexing/tests.cu:103: Failure
Value of: wb_outcome_.passed()
  Actual: false
Expected: true
[fault] vector_add n=1: the kernel faulted: an illegal memory access was encountered (cudaErrorIllegalAddress) at launch.cu:80
  The CUDA context is lost; later GPU calls in this process fail too.
  seed 771 (repeat with WORKBOOK_SEED=771)
[  FAILED  ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1, where GetParam() = (student, 2x3) (1 ms)
[ RUN      ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n2
unknown file: Failure
C++ exception with description "cudaMalloc(&ptr_, bytes()) failed: an illegal memory access was encountered" thrown in the test body.
[  FAILED  ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n2, where GetParam() = (student, 2) (0 ms)
""",
        "without": ["bench.json", "bench.log"],
    },
    "hanging": {
        "what": "rgb_to_grey never finishes: the tests stop at their time limit (124) without a tests.json: hung",
        "meta": {"student": "hanging", "student_id": "hanging-19d4c9ba", "source_hash": "346800c2edec971e"},
        "steps": [["build", 0, 30.0], ["tests", 124, 7.0]],
        "log": """\
[ RUN      ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1
[       OK ] Sizes/Ch01VectorAdd.MatchesFloat64/student_n1 (3 ms)
[ RUN      ] Images/Ch01RgbToGrey.MatchesFloat64/student_h1_w1

kernel-workbook: rgb_to_grey height=1 width=1 pitch=1 is still running after 5 s. It probably never finishes: an endless loop, or a __syncthreads() that not every thread reaches.
""",
        "without": ["bench.json", "bench.log", "tests.json"],
    },
    "no-outcome": {
        "what": "a test case without an outcome code (the tests passed by their exit code alone): no result",
        "meta": {"student": "no-outcome", "student_id": "no-outcome-402f2803"},
        "tests": [
            ["Sizes/Ch01VectorAdd.MatchesFloat64/student_n1", None],
            ["Sizes/Ch01VectorAdd.MatchesFloat64/student_n1025", "pass"],
            ["Images/Ch01RgbToGrey.MatchesFloat64/student_h2_w3", "pass"],
            ["Matrices/Ch01MatrixAdd.MatchesFloat64/student_r2_c3", "pass"],
        ],
    },
    "tests-forged": {
        "what": "a second document after the test program's own in tests.json: implausible",
        "meta": {"student": "tests-forged", "student_id": "tests-forged-e82eeb92"},
        "twice": ["tests.json"],
    },
    "bench-crashed": {
        "what": "the tests pass, the benchmark is killed by a signal (139) before it writes bench.json: faulted",
        "meta": {"student": "bench crashed", "student_id": "bench_crashed-aaaa1111", "source_hash": "5dafa33034a2521c"},
        "steps": [["build", 0, 30.0], ["tests", 0, 10.0], ["bench", 139, 3.0]],
        "files": {"bench.log": "Running ch01_bench\n"},
        "without": ["bench.json"],
    },
    "bench-hung": {
        "what": "the tests pass, the benchmark stops at its time limit (124) without bench.json: hung",
        "meta": {"student": "bench hung", "student_id": "bench_hung-9999aaaa", "source_hash": "27154bd9b9904430"},
        "steps": [["build", 0, 30.0], ["tests", 0, 10.0], ["bench", 124, 300.0]],
        "files": {"bench.log": "Running ch01_bench\n"},
        "without": ["bench.json"],
    },
    "forged-json": {
        "what": "bench.json replaced by a forged document (a time that is a word, no schema, no shapes): no result",
        "meta": {"student": "forged json", "student_id": "forged_json-bbbb2222", "source_hash": "3a727f8b97d91329"},
        "steps": [["build", 0, 30.0], ["tests", 0, 10.0], ["bench", 0, 3.0]],
        "files": {
            "bench.json": '{"results": [{"role": "student", "verdict": "pass", "median_us": "fast"}]}',
            "bench.log": "",
        },
    },
    "forged-stream": {
        "what": "a second results document, ten times faster, after the benchmark's own in bench.json: implausible",
        "meta": {"student": "forged-stream", "student_id": "forged-stream-c149cac4"},
        "bench": {
            "then": {
                "set": {
                    "n=16777216 student": {"median_us": 5.8},
                    "n=16777216 student/x2": {"median_us": 5.8},
                    "n=67108864 student": {"median_us": 22.5},
                    "n=67108864 student/x2": {"median_us": 22.5},
                    "2160x3840 student": {"median_us": 4.4},
                    "4096x4096 student": {"median_us": 6.0},
                }
            }
        },
    },
    "implausible": {
        "what": "matrix_add timed at 5 µs, above what the memory can deliver: implausible",
        "meta": {"student": "implausible", "student_id": "implausible-4444bbbb", "source_hash": "44ad91fcef421664"},
        "bench": {"times": {"4096x4096 student": 5.0}},
    },
    "reference-inconsistent": {
        "what": "a reference row that disagrees with the recorded baseline (80 µs instead of 230): implausible",
        "meta": {"student": "reference-inconsistent", "student_id": "reference-inconsistent-56a47b5a"},
        "bench": {"set": {"n=67108864 cublas_geam": {"median_us": 80.0}}},
    },
    "unknown-code": {
        "what": "a row whose outcome code the leaderboard does not know: no result",
        "meta": {"student": "unknown-code", "student_id": "unknown-code-87e310e4"},
        "bench": {"set": {"n=16777216 student": {"outcome": "probably_fine"}}},
    },
    "caching": {
        "what": "vector_add returns at once when called again with the same pointers: stale output after timing",
        "meta": {
            "student": "caching",
            "student_id": "caching-3b2019ed",
            "source_hash": "24499b34248ce9ee",
            "review": ["keeps state between calls (a static variable)"],
        },
        "bench": {"untimed": {"n=16777216 student": "stale_after_timing", "n=67108864 student": "stale_after_timing"}},
        "files": {"bench.log": "some kernels were not timed\n"},
    },
    "own-stream": {
        "what": "vector_add launches on a stream of its own and returns without waiting: left work running",
        "meta": {
            "student": "own-stream",
            "student_id": "own-stream-236858a9",
            "source_hash": "3ccb16e98df4ec01",
            "review": ["uses streams or callbacks of its own", "keeps state between calls (a static variable)"],
        },
        "bench": {
            "times": {"n=16777216 student": 2.0, "n=16777216 student/x2": 2.0},
            "untimed": {"n=67108864 student": "outside_stream"},
            "set": {
                "n=16777216 student": {"outcome": "outside_stream"},
                "n=16777216 student/x2": {"outcome": "outside_stream"},
            },
        },
        "files": {"bench.log": "some kernels were not timed\n"},
    },
    "ncu-agrees": {
        "what": "fast's run with an Nsight Compute profile whose kernel times agree with the benchmark's: ranked",
        "from": ["fast", "ncu"],
        "meta": {"student": "ncu-agrees", "student_id": "ncu-agrees-c0b74245"},
        "steps": [["build", 0, 31.0], ["tests", 0, 12.0], ["bench", 0, 70.0], ["ncu", 0, 20.0]],
    },
    "ncu-mismatch": {
        "what": "the profile times the student's kernel ten times slower than the benchmark did: implausible",
        "from": ["fast", "ncu"],
        "meta": {"student": "ncu-mismatch", "student_id": "ncu-mismatch-ecb71e0e"},
        "steps": [["build", 0, 31.0], ["tests", 0, 12.0], ["bench", 0, 70.0], ["ncu", 0, 20.0]],
        "edit": {"ncu.csv": [['"9.0","224000"', '"9.0","2250000"', 12]]},
    },
}
