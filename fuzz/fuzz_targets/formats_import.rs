//! Another tool's file (DeepSpeed, TrainingArguments, accelerate, torchtune, Axolotl,
//! torchtitan, Megatron-LM arguments, a vllm serve or SGLang line; recognised by content) as
//! the Import panel and `gpu-mem-calc import` read it, over a small base. An accepted file is
//! estimated (full report and numeric path), exported back to its own format, and that
//! export must import over the imported plan to the same estimate.
#![no_main]
use calc_core::Config;
use calc_core::formats::{export, import};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static BASE: LazyLock<Config> = LazyLock::new(|| {
    Config::from_json_str(r#"{"model": {"preset": "llama-3.2-1b"}, "training": {"seq_len": 512}}"#)
        .expect("the base config")
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match import(text, &BASE, None) {
        Ok(im) => {
            gpu_mem_calc_fuzz::assert_finite(&im);
            gpu_mem_calc_fuzz::check_config(&im.config);
            match export(&im.config, im.format) {
                Ok(out) => {
                    let back = import(&out, &im.config, None).expect("an export re-imports");
                    assert_eq!(
                        serde_json::to_string(&calc_core::estimate(&back.config)).unwrap(),
                        serde_json::to_string(&calc_core::estimate(&im.config)).unwrap(),
                        "export -> import changed the estimate:\n{out}"
                    );
                }
                Err(errors) => gpu_mem_calc_fuzz::assert_errors_readable(&errors),
            }
        }
        Err(errors) => gpu_mem_calc_fuzz::assert_errors_readable(&errors),
    }
});
