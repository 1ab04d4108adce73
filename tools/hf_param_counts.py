#!/usr/bin/env python3
"""Reference parameter counts from transformers, for the exact-count fixture test.

For every Hugging Face `config.json` given (default: presets/models/hf/*.json, the model
presets, and tests/reference/hf_configs/*.json, one small hand-built config per family), build the model with transformers on the meta device
(no weights are downloaded or allocated) and record

    sum(p.numel() for p in model.parameters())

plus the language-model part for multimodal wrappers. Writes JSON to stdout or --out.

Usage (needs torch and transformers; CI does not run this, it reads the committed output):
    python3 tools/hf_param_counts.py --out tests/reference/hf_param_counts.json

Families transformers does not ship are mapped to the native class with the same
parameter shapes, and the mapping is recorded in the output:
  * chatglm (THUDM custom code) -> transformers `glm` (GlmForCausalLM, the `-hf` port of
    GLM-4): same embedding, fused gate_up MLP, q/k/v with bias, 2 RMSNorms per layer.
"""
import argparse
import glob
import json
import os
import sys
import tempfile

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def chatglm_to_glm(cfg: dict) -> dict:
    """ChatGLM (custom code) keys -> transformers GlmConfig keys (same shapes)."""
    return {
        "model_type": "glm",
        "vocab_size": cfg["padded_vocab_size"],
        "hidden_size": cfg["hidden_size"],
        "intermediate_size": cfg["ffn_hidden_size"],
        "num_hidden_layers": cfg["num_layers"],
        "num_attention_heads": cfg["num_attention_heads"],
        "num_key_value_heads": cfg["multi_query_group_num"] if cfg.get("multi_query_attention") else cfg["num_attention_heads"],
        "head_dim": cfg["kv_channels"],
        "attention_bias": cfg.get("add_qkv_bias", False),
        "max_position_embeddings": cfg["seq_length"],
        "tie_word_embeddings": cfg.get("tie_word_embeddings", False),
        "pad_token_id": cfg.get("pad_token_id"),
    }


def build(cfg: dict):
    note = None
    if cfg.get("model_type") == "chatglm":
        cfg = chatglm_to_glm(cfg)
        note = "chatglm counted as transformers `glm` (same parameter shapes)"
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        config = AutoConfig.from_pretrained(d)
    with torch.device("meta"):
        try:
            model = AutoModelForCausalLM.from_config(config)
        except ValueError:
            from transformers import AutoModelForImageTextToText

            model = AutoModelForImageTextToText.from_config(config)
    return model, note


def count(path: str) -> dict:
    with open(path) as f:
        cfg = json.load(f)
    if "config" in cfg and "model_type" not in cfg:  # a preset file wraps the HF config
        cfg = cfg["config"]
    model, note = build(cfg)
    total = sum(p.numel() for p in model.parameters())
    vision = sum(
        p.numel()
        for n, p in model.named_parameters()
        if any(k in n for k in ("vision_tower", "visual", "multi_modal_projector", "vision_model"))
    )
    rec = {
        "file": os.path.basename(path),
        "model_type": cfg.get("model_type"),
        "class": type(model).__name__,
        "total": total,
        "language_model": total - vision,
        "vision": vision,
    }
    if note:
        rec["note"] = note
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--out")
    a = ap.parse_args()
    files = a.files or sorted(
        glob.glob(os.path.join(ROOT, "presets", "models", "hf", "*.json"))
        + glob.glob(os.path.join(ROOT, "tests", "reference", "hf_configs", "*.json"))
    )
    records = []
    for p in files:
        try:
            records.append(count(p))
        except Exception as e:  # record the failure, keep going
            records.append({"file": os.path.basename(p), "error": f"{type(e).__name__}: {e}"})
        print(json.dumps(records[-1]), file=sys.stderr)
    out = {
        "generated_by": "tools/hf_param_counts.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "method": "sum(p.numel() for p in AutoModelForCausalLM.from_config(cfg).parameters()) on the meta device",
        "counts": records,
    }
    text = json.dumps(out, indent=1) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
