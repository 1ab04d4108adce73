//! The grid of configurations the golden snapshot and the term check run over: every
//! preset x engine x mode x a few layouts, training options and inference runtimes.

use serde_json::{Value, json};

/// Merges `patch` into `base` (objects recursively; other values replace).
pub fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, p) => *b = p.clone(),
    }
}

/// Every case: (name, config document).
pub fn cases() -> Vec<(String, Value)> {
    let presets: Vec<String> = calc_core::presets::model_presets()
        .iter()
        .map(|p| p.id.clone())
        .collect();
    let moe = |id: &str| {
        calc_core::param_counts(&calc_core::config::ModelSpec::preset(id))
            .map(|c| c.experts > 0)
            .unwrap_or(false)
    };
    let mut out = Vec::new();
    let base = |id: &str| {
        json!({
            "schema_version": 1,
            "model": {"preset": id},
            "training": {"micro_batch_size": 1, "seq_len": 2048, "gradient_accumulation_steps": 4},
            "hardware": {"num_gpus": 16, "gpu": "h100-80gb"}
        })
    };
    let mut add = |name: String, id: &str, patch: Value| {
        let mut doc = base(id);
        merge(&mut doc, &patch);
        out.push((name, doc));
    };

    // every engine, all data parallel, every preset
    let engines: &[(&str, Value)] = &[
        ("ddp", json!({"type": "ddp"})),
        (
            "ddp-bucketview",
            json!({"type": "ddp", "gradient_as_bucket_view": true}),
        ),
        ("ds-z0", json!({"type": "deepspeed", "zero_stage": 0})),
        ("ds-z1", json!({"type": "deepspeed", "zero_stage": 1})),
        (
            "ds-z2",
            json!({"type": "deepspeed", "zero_stage": 2, "overlap_comm": true}),
        ),
        (
            "ds-z2-offload",
            json!({"type": "deepspeed", "zero_stage": 2, "offload_optimizer": "cpu"}),
        ),
        ("ds-z3", json!({"type": "deepspeed", "zero_stage": 3})),
        (
            "ds-z3-offload",
            json!({"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "cpu", "offload_param": "cpu"}),
        ),
        (
            "ds-z3-nvme",
            json!({"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "nvme", "offload_param": "nvme"}),
        ),
        (
            "ds-z3-tuned",
            json!({"type": "deepspeed", "zero_stage": 3, "stage3_prefetch_bucket_size": 1000000, "stage3_max_live_parameters": 20000000, "sub_group_size": 100000000}),
        ),
        (
            "fsdp-full",
            json!({"type": "fsdp", "sharding_strategy": "FULL_SHARD"}),
        ),
        (
            "fsdp-sgo",
            json!({"type": "fsdp", "sharding_strategy": "SHARD_GRAD_OP"}),
        ),
        (
            "fsdp-hybrid",
            json!({"type": "fsdp", "sharding_strategy": "HYBRID_SHARD"}),
        ),
        (
            "fsdp-noshard",
            json!({"type": "fsdp", "sharding_strategy": "NO_SHARD"}),
        ),
        ("fsdp-offload", json!({"type": "fsdp", "cpu_offload": true})),
        ("fsdp2", json!({"type": "fsdp", "fsdp_version": 2})),
        (
            "fsdp2-noreshard",
            json!({"type": "fsdp", "fsdp_version": 2, "reshard_after_forward": false}),
        ),
        (
            "fsdp2-reshard4-bf16reduce",
            json!({"type": "fsdp", "fsdp_version": 2, "reshard_after_forward": 4, "reduce_dtype": "bf16"}),
        ),
        ("megatron", json!({"type": "megatron"})),
        (
            "megatron-distopt",
            json!({"type": "megatron", "distributed_optimizer": true}),
        ),
        (
            "megds-z0",
            json!({"type": "megatron_deepspeed", "zero_stage": 0}),
        ),
        (
            "megds-z1",
            json!({"type": "megatron_deepspeed", "zero_stage": 1}),
        ),
        (
            "megds-z3",
            json!({"type": "megatron_deepspeed", "zero_stage": 3}),
        ),
    ];
    for id in &presets {
        for (en, e) in engines {
            add(format!("{id}/train/{en}/dp16"), id, json!({"engine": e}));
        }
    }

    // model-parallel layouts on the engines that take them
    let layouts: &[(&str, Value)] = &[
        ("tp2", json!({"parallelism": {"tensor_parallel_size": 2}})),
        (
            "tp2-pp2",
            json!({"parallelism": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}}),
        ),
        (
            "tp2-sp-pp2",
            json!({"parallelism": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2, "sequence_parallel": true}}),
        ),
        (
            "cp2-tp2",
            json!({"parallelism": {"tensor_parallel_size": 2, "context_parallel_size": 2}, "training": {"seq_len": 4096}}),
        ),
        (
            "pp4-vpp2",
            json!({"parallelism": {"pipeline_parallel_size": 4, "virtual_pipeline_parallel_size": 2}, "training": {"gradient_accumulation_steps": 8}}),
        ),
        (
            "pp2-uneven",
            json!({"parallelism": {"pipeline_parallel_size": 2, "first_pipeline_stage_layers": 2}}),
        ),
        ("ep4", json!({"parallelism": {"expert_parallel_size": 4}})),
        (
            "ep2-tp2-cp2",
            json!({"parallelism": {"expert_parallel_size": 2, "tensor_parallel_size": 2, "context_parallel_size": 2}, "training": {"seq_len": 4096}}),
        ),
    ];
    let mp_engines: &[(&str, Value)] = &[
        (
            "megatron-distopt",
            json!({"type": "megatron", "distributed_optimizer": true}),
        ),
        ("megatron", json!({"type": "megatron"})),
        (
            "megds-z1",
            json!({"type": "megatron_deepspeed", "zero_stage": 1}),
        ),
        ("ds-z1", json!({"type": "deepspeed", "zero_stage": 1})),
        ("fsdp-full", json!({"type": "fsdp"})),
        ("fsdp2", json!({"type": "fsdp", "fsdp_version": 2})),
    ];
    for id in &presets {
        for (ln, l) in layouts {
            if ln.starts_with("ep") && !moe(id) {
                continue;
            }
            for (en, e) in mp_engines {
                let mut patch = l.clone();
                merge(&mut patch, &json!({"engine": e}));
                add(format!("{id}/train/{en}/{ln}"), id, patch);
            }
        }
    }

    // training options on a few model kinds (dense GQA, MoE, MLA, GPT-2, Gemma-2, Phi)
    let few = [
        "llama-3.1-8b",
        "qwen3-30b-a3b",
        "deepseek-v2-lite",
        "gpt2",
        "gemma-2-9b-it",
        "phi-2",
    ];
    let options: &[(&str, Value)] = &[
        ("fp32", json!({"training": {"precision": "fp32"}})),
        ("bf16", json!({"training": {"precision": "bf16"}})),
        ("amp-fp16", json!({"training": {"precision": "amp_fp16"}})),
        ("fp8", json!({"training": {"precision": "fp8"}})),
        (
            "fp32-accum",
            json!({"training": {"accumulate_grads_in_fp32": true}}),
        ),
        (
            "selective",
            json!({"training": {"activation_checkpointing": "selective"}}),
        ),
        (
            "full",
            json!({"training": {"activation_checkpointing": "full"}}),
        ),
        ("eager", json!({"training": {"attention": "eager"}})),
        (
            "eager-full",
            json!({"training": {"attention": "eager", "activation_checkpointing": "full"}}),
        ),
        ("flash", json!({"training": {"attention": "flash"}})),
        ("chunked", json!({"training": {"loss": "chunked"}})),
        ("fused-loss", json!({"training": {"loss": "fused"}})),
        (
            "ga1",
            json!({"training": {"gradient_accumulation_steps": 1}}),
        ),
        (
            "mb4-s4096",
            json!({"training": {"micro_batch_size": 4, "seq_len": 4096}}),
        ),
        (
            "adamw8bit",
            json!({"training": {"optimizer": "adamw_8bit"}}),
        ),
        (
            "paged8bit",
            json!({"training": {"optimizer": "paged_adamw_8bit"}}),
        ),
        ("adafactor", json!({"training": {"optimizer": "adafactor"}})),
        ("sgd", json!({"training": {"optimizer": "sgd"}})),
        ("lion", json!({"training": {"optimizer": "lion"}})),
        ("nadam", json!({"training": {"optimizer": "nadam"}})),
        (
            "adamw4bit",
            json!({"training": {"optimizer": "adamw_4bit"}}),
        ),
        (
            "fused-opt",
            json!({"training": {"optimizer_impl": "fused"}}),
        ),
        (
            "forloop-opt",
            json!({"training": {"optimizer_impl": "for_loop"}}),
        ),
        (
            "opt-in-bwd",
            json!({"training": {"optimizer_in_backward": true, "gradient_accumulation_steps": 1}}),
        ),
        (
            "reserve",
            json!({"overheads": {"allocator_reserve_fraction": 0.05, "cuda_context_mib": 600}}),
        ),
        ("one-gpu", json!({"hardware": {"num_gpus": 1}})),
        ("a100", json!({"hardware": {"gpu": "a100-80gb"}})),
        (
            "custom-gpu",
            json!({"hardware": {"gpu": null, "gpu_memory_gb": "48GiB"}}),
        ),
    ];
    let opt_engines: &[(&str, Value)] = &[
        ("ddp", json!({"type": "ddp"})),
        ("ds-z3", json!({"type": "deepspeed", "zero_stage": 3})),
        ("fsdp-full", json!({"type": "fsdp"})),
        ("fsdp2", json!({"type": "fsdp", "fsdp_version": 2})),
        (
            "megatron-distopt",
            json!({"type": "megatron", "distributed_optimizer": true}),
        ),
    ];
    for id in few {
        for (on, o) in options {
            for (en, e) in opt_engines {
                let mut patch = o.clone();
                merge(&mut patch, &json!({"engine": e}));
                add(format!("{id}/train/{en}/{on}"), id, patch);
            }
        }
    }

    // FSDP2's float8 all-gather under torchao float8, resharded after forward and kept
    // (as under a pipeline schedule)
    for id in few {
        for (ln, extra) in [
            ("", json!({})),
            (
                "-pp2",
                json!({"parallelism": {"pipeline_parallel_size": 2}, "training": {"gradient_accumulation_steps": 4}}),
            ),
        ] {
            let mut patch = json!({"training": {"precision": "fp8"},
                                   "engine": {"type": "fsdp", "fsdp_version": 2, "float8_all_gather": true}});
            merge(&mut patch, &extra);
            add(format!("{id}/train/fsdp2/fp8-float8-gather{ln}"), id, patch);
        }
    }

    // fine-tuning: LoRA and QLoRA on the engines that model PEFT
    let tunes: &[(&str, Value)] = &[
        ("lora", json!({"training": {"lora": {}}})),
        (
            "lora-all",
            json!({"training": {"lora": {"rank": 16, "target_modules": "all-linear", "dropout": 0.05}}}),
        ),
        (
            "qlora",
            json!({"training": {"lora": {"rank": 16, "target_modules": "all-linear", "base_weight_format": "nf4"}}}),
        ),
        (
            "lora-int8-bf16adapters",
            json!({"training": {"lora": {"base_weight_format": "int8", "adapters_fp32": false}}}),
        ),
        (
            "lora-full-recompute",
            json!({"training": {"lora": {"target_modules": "all-linear"}, "activation_checkpointing": "full"}}),
        ),
    ];
    let tune_engines: &[(&str, Value)] = &[
        ("ddp", json!({"type": "ddp"})),
        ("ds-z2", json!({"type": "deepspeed", "zero_stage": 2})),
        ("ds-z3", json!({"type": "deepspeed", "zero_stage": 3})),
        (
            "ds-z3-tuned",
            json!({"type": "deepspeed", "zero_stage": 3, "stage3_prefetch_bucket_size": 1000000, "stage3_max_live_parameters": 20000000}),
        ),
        ("fsdp-full", json!({"type": "fsdp"})),
        ("fsdp2", json!({"type": "fsdp", "fsdp_version": 2})),
        (
            "fsdp-sgo",
            json!({"type": "fsdp", "sharding_strategy": "SHARD_GRAD_OP"}),
        ),
        ("megatron", json!({"type": "megatron"})),
    ];
    for id in &presets {
        for (tn, t) in tunes {
            for (en, e) in tune_engines {
                let mut patch = t.clone();
                merge(&mut patch, &json!({"engine": e}));
                add(format!("{id}/tune/{en}/{tn}"), id, patch);
            }
        }
    }
    for id in few {
        for (tn, t) in [
            (
                "lora-1gpu-fp32",
                json!({"training": {"lora": {}, "precision": "fp32"}, "hardware": {"num_gpus": 1}}),
            ),
            (
                "qlora-1gpu-paged",
                json!({"training": {"lora": {"base_weight_format": "nf4"}, "optimizer": "paged_adamw_8bit"}, "hardware": {"num_gpus": 1}}),
            ),
            (
                "lora-tp2",
                json!({"training": {"lora": {}}, "parallelism": {"tensor_parallel_size": 2}, "engine": {"type": "fsdp"}}),
            ),
        ] {
            add(format!("{id}/tune/{tn}"), id, t);
        }
    }

    // inference: transformers generate and vLLM
    let infers: &[(&str, Value)] = &[
        (
            "hf-bf16",
            json!({"inference": {"batch_size": 4, "context_len": 4096, "prompt_len": 3072}}),
        ),
        (
            "hf-int4",
            json!({"inference": {"weight_format": "int4", "context_len": 2048}}),
        ),
        (
            "hf-awq-kvint8",
            json!({"inference": {"weight_format": "awq", "kv_cache_dtype": "int8", "context_len": 2048}}),
        ),
        (
            "hf-nf4-eager",
            json!({"inference": {"weight_format": "nf4", "attention": "eager", "context_len": 1024, "logits_to_keep": 8}}),
        ),
        (
            "hf-fp32",
            json!({"inference": {"weight_format": "fp32", "context_len": 1024}}),
        ),
        (
            "hf-fp16-chunk",
            json!({"inference": {"weight_format": "fp16", "context_len": 8192, "prefill_chunk": 1024}}),
        ),
        (
            "hf-mxfp4-int4kv",
            json!({"inference": {"weight_format": "mxfp4", "kv_cache_dtype": "int4"}}),
        ),
        (
            "vllm",
            json!({"inference": {"engine": "vllm", "context_len": 8192}}),
        ),
        (
            "vllm-fp8",
            json!({"inference": {"engine": "vllm", "weight_format": "fp8", "kv_cache_dtype": "fp8", "max_model_len": 32768, "gpu_memory_utilization": 0.85}}),
        ),
        (
            "vllm-small",
            json!({"inference": {"engine": "vllm", "max_num_batched_tokens": 2048, "max_num_seqs": 64}}),
        ),
        (
            "sglang",
            json!({"inference": {"engine": "sglang", "context_len": 8192}}),
        ),
        (
            "sglang-fp8",
            json!({"inference": {"engine": "sglang", "weight_format": "fp8", "kv_cache_dtype": "fp8", "mem_fraction_static": 0.9, "chunked_prefill_size": 4096}}),
        ),
    ];
    let infer_layouts: &[(&str, Value)] = &[
        ("1gpu", json!({"hardware": {"num_gpus": 1}})),
        (
            "tp2",
            json!({"hardware": {"num_gpus": 2}, "parallelism": {"tensor_parallel_size": 2}}),
        ),
        (
            "tp8",
            json!({"hardware": {"num_gpus": 8}, "parallelism": {"tensor_parallel_size": 8}}),
        ),
        (
            "pp2",
            json!({"hardware": {"num_gpus": 2}, "parallelism": {"pipeline_parallel_size": 2}}),
        ),
    ];
    for id in &presets {
        for (iname, i) in infers {
            for (ln, l) in infer_layouts {
                if *ln != "1gpu"
                    && *ln != "tp2"
                    && !iname.starts_with("vllm")
                    && !iname.starts_with("sglang")
                    && *iname != "hf-bf16"
                {
                    continue;
                }
                let mut patch = json!({"mode": "inference"});
                merge(&mut patch, i);
                merge(&mut patch, l);
                add(format!("{id}/infer/{iname}/{ln}"), id, patch);
            }
        }
    }
    // every hand-built family config (tests/reference/hf_configs): the families no preset
    // covers, under the options whose memory depends on the family's module structure
    for (file, config) in family_configs() {
        let family = file.trim_end_matches(".json");
        for (sn, patch) in [
            (
                "train-eager",
                json!({"training": {"attention": "eager", "seq_len": 1024}, "hardware": {"num_gpus": 1}}),
            ),
            (
                "train-ds-z3",
                json!({"training": {"seq_len": 1024}, "engine": {"type": "deepspeed", "zero_stage": 3}}),
            ),
            (
                "train-megatron",
                json!({"training": {"seq_len": 1024, "precision": "amp_fp16"}, "engine": {"type": "megatron"}}),
            ),
            (
                "tune-all-linear",
                json!({"training": {"seq_len": 1024, "lora": {"target_modules": "all-linear"}}, "hardware": {"num_gpus": 1}}),
            ),
            (
                "infer-eager",
                json!({"mode": "inference", "inference": {"attention": "eager", "context_len": 2048, "weight_format": "int8"}, "hardware": {"num_gpus": 1}}),
            ),
            (
                "infer-vllm",
                json!({"mode": "inference", "inference": {"engine": "vllm"}, "hardware": {"num_gpus": 1}}),
            ),
        ] {
            let mut doc = json!({
                "schema_version": 1,
                "model": {"hf_config": config.clone()},
                "training": {"micro_batch_size": 1, "seq_len": 2048},
                "hardware": {"num_gpus": 4, "gpu": "h100-80gb"}
            });
            merge(&mut doc, &patch);
            out.push((format!("hf/{family}/{sn}"), doc));
        }
    }
    // the example configs
    for (name, text) in calc_core::presets::example_configs() {
        let v: Value = serde_json::from_str(text).unwrap();
        out.push((format!("example/{name}"), v));
    }
    out
}

/// The hand-built family configs of tests/reference/hf_configs, by file name.
pub fn family_configs() -> Vec<(String, Value)> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/reference/hf_configs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(dir.join(&f)).unwrap();
            (f, serde_json::from_str(&text).unwrap())
        })
        .collect()
}
