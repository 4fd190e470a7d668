#!/usr/bin/env python3
"""Peer measurement for chapter 10: convolution + bias + BatchNorm + ReLU in PyTorch, BF16 NHWC.

For each layer of the chapter's Measured section (ResNet-50 at batch 32, and the depthwise
3 x 3 at 32 x 112 x 112 x 64) it times, channels-last BF16, in inference mode:

    conv            F.conv2d(x, w, bias): the convolution alone (eager, cuDNN)
    conv_bn_relu    F.conv2d -> F.batch_norm (eval: running statistics) -> F.relu, eager:
                    three kernels, the activations through DRAM between them
    compiled        torch.compile of the same three ops (static shapes, one compile per layer)

with CUDA events: warm-up calls (cuDNN's benchmark mode picks its algorithm there), then N
samples, each after a read of a 256 MB buffer that flushes the L2 cache (a read, as the
chapter's harness does, so the timed kernels do not pay for writing back dirty lines); it
reports the median in microseconds and TFLOPS counted as 2 N P Q K (C / groups) R S.

    scripts/torch_conv_peer.py [--json FILE] [--samples 30] [--warmup 5] [--no-compile] [--quick]

--quick: 5 samples, 2 warm-up calls, the first 3 x 3 layer and the depthwise layer only.
Without PyTorch, or without a CUDA GPU, it prints why and exits with 77 (skipped).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import torch_peer as tp  # noqa: E402
from torch_peer import SKIP  # noqa: E402

BATCH = 32
EPS = 1e-5

# (name, C, H, W, K, R, S, stride, pad, groups): the input is BATCH x C x H x W.
LAYERS = [
    ("3x3 64->64 56x56", 64, 56, 56, 64, 3, 3, 1, 1, 1),
    ("3x3 128->128 28x28", 128, 28, 28, 128, 3, 3, 1, 1, 1),
    ("3x3 256->256 14x14", 256, 14, 14, 256, 3, 3, 1, 1, 1),
    ("3x3 512->512 7x7", 512, 7, 7, 512, 3, 3, 1, 1, 1),
    ("1x1 512->128 28x28", 512, 28, 28, 128, 1, 1, 1, 0, 1),
    ("3x3 s2 256->256 28x28", 256, 28, 28, 256, 3, 3, 2, 1, 1),
    ("depthwise 3x3 112x112x64", 64, 112, 112, 64, 3, 3, 1, 1, 64),
]
QUICK = ("3x3 64->64 56x56", "depthwise 3x3 112x112x64")
MODES = ("conv", "conv_bn_relu", "compiled")


def out_size(h, r, stride, pad):
    return (h + 2 * pad - r) // stride + 1


def flops(c, h, w, k, r, s, stride, pad, groups):
    p, q = out_size(h, r, stride, pad), out_size(w, s, stride, pad)
    return 2.0 * BATCH * p * q * k * (c // groups) * r * s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--samples", type=int, help="timed samples per measurement (default 30; 5 with --quick)")
    ap.add_argument("--warmup", type=int, help="untimed calls first (default 5; 2 with --quick)")
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument("--quick", action="store_true", help="a fast run: few samples, two layers")
    args = ap.parse_args()
    samples = args.samples if args.samples is not None else (5 if args.quick else 30)
    warmup = args.warmup if args.warmup is not None else (2 if args.quick else 5)
    if samples < 1 or warmup < 0:
        ap.error("--samples must be at least 1 and --warmup at least 0")

    torch = tp.import_torch("torch_conv_peer")
    if torch is None:
        return SKIP
    F = torch.nn.functional

    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True  # the algorithm each shape is fastest with, as a tuned model runs
    flush = torch.ones(256 * 1024 * 1024 // 4, dtype=torch.float32, device=dev)

    def conv(x, w, b, stride, pad, groups):
        return F.conv2d(x, w, b, stride=stride, padding=pad, groups=groups)

    def conv_bn_relu(x, w, b, stride, pad, groups, mean, var, gamma, beta):
        y = F.conv2d(x, w, b, stride=stride, padding=pad, groups=groups)
        return F.relu(F.batch_norm(y, mean, var, gamma, beta, training=False, eps=EPS))

    def time_us(fn, fargs):
        # flush: a read that evicts x, w and the parameters from L2, leaving clean lines
        return tp.median_us(torch, lambda: fn(*fargs), warmup, samples, lambda i: flush.sum())

    layers = [layer for layer in LAYERS if not args.quick or layer[0] in QUICK]
    rows = []
    with torch.inference_mode():
        for name, c, h, w, k, r, s, stride, pad, groups in layers:
            cl = torch.channels_last
            x = torch.randn(BATCH, c, h, w, device=dev, dtype=torch.bfloat16).to(memory_format=cl)
            wt = (torch.randn(k, c // groups, r, s, device=dev) * (c // groups * r * s) ** -0.5).to(torch.bfloat16)
            wt = wt.to(memory_format=cl)
            b = 0.1 * torch.randn(k, device=dev, dtype=torch.bfloat16)
            mean = 0.1 * torch.randn(k, device=dev, dtype=torch.bfloat16)
            var = 1.0 + 0.1 * torch.rand(k, device=dev, dtype=torch.bfloat16)
            gamma = 1.0 + 0.1 * torch.randn(k, device=dev, dtype=torch.bfloat16)
            beta = 0.1 * torch.randn(k, device=dev, dtype=torch.bfloat16)
            # A fresh compiled function per layer, with static shapes: one function reused over
            # the layers would be recompiled with dynamic sizes from the second one on.
            torch._dynamo.reset()
            variants = [
                ("conv", conv, (x, wt, b, stride, pad, groups)),
                ("conv_bn_relu", conv_bn_relu, (x, wt, b, stride, pad, groups, mean, var, gamma, beta)),
            ]
            if not args.no_compile:
                compiled = torch.compile(conv_bn_relu, dynamic=False)
                variants.append(("compiled", compiled, variants[1][2]))
            fl = flops(c, h, w, k, r, s, stride, pad, groups)
            for mode, fn, fargs in variants:
                row = {
                    "layer": name,
                    "mode": mode,
                    "N": BATCH,
                    "C": c,
                    "H": h,
                    "W": w,
                    "K": k,
                    "R": r,
                    "S": s,
                    "stride": stride,
                    "pad": pad,
                    "groups": groups,
                }
                try:
                    us = time_us(fn, fargs)
                    row.update(median_us=us, TFLOPS=fl / us / 1e6)
                except Exception as e:  # torch.compile may be unavailable (no triton, ...), or out of memory
                    row["not_measured"] = tp.failure(e)
                    torch.cuda.empty_cache()
                rows.append(row)

    def cell(name, mode):
        for row in rows:
            if row["layer"] == name and row["mode"] == mode:
                return row.get("median_us")
        return None

    def us(v):
        return f"{v:.1f}" if v is not None else "—"

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b is not None else "—"

    device = torch.cuda.get_device_name(0)
    cudnn = torch.backends.cudnn.version()
    print(
        f"PyTorch {torch.__version__}, cuDNN {cudnn}, on {device}; BF16 channels-last, batch {BATCH}, "
        f"median of {samples}, L2 flushed"
    )
    print()
    print(
        "| layer (batch 32) | conv + bias (µs) | conv → BN → ReLU, 3 kernels (µs) | compiled conv + BN + ReLU (µs) "
        "| 3 kernels / conv | 3 kernels / compiled |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for layer in layers:
        name = layer[0]
        t = {mode: cell(name, mode) for mode in MODES}
        print(
            f"| {name} | {us(t['conv'])} | {us(t['conv_bn_relu'])} | {us(t['compiled'])} "
            f"| {ratio(t['conv_bn_relu'], t['conv'])} | {ratio(t['conv_bn_relu'], t['compiled'])} |"
        )
    for row in rows:
        if "not_measured" in row:
            print(f"{row['layer']} {row['mode']}: not measured ({row['not_measured']})", file=sys.stderr)
    if args.json:
        tp.write_json(
            args.json,
            {
                "tool": "torch_conv_peer",
                "torch": torch.__version__,
                "cuda": torch.version.cuda,
                "cudnn": cudnn,
                "device": device,
                "capability": ".".join(map(str, torch.cuda.get_device_capability(0))),
                "dtype": "bf16",
                "memory_format": "channels_last",
                "batch": BATCH,
                "eps": EPS,
                "samples": samples,
                "warmup": warmup,
                "cudnn_benchmark": True,
                "results": rows,
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
