//! The JavaScript API of gpu-mem-calc: `calc_core` behind wasm-bindgen, for other sites and
//! for Node. Plain JS objects in and out, in the same JSON schema as the CLI and the web
//! app's exports (TypeScript definitions in the package's `types.d.ts`, generated from the
//! Rust types). All sizes are bytes. Invalid input throws an `Error` whose `fieldErrors`
//! property lists `{field, value, message}`; a bug inside reports its panic message through
//! the panic hook instead of failing silently.
//!
//! Every function is a thin shell over a `calc_core` function; nothing is computed here.

use calc_core::export::{GpuFit, gpu_fits as core_gpu_fits};
use calc_core::solve::{Target, solve as core_solve};
use calc_core::{Config, FieldError};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_IMPORTS: &'static str = r#"
import type { Config, Estimate, FieldError, ModelArch, ModelSpec, ParamCounts, Presets, Solution, Target, GpuFit, PlanRequest, PlanResult, Format, FormatInfo, Imported, ImportOptions } from "../types";
"#;

#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}

/// A thrown `Error` with the field errors attached as `fieldErrors`.
fn field_error(errors: Vec<FieldError>) -> JsValue {
    let msg = errors
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ");
    let err = js_sys::Error::new(&msg);
    let _ = js_sys::Reflect::set(
        &err,
        &JsValue::from_str("fieldErrors"),
        &to_js(&errors).unwrap_or(JsValue::NULL),
    );
    err.into()
}

/// A plain JS value (objects, not Maps) from a Rust value.
fn to_js<T: Serialize>(v: &T) -> Result<JsValue, JsValue> {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_sys::Error::new(&e.to_string()).into())
}

/// The JSON value of a JS value (through `JSON.stringify`, so numbers keep their integer
/// form). Errors: a value JSON cannot represent.
fn from_js(v: &JsValue, what: &str) -> Result<Value, JsValue> {
    let text = if let Some(s) = v.as_string() {
        s
    } else {
        js_sys::JSON::stringify(v)
            .ok()
            .and_then(|s| s.as_string())
            .ok_or_else(|| field_error(vec![FieldError::new(what, "(value)", "not JSON")]))?
    };
    serde_json::from_str(&text).map_err(|e| {
        field_error(vec![FieldError::new(
            what,
            "(text)",
            format!("invalid JSON: {e}"),
        )])
    })
}

fn config(v: &JsValue) -> Result<Config, JsValue> {
    Config::from_value(from_js(v, "config")?).map_err(field_error)
}

/// The schema version of the configs this package reads and writes (`schema_version`).
#[wasm_bindgen(js_name = schemaVersion)]
pub fn schema_version() -> u32 {
    calc_core::SCHEMA_VERSION
}

/// The package version (the crate's version).
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The estimate of a config (an object or JSON text): bytes per component and phase for
/// the most loaded GPU. Throws an `Error` with `fieldErrors` on invalid input.
#[wasm_bindgen(unchecked_return_type = "Estimate")]
pub fn estimate(
    #[wasm_bindgen(unchecked_param_type = "Config | string")] config_in: JsValue,
) -> Result<JsValue, JsValue> {
    let c = config(&config_in)?;
    to_js(&calc_core::estimate(&c).map_err(field_error)?)
}

/// The field errors of a config (empty when it is valid). Throws only when the input is not
/// JSON at all.
#[wasm_bindgen(unchecked_return_type = "FieldError[]")]
pub fn validate(
    #[wasm_bindgen(unchecked_param_type = "Config | string")] config_in: JsValue,
) -> Result<JsValue, JsValue> {
    let v = from_js(&config_in, "config")?;
    let errors = match Config::from_value(v) {
        Ok(c) => calc_core::estimate(&c).err().unwrap_or_default(),
        Err(e) => e,
    };
    to_js(&errors)
}

/// The architecture of a Hugging Face `config.json` (object or text). Throws an `Error`
/// with `fieldErrors` for an unsupported family or invalid values.
#[wasm_bindgen(js_name = parseHfConfig, unchecked_return_type = "ModelArch")]
pub fn parse_hf_config(
    #[wasm_bindgen(unchecked_param_type = "object | string")] json: JsValue,
) -> Result<JsValue, JsValue> {
    let v = from_js(&json, "hf_config")?;
    to_js(&calc_core::parse_hf_config(&v).map_err(field_error)?)
}

/// Exact parameter counts of a config's `model` section (`{preset}`, `{hf_config}` or HF
/// key names).
#[wasm_bindgen(js_name = paramCount, unchecked_return_type = "ParamCounts")]
pub fn param_count(
    #[wasm_bindgen(unchecked_param_type = "ModelSpec")] model: JsValue,
) -> Result<JsValue, JsValue> {
    let v = from_js(&model, "model")?;
    let spec: calc_core::config::ModelSpec = serde_json::from_value(v).map_err(|e| {
        field_error(vec![FieldError::new(
            "model",
            "(value)",
            format!("expected an object: {e}"),
        )])
    })?;
    to_js(&calc_core::param_counts(&spec).map_err(field_error)?)
}

/// The presets: models (with their provenance), GPUs, and the example configs.
#[wasm_bindgen(unchecked_return_type = "Presets")]
pub fn presets() -> Result<JsValue, JsValue> {
    to_js(&api_presets())
}

/// What `presets()` returns.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Presets {
    pub models: Vec<calc_core::presets::ModelPreset>,
    pub gpus: Vec<calc_core::presets::GpuPreset>,
    /// Example configs: file name and the config (the seed format is migrated on use).
    pub examples: Vec<Example>,
}

/// One example config.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Example {
    pub name: String,
    pub config: Value,
}

/// The presets as `presets()` returns them.
pub fn api_presets() -> Presets {
    Presets {
        models: calc_core::presets::model_presets().to_vec(),
        gpus: calc_core::presets::gpu_presets().to_vec(),
        examples: calc_core::presets::example_configs()
            .iter()
            .map(|(name, text)| Example {
                name: name.to_string(),
                config: serde_json::from_str(text).unwrap_or(Value::Null),
            })
            .collect(),
    }
}

/// Solves an inverse question: `"max_micro_batch"`, `"max_sequence"`, `"min_gpus"` or
/// `"max_concurrency"`; each a search over `estimate`, exact to one step.
#[wasm_bindgen(unchecked_return_type = "Solution")]
pub fn solve(
    #[wasm_bindgen(unchecked_param_type = "Config | string")] config_in: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Target")] target: JsValue,
) -> Result<JsValue, JsValue> {
    let c = config(&config_in)?;
    let name = target.as_string().map(Value::String).unwrap_or(Value::Null);
    let t: Target = serde_json::from_value(name).map_err(|_| {
        field_error(vec![FieldError::new(
            "target",
            format!("{target:?}"),
            "expected max_micro_batch, max_sequence, min_gpus or max_concurrency",
        )])
    })?;
    to_js(&core_solve(&c, t).map_err(field_error)?)
}

/// Which layout to run: every valid tensor x pipeline x context x expert x data parallel
/// layout, engine, recomputation and micro-batch for the request's model, GPU, GPU count and
/// global batch, the fastest that fit first (`calc_core::plan::plan`).
#[wasm_bindgen(unchecked_return_type = "PlanResult")]
pub fn plan(
    #[wasm_bindgen(unchecked_param_type = "PlanRequest | string")] request: JsValue,
) -> Result<JsValue, JsValue> {
    let req: calc_core::plan::PlanRequest =
        serde_json::from_value(from_js(&request, "request")?)
            .map_err(|e| field_error(vec![FieldError::new("request", "(value)", e.to_string())]))?;
    to_js(&calc_core::plan::plan(&req).map_err(field_error)?)
}

/// `solve` for a fixed target.
fn solve_for(config_in: &JsValue, target: Target) -> Result<JsValue, JsValue> {
    to_js(&core_solve(&config(config_in)?, target).map_err(field_error)?)
}

/// The largest micro-batch that fits (training).
#[wasm_bindgen(js_name = maxMicroBatch, unchecked_return_type = "Solution")]
pub fn max_micro_batch(
    #[wasm_bindgen(unchecked_param_type = "Config | string")] config_in: JsValue,
) -> Result<JsValue, JsValue> {
    solve_for(&config_in, Target::MaxMicroBatch)
}

/// The longest sequence (training) or context (inference) that fits.
#[wasm_bindgen(js_name = maxSequence, unchecked_return_type = "Solution")]
pub fn max_sequence(
    #[wasm_bindgen(unchecked_param_type = "Config | string")] config_in: JsValue,
) -> Result<JsValue, JsValue> {
    solve_for(&config_in, Target::MaxSequence)
}

/// The fewest GPUs that fit.
#[wasm_bindgen(js_name = minGpus, unchecked_return_type = "Solution")]
pub fn min_gpus(
    #[wasm_bindgen(unchecked_param_type = "Config | string")] config_in: JsValue,
) -> Result<JsValue, JsValue> {
    solve_for(&config_in, Target::MinGpus)
}

/// The most concurrent sequences (inference).
#[wasm_bindgen(js_name = maxConcurrency, unchecked_return_type = "Solution")]
pub fn max_concurrency(
    #[wasm_bindgen(unchecked_param_type = "Config | string")] config_in: JsValue,
) -> Result<JsValue, JsValue> {
    solve_for(&config_in, Target::MaxConcurrency)
}

/// The config estimated on every GPU preset: which GPUs it fits on.
#[wasm_bindgen(js_name = gpuFits, unchecked_return_type = "GpuFit[]")]
pub fn gpu_fits(
    #[wasm_bindgen(unchecked_param_type = "Config | string")] config_in: JsValue,
) -> Result<JsValue, JsValue> {
    let fits: Vec<GpuFit> = core_gpu_fits(&config(&config_in)?).map_err(field_error)?;
    to_js(&fits)
}

/// The formats `importConfig` reads and `exportConfig` writes (DeepSpeed, HF
/// TrainingArguments, accelerate, torchtune, Axolotl, torchtitan, Megatron-LM, vLLM, SGLang).
#[wasm_bindgen(unchecked_return_type = "FormatInfo[]")]
pub fn formats() -> Result<JsValue, JsValue> {
    let all: Vec<calc_core::formats::FormatInfo> = calc_core::formats::Format::ALL
        .into_iter()
        .map(calc_core::formats::Format::info)
        .collect();
    to_js(&all)
}

#[wasm_bindgen]
extern "C" {
    /// `importConfig`'s optional second argument, typed as [`ImportOptions`] in TypeScript.
    #[wasm_bindgen(typescript_type = "ImportOptions")]
    pub type ImportOptionsArg;
}

/// What `importConfig` takes besides the file.
#[derive(serde::Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ImportOptions {
    /// The config the file's settings are applied to (the keys the format has no place for
    /// come from it); the default config when absent.
    #[serde(default)]
    pub base: Option<Value>,
    /// The model, whatever the file names (`{preset}` or `{hf_config}`).
    #[serde(default)]
    pub model: Option<calc_core::config::ModelSpec>,
}

/// Imports another tool's file (its text: JSON, YAML, TOML or a command line), recognised
/// automatically: our config with, key by key, what was read into which of our keys, what
/// was ignored and why, and which keys came from `options.base`
/// (`calc_core::formats::import`). Throws an `Error` with `fieldErrors` (field `file` when no
/// format is recognised; the file's key for a value we cannot represent).
#[wasm_bindgen(js_name = importConfig, unchecked_return_type = "Imported")]
pub fn import_config(text: &str, options: Option<ImportOptionsArg>) -> Result<JsValue, JsValue> {
    let options = options.map(JsValue::from);
    let opts: ImportOptions = match options.filter(|o| !o.is_null() && !o.is_undefined()) {
        None => ImportOptions::default(),
        Some(o) => serde_json::from_value(from_js(&o, "options")?)
            .map_err(|e| field_error(vec![FieldError::new("options", "(value)", e.to_string())]))?,
    };
    let base = match opts.base {
        Some(v) => Config::from_value(v).map_err(field_error)?,
        None => Config::default(),
    };
    let im = calc_core::formats::import(text, &base, opts.model.as_ref()).map_err(field_error)?;
    to_js(&im)
}

/// The config (an object or JSON text) as another tool's file (`format`: an id of
/// `formats()`), such that `importConfig` of it reproduces the estimate
/// (`calc_core::formats::export`). Throws an `Error` with `fieldErrors` when the format
/// cannot express the config (the key is named).
#[wasm_bindgen(js_name = exportConfig)]
pub fn export_config(
    #[wasm_bindgen(unchecked_param_type = "Config | string")] config_in: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Format")] format: &str,
) -> Result<String, JsValue> {
    let c = config(&config_in)?;
    let f = calc_core::formats::Format::from_id(format).ok_or_else(|| {
        field_error(vec![FieldError::new(
            "format",
            format,
            format!(
                "unknown; one of {}",
                calc_core::formats::Format::ALL
                    .map(calc_core::formats::Format::id)
                    .join(", ")
            ),
        )])
    })?;
    calc_core::formats::export(&c, f).map_err(field_error)
}
