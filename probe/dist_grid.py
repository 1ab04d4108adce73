#!/usr/bin/env python3
"""Writes probe/dist_grid.json: the configs of the distributed reference suite
(tests/reference/dist_records.jsonl), drawn by a seeded random sampler plus hand-picked
corners, each with its `split` (`train` or `heldout`) and the ranks to measure.

    python3 probe/dist_grid.py            # writes probe/dist_grid.json
    python3 probe/dist_probe.py --grid probe/dist_grid.json --out tests/reference/dist_records.jsonl

The sampler draws an engine (FSDP2 with its tensor / pipeline / context / expert parallel
layouts, DDP, DeepSpeed ZeRO 1-3), a model (dense GQA and MHA, MoE, MLA; 1B-70B), a world
size (2-64), the engine's options, micro-batch, sequence length and recomputation, and drops
draws the frameworks reject (sizes that do not divide). 30 % of each engine's configs, drawn
with a seeded shuffle (`HELDOUT_SEED`), are held out: the model is not developed against them, and
the error budget in core/tests/dist_accuracy.rs is asserted on them.
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20261122
HELDOUT_SEED = 7
HELDOUT_FRACTION = 0.3
SAMPLED = 160

# preset -> (layers, heads, kv heads, intermediate, vocab, experts, tied, params in billions)
MODELS = {
    "llama-3.2-1b": (16, 32, 8, 8192, 128256, 0, True, 1.2),
    "llama-3.2-3b": (28, 24, 8, 8192, 128256, 0, True, 3.2),
    "qwen2.5-7b": (28, 28, 4, 18944, 152064, 0, False, 7.6),
    "llama-2-7b": (32, 32, 32, 11008, 32000, 0, False, 6.7),
    "mistral-7b-v0.1": (32, 32, 8, 14336, 32000, 0, False, 7.2),
    "llama-3.1-8b": (32, 32, 8, 14336, 128256, 0, False, 8.0),
    "qwen3-8b": (36, 32, 8, 12288, 151936, 0, False, 8.2),
    "qwen2.5-14b": (48, 40, 8, 13824, 152064, 0, False, 14.8),
    "qwen2.5-32b": (64, 40, 8, 27648, 152064, 0, False, 32.8),
    "llama-3.1-70b": (80, 64, 8, 28672, 128256, 0, False, 70.6),
    "deepseek-v2-lite": (27, 16, 16, 10944, 102400, 64, False, 15.7),
    "mixtral-8x7b-v0.1": (32, 32, 8, 14336, 32000, 8, False, 46.7),
    "qwen3-30b-a3b": (48, 32, 4, 6144, 151936, 128, False, 30.5),
}
DENSE = [m for m, v in MODELS.items() if v[5] == 0]
MOE = [m for m, v in MODELS.items() if v[5] > 0]


def choice(rng, weighted):
    """One of `weighted` [(value, weight), ...]."""
    total = sum(w for _, w in weighted)
    x = rng.random() * total
    for v, w in weighted:
        x -= w
        if x < 0:
            return v
    return weighted[-1][0]


def training(rng, params_b, pp):
    t = {
        "micro_batch_size": choice(rng, [(1, 5), (2, 3), (4, 2)]),
        "seq_len": choice(rng, [(512, 1), (1024, 2), (2048, 3), (4096, 3), (8192, 1)]),
        "precision": choice(rng, [("amp_bf16", 9), ("fp32", 1)]),
        "activation_checkpointing": choice(rng, [("none", 1), ("full", 1)]),
        "optimizer": "adamw",
        "optimizer_impl": choice(rng, [("foreach", 3), ("fused", 1)]),
        "gradient_accumulation_steps": choice(rng, [(4, 1), (8, 1)]) if pp > 1 else choice(rng, [(1, 3), (2, 1)]),
    }
    if params_b > 20 and t["seq_len"] > 4096:
        t["seq_len"] = 4096
    return t


def sample_fsdp(rng):
    """An FSDP2 draw; layouts a model cannot take are drawn again."""
    for _ in range(1000):
        draw = fsdp_draw(rng)
        if draw is not None:
            return draw


def fsdp_draw(rng):
    moe = rng.random() < 0.3
    name = rng.choice(MOE if moe else DENSE)
    layers, heads, kv, inter, vocab, experts, tied, pb = MODELS[name]
    world = choice(rng, [(2, 1), (4, 2), (8, 3), (16, 2), (32, 1), (64, 1)])
    p = {}
    e = {"type": "fsdp", "fsdp_version": 2}
    layout = choice(rng, [("dp", 3), ("tp", 3), ("pp", 3), ("cp", 2), ("ep", 4 if moe else 0), ("hsdp", 1)])
    tp = pp = cp = ep = 1
    if layout in ("tp", "pp", "cp") and moe or layout == "tp" and tied:
        return None  # the TP plan is the dense Llama one (untied); PP / CP run on dense models here
    if layout == "tp":
        tp = choice(rng, [(2, 2), (4, 2), (8, 1)])
        if kv % tp or heads % tp or inter % tp or vocab % tp or world < 2 * tp:
            return None
        p["tensor_parallel_size"] = tp
        p["sequence_parallel"] = rng.random() < 0.6
        if rng.random() < 0.3:
            p["loss_parallel"] = False
    elif layout == "pp":
        pp = choice(rng, [(2, 2), (4, 1)])
        sched = choice(rng, [("1f1b", 2), ("gpipe", 1), ("interleaved_1f1b", 1)])
        vpp = 2 if sched == "interleaved_1f1b" else 1
        if layers % (pp * vpp) or world < 2 * pp:
            return None
        p["pipeline_parallel_size"] = pp
        p["pipeline_schedule"] = sched
        if vpp > 1:
            p["virtual_pipeline_parallel_size"] = vpp
    elif layout == "cp":
        cp = 2
        if world < 4:
            return None
        p["context_parallel_size"] = cp
    elif layout == "ep":
        ep = choice(rng, [(2, 1), (4, 2), (8, 1)])
        if experts % ep or world < ep:
            return None
        p["expert_parallel_size"] = ep
    elif layout == "hsdp":
        if world < 4:
            return None
        p["data_parallel_replicate_size"] = 2
    dp = world // (tp * pp * cp)
    shard = dp // p.get("data_parallel_replicate_size", 1)
    if dp < 2 or shard % ep:
        return None
    raf = choice(rng, [(True, 6), (False, 2), ("int", 1 if shard >= 16 and pp == 1 else 0)])
    if raf == "int":
        raf = 8
    if pp > 1:
        raf = False  # torchtitan's default under pipeline parallelism
    if raf is not True:
        e["reshard_after_forward"] = raf
    t = training(rng, pb, pp)
    if t["precision"] == "amp_bf16":
        mp = choice(rng, [(("bf16", "fp32"), 6), (("bf16", "bf16"), 2), (("fp32", "fp32"), 1)])
        if mp != ("bf16", "fp32"):
            e["param_dtype"], e["reduce_dtype"] = mp
    if cp > 1:
        t["seq_len"] = max(t["seq_len"], 2048) * 2
    return name, world, t, p, e


def sample_ddp(rng):
    name = rng.choice([m for m in DENSE + MOE if MODELS[m][7] <= 16])
    world = choice(rng, [(2, 2), (4, 2), (8, 3), (16, 1)])
    e = {"type": "ddp"}
    if rng.random() < 0.4:
        e["gradient_as_bucket_view"] = True
    if rng.random() < 0.3:
        e["bucket_cap_mb"] = choice(rng, [(1, 1), (100, 1)])
    return name, world, training(rng, MODELS[name][7], 1), {}, e


def sample_deepspeed(rng):
    name = rng.choice(DENSE + MOE)
    world = choice(rng, [(2, 1), (4, 2), (8, 3), (16, 2), (32, 1), (64, 1)])
    stage = choice(rng, [(1, 1), (2, 1), (3, 2)])
    e = {"type": "deepspeed", "zero_stage": stage}
    if rng.random() < 0.4:
        e["overlap_comm"] = rng.random() < 0.5
    if rng.random() < 0.3:
        e["reduce_bucket_size"] = choice(rng, [(50_000_000, 1), (200_000_000, 1)])
    if stage == 3:
        if rng.random() < 0.3:
            e["stage3_prefetch_bucket_size"] = choice(rng, [(10_000_000, 1), (100_000_000, 1)])
        if rng.random() < 0.3:
            e["stage3_param_persistence_threshold"] = choice(rng, [(10_000, 1), (1_000_000, 1)])
        if rng.random() < 0.2:
            e["stage3_max_live_parameters"] = 300_000_000
    t = training(rng, MODELS[name][7], 1)
    t.pop("optimizer_impl")
    return name, world, t, {}, e


def config_id(name, world, t, p, e):
    lay = "".join(f"-{k[0]}{v}" for k, v in [("tp", p.get("tensor_parallel_size", 1)),
                                             ("pp", p.get("pipeline_parallel_size", 1)),
                                             ("cp", p.get("context_parallel_size", 1)),
                                             ("ep", p.get("expert_parallel_size", 1))] if v > 1)
    eng = e["type"] if e["type"] != "deepspeed" else f"zero{e['zero_stage']}"
    return (f"dist/{eng}/{name}/g{world}{lay}/{t['precision']}/{t['activation_checkpointing']}/"
            f"b{t['micro_batch_size']}-s{t['seq_len']}")


def make(name, world, t, p, e):
    c = {"schema_version": 2, "model": {"preset": name}, "training": t, "engine": e,
         "hardware": {"num_gpus": world}}
    if p:
        c["parallelism"] = p
    pp = p.get("pipeline_parallel_size", 1)
    # the most loaded rank: the first rank of the first and of the last pipeline stage
    c["ranks"] = [0] if pp == 1 else [0, (pp - 1) * (world // pp)]
    return c


CORNERS = [
    # FSDP2 with fused experts on more ranks than experts: each rank holds ceil(E / ranks) rows
    ("mixtral-8x7b-v0.1", 64, {"seq_len": 4096, "activation_checkpointing": "full"}, {}, {"type": "fsdp"}),
    ("mixtral-8x7b-v0.1", 16, {"seq_len": 2048}, {}, {"type": "fsdp"}),
    ("qwen3-30b-a3b", 64, {"seq_len": 4096, "activation_checkpointing": "full"}, {}, {"type": "fsdp"}),
    ("deepseek-v2-lite", 64, {"seq_len": 4096}, {}, {"type": "fsdp"}),
    ("mixtral-8x7b-v0.1", 64, {"seq_len": 4096, "activation_checkpointing": "full"},
     {"expert_parallel_size": 8}, {"type": "fsdp"}),
    ("llama-3.1-70b", 64, {"seq_len": 8192, "activation_checkpointing": "full"}, {}, {"type": "fsdp"}),
    ("llama-3.1-70b", 64, {"seq_len": 4096, "activation_checkpointing": "full"},
     {"tensor_parallel_size": 8, "sequence_parallel": True}, {"type": "fsdp"}),
    ("llama-3.1-8b", 64, {"seq_len": 8192}, {"tensor_parallel_size": 8, "sequence_parallel": True,
                                            "loss_parallel": False}, {"type": "fsdp"}),
    ("llama-3.1-8b", 32, {"seq_len": 4096, "gradient_accumulation_steps": 8},
     {"pipeline_parallel_size": 4, "virtual_pipeline_parallel_size": 2, "pipeline_schedule": "interleaved_1f1b"},
     {"type": "fsdp", "reshard_after_forward": False}),
    ("llama-3.1-8b", 16, {"seq_len": 32768, "activation_checkpointing": "full"}, {"context_parallel_size": 4},
     {"type": "fsdp"}),
    ("llama-3.1-8b", 64, {"seq_len": 4096}, {"data_parallel_replicate_size": 8}, {"type": "fsdp"}),
    ("llama-3.1-8b", 8, {"seq_len": 4096}, {}, {"type": "ddp", "gradient_as_bucket_view": True}),
    ("llama-3.1-70b", 64, {"seq_len": 4096, "activation_checkpointing": "full"}, {},
     {"type": "deepspeed", "zero_stage": 3}),
    ("qwen3-30b-a3b", 32, {"seq_len": 2048, "activation_checkpointing": "full"}, {},
     {"type": "deepspeed", "zero_stage": 3}),
    ("llama-3.1-8b", 8, {"seq_len": 2048}, {}, {"type": "deepspeed", "zero_stage": 2}),
]


def main():
    rng = random.Random(SEED)
    samplers = [(sample_fsdp, 5), (sample_ddp, 2), (sample_deepspeed, 3)]
    configs, seen = [], set()
    while len(configs) < SAMPLED:
        draw = choice(rng, samplers)(rng)
        if draw is None:
            continue
        cid = config_id(*draw)
        if cid in seen:
            continue
        seen.add(cid)
        c = make(*draw)
        c["id"] = cid
        configs.append(c)
    for name, world, t, p, e in CORNERS:
        t = dict({"micro_batch_size": 1, "precision": "amp_bf16", "activation_checkpointing": "none",
                  "optimizer": "adamw", "gradient_accumulation_steps": 1}, **t)
        e = dict(e, fsdp_version=2) if e["type"] == "fsdp" else e
        c = make(name, world, t, p, e)
        c["id"] = "corner/" + config_id(name, world, t, p, e)
        configs.append(c)
    # 30 % of each engine's configs, by a seeded shuffle (the budget is asserted per engine)
    held, draw = set(), random.Random(HELDOUT_SEED)
    for engine in sorted({c["engine"]["type"] for c in configs}):
        order = [i for i, c in enumerate(configs) if c["engine"]["type"] == engine]
        draw.shuffle(order)
        held |= set(order[: round(HELDOUT_FRACTION * len(order))])
    for i, c in enumerate(configs):
        c["split"] = "heldout" if i in held else "train"
    with open(os.path.join(HERE, "dist_grid.json"), "w") as f:
        json.dump(configs, f, indent=1)
    print(f"{len(configs)} configs, {len(held)} held out")


if __name__ == "__main__":
    main()
