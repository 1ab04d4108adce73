//! The benchmark cases, shared by the criterion bench (`core/benches/estimate.rs`) and the
//! instruction count (`core/examples/peak_loop.rs`, BENCHMARKS.md), so that both measure
//! the same documents.
use serde_json::{Value, json};

/// The cases [`case`] knows.
const NAMES: &str = "zero3, fsdp2, moe, vllm, gpt2, qwen";

/// The config document of a benchmark case: `zero3` (Llama-3.1-8B ZeRO-3, 8 H100), `fsdp2`
/// (the same under FSDP2), `moe` (DeepSeek-V3 TP8 PP8 EP8 on 512 H100, 61 layers as 7 + 6 x
/// 8 + 6: the first and last stages carry the embedding and head), `vllm` (vLLM
/// Llama-3.1-70B FP8 TP2), `gpt2` (GPT-2 under FSDP2: biases, LayerNorm), `qwen`
/// (Qwen2.5-7B ZeRO-3); training cases with full recomputation and FlashAttention.
///
/// # Errors
/// An unknown name, with the names known.
pub fn case(name: &str) -> Result<Value, String> {
    let train = |model: &str, seq: u64, engine: Value, extra: Value| {
        let mut doc = json!({
            "model": {"preset": model},
            "training": {"seq_len": seq, "activation_checkpointing": "full", "attention": "flash"},
            "engine": engine,
            "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}
        });
        if let (Some(d), Some(e)) = (doc.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                d.insert(k.clone(), v.clone());
            }
        }
        doc
    };
    let zero3 = || json!({"type": "deepspeed", "zero_stage": 3});
    let fsdp2 = || json!({"type": "fsdp", "fsdp_version": 2});
    Ok(match name {
        "zero3" => train("llama-3.1-8b", 4096, zero3(), json!({})),
        "fsdp2" => train("llama-3.1-8b", 4096, fsdp2(), json!({})),
        "moe" => train(
            "deepseek-v3",
            4096,
            json!({"type": "megatron", "distributed_optimizer": true}),
            json!({
                "parallelism": {"tensor_parallel_size": 8, "pipeline_parallel_size": 8, "expert_parallel_size": 8,
                                "first_pipeline_stage_layers": 7, "last_pipeline_stage_layers": 6},
                "hardware": {"num_gpus": 512, "gpu": "h100-80gb"}
            }),
        ),
        "gpt2" => train("gpt2", 1024, fsdp2(), json!({})),
        "qwen" => train("qwen2.5-7b", 4096, zero3(), json!({})),
        "vllm" => json!({
            "mode": "inference", "model": {"preset": "llama-3.1-70b"},
            "inference": {"engine": "vllm", "weight_format": "fp8", "context_len": 16000},
            "parallelism": {"tensor_parallel_size": 2}, "hardware": {"num_gpus": 2, "gpu": "h100-80gb"}
        }),
        other => return Err(format!("unknown case {other}: {NAMES}")),
    })
}
