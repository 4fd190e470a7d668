"""What the PyTorch peer measurements (scripts/torch_*_peer.py) share.

Finding PyTorch and a CUDA GPU, the timing loop (warm-up calls, then samples timed with CUDA
events, each after an L2 flush; the median in microseconds), the one-line reason a
measurement failed, and the results file. The module imports no torch itself: a script
hands the module it imported, so that a machine without PyTorch can still load it.
"""
import json
import statistics

SKIP = 77  # the exit status that ctest and scripts/gpu-suite.sh read as "skipped"
FLUSH_BYTES = 256 * 1024 * 1024  # larger than any GPU's L2


def add_run_args(ap, samples, warmup):
    """--json, --samples and --warmup, with these defaults."""
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--samples", type=int, default=samples)
    ap.add_argument("--warmup", type=int, default=warmup)


def import_torch(tag=""):
    """torch when it is installed and sees a CUDA GPU; otherwise None, after printing why.

    tag, when given, starts the line ("torch_conv_peer: PyTorch not found: ...")."""
    prefix = f"{tag}: " if tag else ""
    try:
        import torch
    except ImportError:
        print(f"{prefix}PyTorch not found: skipping the peer measurement")
        return None
    if not torch.cuda.is_available():
        print(f"{prefix}PyTorch found, but no CUDA GPU: skipping the peer measurement")
        return None
    return torch


def flush_buffer(torch):
    """A 256 MB byte buffer on the GPU; writing it evicts the previous sample's data from L2."""
    return torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=torch.device("cuda"))


def median_us(torch, fn, warmup, samples, flush):
    """The median time of fn() in microseconds over `samples` calls, after `warmup` untimed
    ones; flush(i) runs before the i-th timed call, outside the timed interval."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(samples):
        flush(i)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def failure(e):
    """Why a measurement did not run, in one line of at most 160 characters."""
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:160]


def run_info(torch, samples):
    """The head of a results document: the PyTorch version, the GPU and the samples per time."""
    return {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "samples": samples}


def write_json(path, doc):
    """The results document, indented, and a line saying where it went."""
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
    print(f"wrote {path}")
