use calc_core::{
    Config,
    plan::{PlanRequest, plan},
};
fn main() {
    for (model, n, max, tok) in [
        ("llama-3.1-70b", 64, None, 4_000_000u64),
        ("llama-3.1-70b", 16, Some(256), 4_000_000),
        ("llama-3.1-405b", 512, None, 16_000_000),
        ("llama-3.1-405b", 128, Some(1024), 16_000_000),
        ("deepseek-v3", 256, Some(1024), 16_000_000),
    ] {
        let req = PlanRequest {
            config: Config::from_json_str(&format!(r#"{{"model": {{"preset": "{model}"}}, "training": {{"seq_len": 8192}}, "hardware": {{"gpu": "h100-80gb"}}}}"#)).unwrap(),
            num_gpus: Some(n), max_gpus: max, global_batch_tokens: Some(tok), ..Default::default()
        };
        let t = std::time::Instant::now();
        let r = plan(&req).unwrap();
        eprintln!(
            "{model} {n}..{max:?}: {:?} candidates {} estimates {} pruned {} invalid {} plans {}",
            t.elapsed(),
            r.candidates,
            r.estimates,
            r.pruned,
            r.invalid,
            r.plans.len()
        );
    }
}
