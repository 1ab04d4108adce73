#!/usr/bin/env python3
"""Writes probe/grid.json: the configs of the reference suite (tests/reference/probe_records.jsonl).

Spread over families (llama, mistral/GQA, qwen2, gpt2, phi, gemma2, MoE), precision regimes
(fp32, pure bf16, AMP bf16), optimizers (adamw, sgd_momentum, adafactor), recomputation
on/off, attention eager/sdpa, micro-batch and sequence length (512-8192), LoRA, inference.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

T = [
    # id-suffix, model, precision, optimizer, impl, attention, recompute, batch, seq
    ("llama-3.2-1b", "fp32", "adamw", "foreach", "sdpa", "none", 1, 512),
    ("llama-3.2-1b", "bf16", "adamw", "foreach", "sdpa", "none", 1, 2048),
    ("llama-3.2-1b", "amp_bf16", "adamw", "foreach", "sdpa", "none", 2, 1024),
    ("llama-3.2-1b", "bf16", "adamw", "foreach", "sdpa", "full", 4, 4096),
    ("llama-3.2-1b", "amp_bf16", "adamw", "foreach", "eager", "none", 1, 1024),
    ("llama-3.2-1b", "bf16", "sgd_momentum", "foreach", "sdpa", "none", 2, 2048),
    ("llama-3.2-1b", "bf16", "adafactor", "foreach", "sdpa", "full", 1, 8192),
    ("llama-3.2-1b", "amp_bf16", "adamw", "fused", "sdpa", "full", 2, 2048),
    ("llama-3.2-1b", "fp32", "sgd_momentum", "foreach", "eager", "full", 1, 512),
    ("llama-3.2-1b", "bf16", "adamw", "foreach", "sdpa", "none", 1, 8192),
    ("qwen2.5-0.5b", "bf16", "adamw", "foreach", "sdpa", "none", 1, 4096),
    ("qwen2.5-0.5b", "amp_bf16", "adamw", "foreach", "sdpa", "none", 2, 2048),
    ("qwen2.5-0.5b", "fp32", "adamw", "foreach", "eager", "none", 1, 1024),
    ("qwen2.5-0.5b", "bf16", "adamw", "foreach", "sdpa", "full", 8, 2048),
    ("qwen2.5-0.5b", "amp_bf16", "adafactor", "foreach", "sdpa", "full", 4, 4096),
    ("qwen2.5-0.5b", "bf16", "sgd_momentum", "foreach", "eager", "full", 1, 2048),
    ("qwen2.5-0.5b", "amp_bf16", "adamw", "foreach", "eager", "none", 2, 512),
    ("gpt2", "fp32", "adamw", "foreach", "sdpa", "none", 8, 1024),
    ("gpt2", "amp_bf16", "adamw", "foreach", "eager", "none", 4, 1024),
    ("gpt2", "bf16", "adamw", "foreach", "sdpa", "full", 16, 1024),
    ("gpt2", "fp32", "sgd_momentum", "foreach", "eager", "full", 8, 512),
    ("gpt2", "amp_bf16", "adafactor", "foreach", "sdpa", "none", 8, 512),
    ("gpt2", "bf16", "sgd_momentum", "foreach", "sdpa", "none", 32, 1024),
    ("gpt2-xl", "bf16", "adamw", "foreach", "sdpa", "full", 4, 1024),
    ("gpt2-xl", "amp_bf16", "adamw", "foreach", "sdpa", "none", 1, 1024),
    ("phi-2", "bf16", "adamw", "foreach", "sdpa", "none", 1, 2048),
    ("phi-2", "amp_bf16", "adamw", "foreach", "sdpa", "full", 2, 2048),
    ("phi-2", "bf16", "adafactor", "foreach", "eager", "none", 1, 1024),
    ("phi-2", "fp32", "sgd_momentum", "foreach", "sdpa", "full", 1, 1024),
    ("phi-3-mini-4k-instruct", "bf16", "adamw", "foreach", "sdpa", "full", 2, 4096),
    ("phi-3-mini-4k-instruct", "amp_bf16", "adamw", "foreach", "sdpa", "none", 1, 2048),
    ("mistral-7b-v0.1", "bf16", "adamw", "foreach", "sdpa", "full", 1, 4096),
    ("mistral-7b-v0.1", "bf16", "adamw", "foreach", "sdpa", "full", 1, 8192),
    ("mistral-7b-v0.1", "amp_bf16", "adamw", "fused", "sdpa", "full", 1, 2048),
    ("mistral-7b-v0.1", "bf16", "sgd_momentum", "foreach", "sdpa", "none", 1, 1024),
    ("mistral-7b-v0.1", "amp_bf16", "adafactor", "foreach", "sdpa", "full", 1, 4096),
    ("llama-2-7b", "bf16", "adamw", "foreach", "sdpa", "none", 1, 2048),
    ("llama-2-7b", "amp_bf16", "adamw", "fused", "sdpa", "full", 2, 4096),
    ("llama-2-7b", "bf16", "adamw", "foreach", "eager", "full", 1, 4096),
    ("llama-2-7b", "fp32", "adamw", "foreach", "sdpa", "full", 1, 1024),
    ("llama-3.1-8b", "bf16", "adamw", "foreach", "sdpa", "full", 1, 8192),
    ("llama-3.1-8b", "amp_bf16", "adafactor", "foreach", "sdpa", "full", 2, 4096),
    ("llama-3.2-3b", "bf16", "adamw", "foreach", "sdpa", "none", 2, 4096),
    ("llama-3.2-3b", "bf16", "adamw", "foreach", "sdpa", "full", 2, 4096),
    ("llama-3.2-3b", "amp_bf16", "adamw", "foreach", "eager", "full", 1, 2048),
    ("qwen2.5-7b", "bf16", "adamw", "foreach", "sdpa", "full", 2, 4096),
    ("qwen2.5-7b", "bf16", "adamw", "foreach", "sdpa", "none", 1, 1024),
    ("qwen3-8b", "bf16", "adamw", "foreach", "sdpa", "full", 1, 4096),
    ("gemma-2-9b-it", "bf16", "adamw", "foreach", "eager", "full", 1, 2048),
    ("gemma-2-9b-it", "bf16", "sgd_momentum", "foreach", "eager", "none", 1, 1024),  # transformers: no sdpa for gemma2
    ("gemma-2-9b-it", "amp_bf16", "adamw", "fused", "eager", "none", 1, 1024),
    ("qwen3-30b-a3b", "bf16", "adamw", "foreach", "sdpa", "full", 1, 2048),
    ("qwen3-30b-a3b", "bf16", "adamw", "foreach", "sdpa", "none", 1, 512),
    ("mixtral-8x7b-v0.1", "bf16", "adamw", "foreach", "sdpa", "full", 1, 2048),
    ("deepseek-v2-lite", "bf16", "adamw", "foreach", "sdpa", "full", 1, 2048),
]

L = [
    # model, lora, batch, seq, recompute
    ("llama-3.2-1b", {"rank": 16, "target_modules": ["q_proj", "v_proj"]}, 2, 2048, "none"),
    ("llama-3.1-8b", {"rank": 16, "target_modules": "all-linear"}, 1, 4096, "full"),
    ("qwen2.5-7b", {"rank": 64, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}, 1, 1024, "none"),
    ("mistral-7b-v0.1", {"rank": 8, "target_modules": ["q_proj", "v_proj"]}, 2, 2048, "full"),
    ("llama-2-7b", {"rank": 8, "target_modules": ["q_proj", "v_proj"], "dropout": 0.05}, 1, 2048, "none"),
]

I = [
    # model, batch, context, attention
    ("llama-3.1-8b", 1, 4096, "sdpa"),
    ("llama-3.1-8b", 8, 2048, "sdpa"),
    ("qwen2.5-7b", 4, 8192, "sdpa"),
    ("mistral-7b-v0.1", 1, 8192, "sdpa"),
    ("gemma-2-9b-it", 1, 8192, "eager"),
    ("llama-2-7b", 2, 4096, "eager"),
    ("phi-2", 4, 2048, "sdpa"),
    ("gpt2", 32, 1024, "sdpa"),
    ("qwen3-30b-a3b", 1, 4096, "sdpa"),
    ("deepseek-v2-lite", 1, 4096, "sdpa"),
    ("llama-3.2-1b", 2, 2048, "sdpa"),
]


def main():
    grid = []
    for model, prec, opt, impl, attn, rec, b, s in T:
        grid.append({
            "id": f"train/{model}/{prec}/{opt}-{impl}/{attn}/{rec}/b{b}-s{s}",
            "schema_version": 1,
            "model": {"preset": model},
            "training": {"micro_batch_size": b, "seq_len": s, "precision": prec, "optimizer": opt,
                         "optimizer_impl": impl, "activation_checkpointing": rec, "attention": attn},
        })
    for model, lora, b, s, rec in L:
        grid.append({
            "id": f"lora/{model}/r{lora['rank']}/b{b}-s{s}/{rec}",
            "schema_version": 1,
            "model": {"preset": model},
            "training": {"micro_batch_size": b, "seq_len": s, "precision": "bf16", "optimizer": "adamw",
                         "optimizer_impl": "foreach", "activation_checkpointing": rec, "attention": "sdpa", "lora": lora},
        })
    for model, b, ctx, attn in I:
        grid.append({
            "id": f"infer/{model}/b{b}-c{ctx}/{attn}",
            "schema_version": 1,
            "mode": "inference",
            "model": {"preset": model},
            "inference": {"batch_size": b, "context_len": ctx, "prompt_len": ctx - 4, "attention": attn},
        })
    with open(os.path.join(HERE, "grid.json"), "w") as f:
        json.dump(grid, f, indent=1)
        f.write("\n")
    print(len(grid), "configs")


if __name__ == "__main__":
    main()
