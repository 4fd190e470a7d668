#!/usr/bin/env python3
"""Peer measurement for chapter 9: GPT-2 decoding at batch 1 in PyTorch, BF16.

For each config (124M and 1.5B by default) it builds a Hugging Face GPT2LMHeadModel with
random weights (no download), then runs the same network as a small PyTorch program with a
STATIC KV cache (one preallocated (L, 2, H, P, D) tensor, the position passed as a device
tensor) so that the decode step can be captured in a torch.cuda.CUDAGraph and replayed.
The program's logits are checked against transformers' own forward on the prompt first.

Reported, per config, with CUDA events (median of several runs):
  TTFT          the prompt's prefill (prompt 512 by default) through the first token's argmax
  decode tok/s  --new greedy steps, each one graph replay (eager launches with --no-graph)

    scripts/torch_gpt2_peer.py [--configs 124M,1.5B] [--prompt-len 512] [--new 128]
                               [--no-graph] [--json FILE]

Without PyTorch, transformers or a CUDA GPU it prints why and exits 77 (a skip).
"""
import argparse
import json
import statistics
import sys

PRESETS = {  # n_layer, n_head, n_embd (vocabulary 50257, context 1024)
    "124M": (12, 12, 768),
    "355M": (24, 16, 1024),
    "774M": (36, 20, 1280),
    "1.5B": (48, 25, 1600),
}


def skip(why):
    print(f"torch_gpt2_peer: {why}: skipping the peer measurement")
    sys.exit(77)


class StaticGpt2:
    """GPT-2's forward over a Hugging Face model's weights, with a static KV cache."""

    def __init__(self, hf, capacity, torch):
        self.t = torch
        cfg = hf.config
        self.L, self.H, self.C = cfg.n_layer, cfg.n_head, cfg.n_embd
        self.D = self.C // self.H
        self.P = capacity
        tr = hf.transformer
        self.wte, self.wpe = tr.wte.weight, tr.wpe.weight
        self.blocks = tr.h
        self.ln_f = tr.ln_f
        dev, dt = self.wte.device, self.wte.dtype
        self.k = torch.zeros(self.L, self.H, self.P, self.D, device=dev, dtype=dt)
        self.v = torch.zeros_like(self.k)
        self.pos = torch.zeros((), dtype=torch.long, device=dev)  # tokens in the cache
        self.token = torch.zeros(1, dtype=torch.long, device=dev)
        self.next = torch.zeros(1, dtype=torch.long, device=dev)
        self.arange = torch.arange(self.P, device=dev)

    def step(self, tokens):
        """T tokens at positions pos .. pos+T-1 -> argmax of the last logits; advances pos."""
        F = self.t.nn.functional
        T = tokens.shape[0]
        positions = self.pos + self.arange[:T]
        x = self.wte[tokens] + self.wpe[positions]
        # Causal over the cache: query i (position pos+i) sees key j when j <= pos+i; keys
        # past the filled part are masked too, so the mask has a static shape (T, P).
        mask = self.arange[None, :] <= positions[:, None]
        for l, blk in enumerate(self.blocks):
            h = blk.ln_1(x)
            qkv = blk.attn.c_attn(h)  # Conv1D: x @ W + b, W stored [in, out]
            q, k, v = qkv.split(self.C, dim=-1)
            q = q.view(T, self.H, self.D).transpose(0, 1)
            k = k.view(T, self.H, self.D).transpose(0, 1)
            v = v.view(T, self.H, self.D).transpose(0, 1)
            self.k[l].index_copy_(1, positions, k)
            self.v[l].index_copy_(1, positions, v)
            a = F.scaled_dot_product_attention(q[None], self.k[l][None], self.v[l][None], attn_mask=mask[None, None])
            x = x + blk.attn.c_proj(a[0].transpose(0, 1).reshape(T, self.C))
            x = x + blk.mlp.c_proj(F.gelu(blk.mlp.c_fc(blk.ln_2(x)), approximate="tanh"))
        logits = self.ln_f(x[-1:]) @ self.wte.t()
        self.pos += T
        return logits, logits.argmax(dim=-1)

    def decode_step(self):
        logits, nxt = self.step(self.token)
        self.next.copy_(nxt)
        self.token.copy_(nxt)
        return logits


def measure(name, args, torch, transformers):
    L, H, C = PRESETS[name]
    cfg = transformers.GPT2Config(n_layer=L, n_head=H, n_embd=C, vocab_size=50257, n_positions=1024)
    torch.manual_seed(1)
    hf = transformers.GPT2LMHeadModel(cfg).to("cuda", torch.bfloat16).eval()
    cap = args.prompt_len + args.new + 1
    if cap > 1024:
        sys.exit(f"torch_gpt2_peer: --prompt-len + --new = {cap - 1} does not fit GPT-2's 1024 positions")
    m = StaticGpt2(hf, cap, torch)
    gen = torch.Generator(device="cpu").manual_seed(2)
    prompt = torch.randint(0, 50257, (args.prompt_len,), generator=gen).cuda()

    with torch.inference_mode():
        # The program against transformers' own forward on the prompt.
        ref = hf(prompt[None]).logits[0, -1].float()
        m.pos.zero_()
        got = m.step(prompt)[0][0].float()
        err = ((got - ref).norm() / ref.norm()).item()
        print(f"{name}: static-cache program vs transformers' logits, relative L2 {err:.2e}")

        def prefill():
            m.pos.zero_()
            _, nxt = m.step(prompt)
            m.token.copy_(nxt)

        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        ttft = []
        for i in range(8):
            ev[0].record()
            prefill()
            ev[1].record()
            torch.cuda.synchronize()
            if i >= 3:
                ttft.append(ev[0].elapsed_time(ev[1]))

        graph = None
        if not args.no_graph:
            prefill()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):  # warm-up on a side stream, as torch.cuda.graphs asks
                    m.decode_step()
            torch.cuda.current_stream().wait_stream(s)
            prefill()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                m.decode_step()
        rates = []
        for _ in range(3):
            prefill()
            ev[0].record()
            for _ in range(args.new):
                if graph is not None:
                    graph.replay()
                else:
                    m.decode_step()
            ev[1].record()
            torch.cuda.synchronize()
            rates.append(args.new / (ev[0].elapsed_time(ev[1]) / 1e3))
    res = {
        "config": name,
        "ttft_ms": statistics.median(ttft),
        "decode_tok_s": statistics.median(rates),
        "graph": graph is not None,
        "check_rel_l2": err,
    }
    print(
        f"{name}: TTFT {res['ttft_ms']:.2f} ms (prompt {args.prompt_len}), decode {res['decode_tok_s']:.0f} tok/s "
        f"({'CUDA graph' if graph is not None else 'eager'})"
    )
    del hf, m
    torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="124M,1.5B", help="comma-separated: " + ", ".join(PRESETS))
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--no-graph", action="store_true", help="decode with eager launches")
    ap.add_argument("--json", help="write the results to this file")
    args = ap.parse_args()
    names = [c for c in args.configs.split(",") if c]
    bad = [c for c in names if c not in PRESETS]
    if bad or not names:
        ap.error(f"--configs: {','.join(bad) or '(empty)'} not among {', '.join(PRESETS)}")
    if args.prompt_len < 1 or args.new < 1:
        ap.error("--prompt-len and --new must be at least 1")
    try:
        import torch
    except ImportError:
        skip("PyTorch not found")
    try:
        import transformers
    except ImportError:
        skip("transformers not found")
    if not torch.cuda.is_available():
        skip("PyTorch found, but no CUDA GPU")
    results = [measure(n, args, torch, transformers) for n in names]
    doc = {
        "schema_version": 1,
        "tool": "torch_gpt2_peer",
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "prompt_len": args.prompt_len,
        "new": args.new,
        "runs": results,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
