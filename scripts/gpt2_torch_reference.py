#!/usr/bin/env python3
"""Expected GPT-2 logits from Hugging Face transformers, for the workbook's own GPT-2 to match.

Builds a GPT2LMHeadModel with random weights (or loads a checkpoint folder), saves it as
model.safetensors with Hugging Face's own save_pretrained (so the names, the tied LM head and
the config.json are exactly what transformers writes), and runs it in FP32 on the CPU on a
fixed prompt. Writes, into --out-dir:

    model.safetensors, config.json   the weights (not with --pretrained: they stay where they are)
    reference.json, logits.f32       the prompt and every position's logits, (T, V) float32
                                     little-endian (format: models/gpt2/reference_logits.h)

Then compare the workbook's float64 CPU forward with them:

    scripts/gpt2_torch_reference.py --config=tiny --seed=1 --out-dir=build/gpt2-ref
    build/ci/bin/gpt2_cpu_check --weights=build/gpt2-ref/model.safetensors \\
                                --expect=build/gpt2-ref/reference.json

The random init is GPT-2's (transformers' own), and, unless --affine=gpt2, LayerNorm gains
~ N(1, 0.1²), LayerNorm shifts ~ N(0, 0.05²) and biases ~ N(0, 0.02²), so a dropped bias or
gain shows. With --weights-dtype=bf16 or f16 the weights are rounded to that type, the logits
computed in FP32 from the rounded weights, and the file saved in that type.

Without PyTorch or transformers it says what is missing and exits 77 (skipped).
"""
import argparse
import array
import json
import os
import sys

SKIP = 77
# name: (n_layer, n_head, n_embd, vocab, n_ctx), as in models/gpt2/config.cpp
PRESETS = {
    "tiny": (2, 4, 64, 251, 64),
    "124M": (12, 12, 768, 50257, 1024),
    "355M": (24, 16, 1024, 50257, 1024),
    "774M": (36, 20, 1280, 50257, 1024),
    "1.5B": (48, 25, 1600, 50257, 1024),
}


def parse_config(text):
    """'tiny' | '124M' | ... | 'L=..,C=..,H=..,V=..,P=..' -> (L, H, C, V, P); ValueError says why."""
    if "=" not in text:
        if text not in PRESETS:
            raise ValueError(f"unknown config '{text}'; give one of {', '.join(PRESETS)} or L=..,C=..,H=..,V=..,P=..")
        return PRESETS[text]
    sizes = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key not in ("L", "C", "H", "V", "P") or not value.isdigit() or int(value) < 1:
            raise ValueError(f"'{item}' is not one of L=, C=, H=, V=, P= with a whole number >= 1")
        if key in sizes:
            raise ValueError(f"{key} given twice")
        sizes[key] = int(value)
    missing = [k for k in "LCHVP" if k not in sizes]
    if missing:
        raise ValueError(f"{', '.join(k + '=' for k in missing)} missing; give all of L=, C=, H=, V=, P=")
    if sizes["C"] % sizes["H"]:
        raise ValueError(f"C={sizes['C']} is not a multiple of H={sizes['H']}")
    return sizes["L"], sizes["H"], sizes["C"], sizes["V"], sizes["P"]


def default_prompt(n, vocab):
    """The same ids as gpt2::default_prompt in models/gpt2/reference_logits.cpp."""
    return [(i * 7919 + 13) % vocab for i in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", help="tiny | 124M | 355M | 774M | 1.5B | L=..,C=..,H=..,V=..,P=..")
    ap.add_argument(
        "--pretrained",
        metavar="DIR",
        help="instead of --config: a Hugging Face GPT-2 checkpoint folder (config.json, model.safetensors)",
    )
    ap.add_argument("--seed", type=int, default=1, help="seed of the random weights (default 1)")
    ap.add_argument("--out-dir", required=True, help="folder to write into (created if missing)")
    ap.add_argument("--prompt-len", type=int, default=16, help="tokens in the fixed prompt (default 16, at most n_ctx)")
    ap.add_argument(
        "--weights-dtype",
        choices=["f32", "bf16", "f16"],
        default="f32",
        help="round the random weights to this type and save them in it (default f32)",
    )
    ap.add_argument(
        "--affine",
        choices=["random", "gpt2"],
        default="random",
        help="random: LayerNorm gains/shifts and biases drawn; gpt2: 1 and 0 as GPT-2 starts",
    )
    ap.add_argument("--force", action="store_true", help="replace files already in --out-dir")
    args = ap.parse_args()

    if (args.config is None) == (args.pretrained is None):
        ap.error("give one of --config or --pretrained")
    if args.prompt_len < 1:
        ap.error(f"--prompt-len: {args.prompt_len} is not a whole number >= 1")
    if args.seed < 0:
        ap.error(f"--seed: {args.seed} is negative")
    sizes = None
    if args.config is not None:
        try:
            sizes = parse_config(args.config)
        except ValueError as e:
            ap.error(f"--config: {e}")
    if args.pretrained is not None and not os.path.isfile(os.path.join(args.pretrained, "config.json")):
        ap.error(f"--pretrained: {args.pretrained} has no config.json; give a Hugging Face checkpoint folder")
    outputs = ["reference.json", "logits.f32"] + (
        ["model.safetensors", "config.json"] if args.pretrained is None else []
    )
    existing = [f for f in outputs if os.path.exists(os.path.join(args.out_dir, f))]
    if existing and not args.force:
        ap.error(f"--out-dir: {args.out_dir} already holds {', '.join(existing)}; add --force to replace them")

    missing = []
    for module, hint in (
        ("torch", "pip install torch"),
        ("transformers", "pip install transformers"),
        ("safetensors", "pip install safetensors"),
    ):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"{module} ({hint})")
    if missing:
        print("gpt2_torch_reference: skipped: not installed: " + ", ".join(missing))
        return SKIP

    import torch
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(args.seed)
    if args.pretrained is not None:
        model = GPT2LMHeadModel.from_pretrained(args.pretrained, torch_dtype=torch.float32)
        cfg = model.config
        where = args.pretrained
    else:
        L, H, C, V, P = sizes
        cfg = GPT2Config(
            vocab_size=V,
            n_positions=P,
            n_embd=C,
            n_layer=L,
            n_head=H,
            activation_function="gelu_new",
            layer_norm_epsilon=1e-5,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            tie_word_embeddings=True,
        )
        model = GPT2LMHeadModel(cfg)  # transformers' GPT-2 init: N(0, 0.02²), c_proj scaled by 1/sqrt(2L)
        with torch.no_grad():
            if args.affine == "random":
                gen = torch.Generator().manual_seed(args.seed + 1)
                for name, p in model.named_parameters():
                    if ".ln_" in name or name.startswith("transformer.ln_f"):
                        if name.endswith(".weight"):
                            p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
                        else:
                            p.copy_(0.05 * torch.randn(p.shape, generator=gen))
                    elif name.endswith(".bias"):
                        p.copy_(0.02 * torch.randn(p.shape, generator=gen))
            if args.weights_dtype != "f32":
                dt = torch.bfloat16 if args.weights_dtype == "bf16" else torch.float16
                for p in model.parameters():
                    p.copy_(p.to(dt).to(torch.float32))  # the logits come from the rounded weights
        where = args.out_dir
    model.eval()

    n = min(args.prompt_len, cfg.n_positions)
    tokens = default_prompt(n, cfg.vocab_size)
    with torch.no_grad():
        logits = model(torch.tensor([tokens], dtype=torch.long)).logits[0].to(torch.float32)  # (T, V)
    if tuple(logits.shape) != (n, cfg.vocab_size):
        print(
            f"gpt2_torch_reference: logits of shape {tuple(logits.shape)}, expected {(n, cfg.vocab_size)}",
            file=sys.stderr,
        )
        return 1

    os.makedirs(args.out_dir, exist_ok=True)
    if args.pretrained is None:
        save = (
            model
            if args.weights_dtype == "f32"
            else model.to(torch.bfloat16 if args.weights_dtype == "bf16" else torch.float16)
        )
        # One file, however large (save_pretrained would otherwise split it).
        save.save_pretrained(args.out_dir, safe_serialization=True, max_shard_size="1000GB")
    values = array.array("f", logits.reshape(-1).tolist())
    if sys.byteorder != "little":
        values.byteswap()
    with open(os.path.join(args.out_dir, "logits.f32"), "wb") as f:
        values.tofile(f)
    reference = {
        "format": "gpt2-logits",
        "tokens": tokens,
        "positions": n,
        "vocab": cfg.vocab_size,
        "logits_file": "logits.f32",
        "logits_dtype": "float32-le",
        "source": (
            f"transformers {transformers.__version__} GPT2LMHeadModel, torch {torch.__version__}, FP32 on the CPU"
        ),
        "config": {
            "n_layer": cfg.n_layer,
            "n_head": cfg.n_head,
            "n_embd": cfg.n_embd,
            "vocab": cfg.vocab_size,
            "n_ctx": cfg.n_positions,
        },
        "seed": args.seed if args.pretrained is None else None,
        "weights_dtype": args.weights_dtype if args.pretrained is None else "as stored",
        "affine": args.affine if args.pretrained is None else "as stored",
    }
    with open(os.path.join(args.out_dir, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    weights = os.path.join(where, "model.safetensors")
    print(
        f"wrote {os.path.join(args.out_dir, 'reference.json')}: {n} positions x {cfg.vocab_size} logits "
        f"({reference['source']})"
    )
    print(f"weights: {weights}")
    print(f"check:   gpt2_cpu_check --weights={weights} --expect={os.path.join(args.out_dir, 'reference.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
