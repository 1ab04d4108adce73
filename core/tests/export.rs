//! ds_config.json export and the "which GPUs fit" table.

mod common;
use common::*;

use calc_core::export::{deepspeed_config, gpu_fits};
use serde_json::json;

#[test]
fn ds_config_has_deepspeeds_keys() {
    let c = cfg(json!({
        "model": {"preset": "llama-3.1-8b"},
        "training": {"micro_batch_size": 2, "gradient_accumulation_steps": 4, "seq_len": 4096,
                     "precision": "amp_bf16", "optimizer": "adamw", "activation_checkpointing": "full"},
        "engine": {"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "cpu"},
        "hardware": {"num_gpus": 16, "gpu": "h100-80gb"}
    }));
    let ds = deepspeed_config(&c).unwrap();
    // DP = 16 GPUs: train_batch_size = 2 x 4 x 16
    assert_eq!(ds["train_batch_size"], 128);
    assert_eq!(ds["train_micro_batch_size_per_gpu"], 2);
    assert_eq!(ds["gradient_accumulation_steps"], 4);
    assert_eq!(ds["bf16"]["enabled"], true);
    assert!(ds.get("fp16").is_none());
    let z = &ds["zero_optimization"];
    assert_eq!(z["stage"], 3);
    assert_eq!(z["offload_optimizer"]["device"], "cpu");
    assert!(z.get("offload_param").is_none());
    assert_eq!(z["stage3_prefetch_bucket_size"], 50_000_000);
    assert_eq!(z["sub_group_size"], 1_000_000_000);
    assert_eq!(ds["optimizer"]["type"], "AdamW");
    // ZeRO-1 has no stage-3 keys; fp16 has loss scaling
    let mut v = serde_json::to_value(&c).unwrap();
    v["engine"] = json!({"type": "deepspeed", "zero_stage": 1});
    v["training"]["precision"] = json!("amp_fp16");
    let ds = deepspeed_config(&cfg(v)).unwrap();
    assert!(
        ds["zero_optimization"]
            .get("stage3_max_live_parameters")
            .is_none()
    );
    assert_eq!(ds["fp16"]["loss_scale"], 0);
}

#[test]
fn ds_config_only_for_deepspeed_engines() {
    let c = cfg(json!({"model": {"preset": "gpt2"}, "engine": {"type": "fsdp"}}));
    let e = deepspeed_config(&c).unwrap_err();
    assert_eq!(e[0].field, "engine.type");
    assert!(e[0].message.contains("deepspeed"), "{}", e[0].message);
}

#[test]
fn ds_config_only_for_training() {
    // an inference configuration under a DeepSpeed engine: no ds_config (it configures
    // training), and the page's button follows the same fact
    let doc = json!({"mode": "inference", "model": {"preset": "gpt2"},
                     "engine": {"type": "deepspeed", "zero_stage": 3}});
    let e = deepspeed_config(&cfg(doc.clone())).unwrap_err();
    assert_eq!(e[0].field, "mode");
    assert!(e[0].message.contains("training"), "{}", e[0].message);
    use calc_core::fields::Context;
    assert!(!Context::of(&doc).exports_ds_config());
    let mut training = doc;
    training["mode"] = json!("training");
    assert!(Context::of(&training).exports_ds_config());
    assert!(deepspeed_config(&cfg(training)).is_ok());
}

#[test]
fn gpu_fits_orders_by_capacity_and_splits_at_the_boundary() {
    // Llama-3.1-8B full training on one GPU, AMP + AdamW: fp32 weights, gradients and two
    // moments (16 B/param) plus the step's foreach temporaries and autocast copies: about
    // 150 GiB, more than H200's 140.4 GiB and less than B200's 178 GiB
    let c = cfg(json!({
        "model": {"preset": "llama-3.1-8b"},
        "training": {"micro_batch_size": 1, "seq_len": 1024, "activation_checkpointing": "full"},
        "hardware": {"num_gpus": 1, "gpu": "rtx4090-24gb"}
    }));
    let fits = gpu_fits(&c).unwrap();
    // every preset of presets/gpus.json
    assert_eq!(fits.len(), 9);
    assert!(
        fits.windows(2)
            .all(|w| w[0].gpu_memory_bytes <= w[1].gpu_memory_bytes)
    );
    let fit = |id: &str| fits.iter().find(|f| f.gpu == id).unwrap().fits;
    assert!(!fit("h100-80gb"));
    assert!(!fit("h100-96gb"));
    assert!(!fit("a100-80gb"));
    assert!(!fit("h200-141gb"));
    assert!(fit("b200-180gb"));
    assert!(fit("mi300x-192gb"));
    for f in &fits {
        assert_eq!(f.fits, f.total_bytes <= f.gpu_memory_bytes);
    }
}

#[test]
fn gpu_fits_is_the_estimates_verdict_for_vllm() {
    // vLLM sizes its KV cache from gpu_memory_utilization: total_bytes stays under the GPU
    // on every card, and the verdict is whether that cache holds one request of
    // max_model_len tokens. Llama-3.1-8B bf16 on an RTX 4090: 0.9 x 23.99 GiB = 21.6 GiB
    // budget, 15 GiB of weights, so about 5 GiB of cache = about 40k tokens at
    // 128 KiB/token (32 layers x 8 KV heads x 128 x 2 x 2 B), short of 131 072
    let c = cfg(json!({
        "mode": "inference",
        "model": {"preset": "llama-3.1-8b"},
        "inference": {"engine": "vllm", "max_model_len": 131072},
        "hardware": {"num_gpus": 1, "gpu": "h100-80gb"}
    }));
    let fits = gpu_fits(&c).unwrap();
    let rtx = fits.iter().find(|f| f.gpu == "rtx4090-24gb").unwrap();
    assert!(rtx.total_bytes <= rtx.gpu_memory_bytes, "{rtx:?}");
    assert!(
        !rtx.fits,
        "the KV cache holds less than one request: {rtx:?}"
    );
    for f in &fits {
        let mut on = c.clone();
        on.hardware.gpu = Some(f.gpu.clone());
        assert_eq!(f.fits, calc_core::estimate(&on).unwrap().fits, "{}", f.gpu);
    }
    assert!(fits.iter().find(|f| f.gpu == "h100-80gb").unwrap().fits);
}
