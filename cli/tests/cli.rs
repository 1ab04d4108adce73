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
        calc_core::estimate::COMPONENTS.len()
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
    assert_eq!(v["gpus"].as_array().unwrap().len(), 8);
}
