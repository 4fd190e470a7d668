#!/usr/bin/env python3
"""Peer measurement for chapter 7: topk(softmax(x), k) in PyTorch, FP32.

For each shape (B rows, V logits, k) it times  p = softmax(x); v, i = topk(p, k)  eagerly
and under torch.compile, with CUDA events: warm-up calls, then samples each after a 256 MB
buffer write that flushes the L2 cache; it reports the median in microseconds and the
speed against the roofline the chapter uses (the logits read once over the copy
bandwidth it measures here with a device-to-device copy of the same size).

    scripts/torch_softmax_topk_peer.py [--json FILE] [--samples 30] [--no-compile]

Without PyTorch (or without a GPU) it prints one line and exits 0.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import torch_peer as tp  # noqa: E402

SHAPES = [(1, 128256, 50), (64, 128256, 50), (256, 128256, 50), (64, 262144, 64)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    tp.add_run_args(ap, samples=30, warmup=5)
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    args = ap.parse_args()
    if args.samples < 1 or args.warmup < 0:
        ap.error("--samples must be at least 1 and --warmup at least 0")

    torch = tp.import_torch()
    if torch is None:
        return 0

    dev = torch.device("cuda")
    flush = tp.flush_buffer(torch)

    def softmax_topk(x, k):
        return torch.topk(torch.softmax(x, dim=-1), k, dim=-1)

    def forms():
        # A fresh compiled function per shape, with static shapes (one function reused over the
        # shapes would be recompiled with dynamic sizes, and its generic kernels are slower).
        torch._dynamo.reset()
        f = [("eager", softmax_topk)]
        if not args.no_compile:
            f.append(("compile", torch.compile(softmax_topk, dynamic=False)))
        return f

    def time_us(fn):
        return tp.median_us(torch, fn, args.warmup, args.samples, lambda i: flush.fill_(1))

    rows = []
    print(f"{'shape':<22} {'form':<8} {'us':>9} {'roofline us':>12} {'% roofline':>10}")
    for B, V, k in SHAPES:
        x = torch.randn(B, V, device=dev) * 2
        src = torch.empty_like(x)
        copy_us = time_us(lambda: src.copy_(x))  # reads and writes B*V*4 bytes
        bandwidth = 2 * x.numel() * 4 / (copy_us * 1e-6)
        roof_us = x.numel() * 4 / bandwidth * 1e6
        for name, fn in forms():
            us = time_us(lambda: fn(x, k))
            rows.append(
                {
                    "B": B,
                    "V": V,
                    "k": k,
                    "form": name,
                    "us": us,
                    "roofline_us": roof_us,
                    "copy_gbs": bandwidth / 1e9,
                    "gpu": torch.cuda.get_device_name(),
                }
            )
            print(f"{f'B{B} V{V} k{k}':<22} {name:<8} {us:>9.1f} {roof_us:>12.1f} {100 * roof_us / us:>9.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"peer": "torch", "torch": torch.__version__, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
