//! Runs the numeric estimate (`estimate_peak`) of one benchmark case N times, for counting
//! its instructions under callgrind (BENCHMARKS.md): the count of N runs less that of one,
//! divided by N - 1, is the instructions per estimate, repeatable whatever the machine's
//! load (criterion's times are not, on a shared machine).
//!
//! `cargo build --profile release-native -p calc-core --example peak_loop`, then
//! `valgrind --tool=callgrind target/release-native/examples/peak_loop zero3 20001`.
//! Cases: `zero3` (Llama-3.1-8B ZeRO-3, 8 H100, as `core/benches/estimate.rs`), `fsdp2`
//! (the same under FSDP2), `moe` (DeepSeek-V3 TP8 PP8 EP8, as the bench), `vllm` (vLLM
//! Llama-3.1-70B FP8 TP2, as the bench), `gpt2` (GPT-2 under FSDP2: biases, LayerNorm),
//! `qwen` (Qwen2.5-7B ZeRO-3).
use calc_core::Config;
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let case = args.get(1).map(String::as_str).unwrap_or("zero3");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let train = |model: &str, seq: u64, engine: serde_json::Value, extra: serde_json::Value| {
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
    let doc = match case {
        "zero3" => train(
            "llama-3.1-8b",
            4096,
            json!({"type": "deepspeed", "zero_stage": 3}),
            json!({}),
        ),
        "fsdp2" => train(
            "llama-3.1-8b",
            4096,
            json!({"type": "fsdp", "fsdp_version": 2}),
            json!({}),
        ),
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
        "gpt2" => train(
            "gpt2",
            1024,
            json!({"type": "fsdp", "fsdp_version": 2}),
            json!({}),
        ),
        "qwen" => train(
            "qwen2.5-7b",
            4096,
            json!({"type": "deepspeed", "zero_stage": 3}),
            json!({}),
        ),
        "vllm" => json!({
            "mode": "inference", "model": {"preset": "llama-3.1-70b"},
            "inference": {"engine": "vllm", "weight_format": "fp8", "context_len": 16000},
            "parallelism": {"tensor_parallel_size": 2}, "hardware": {"num_gpus": 2, "gpu": "h100-80gb"}
        }),
        other => {
            eprintln!("unknown case {other}: zero3, fsdp2, moe, vllm, gpt2, qwen");
            std::process::exit(2);
        }
    };
    let config = Config::from_value(doc).expect("a valid benchmark config");
    let r = calc_core::resolve::resolve(&config).expect("a valid benchmark config");
    let mut fits = 0;
    for _ in 0..n {
        fits += usize::from(calc_core::estimate_peak(std::hint::black_box(&r)).fits);
    }
    println!("{case}: {n} estimates, {fits} fit");
}
