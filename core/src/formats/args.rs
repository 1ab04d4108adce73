//! Command lines (split by `shell-words`) as flags: `--name value`, `--name=value` and bare
//! `--flag` (true), with `_` in names written as `-` (Megatron-LM and vLLM accept both), and
//! the short aliases vLLM and SGLang document (`-tp`, `-pp`). Words before the first flag
//! that are not the program (`torchrun`, `python`, `-m`, a script) are positional.

use super::{Format, Input};
use serde_json::Value;

/// A flag's canonical name: `--tensor_model_parallel_size` and `--tensor-model-parallel-size`
/// are one flag; a short alias becomes its long name.
fn canonical(flag: &str, format: Format) -> String {
    let name = flag.trim_start_matches('-').replace('_', "-");
    let long = match (format, name.as_str()) {
        (Format::Vllm, "tp") => "tensor-parallel-size",
        (Format::Vllm, "pp") => "pipeline-parallel-size",
        (Format::Vllm, "dp") => "data-parallel-size",
        (Format::Vllm, "q") => "quantization",
        (Format::Sglang, "tp") => "tp-size",
        (Format::Sglang, "tensor-parallel-size") => "tp-size",
        (Format::Sglang, "pp") => "pp-size",
        (Format::Sglang, "pipeline-parallel-size") => "pp-size",
        (Format::Sglang, "dp") => "dp-size",
        (Format::Sglang, "model") => "model-path",
        _ => return format!("--{name}"),
    };
    format!("--{long}")
}

/// A word that is a flag (not a negative number).
fn is_flag(w: &str) -> bool {
    w.starts_with('-')
        && w.len() > 1
        && !w[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')
}

/// The words of a command line as [`Input`]: flags in order (a repeated flag keeps its last
/// value, as argparse does), positional words after the program.
pub(crate) fn parse(words: &[String], format: Format) -> Input {
    let mut input = Input::default();
    let mut i = 0;
    // leading environment assignments (`CUDA_DEVICE_MAX_CONNECTIONS=1`) and launchers
    while i < words.len() && !is_flag(&words[i]) {
        let w = &words[i];
        let program = w.contains('=')
            || matches!(
                w.as_str(),
                "python" | "python3" | "-m" | "serve" | "torchrun" | "deepspeed"
            )
            || w.ends_with("python")
            || w.ends_with("python3")
            || w.starts_with("vllm")
            || w.starts_with("sglang")
            || w.ends_with(".py")
            || w == "accelerate"
            || w == "launch";
        if !program {
            input.positional.push(w.clone());
        }
        i += 1;
    }
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if !is_flag(w) {
            if w.ends_with(".py") || w.starts_with("pretrain_") {
                // the script after a launcher's flags (torchrun ... pretrain_gpt.py ...)
                continue;
            }
            input.positional.push(w.clone());
            continue;
        }
        if w == "-m" {
            // `python -m module`: the module is the program
            i += 1;
            continue;
        }
        let (name, value) = match w.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (w.as_str(), None),
        };
        let value = match value {
            Some(v) => Value::String(v),
            None if i < words.len() && !is_flag(&words[i]) && !words[i].ends_with(".py") => {
                i += 1;
                // nargs="+" flags (`--lora-modules a b`) keep their first word; the rest are
                // reported as positional
                Value::String(words[i - 1].clone())
            }
            None => Value::Bool(true),
        };
        input.keys.insert(canonical(name, format), value);
    }
    input
}
