//! Serving command lines: `vllm serve MODEL ...` (vllm/engine/arg_utils.py `EngineArgs`) and
//! `python -m sglang.launch_server --model-path MODEL ...` (sglang/srt/server_args.py
//! `ServerArgs`): the model, tensor / pipeline / data parallel sizes, the context limit, the
//! memory fraction, batch limits, KV-cache dtype, quantization and dtype.

use super::{Format, Import, as_count, cannot, text};
use crate::config::{Config, KvCacheDtype, WeightFormat};
use crate::error::FieldError;
use crate::resolve::Resolved;
use serde_json::{Value, json};

/// Our keys a `vllm serve` command line has no place for.
pub(super) const VLLM_FROM_BASE: &[&str] = &[
    "model",
    "inference",
    "hardware.gpu",
    "hardware.gpus_per_node",
    "overheads",
];
/// Our keys an SGLang command line has no place for.
pub(super) const SGLANG_FROM_BASE: &[&str] = VLLM_FROM_BASE;

fn common(im: &mut Import, model_keys: &[&str], tp: &str, pp: &str, dp: &str) {
    im.reset("mode", json!("inference"));
    let positional = std::mem::take(&mut im.input.positional);
    let model = im.take_any(model_keys).or_else(|| {
        positional
            .first()
            .map(|p| ("MODEL (positional)".to_string(), json!(p)))
    });
    im.input.positional = positional
        .into_iter()
        .skip(usize::from(
            model.as_ref().is_some_and(|(k, _)| k.starts_with("MODEL")),
        ))
        .collect();
    if let Some((k, v)) = model {
        im.model_from_hf_id(&k, &v);
    }
    let t = im.degree(tp, "parallelism.tensor_parallel_size");
    let p = im.degree(pp, "parallelism.pipeline_parallel_size");
    let d = im.take(dp).and_then(|v| as_count(&v)).unwrap_or(1);
    im.put(
        &format!("{tp} x {pp}"),
        &json!(t.saturating_mul(p)),
        "hardware.num_gpus",
        json!(t.saturating_mul(p)),
    );
    if d > 1 {
        im.ignore(
            dp,
            "data-parallel replicas: each holds the same memory; the estimate is per replica",
        );
    }
    im.reset("parallelism.data_parallel_size", Value::Null);
    // quantization and dtype: the weights' format
    let q = im.take("--quantization");
    let dtype = im.take("--dtype");
    if let Some(v) = &q {
        let f = match text(v).to_ascii_lowercase().as_str() {
            "fp8" | "fbgemm_fp8" | "modelopt" => Some("fp8"),
            "awq" | "awq_marlin" => Some("awq"),
            "gptq" | "gptq_marlin" => Some("int4"),
            "bitsandbytes" => Some("nf4"),
            "mxfp4" => Some("mxfp4"),
            _ => None,
        };
        match f {
            Some(f) => im.put("--quantization", v, "inference.weight_format", json!(f)),
            None => im.fail("--quantization", v, "a quantization the estimate does not model (fp8, awq, gptq, bitsandbytes, mxfp4 are)"),
        }
    }
    if let Some(v) = dtype {
        let f = match text(&v).to_ascii_lowercase().as_str() {
            "bfloat16" | "bf16" => Some("bf16"),
            "float16" | "half" | "fp16" => Some("fp16"),
            "float32" | "float" => Some("fp32"),
            "auto" => None,
            _ => {
                im.fail("--dtype", &v, "must be auto, bfloat16, float16 or float32");
                None
            }
        };
        match (f, &q) {
            (Some(f), None) => im.put("--dtype", &v, "inference.weight_format", json!(f)),
            (Some(_), Some(_)) => im.ignore(
                "--dtype",
                "the activations' dtype: the weights' format is --quantization's",
            ),
            (None, _) => im.ignore(
                "--dtype",
                "auto: the checkpoint's dtype (the base's weight format)",
            ),
        }
    }
    if let Some(v) = im.take("--kv-cache-dtype") {
        let d = text(&v).to_ascii_lowercase();
        let k = if d == "auto" {
            Some("auto")
        } else if d.starts_with("fp8") {
            Some("fp8")
        } else {
            None
        };
        match k {
            Some(k) => im.put("--kv-cache-dtype", &v, "inference.kv_cache_dtype", json!(k)),
            None => im.fail("--kv-cache-dtype", &v, "must be auto or an fp8 type"),
        }
    }
}

/// Reads a `vllm serve` command line.
pub(super) fn read_vllm(im: &mut Import) {
    im.reset("inference.engine", json!("vllm"));
    common(
        im,
        &["--model"],
        "--tensor-parallel-size",
        "--pipeline-parallel-size",
        "--data-parallel-size",
    );
    im.count("--max-model-len", "inference.max_model_len");
    im.float_into(
        "--gpu-memory-utilization",
        "inference.gpu_memory_utilization",
    );
    im.count("--max-num-seqs", "inference.max_num_seqs");
    im.count(
        "--max-num-batched-tokens",
        "inference.max_num_batched_tokens",
    );
}

/// Reads an SGLang `launch_server` command line.
pub(super) fn read_sglang(im: &mut Import) {
    im.reset("inference.engine", json!("sglang"));
    common(im, &["--model-path"], "--tp-size", "--pp-size", "--dp-size");
    im.count("--context-length", "inference.max_model_len");
    im.float_into("--mem-fraction-static", "inference.mem_fraction_static");
    im.count("--chunked-prefill-size", "inference.chunked_prefill_size");
    im.count("--max-running-requests", "inference.max_num_seqs");
}

/// Why a serving flag is not read.
pub(super) fn reason(key: &str) -> String {
    if key.contains("port")
        || key.contains("host")
        || key.contains("api-key")
        || key.contains("served-model-name")
        || key.contains("log")
        || key.contains("trust-remote-code")
        || key.contains("download-dir")
        || key.contains("tokenizer")
        || key.contains("chat-template")
        || key.contains("revision")
    {
        return "server, network or tokenizer settings: no GPU memory".into();
    }
    if key.contains("enforce-eager")
        || key.contains("cuda-graph")
        || key.contains("compilation-config")
    {
        return "CUDA graphs: their memory is in the estimate's non-torch overhead for the release"
            .into();
    }
    if key.contains("enable-prefix-caching")
        || key.contains("scheduling")
        || key.contains("chunked-prefill")
        || key.contains("speculative")
    {
        return "scheduling: the KV cache's size does not depend on it".into();
    }
    "not a serving option the estimate reads".into()
}

fn weight_flags(
    config: &Config,
    format: Format,
    words: &mut Vec<String>,
) -> Result<(), Vec<FieldError>> {
    let inf = config.inference.clone().unwrap_or_default();
    let (flag, value) = match inf.weight_format {
        WeightFormat::Bf16 => ("--dtype", "bfloat16"),
        WeightFormat::Fp16 => ("--dtype", "float16"),
        WeightFormat::Fp32 => ("--dtype", "float32"),
        WeightFormat::Fp8 => ("--quantization", "fp8"),
        WeightFormat::Awq => ("--quantization", "awq"),
        WeightFormat::Int4 => ("--quantization", "gptq"),
        WeightFormat::Nf4 => ("--quantization", "bitsandbytes"),
        WeightFormat::Mxfp4 => ("--quantization", "mxfp4"),
        WeightFormat::Int8 => {
            return Err(cannot(
                "inference.weight_format",
                "int8",
                format,
                "no LLM.int8 quantization flag",
            ));
        }
    };
    words.push(flag.into());
    words.push(value.into());
    match inf.kv_cache_dtype {
        KvCacheDtype::Auto => {}
        KvCacheDtype::Fp8 => {
            words.push("--kv-cache-dtype".into());
            words.push(
                if format == Format::Vllm {
                    "fp8"
                } else {
                    "fp8_e4m3"
                }
                .into(),
            );
        }
        k => {
            return Err(cannot(
                "inference.kv_cache_dtype",
                format!("{k:?}"),
                format,
                "KV caches are auto or fp8",
            ));
        }
    }
    Ok(())
}

fn model_word(config: &Config, format: Format) -> Result<String, Vec<FieldError>> {
    super::hf_id_of(config).ok_or_else(|| {
        cannot(
            "model",
            "a model without a Hugging Face id",
            format,
            "the command names a Hub model",
        )
    })
}

/// A `vllm serve` command line of a vLLM config.
pub(super) fn write_vllm(config: &Config, _r: &Resolved) -> Result<String, Vec<FieldError>> {
    let inf = config.inference.clone().unwrap_or_default();
    if inf.engine != crate::config::InferenceEngine::Vllm {
        return Err(cannot(
            "inference.engine",
            format!("{:?}", inf.engine),
            Format::Vllm,
            "a vllm serve command runs vLLM",
        ));
    }
    let mut w: Vec<String> = vec![
        "vllm".into(),
        "serve".into(),
        model_word(config, Format::Vllm)?,
    ];
    let p = &config.parallelism;
    w.extend([
        "--tensor-parallel-size".into(),
        p.tensor_parallel_size.to_string(),
    ]);
    if p.pipeline_parallel_size > 1 {
        w.extend([
            "--pipeline-parallel-size".into(),
            p.pipeline_parallel_size.to_string(),
        ]);
    }
    w.extend([
        "--max-model-len".into(),
        inf.max_model_len.unwrap_or(inf.context_len).to_string(),
    ]);
    w.extend([
        "--gpu-memory-utilization".into(),
        inf.gpu_memory_utilization.to_string(),
    ]);
    w.extend(["--max-num-seqs".into(), inf.max_num_seqs.to_string()]);
    w.extend([
        "--max-num-batched-tokens".into(),
        inf.max_num_batched_tokens.to_string(),
    ]);
    weight_flags(config, Format::Vllm, &mut w)?;
    Ok(format!("{}\n", super::megatron::wrap(&w, 3)))
}

/// An SGLang `launch_server` command line of an SGLang config.
pub(super) fn write_sglang(config: &Config, _r: &Resolved) -> Result<String, Vec<FieldError>> {
    let inf = config.inference.clone().unwrap_or_default();
    if inf.engine != crate::config::InferenceEngine::Sglang {
        return Err(cannot(
            "inference.engine",
            format!("{:?}", inf.engine),
            Format::Sglang,
            "a launch_server command runs SGLang",
        ));
    }
    let p = &config.parallelism;
    let mut w: Vec<String> = vec![
        "python".into(),
        "-m".into(),
        "sglang.launch_server".into(),
        "--model-path".into(),
        model_word(config, Format::Sglang)?,
    ];
    w.extend(["--tp-size".into(), p.tensor_parallel_size.to_string()]);
    if p.pipeline_parallel_size > 1 {
        w.extend(["--pp-size".into(), p.pipeline_parallel_size.to_string()]);
    }
    w.extend([
        "--context-length".into(),
        inf.max_model_len.unwrap_or(inf.context_len).to_string(),
    ]);
    if let Some(m) = inf.mem_fraction_static {
        w.extend(["--mem-fraction-static".into(), m.to_string()]);
    }
    if let Some(c) = inf.chunked_prefill_size {
        w.extend(["--chunked-prefill-size".into(), c.to_string()]);
    }
    weight_flags(config, Format::Sglang, &mut w)?;
    Ok(format!("{}\n", super::megatron::wrap(&w, 3)))
}
