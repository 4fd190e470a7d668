#!/usr/bin/env python3
"""Peer measurement for chapter 6: residual add + LayerNorm / RMSNorm in PyTorch, BF16.

For each shape (N x C) it times  h = x + r; y = norm(h)  eagerly and under torch.compile,
with CUDA events: a few warm-up calls, then 30 samples, each after a 256 MB buffer write
that flushes the L2 cache; it reports the median. Bytes per call are the fused minimum
(read x and r, write h and y, gamma/beta once, 8 bytes of statistics per row), the same
count the chapter's benchmark uses, so GB/s compare directly.

    scripts/torch_norm_peer.py [--json FILE] [--samples 30] [--no-compile]

Without PyTorch (or without a GPU) it prints one line and exits 0.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import torch_peer as tp  # noqa: E402

SHAPES = [(16384, 4096), (4096, 8192), (32768, 1024), (1, 4096)]
EPS = 1e-5


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    tp.add_run_args(ap, samples=30, warmup=5)
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    args = ap.parse_args()

    torch = tp.import_torch()
    if torch is None:
        return 0
    F = torch.nn.functional

    dev = torch.device("cuda")
    flush = tp.flush_buffer(torch)
    has_rms = hasattr(F, "rms_norm")

    def residual_layernorm(x, r, g, b):
        h = x + r
        return h, F.layer_norm(h, (h.shape[-1],), g, b, EPS)

    def residual_rmsnorm(x, r, g):
        h = x + r
        return h, F.rms_norm(h, (h.shape[-1],), g, EPS)

    def variants():
        # A fresh compiled function per shape, with static shapes: one function reused over the
        # shapes would be recompiled with dynamic sizes from the second shape on, and its generic
        # kernels would make the peer look slower than torch.compile is.
        torch._dynamo.reset()
        v = [("layernorm", "eager", residual_layernorm)]
        if has_rms:
            v.append(("rmsnorm", "eager", residual_rmsnorm))
        if not args.no_compile:
            v.append(("layernorm", "compile", torch.compile(residual_layernorm, dynamic=False)))
            if has_rms:
                v.append(("rmsnorm", "compile", torch.compile(residual_rmsnorm, dynamic=False)))
        return v

    def time_us(fn, fargs):
        # flush: evicts x, r, gamma, beta from L2
        return tp.median_us(torch, lambda: fn(*fargs), args.warmup, args.samples, lambda i: flush.fill_(i & 0xFF))

    rows = []
    for n, c in SHAPES:
        x = torch.randn(n, c, device=dev, dtype=torch.bfloat16)
        r = torch.randn(n, c, device=dev, dtype=torch.bfloat16)
        g = torch.rand(c, device=dev, dtype=torch.bfloat16) + 0.5
        b = torch.randn(c, device=dev, dtype=torch.bfloat16)
        for op, mode, fn in variants():
            fargs = (x, r, g, b) if op == "layernorm" else (x, r, g)
            param_bytes = 2 * c * (2 if op == "layernorm" else 1)
            nbytes = 2 * 4 * n * c + param_bytes + (8 if op == "layernorm" else 4) * n
            try:
                us = time_us(fn, fargs)
            except Exception as e:  # torch.compile may be unavailable (no triton, ...)
                print(f"{op} {mode} {n}x{c}: not measured ({type(e).__name__}: {e})", file=sys.stderr)
                continue
            rows.append(
                {
                    "op": "residual_" + op,
                    "mode": mode,
                    "N": n,
                    "C": c,
                    "median_us": us,
                    "bytes": nbytes,
                    "GBps": nbytes / us / 1e3,
                }
            )

    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}; median of {args.samples}, L2 flushed")
    print(f"{'op':20} {'mode':8} {'shape':>12} {'median us':>10} {'GB/s':>8}")
    for row in rows:
        shape = f"{row['N']}x{row['C']}"
        print(f"{row['op']:20} {row['mode']:8} {shape:>12} {row['median_us']:10.2f} {row['GBps']:8.0f}")
    if args.json:
        tp.write_json(args.json, {**tp.run_info(torch, args.samples), "eps": EPS, "results": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
