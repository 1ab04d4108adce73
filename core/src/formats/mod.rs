//! Other tools' files: import a DeepSpeed `ds_config.json`, HF `TrainingArguments` JSON,
//! accelerate config YAML, torchtune recipe YAML, Axolotl YAML, torchtitan TOML, Megatron-LM
//! arguments, a `vllm serve` or SGLang `launch_server` command line into a [`Config`], and
//! export a config in each of those formats.
//!
//! An import starts from a base config (the plan on screen, or the CLI's `--model`), replaces
//! what the file says and reports, key by key, what was read into which of our keys
//! ([`Mapping`]), what was ignored and why ([`Ignored`]), and which of our keys the format has
//! no place for and so come from the base ([`Imported::from_base`]). A key of the other tool
//! that we do not know is never fatal; a value we cannot represent is a [`FieldError`] at the
//! file's key. `import(export(plan), base)` gives a config whose estimate equals the plan's to
//! the byte, for every engine the format can express (`core/tests/formats.rs`).
//!
//! Parsers are libraries: `serde_json`, `serde-saphyr` (YAML), `toml`, `shell-words` (command
//! lines). Pure: no I/O; the CLI and the web read the file.

//!
//! Without the cargo feature `formats` (the web app's first load) only the types are here:
//! [`Format`] and its facts, and the report types, which the web app shows after the import
//! ran in its worker (the npm package's `importConfig`).

use crate::Config;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(feature = "formats")]
mod accelerate;
#[cfg(feature = "formats")]
mod args;
#[cfg(feature = "formats")]
mod axolotl;
#[cfg(feature = "formats")]
mod convert;
#[cfg(feature = "formats")]
mod deepspeed;
#[cfg(feature = "formats")]
mod hf_trainer;
#[cfg(feature = "formats")]
mod megatron;
#[cfg(feature = "formats")]
mod serve;
#[cfg(feature = "formats")]
mod torchtitan;
#[cfg(feature = "formats")]
mod torchtune;

#[cfg(feature = "formats")]
use convert::{
    Import, Input, as_bool, as_count, as_f64, cannot, hf_id_of, is_auto, precision_id,
    saturating_product, text,
};
#[cfg(feature = "formats")]
pub use convert::{base_for, export, import, recognise};

/// A tool whose files import and export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// DeepSpeed `ds_config.json`.
    Deepspeed,
    /// Hugging Face `TrainingArguments` as JSON (`TrainingArguments.to_json_string()`, the
    /// args a `trainer_state` dump or a `--config` JSON holds).
    HfTrainer,
    /// accelerate config YAML (`accelerate config`, `default_config.yaml`).
    Accelerate,
    /// torchtune recipe YAML.
    Torchtune,
    /// Axolotl YAML.
    Axolotl,
    /// torchtitan TOML job config.
    Torchtitan,
    /// Megatron-LM `pretrain_gpt.py` arguments: a command line or a YAML of the arguments.
    Megatron,
    /// A `vllm serve` command line.
    Vllm,
    /// An SGLang `python -m sglang.launch_server` command line.
    Sglang,
}

impl Format {
    /// Every format, in the order of the README.
    pub const ALL: [Format; 9] = [
        Format::Deepspeed,
        Format::HfTrainer,
        Format::Accelerate,
        Format::Torchtune,
        Format::Axolotl,
        Format::Torchtitan,
        Format::Megatron,
        Format::Vllm,
        Format::Sglang,
    ];
    /// The id used by the CLI (`--format`) and in JSON (`deepspeed`, `hf_trainer`, ...).
    pub fn id(self) -> &'static str {
        match self {
            Format::Deepspeed => "deepspeed",
            Format::HfTrainer => "hf_trainer",
            Format::Accelerate => "accelerate",
            Format::Torchtune => "torchtune",
            Format::Axolotl => "axolotl",
            Format::Torchtitan => "torchtitan",
            Format::Megatron => "megatron",
            Format::Vllm => "vllm",
            Format::Sglang => "sglang",
        }
    }
    /// The format with this id.
    pub fn from_id(id: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.id() == id)
    }
    /// What the file is, for display ("DeepSpeed ds_config.json").
    pub fn name(self) -> &'static str {
        match self {
            Format::Deepspeed => "DeepSpeed ds_config.json",
            Format::HfTrainer => {
                "Hugging Face TrainingArguments (JSON or a Trainer script's flags)"
            }
            Format::Accelerate => "accelerate config (YAML)",
            Format::Torchtune => "torchtune recipe config (YAML)",
            Format::Axolotl => "Axolotl config (YAML)",
            Format::Torchtitan => "torchtitan job config (TOML)",
            Format::Megatron => "Megatron-LM arguments",
            Format::Vllm => "vllm serve command line",
            Format::Sglang => "SGLang launch_server command line",
        }
    }
    /// A file name for the export (`ds_config.json`, `accelerate_config.yaml`, ...).
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Deepspeed => "ds_config.json",
            Format::HfTrainer => "training_args.json",
            Format::Accelerate => "accelerate_config.yaml",
            Format::Torchtune => "torchtune_config.yaml",
            Format::Axolotl => "axolotl.yaml",
            Format::Torchtitan => "torchtitan.toml",
            Format::Megatron => "megatron_args.sh",
            Format::Vllm => "vllm_serve.sh",
            Format::Sglang => "sglang_launch.sh",
        }
    }
    /// Whether the format configures serving (vLLM, SGLang) rather than training: an
    /// export needs the config's mode to match ([`export`]).
    pub fn serving(self) -> bool {
        matches!(self, Format::Vllm | Format::Sglang)
    }
    /// Whether an export in this format is offered for a document of context `ctx`: the
    /// serving formats for inference, the training formats for training and fine-tuning,
    /// a ds_config.json only under the engines that run DeepSpeed ZeRO
    /// ([`crate::fields::Context::exports_ds_config`]). [`export`] still refuses a config the format cannot
    /// express, naming the key.
    pub fn applies(self, ctx: &crate::fields::Context) -> bool {
        match self {
            Format::Deepspeed => ctx.exports_ds_config(),
            f if f.serving() => ctx.task == crate::fields::Task::Inference,
            _ => ctx.task != crate::fields::Task::Inference,
        }
    }
    /// What the UIs list for this format ([`FormatInfo`]).
    pub fn info(self) -> FormatInfo {
        FormatInfo {
            format: self,
            name: self.name().to_string(),
            file_name: self.file_name().to_string(),
            serving: self.serving(),
        }
    }
    /// Our keys the format has no place for: an import takes them from the base config
    /// (the plan on screen, `--model`), an export leaves them out.
    #[cfg(feature = "formats")]
    pub fn from_base(self) -> &'static [&'static str] {
        match self {
            Format::Deepspeed => deepspeed::FROM_BASE,
            Format::HfTrainer => hf_trainer::FROM_BASE,
            Format::Accelerate => accelerate::FROM_BASE,
            Format::Torchtune => torchtune::FROM_BASE,
            Format::Axolotl => axolotl::FROM_BASE,
            Format::Torchtitan => torchtitan::FROM_BASE,
            Format::Megatron => megatron::FROM_BASE,
            Format::Vllm => serve::VLLM_FROM_BASE,
            Format::Sglang => serve::SGLANG_FROM_BASE,
        }
    }
}

/// Whether a JSON document is a gpu-mem-calc config rather than another tool's file: it has
/// `schema_version`, or `model` with `training` or `engine`. Such a document is loaded as it
/// is ([`Config::from_value`]); [`import`] refuses it.
pub fn is_own_config(doc: &Value) -> bool {
    let has = |k: &str| doc.get(k).is_some();
    has("schema_version") || (has("model") && (has("training") || has("engine")))
}

/// A format as the UIs list it: its id, display name, export file name and whether it
/// configures serving.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FormatInfo {
    /// The format's id (`deepspeed`, `vllm`, ...), as `--format` takes it.
    pub format: Format,
    /// [`Format::name`].
    pub name: String,
    /// [`Format::file_name`].
    pub file_name: String,
    /// [`Format::serving`]: exports need `mode` inference; the others need training.
    pub serving: bool,
}

/// One setting of the file read into one of our keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Mapping {
    /// The key as the file writes it (`zero_optimization.stage`, `--tensor-parallel-size`).
    pub from: String,
    /// The value as the file writes it (JSON text; `"auto"` where the file says auto).
    pub value: String,
    /// Our key (`engine.zero_stage`), dot-separated.
    pub to: String,
    /// The value set there (JSON).
    pub set: Value,
}

/// A setting of the file that the estimate does not read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Ignored {
    /// The key as the file writes it.
    pub key: String,
    /// Why it was not read.
    pub reason: String,
}

/// The result of an import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Imported {
    /// The tool whose file was recognised.
    pub format: Format,
    /// [`Format::name`] of `format`.
    pub format_name: String,
    /// The config: the base with what the file says.
    pub config: Config,
    /// What was read, in file order.
    pub read: Vec<Mapping>,
    /// What was not, in file order.
    pub ignored: Vec<Ignored>,
    /// Our keys taken from the base ([`Format::from_base`]).
    pub from_base: Vec<String>,
}
