#!/usr/bin/env python3
"""Peer measurement for chapter 8: PyTorch's attention backends on the chapter's shapes, BF16.

For each shape (B, H, S, D, causal; Sq = Sk = S) it times
torch.nn.functional.scaled_dot_product_attention forced onto one backend at a time
(FlashAttention-2 "flash", cuDNN "cudnn", memory-efficient "efficient", and the unfused
"math" path), with CUDA events: a few warm-up calls, then N samples, each after a 256 MB
buffer write that flushes the L2 cache; it reports the median and TFLOPS counted as the
chapter's benchmark counts them: 4 B H D x (visible query-key pairs), S^2 without the mask
and S (S + 1) / 2 with it. A backend that cannot run a shape (not built in, unsupported on
this GPU, out of memory) is listed with the reason instead of a time.

    scripts/torch_attention_peer.py [--json FILE] [--samples 20] [--shapes headline|all]

Shapes: headline = B 4, H 16, S 8192, D 64 and 128, causal and not (the chapter's BF16
benchmark); all adds S 4096 (the fused-versus-unfused comparison).

Without PyTorch, or without a CUDA GPU, it prints why and exits with 77 (skipped).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import torch_peer as tp  # noqa: E402
from torch_peer import SKIP  # noqa: E402


def shapes(which):
    out = []
    sizes = [8192] if which == "headline" else [8192, 4096]
    for s in sizes:
        for d in (64, 128):
            for causal in (False, True):
                out.append((4, 16, s, d, causal))
    return out


def flops(b, h, s, d, causal):
    pairs = s * (s + 1) / 2 if causal else s * s
    return 4.0 * b * h * d * pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    tp.add_run_args(ap, samples=20, warmup=3)
    ap.add_argument("--shapes", choices=["headline", "all"], default="headline")
    args = ap.parse_args()

    torch = tp.import_torch("torch_attention_peer")
    if torch is None:
        return SKIP
    F = torch.nn.functional
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        print(
            f"torch_attention_peer: PyTorch {torch.__version__} has no torch.nn.attention.sdpa_kernel "
            "(2.3 or newer needed): skipping"
        )
        return SKIP

    backends = []
    for name, attr in (
        ("flash", "FLASH_ATTENTION"),
        ("cudnn", "CUDNN_ATTENTION"),
        ("efficient", "EFFICIENT_ATTENTION"),
        ("math", "MATH"),
    ):
        if hasattr(SDPBackend, attr):
            backends.append((name, getattr(SDPBackend, attr)))

    dev = torch.device("cuda")
    flush = tp.flush_buffer(torch)

    def time_us(fn):
        # flush: evicts q, k, v from L2
        return tp.median_us(torch, fn, args.warmup, args.samples, lambda i: flush.fill_(i & 0xFF))

    rows = []
    for b, h, s, d, causal in shapes(args.shapes):
        q = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)
        k = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)
        v = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)
        for name, backend in backends:
            row = {"backend": name, "B": b, "H": h, "S": s, "D": d, "causal": causal}

            def call():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            try:
                us = time_us(call)
                row.update(median_us=us, TFLOPS=flops(b, h, s, d, causal) / us / 1e6)
            except Exception as e:  # not built, not supported here, or out of memory
                row["not_measured"] = tp.failure(e)
                torch.cuda.empty_cache()
            rows.append(row)
        del q, k, v
        torch.cuda.empty_cache()

    print(
        f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}; BF16, median of {args.samples}, " "L2 flushed"
    )
    print(f"{'backend':10} {'B':>2} {'H':>3} {'S':>6} {'D':>4} {'causal':>6} {'median us':>11} {'TFLOPS':>8}")
    for r in rows:
        head = f"{r['backend']:10} {r['B']:>2} {r['H']:>3} {r['S']:>6} {r['D']:>4} {str(r['causal']):>6}"
        if "median_us" in r:
            print(f"{head} {r['median_us']:11.1f} {r['TFLOPS']:8.1f}")
        else:
            print(f"{head}   not measured: {r['not_measured']}")
    if args.json:
        tp.write_json(args.json, {**tp.run_info(torch, args.samples), "results": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
