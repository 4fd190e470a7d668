# The repository's two classes of submissions, as what each student does differently from the
# base kernels in base/ (plain, fast and slow for every chapter; the hostile programs of chapter
# 1). Read as data, never run, by tools/leaderboard/wb_leaderboard/classes.py, which says what
# each key means and makes a class when a run or a test needs it:
#   python3 -m wb_leaderboard.classes fixture DEST     (PYTHONPATH=tools/leaderboard)
#
# {class: {student: {chapter: how its folder is made}}}. What each student is for, and the
# outcome expected of it: docs/leaderboard.md ("The fixture class", "The hostile class"),
# ../fixture-expected.json and ../hostile-expected.json.
{
    "fixture": {
        # Chapter 1: every path. The plain kernels (one element per thread) are correct; each
        # student below changes one exercise of them.
        "name with spaces": {"ch01": {"from": ["plain"]}},
        "caching": {
            "ch01": {
                "from": ["plain"],
                "header": {
                    "ex1_vector_add.cu": """\
Fixture submission "caching", exercise 1: remembers the pointers and size of its last call
and returns at once when they repeat, assuming the answer is still in c. Right on every
first call; after that, whatever c holds."""
                },
                "edit": {
                    "ex1_vector_add.cu": [
                        [
                            "  if (n <= 0) return;\n",
                            """\
  if (n <= 0) return;
  static const float *last_a = nullptr, *last_b = nullptr, *last_c = nullptr;
  static int last_n = -1;
  if (a == last_a && b == last_b && c == last_c && n == last_n) return;
  last_a = a, last_b = b, last_c = c, last_n = n;
""",
                        ]
                    ]
                },
            }
        },
        "faulting": {
            "ch01": {
                "from": ["plain"],
                "header": {
                    "ex1_vector_add.cu": """\
Fixture submission "faulting", exercise 1: the store's index is off by 2^38 elements (1 TiB),
far outside any allocation: an illegal-address fault on the first launch."""
                },
                "edit": {
                    "ex1_vector_add.cu": [
                        [
                            "  if (i < n) c[i] = a[i] + b[i];\n",
                            "  if (i < n) c[i + (int64_t{1} << 38)] = a[i] + b[i];\n",
                        ]
                    ]
                },
            }
        },
        "hanging": {
            "ch01": {
                "from": ["plain"],
                "header": {
                    "ex3_rgb_to_grey.cu": """\
Fixture submission "hanging", exercise 3: every thread waits for a flag that nothing ever
sets, so the kernel never finishes."""
                },
                "edit": {
                    "ex3_rgb_to_grey.cu": [
                        ["namespace {\n\n", "namespace {\n\n__device__ int g_ready = 0;  // never set\n\n"],
                        [
                            "  if (x >= width || y >= height) return;\n",
                            """\
  if (x >= width || y >= height) return;
  while (atomicAdd(&g_ready, 0) == 0) {
  }
""",
                        ],
                    ]
                },
            }
        },
        "not-compiling": {
            "ch01": {
                "from": ["plain"],
                "summary": {
                    "ex2_vector_add_x2.cu": 'Fixture submission "not-compiling", exercise 2: uses a name it never '
                    "declared."
                },
                "edit": {
                    "ex2_vector_add_x2.cu": [
                        [
                            "  if (first + 1 < n) c[first + 1] = a[first + 1] + b[first + 1];\n",
                            "  if (first + 1 < n) c[first + 1] = a[first + 1] + b[first + 1] + offset;\n",
                        ]
                    ]
                },
            }
        },
        "own-stream": {
            "ch01": {
                "from": ["plain"],
                "summary": {
                    "ex1_vector_add.cu": 'Fixture submission "own-stream", exercise 1: launches on a stream of its '
                    "own instead of the one it is given, and returns without waiting: a "
                    "timer on the given stream sees nothing."
                },
                "edit": {
                    "ex1_vector_add.cu": [
                        [
                            "void student::vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {\n",
                            """\
void student::vector_add(const float* a, const float* b, float* c, int n, cudaStream_t) {
  static cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreate(&s));
    return s;
  }();
""",
                        ]
                    ]
                },
            }
        },
        "-dash ..dots": {
            "ch01": {
                "write": {
                    "ex9_bonus.cu": "// Not one of the chapter's files: ignored, never built.\n"
                    "#error this file must never be compiled\n",
                    "notes.txt": "A folder with a leading dash and two dots in its name, and none of\n"
                    "the chapter's files: it must be listed as missing files, and never built.\n",
                }
            }
        },
        # Every chapter: one fast and one slow correct submission (the base kernels), and one that
        # the tests reject as wrong answers: fast's files under another name, with one mistake.
        "fast": {
            "ch01": {"from": ["plain", "fast"]},
            "ch02": {"from": ["fast"]},
            "ch03": {"from": ["fast"]},
            "ch04": {"from": ["fast"]},
            "ch05": {"from": ["fast"]},
            "ch06": {"from": ["fast"]},
            "ch07": {"from": ["fast"]},
            "ch08": {"from": ["fast"]},
            "ch09": {"from": ["fast"]},
            "ch10": {"from": ["fast"]},
            "ch11": {"from": ["fast"]},
        },
        "slow": {
            "ch01": {"from": ["plain", "slow"]},
            "ch02": {"from": ["slow"]},
            "ch03": {"from": ["slow"]},
            "ch04": {"from": ["slow"]},
            "ch05": {"from": ["slow"]},
            "ch06": {"from": ["slow"]},
            "ch07": {"from": ["slow"]},
            # ch08, ch09, ch11: the files of "fast" where "slow" differs only by a second launch or its comment.
            "ch08": {
                "from": ["slow"],
                "take": {"ex4_flash_attention_mma.cu": "fast", "ex6_ragged_attention.cu": "fast"},
                "edit": {
                    "ex4_flash_attention_mma.cu": [
                        [
                            "// Fixture submission \"fast\", chapter 8, exercise 4: BF16 attention on CUDA cores, a warp per query\n// row with the online softmax over the keys in FP32 (the solution's step v4 cannot be compiled in\n// here: it includes chapter 5's mma_common.cuh, which needs chapter 5's interface header, on the\n// include path of chapter 8's solution library only).\n",
                            "// Fixture submission \"slow\", chapter 8, exercise 4: BF16 attention on CUDA cores, a warp per query\n// row with the online softmax over the keys in FP32, run twice per call (the solution's step v4\n// cannot be compiled in here: it includes chapter 5's mma_common.cuh, which needs chapter 5's\n// interface header, on the include path of chapter 8's solution library only).\n",
                        ],
                        [
                            "  WB_CHECK_LAUNCH();\n",
                            "  WB_CHECK_LAUNCH();\n  // once more: right, and twice the time\n  attention_rows_kernel<<<blocks, kWarps * 32, 0, stream>>>(q, k, v, o, lse, rows, Sq, Sk, D, scale, causal);\n  WB_CHECK_LAUNCH();\n",
                        ],
                    ],
                    "ex6_ragged_attention.cu": [
                        [
                            '// Fixture submission "fast", chapter 8, exercise 6: the packed sequences through the same warp-per-\n// row kernel as exercise 4: a warp per (token, query head), reading the keys of its own sequence\n// only.\n',
                            '// Fixture submission "slow", chapter 8, exercise 6: the packed sequences through the same warp-per-\n// row kernel as exercise 4, run twice per call: a warp per (token, query head), reading the keys of\n// its own sequence only.\n',
                        ],
                        [
                            "  WB_CHECK_LAUNCH();\n",
                            "  WB_CHECK_LAUNCH();\n  // once more: right, and twice the time\n  ragged_rows_kernel<<<grid, kWarps * 32, 0, stream>>>(q, k, v, o, lse, cu_seqlens, T, Hq, Hkv, D, scale, causal);\n  WB_CHECK_LAUNCH();\n",
                        ],
                    ],
                },
            },
            "ch09": {
                "from": ["slow"],
                "take": {"ex3_block.cu": "fast", "ex4_decode_graph.cu": "fast"},
                "edit": {
                    "ex3_block.cu": [
                        [
                            '// Fixture submission "fast", chapter 9, exercise 3: the block\'s eight calls, in the order of the\n',
                            '// Fixture submission "slow", chapter 9, exercise 3: the block\'s eight calls, in the order of the\n',
                        ]
                    ],
                    "ex4_decode_graph.cu": [
                        [
                            '// Fixture submission "fast", chapter 9, exercise 4: the decode step captured once as a CUDA Graph;\n',
                            '// Fixture submission "slow", chapter 9, exercise 4: the decode step captured once as a CUDA Graph;\n',
                        ]
                    ],
                },
            },
            "ch10": {"from": ["slow"]},
            "ch11": {"from": ["slow"], "take": {"ex1_pinned_staging.cu": "fast"}},
        },
        "wrong-rectangles": {
            "ch01": {
                "from": ["plain"],
                "header": {
                    "ex4_matrix_add.cu": """\
Fixture submission "wrong-rectangles", exercise 4: the grid's x and y sizes are swapped (x
sized from the rows, y from the columns). Every index is bounds-checked, so nothing is
written out of range, and on squares it is right; on rectangles part of C is never written."""
                },
                "edit": {
                    "ex4_matrix_add.cu": [
                        [
                            "  const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);\n",
                            "  const dim3 grid((rows + block.x - 1) / block.x, (cols + block.y - 1) / block.y);"
                            "  // swapped\n",
                        ]
                    ]
                },
            },
            "ch02": {
                "from": ["fast"],
                "rename": ["fast", "wrong-rectangles"],
                "summary": {
                    "ex3_transpose_tiled.cu": 'Fixture submission "wrong-rectangles", chapter 2, exercise 3: the solution\'s step v4 '
                    "(vector loads and stores through a swizzled tile), called with rows and cols swapped. "
                    "Every read and write stays inside the matrices (rows x cols = cols x rows) and squares "
                    "come out right; every rectangle is transposed wrongly."
                },
                "edit": {
                    "ex3_transpose_tiled.cu": [
                        [
                            "  wrong_rectangles_ex3::v4_transpose_f32(in, out, rows, cols, stream);\n",
                            "  wrong_rectangles_ex3::v4_transpose_f32(in, out, cols, rows, stream);"
                            "  // rows and cols swapped\n",
                        ]
                    ]
                },
            },
            "ch07": {
                "from": ["fast"],
                "rename": ["fast", "wrong-rectangles"],
                "summary": {
                    "ex1_softmax_three_pass.cu": 'Fixture submission "wrong-rectangles", chapter 7, exercise 1: the solution\'s step v2 (the '
                    "online softmax), called with B and V swapped: every access stays inside the B x V matrix, "
                    "but the rows it normalises are not the rows of x.",
                    "ex2_online_softmax.cu": 'Fixture submission "wrong-rectangles", chapter 7, exercise 2: the solution\'s step v2 (the '
                    "online softmax).",
                    "ex3_topk.cu": 'Fixture submission "wrong-rectangles", chapter 7, exercise 3: the solution\'s step v4 (a row '
                    "split over several blocks).",
                    "ex4_softmax_topk.cu": 'Fixture submission "wrong-rectangles", chapter 7, exercise 4: the solution\'s step v4 (a row '
                    "split over several blocks).",
                },
                "edit": {
                    "ex1_softmax_three_pass.cu": [
                        [
                            "  wrong_rectangles_ex1::softmax_online(x, probs, B, V, stream);\n",
                            "  wrong_rectangles_ex1::softmax_online(x, probs, V, B, stream);  // B and V swapped\n",
                        ]
                    ]
                },
            },
        },
        "wrong-answers": {
            # Chapter 10: the implicit GEMM of "fast" with BatchNorm's beta and the conv's bias swapped.
            "ch10": {
                "from": ["fast"],
                "edit": {
                    "ex2_implicit_gemm.cu": [
                        [
                            '// Fixture submission "fast", chapter 10, exercise 2: the solution\'s step v3 (the implicit GEMM on\n'
                            "// WMMA with the folded BatchNorm and the ReLU in the epilogue). The solution's file is compiled\n"
                            "// into this one with its namespace renamed (ch10::solution becomes ch10::fast_ex2), so that\n",
                            '// Fixture submission "wrong-answers", chapter 10, exercise 2: the solution\'s step v3 called with\n'
                            "// the conv's bias and BatchNorm's beta swapped (both in [-1, 1]: every access in bounds, the\n"
                            "// values wrong). The solution's file is compiled into this one with its namespace renamed\n"
                            "// (ch10::solution becomes ch10::fast_ex2), so that\n",
                        ],
                        [
                            "  fast_ex2::v3_implicit_gemm_wmma(x, w, bn, residual, y, s, stream);\n",
                            "  BnParams swapped = bn;  // bias and beta swapped\n"
                            "  swapped.bias = bn.beta;\n"
                            "  swapped.beta = bn.bias;\n"
                            "  fast_ex2::v3_implicit_gemm_wmma(x, w, swapped, residual, y, s, stream);\n",
                        ],
                    ]
                },
            },
            # Chapter 11: the pipeline of "fast" computing a*x - b.
            "ch11": {
                "from": ["fast"],
                "edit": {
                    "ex2_pipeline.cu": [
                        [
                            "// Exercise 2, written: three streams, 16 chunks at most, forked from and joined to the stream.\n",
                            "// Exercise 2, written with a wrong sign: y = a x - b (the checks must call it wrong).\n",
                        ],
                        ["    y[i] = a * x[i] + b;\n", "    y[i] = a * x[i] - b;\n"],
                    ]
                },
            },
            "ch03": {
                "from": ["fast"],
                "rename": ["fast", "wrong-answers"],
                "summary": {
                    "ex1_sum.cu": 'Fixture submission "wrong-answers", chapter 3, exercise 1: the solution\'s step v5 (one '
                    "pass: coarsened blocks, the last block to finish adds the partials), over one element "
                    "too few: the bound is off by one, so the last element is never added."
                },
                "edit": {
                    "ex1_sum.cu": [
                        [
                            "  wrong_answers_ex1::v5_sum_f32(x, n, out, workspace, workspace_bytes, stream);\n",
                            "  wrong_answers_ex1::v5_sum_f32(x, n > 0 ? n - 1 : 0, out, workspace, workspace_bytes, "
                            "stream);\n",
                        ]
                    ]
                },
            },
            "ch04": {
                "from": ["fast"],
                "rename": ["fast", "wrong-answers"],
                "summary": {
                    "ex1_naive.cu": 'Fixture submission "wrong-answers", chapter 4, exercise 1: the tiled kernel of '
                    '"fast".',
                    "ex2_smem_tiling.cu": 'Fixture submission "wrong-answers", chapter 4, exercise 2: the tiled kernel of "fast", with '
                    "beta dropped: it writes C = alpha A B whatever beta is. Right on every test with beta = 0, "
                    "wrong on the others.",
                    "ex3_register_tiling.cu": 'Fixture submission "wrong-answers", chapter 4, exercise 3: the tiled '
                    'kernel of "fast".',
                },
                "edit": {
                    "ex2_smem_tiling.cu": [
                        [
                            "      out = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * out;"
                            "  // C is not read when beta = 0\n",
                            "      out = alpha * acc[i][j];  // beta * C forgotten\n",
                        ]
                    ]
                },
            },
            "ch05": {
                "from": ["fast"],
                "rename": ["fast", "wrong-answers"],
                "summary": {
                    "ex1_wmma_global.cu": 'Fixture submission "wrong-answers", chapter 5, exercise 1: the solution\'s step v5 (mma.sync) '
                    "for the four float types; in BF16 -> FP32 it runs the product a second time with D as C, so "
                    "D = 2 A B + C: every value is finite and in place, and wrong.",
                    "ex2_wmma_smem.cu": 'Fixture submission "wrong-answers", chapter 5, exercise 2: the solution\'s '
                    "step v5 (mma.sync) for the four float types.",
                    "ex3_wmma_int8.cu": 'Fixture submission "wrong-answers", chapter 5, exercise 3: the solution\'s '
                    "step v4 on INT8.",
                },
                "edit": {
                    "ex1_wmma_global.cu": [
                        [
                            "  wrong_answers_ex1::v5_mma_sync<__nv_bfloat16, float>(M, N, K, A, B, C, D, stream);\n",
                            """\
  wrong_answers_ex1::v5_mma_sync<__nv_bfloat16, float>(M, N, K, A, B, C, D, stream);
  // D = A B + C is in D now; a second call "accumulates into D" by passing D as C:
  wrong_answers_ex1::v5_mma_sync<__nv_bfloat16, float>(M, N, K, A, B, D, D, stream);
""",
                        ]
                    ]
                },
            },
            "ch06": {
                "from": ["fast"],
                "rename": ["fast", "wrong-answers"],
                "summary": {
                    "ex2_residual_layernorm.cu": 'Fixture submission "wrong-answers", chapter 6, exercise 2: the solution\'s step v4 (the '
                    "row held in registers; step v2 for rows too long for them), with gamma and beta passed "
                    "in each other's place: the mean, rstd and h are right, y is wrong."
                },
                "edit": {
                    "ex2_residual_layernorm.cu": [
                        [
                            "  wrong_answers_ex2::v4_residual_layernorm(x, r, gamma, beta, h, y, mean, rstd, N, C, ld, eps, "
                            "stream);\n",
                            """\
  // gamma and beta in each other's place:
  wrong_answers_ex2::v4_residual_layernorm(x, r, beta, gamma, h, y, mean, rstd, N, C, ld, eps, stream);
""",
                        ]
                    ]
                },
            },
            "ch08": {
                "from": ["fast"],
                "rename": ["fast", "wrong-answers"],
                "summary": {
                    "ex3_flash_attention_f32.cu": 'Fixture submission "wrong-answers", chapter 8, exercise 3: the solution\'s step v3, with '
                    "the scores scaled by 1 / D instead of the scale it is given (1 / sqrt(D)): finite, in "
                    "place, and wrong wherever D > 1."
                },
                "edit": {
                    "ex3_flash_attention_f32.cu": [
                        [
                            "  wrong_answers_ex3::v3_attention_f32(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, scratch, "
                            "stream);\n",
                            """\
  // 1 / D where the given scale (1 / sqrt(D)) belongs:
  wrong_answers_ex3::v3_attention_f32(q, k, v, o, lse, B, H, Sq, Sk, D, 1.0f / D, causal, scratch, stream);
""",
                        ]
                    ]
                },
            },
            "ch09": {
                "from": ["fast"],
                "rename": ["fast", "wrong-answers"],
                "summary": {
                    "ex1_linear_epilogue.cu": 'Fixture submission "wrong-answers", chapter 9, exercise 1: the solution\'s step v3 (WMMA BF16 '
                    "tiles, fused epilogue), with the GELU of the BiasGelu epilogue left out: y = x W^T + b is "
                    "right, gelu_tanh(x W^T + b) is not.",
                    "ex2_gemv.cu": 'Fixture submission "wrong-answers", chapter 9, exercise 2: the solution\'s step v4 '
                    "(a warp per output).",
                },
                "edit": {
                    "ex1_linear_epilogue.cu": [
                        [
                            "  wrong_answers_ex1::linear_wmma(x, w, b, y, M, N, K, epi, stream);\n",
                            """\
  // the GELU forgotten:
  wrong_answers_ex1::linear_wmma(x, w, b, y, M, N, K, epi == Epilogue::BiasGelu ? Epilogue::Bias : epi, stream);
""",
                        ]
                    ]
                },
            },
        },
    },
    "hostile": {
        # Chapter 1 submissions that cheat (their exercise 1 is a program of its own in base/), beside
        # honest ones taken from the fixture class.
        "fast": {"ch01": {"as": "fixture/fast"}},
        "slow": {"ch01": {"as": "fixture/slow"}},
        "caching": {"ch01": {"as": "fixture/caching"}},
        "hang": {"ch01": {"as": "fixture/hanging"}},
        "forged-results": {"ch01": {"from": ["plain", "slow", "forged-results"]}},
        "history-forger": {"ch01": {"from": ["plain", "slow", "history-forger"]}},
        "plagiarist": {"ch01": {"from": ["plain", "slow", "plagiarist"]}},
        "seed-thief": {"ch01": {"from": ["plain", "slow", "seed-thief"]}},
        "stream-escape": {"ch01": {"from": ["plain", "fast", "stream-escape"]}},
    },
}
