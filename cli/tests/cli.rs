//! The CLI as a user runs it: commands, output, exit codes.

use assert_cmd::Command;
use predicates::prelude::*;
use std::io::Write;

fn cli() -> Command {
    Command::cargo_bin("gpu-mem-calc").unwrap()
}

fn example(name: &str) -> String {
    format!("{}/../presets/examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn temp_json(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn calculate_prints_a_table_in_gib() {
    cli()
        .args([
            "calculate",
            "--config",
            &example("llama2_7b_deepspeed.json"),
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("GiB"))
        .stdout(predicate::str::contains("peak allocated"))
        .stdout(predicate::str::contains("fits: yes"))
        .stdout(predicate::str::contains("CPU memory per node"));
}

#[test]
fn calculate_json_is_the_estimate() {
    let out = cli()
        .args([
            "calculate",
            "--config",
            &example("gpt3_175b_megatron.json"),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["peak_allocated_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        v["components"].as_object().unwrap().len(),
        calc_core::COMPONENTS.len()
    );
    assert_eq!(v["layout"]["pipeline_parallel_size"], 16);
    assert!(v["fits"].is_boolean());
}

#[test]
fn calculate_matches_the_library() {
    // the CLI computes nothing itself: its JSON equals calc_core's estimate
    let text = std::fs::read_to_string(example("pytorch_ddp_example.json")).unwrap();
    let expected = calc_core::estimate(&calc_core::Config::from_json_str(&text).unwrap()).unwrap();
    let out = cli()
        .args([
            "calculate",
            "--config",
            &example("pytorch_ddp_example.json"),
            "--json",
        ])
        .output()
        .unwrap();
    let got: calc_core::Estimate = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got.peak_allocated_bytes, expected.peak_allocated_bytes);
    assert_eq!(got.components, expected.components);
}

#[test]
fn quick_by_size_and_by_preset() {
    cli()
        .args(["quick", "7B", "--gpus", "8", "--engine", "deepspeed"])
        .assert()
        .success()
        .stdout(predicate::str::contains("on 8 x NVIDIA H100"));
    cli()
        .args(["quick", "llama-3.1-8b", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"peak_allocated_bytes\""));
}

#[test]
fn validate_reports_field_errors_with_exit_code_2() {
    let f = temp_json(r#"{"schema_version": 1, "training": {"micro_batch_size": 0}}"#);
    cli()
        .args(["validate", f.path().to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "training.micro_batch_size = 0: must be a whole number from 1 to",
        ));
    let ok = temp_json(r#"{"schema_version": 1, "model": {"preset": "gpt2"}}"#);
    cli()
        .args(["validate", ok.path().to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("valid"));
}

#[test]
fn bad_input_never_panics() {
    for text in [
        "",
        "{",
        "[]",
        "null",
        r#"{"model": {"hidden_size": "x"}}"#,
        r#"{"engine": {"type": "jax"}}"#,
    ] {
        let f = temp_json(text);
        cli()
            .args(["calculate", "--config", f.path().to_str().unwrap()])
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("error: "));
    }
    cli()
        .args(["calculate", "--config", "/nonexistent/file.json"])
        .assert()
        .code(2);
    cli().args(["quick", "1e20"]).assert().code(2);
    cli()
        .args(["quick", "7B", "--gpus", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("hardware.num_gpus"));
}

#[test]
fn presets_lists_models_gpus_and_examples() {
    cli()
        .arg("presets")
        .assert()
        .success()
        .stdout(predicate::str::contains("llama-2-70b"))
        .stdout(predicate::str::contains("mi300x-192gb"))
        .stdout(predicate::str::contains("gpt3_175b_megatron.json"));
    let out = cli().args(["presets", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["models"].as_array().unwrap().len() >= 31);
    assert_eq!(v["gpus"].as_array().unwrap().len(), 9);
}

fn hf(name: &str) -> String {
    format!("{}/../presets/models/hf/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn params_prints_the_exact_breakdown() {
    let out = cli()
        .args(["params", &hf("meta-llama__Llama-2-7b-hf.json"), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 6 738 415 616 = 2 x 131 072 000 (embedding, LM head) + 32 x 202 383 360 + 4096
    assert_eq!(v["total"], 6_738_415_616u64);
    assert_eq!(v["embeddings"], 131_072_000u64);
    assert_eq!(v["lm_head"], 131_072_000u64);
    assert_eq!(v["attention"], 32 * 67_108_864u64);
    assert_eq!(v["mlp"], 32 * 135_266_304u64);
    cli()
        .args(["params", &hf("mistralai__Mixtral-8x7B-v0.1.json")])
        .assert()
        .success()
        .stdout(predicate::str::contains("46 702 792 704"))
        .stdout(predicate::str::contains("active per token"));
}

#[test]
fn calculate_with_an_hf_config_file() {
    // the model comes from the HF file, everything else from the config, which has no model
    let cfg = temp_json(
        r#"{"schema_version": 1, "training": {"seq_len": 1024}, "hardware": {"num_gpus": 2}}"#,
    );
    let out = cli()
        .args([
            "calculate",
            "--config",
            cfg.path().to_str().unwrap(),
            "--hf-config",
            &hf("Qwen__Qwen2.5-0.5B.json"),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["params"]["total"], 494_032_768u64);
    // the same with the config inline under model.hf_config
    let hf_text = std::fs::read_to_string(hf("Qwen__Qwen2.5-0.5B.json")).unwrap();
    let inline = temp_json(&format!(
        r#"{{"model": {{"hf_config": {hf_text}}}, "training": {{"seq_len": 1024}}, "hardware": {{"num_gpus": 2}}}}"#
    ));
    let out2 = cli()
        .args([
            "calculate",
            "--config",
            inline.path().to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    let v2: serde_json::Value = serde_json::from_slice(&out2.stdout).unwrap();
    assert_eq!(v["peak_allocated_bytes"], v2["peak_allocated_bytes"]);
}

#[test]
fn malformed_hf_configs_are_errors() {
    for (text, needle) in [
        (
            r#"{"model_type": "llama", "hidden_size": 4096,"#,
            "invalid JSON",
        ),
        (
            r#"{"model_type": "llama", "hidden_size": "wide"}"#,
            "hidden_size",
        ),
        (
            r#"{"model_type": "llama", "num_hidden_layers": -4}"#,
            "negative",
        ),
        (
            r#"{"model_type": "llama", "hidden_size": 4000, "num_attention_heads": 3}"#,
            "divide hidden_size",
        ),
        (
            r#"{"model_type": "llama", "num_hidden_layers": 1000000000}"#,
            "num_hidden_layers",
        ),
        (r#"{"model_type": "rwkv"}"#, "supported: llama"),
    ] {
        let f = temp_json(text);
        cli()
            .args(["params", f.path().to_str().unwrap()])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
}

#[test]
fn explain_prints_each_term_with_the_numbers_substituted() {
    // Llama-3.1-70B under FSDP2 on 16 GPUs: fp32 weight shards, every tensor's rows divide
    // by 16, so the padded shards hold 70 553 706 496 / 16 = 4 409 606 656 elements,
    // 4 B x 4 409 606 656 = 17 638 426 624 bytes
    cli()
        .args([
            "quick",
            "llama-3.1-70b",
            "--gpus",
            "16",
            "--engine",
            "fsdp",
            "--recompute",
            "full",
            "--explain",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "weights = 16.43 GiB (17 638 426 624 bytes)\n  = 4 B × 4409606656 params in padded shards\n  source: torch fully_shard",
        ))
        .stdout(predicate::str::contains("nccl buffers = "));
    // the same terms as the JSON's details
    let out = cli()
        .args([
            "calculate",
            "--config",
            &example("llama2_7b_deepspeed.json"),
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let explained = cli()
        .args([
            "calculate",
            "--config",
            &example("llama2_7b_deepspeed.json"),
            "--explain",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(explained.stdout).unwrap();
    for d in v["details"].as_array().unwrap() {
        assert!(
            text.contains(&format!("  = {}\n", d["formula"].as_str().unwrap())),
            "{d}"
        );
    }
}

#[test]
fn plan_ranks_layouts_as_the_issue_asks() {
    // the command as written in the issue: 4M tokens of 8192 = 488 sequences (decimal M)
    cli()
        .args([
            "plan",
            "--model",
            "llama-3.1-70b",
            "--gpu",
            "h100-80gb",
            "--gpus",
            "64",
            "--global-batch-tokens",
            "4M",
            "--seq",
            "8192",
            "--top",
            "3",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "the 3 fastest plans that fit (more may fit)",
        ))
        .stdout(predicate::str::contains("tokens/s/GPU"))
        .stdout(predicate::str::contains("global batch 488 sequences"));
    let out = cli()
        .args([
            "plan",
            "--model",
            "llama-3.2-1b",
            "--gpus",
            "8",
            "--global-batch",
            "64",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["plans"].as_array().unwrap().len(), 10);
    assert_eq!(v["plans"][0]["rank"], 1);
    // a bad option is a field error, exit code 2
    cli()
        .args([
            "plan",
            "--model",
            "llama-3.2-1b",
            "--headroom",
            "3",
            "--global-batch",
            "8",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("min_headroom"));
}

#[test]
fn import_prints_our_config_and_export_round_trips() {
    let fixture = format!(
        "{}/../tests/fixtures/formats/torchtitan_llama3_70b.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let base = temp_json(r#"{"hardware": {"num_gpus": 64, "gpu": "h100-80gb"}}"#);
    let out = cli()
        .args(["import", &fixture, "--base", base.path().to_str().unwrap()])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "recognised: torchtitan job config (TOML)",
        ))
        .stderr(predicate::str::contains(
            "parallelism.tensor_parallel_degree = 8  ->  parallelism.tensor_parallel_size = 8",
        ))
        .get_output()
        .stdout
        .clone();
    let config: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(config["model"]["preset"], "llama-3.1-70b");
    assert_eq!(config["engine"]["type"], "fsdp");
    // the imported config exports back to a torchtitan TOML with the same layout
    let f = temp_json(&String::from_utf8(out).unwrap());
    cli()
        .args([
            "export",
            "--config",
            f.path().to_str().unwrap(),
            "--format",
            "torchtitan",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("tensor_parallel_degree = 8"))
        .stdout(predicate::str::contains("data_parallel_shard_degree = 8"));
    // a format that cannot express the engine says so
    cli()
        .args([
            "export",
            "--config",
            f.path().to_str().unwrap(),
            "--format",
            "megatron",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("engine.type"));
}
