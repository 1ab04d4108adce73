#!/usr/bin/env python3
"""Validates the fake process group: runs small configs both ways and compares rank 0.

    python3 probe/dist_validate.py [NAME ...]

For each config, `dist_probe.py --device fake` (one process, fake group, FakeTensors) and
`dist_probe.py --backend gloo` (one process per rank, a real gloo group, real CPU tensors)
measure rank 0; the per-phase totals are printed side by side with the categories that
differ. The results are in probe/README.md ("Validation against real multi-process runs").
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 4,
         "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 4096,
         "max_position_embeddings": 2048, "tie_word_embeddings": False}
MOE = {"model_type": "qwen3_moe", "hidden_size": 256, "intermediate_size": 704, "moe_intermediate_size": 128,
       "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32,
       "vocab_size": 4096, "num_experts": 2, "num_experts_per_tok": 1, "max_position_embeddings": 2048,
       "tie_word_embeddings": False}
BASE = {"schema_version": 2, "model": {"hf_config": LLAMA},
        "training": {"micro_batch_size": 2, "seq_len": 256, "precision": "amp_bf16"}, "hardware": {"num_gpus": 4}}


def config(name, engine, training=None, parallelism=None, model=None):
    c = copy.deepcopy(BASE)
    c["id"] = name
    c["engine"] = engine
    c["training"].update(training or {})
    if parallelism:
        c["parallelism"] = parallelism
    if model:
        c["model"] = {"hf_config": model}
    return c


CONFIGS = [
    config("fsdp2", {"type": "fsdp"}),
    config("fsdp2-no-reshard", {"type": "fsdp", "reshard_after_forward": False}),
    config("fsdp2-reshard-2", {"type": "fsdp", "reshard_after_forward": 2}),
    config("fsdp2-bf16-reduce", {"type": "fsdp", "param_dtype": "bf16", "reduce_dtype": "bf16"}),
    config("hsdp-2x2", {"type": "fsdp"}, parallelism={"data_parallel_replicate_size": 2}),
    config("fsdp2-moe-2-experts", {"type": "fsdp"}, model=MOE),
    config("fsdp2-tp2", {"type": "fsdp"}, parallelism={"tensor_parallel_size": 2}),
    config("fsdp2-tp2-sp", {"type": "fsdp"}, parallelism={"tensor_parallel_size": 2, "sequence_parallel": True}),
    config("fsdp2-pp2-1f1b", {"type": "fsdp"}, {"gradient_accumulation_steps": 4}, {"pipeline_parallel_size": 2}),
    config("fsdp2-pp2-gpipe", {"type": "fsdp"}, {"gradient_accumulation_steps": 4},
           {"pipeline_parallel_size": 2, "pipeline_schedule": "gpipe"}),
    config("fsdp2-pp2-interleaved", {"type": "fsdp"}, {"gradient_accumulation_steps": 4},
           {"pipeline_parallel_size": 2, "virtual_pipeline_parallel_size": 2, "pipeline_schedule": "interleaved_1f1b"}),
    config("ddp", {"type": "ddp"}),
    config("ddp-bucket-view", {"type": "ddp", "gradient_as_bucket_view": True}),
    config("ddp-1mb-buckets", {"type": "ddp", "bucket_cap_mb": 1}),
    config("ddp-moe", {"type": "ddp"}, model=MOE),
    config("zero1", {"type": "deepspeed", "zero_stage": 1}),
    config("zero2", {"type": "deepspeed", "zero_stage": 2}),
    config("zero3", {"type": "deepspeed", "zero_stage": 3}),
    config("zero3-small-buckets", {"type": "deepspeed", "zero_stage": 3, "reduce_bucket_size": 1000000,
                                   "stage3_prefetch_bucket_size": 100000, "stage3_param_persistence_threshold": 1000}),
]


def measure(cfg, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
    r = subprocess.run([sys.executable, os.path.join(HERE, "dist_probe.py"), f.name, *args],
                       capture_output=True, text=True)
    os.unlink(f.name)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not lines:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(lines[-1])["measured"]["phases"], None


def main():
    names = sys.argv[1:]
    for cfg in CONFIGS:
        if names and cfg["id"] not in names:
            continue
        fake, err1 = measure(cfg, "--device", "fake")
        gloo, err2 = measure(cfg, "--backend", "gloo")
        if fake is None or gloo is None:
            print(f"{cfg['id']:24} FAILED {err1 or err2}")
            continue
        same = all(fake[p]["total"] == gloo.get(p, {}).get("total") for p in fake)
        totals = " ".join(f"{p} {fake[p]['total']}/{gloo[p]['total']}" for p in fake)
        print(f"{cfg['id']:24} {'identical' if same else 'DIFFERENT'}  (fake/gloo) {totals}")
        if not same:
            for p in fake:
                d = {k: fake[p][k] - gloo[p].get(k, 0) for k in fake[p] if fake[p][k] != gloo[p].get(k)}
                print(f"{'':24}   {p}: fake - gloo {d}")


if __name__ == "__main__":
    main()
