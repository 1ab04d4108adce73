//! # calc-core
//!
//! GPU memory model for training, fine-tuning and serving large language models. Pure
//! functions: a [`Config`] in, an [`Estimate`] (bytes per component, per phase, for the most
//! loaded GPU) out. No I/O, no browser or file-system types; compiles to
//! `wasm32-unknown-unknown` and native. Bad input never panics: it yields [`FieldError`]s
//! naming the field, the value and what is allowed.
//!
//! ```
//! let cfg = calc_core::Config::from_json_str(r#"{
//!     "model": {"preset": "llama-2-7b"},
//!     "training": {"micro_batch_size": 1, "seq_len": 4096, "activation_checkpointing": "full"},
//!     "parallelism": {"data_parallel_size": 8},
//!     "engine": {"type": "deepspeed", "zero_stage": 3},
//!     "hardware": {"gpu": "a100-80gb"}
//! }"#).unwrap();
//! let est = calc_core::estimate(&cfg).unwrap();
//! assert!(est.fits);
//! ```
//!
//! Where each formula lives: `precision` (bytes per parameter by regime), `optimizer`
//! (state bytes by optimizer), `engines` (sharding, gathering and buffers by engine),
//! `activations` (saved tensors per layer), `loss`, `training` (the phases of a step),
//! `weights` (storage formats), `inference` (KV cache, prefill), `serving` (vLLM),
//! `report` (overheads and the [`Estimate`]), `model` (parameter inventory), `hf`
//! (config.json parser). Every number is a [`term::Term`]: its bytes, its formula with the
//! numbers substituted, and its source, from one expression.
// memory safety without a sanitizer: the fuzz targets also run without AddressSanitizer
#![forbid(unsafe_code)]

pub mod accuracy;
pub mod activations;
pub mod arch;
pub mod config;
pub mod engines;
pub mod error;
pub mod export;
pub mod families;
pub mod fields;
pub mod formats;
pub mod hf;
pub mod inference;
pub mod limits;
pub mod load;
pub mod lora;
pub mod loss;
pub mod model;
pub mod optimizer;
pub(crate) mod placement;
pub mod plan;
pub mod precision;
pub mod presets;
pub mod problem;
pub(crate) mod reader;
pub mod report;
pub mod resolve;
pub mod seed;
pub mod serving;
pub mod sglang;
pub(crate) mod shapes;
pub mod solve;
pub mod steptime;
pub mod term;
pub mod training;
pub mod units;
pub mod weights;

pub use config::{Config, Mode, SCHEMA_VERSION};
pub use error::FieldError;
pub use hf::{parse_hf_config, parse_hf_config_noting_defaults, parse_hf_config_str};
pub use model::{ModelArch, ParamCounts};
pub use problem::Resolved;
pub use report::{
    COMPONENTS, ComponentDetail, Estimate, OVERHEADS, Peak, PhaseEstimate, PhaseName,
    ServingEstimate, StageEstimate,
};

/// Estimates memory per GPU for a config: training (full, or LoRA fine-tuning) or inference
/// (transformers `generate`, vLLM serving).
///
/// Errors: every invalid field, as [`FieldError`]s (see [`resolve::resolve`]).
pub fn estimate(config: &Config) -> Result<Estimate, Vec<FieldError>> {
    let r = resolve::resolve(config)?;
    Ok(report_of(&r))
}

/// The full report of a resolved problem: what [`estimate`] returns after resolving.
pub(crate) fn report_of(r: &Resolved) -> Estimate {
    assembly::<term::Expr>(r).report()
}

/// The estimator of the resolved problem's mode and runtime, up to its report, computed
/// with the number type `N` ([`term::Num`]: the report's expressions or the numeric path's
/// values).
fn assembly<N: engines::EngineNum>(r: &Resolved) -> report::Assembly<'_, N> {
    match r.config.effective_mode() {
        Mode::Training => training::estimate_training(r),
        Mode::Inference => match r
            .config
            .inference
            .as_ref()
            .map(|i| i.engine)
            .unwrap_or_default()
        {
            config::InferenceEngine::Hf => inference::estimate_generate(r),
            config::InferenceEngine::Vllm => serving::estimate_vllm(r),
            config::InferenceEngine::Sglang => sglang::estimate_sglang(r),
        },
    }
}

/// The numbers of [`estimate`] for a resolved problem, without its report: the same
/// estimator computed with plain values ([`term::Value`], which builds no formula and
/// formats no text), then only the peak, overheads and fit of the most loaded GPU. Equal to the
/// same fields of `estimate` to the byte (`core/tests/numeric.rs`); the plan search's
/// per-candidate path. Resolve once with [`resolve::resolve`] and vary nothing else.
pub fn estimate_peak(r: &Resolved) -> Peak {
    assembly::<term::Value>(r).peak()
}

/// Parses and validates a config document without estimating.
/// Errors: every field error (see [`resolve::resolve`]).
pub fn validate(config: &Config) -> Result<(), Vec<FieldError>> {
    resolve::resolve(config).map(|_| ())
}

/// Exact parameter counts of a model section (`{"preset": ...}`, `{"hf_config": ...}` or
/// HF-named fields). Errors: as for the `model` section of a config.
pub fn param_counts(model: &config::ModelSpec) -> Result<ParamCounts, Vec<FieldError>> {
    let mut w = Vec::new();
    resolve::resolve_model(&model.0, &mut w).map(|a| a.param_counts())
}
