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
//! (state bytes by optimizer), `activations` (saved tensors per layer), `estimate`
//! (sharding by engine, phases, overheads), `model` (parameter inventory), `hf`
//! (config.json parser).

pub mod accuracy;
pub mod activations;
pub mod config;
pub mod error;
pub mod estimate;
pub mod export;
pub mod hf;
pub mod inference;
pub mod limits;
pub mod lora;
pub mod model;
pub mod optimizer;
pub mod precision;
pub mod presets;
pub mod resolve;
pub mod seed;
pub mod solve;
pub mod units;

pub use config::{Config, SCHEMA_VERSION};
pub use error::FieldError;
pub use estimate::{Estimate, estimate};
pub use hf::{parse_hf_config, parse_hf_config_str};
pub use model::{ModelArch, ParamCounts};

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
