//! The conversions: a file's text flattened ([`Input`]), read key by key ([`Import`]) by each
//! format's reader, and the exports with their verifying re-import.

use super::{
    Format, Ignored, Imported, Mapping, accelerate, args, axolotl, deepspeed, hf_trainer, megatron,
    serve, torchtitan, torchtune,
};
use crate::Config;
use crate::config::ModelSpec;
use crate::error::FieldError;
use indexmap::IndexMap;
use serde_json::{Map, Value, json};

/// The file's settings flattened: dotted keys (`zero_optimization.stage`) or flags
/// (`--tensor-parallel-size`) to values, in file order; command lines keep their
/// positional words.
#[derive(Debug, Default)]
pub(super) struct Input {
    pub keys: IndexMap<String, Value>,
    pub positional: Vec<String>,
}

impl Input {
    /// A parsed document, flattened: objects recurse, everything else is a leaf.
    fn tree(v: &Value) -> Input {
        fn walk(prefix: &str, v: &Value, out: &mut IndexMap<String, Value>) {
            match v {
                Value::Object(m) if !m.is_empty() => {
                    for (k, x) in m {
                        let key = if prefix.is_empty() {
                            k.clone()
                        } else {
                            format!("{prefix}.{k}")
                        };
                        walk(&key, x, out);
                    }
                }
                _ => {
                    out.insert(prefix.to_string(), v.clone());
                }
            }
        }
        let mut keys = IndexMap::new();
        walk("", v, &mut keys);
        Input {
            keys,
            positional: Vec::new(),
        }
    }
}

/// A format's reason for a key of its file that the import does not read.
pub(super) type Reason = fn(&str) -> String;

/// An import in progress: the base document, the file's remaining keys, and the record.
pub(super) struct Import {
    pub input: Input,
    /// Our config document being built (JSON).
    pub doc: Value,
    read: Vec<Mapping>,
    ignored: Vec<Ignored>,
    errors: Vec<FieldError>,
    /// A reading that needs the model's decoder-layer count (torchtitan's pipeline split),
    /// run once the model is final (the file's, or the caller's `--model`).
    with_layers: Option<LayersStep>,
}

/// See [`Import::with_layers`].
type LayersStep = Box<dyn FnOnce(&mut Import, u64)>;

/// Sets `path` (dot-separated) in `doc`, creating objects on the way.
pub(super) fn set_path(doc: &mut Value, path: &str, v: Value) {
    let mut cur = doc;
    let mut parts = path.split('.').peekable();
    while let Some(p) = parts.next() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(m) = cur else { return };
        if parts.peek().is_none() {
            m.insert(p.to_string(), v);
            return;
        }
        cur = m.entry(p.to_string()).or_insert_with(|| json!({}));
    }
}

/// The value at `path` (dot-separated) in `doc`.
pub(super) fn get_path<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, p| v.get(p))
}

/// The text of a value as a file writes it (strings unquoted).
/// `true` when the dotted `path` is `key` or lies under it (`model.hidden_size` under `model`).
fn at_or_under(path: &str, key: &str) -> bool {
    path.strip_prefix(key)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The product of parallel sizes read from a file, saturating: a file's numbers may be
/// anything (fuzz target `formats_import`).
pub(super) fn saturating_product(sizes: impl IntoIterator<Item = u64>) -> u64 {
    sizes.into_iter().fold(1, u64::saturating_mul)
}

pub(super) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

impl Import {
    fn new(input: Input, base: &Config) -> Import {
        Import {
            input,
            doc: serde_json::to_value(base).unwrap_or_else(|_| json!({})),
            read: Vec::new(),
            ignored: Vec::new(),
            errors: Vec::new(),
            with_layers: None,
        }
    }
    /// Reads part of the file once the model's `num_hidden_layers` is known (after the
    /// caller's model replaces the file's). Not run when the model does not resolve: its
    /// own errors are reported then.
    pub fn with_layers(&mut self, step: impl FnOnce(&mut Import, u64) + 'static) {
        self.with_layers = Some(Box::new(step));
    }
    /// Removes and returns the file's `key`.
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.input.keys.shift_remove(key)
    }
    /// The first of `keys` the file has (aliases of one setting), removed with the others.
    pub fn take_any(&mut self, keys: &[&str]) -> Option<(String, Value)> {
        let mut found = None;
        for k in keys {
            if let Some(v) = self.take(k)
                && found.is_none()
            {
                found = Some((k.to_string(), v));
            }
        }
        found
    }
    /// `true` when the file has `key` (not removed).
    pub fn has(&self, key: &str) -> bool {
        self.input.keys.contains_key(key)
    }
    /// Sets our `to` to `set`, read from the file's `from` written as `value`.
    pub fn put(&mut self, from: &str, value: &Value, to: &str, set: Value) {
        set_path(&mut self.doc, to, set.clone());
        self.read.push(Mapping {
            from: from.to_string(),
            value: text(value),
            to: to.to_string(),
            set,
        });
    }
    /// Replaces a whole section of ours (`engine`) without recording a mapping: what the
    /// file sets in it follows.
    pub fn reset(&mut self, to: &str, v: Value) {
        set_path(&mut self.doc, to, v);
    }
    /// Records that the file's `key` was not read, and why.
    pub fn ignore(&mut self, key: &str, reason: impl Into<String>) {
        self.ignored.push(Ignored {
            key: key.to_string(),
            reason: reason.into(),
        });
    }
    /// A value we cannot represent: fatal, at the file's key.
    pub fn fail(&mut self, key: &str, value: &Value, message: impl Into<String>) {
        self.errors
            .push(FieldError::new(key, crate::error::short(value), message));
    }
    /// Our value at `path` in the document built so far.
    pub fn ours(&self, path: &str) -> Option<&Value> {
        get_path(&self.doc, path)
    }
    /// Our whole number at `path` (1 when absent).
    pub fn ours_count(&self, path: &str) -> u64 {
        self.ours(path).and_then(Value::as_u64).unwrap_or(1)
    }

    /// The file's `key` as a whole number, read into `to`; `"auto"` (when `auto` allows it)
    /// keeps the base's value and says so.
    pub fn count(&mut self, key: &str, to: &str) -> Option<u64> {
        let v = self.take(key)?;
        self.count_value(key, &v, to)
    }
    /// As [`Import::count`], for a value already taken.
    pub fn count_value(&mut self, key: &str, v: &Value, to: &str) -> Option<u64> {
        if is_auto(v) {
            let kept = self.ours(to).cloned().unwrap_or(Value::Null);
            self.put(key, v, to, kept.clone());
            return kept.as_u64();
        }
        let n = self.parsed(key, v, as_count, "must be a whole number")?;
        self.put(key, v, to, json!(n));
        Some(n)
    }
    /// `v` (the file's `key`) as `parse` reads it; a value it cannot read is a field error
    /// at `key` with `message`.
    fn parsed<T>(
        &mut self,
        key: &str,
        v: &Value,
        parse: fn(&Value) -> Option<T>,
        message: &str,
    ) -> Option<T> {
        let r = parse(v);
        if r.is_none() {
            self.fail(key, v, message);
        }
        r
    }
    /// The file's `key` as a boolean (`true`/`false`, YAML's yes/no, `"true"`).
    pub fn flag(&mut self, key: &str) -> Option<bool> {
        let v = self.take(key)?;
        self.parsed(key, &v, as_bool, "must be true or false")
    }
    /// The file's `key` as a boolean, read into `to`.
    pub fn flag_into(&mut self, key: &str, to: &str) -> Option<bool> {
        let v = self.take(key)?;
        let b = self.parsed(key, &v, as_bool, "must be true or false")?;
        self.put(key, &v, to, json!(b));
        Some(b)
    }
    /// The file's `key` as a float, read into `to`.
    pub fn float_into(&mut self, key: &str, to: &str) -> Option<f64> {
        let v = self.take(key)?;
        let x = self.parsed(key, &v, as_f64, "must be a number")?;
        self.put(key, &v, to, json!(x));
        Some(x)
    }

    /// A parallel size: the file's `key` read into `to` (a whole number), else 1 set there.
    pub fn degree(&mut self, key: &str, to: &str) -> u64 {
        self.degree_any(&[key], to)
    }
    /// [`Import::degree`] from the first of `keys` the file has (aliases of one setting:
    /// its current key, then its earlier places), the others removed.
    pub fn degree_any(&mut self, keys: &[&str], to: &str) -> u64 {
        match self.take_any(keys) {
            Some((key, v)) => self.count_value(&key, &v, to).unwrap_or(1),
            None => {
                self.reset(to, json!(1));
                1
            }
        }
    }
    /// A recomputation switch (`gradient_checkpointing: true`): the file's `key` read into
    /// `training.activation_checkpointing` as `full` or `none`.
    pub fn recompute_flag(&mut self, key: &str) {
        let Some(v) = self.take(key) else { return };
        match as_bool(&v) {
            Some(b) => self.put(
                key,
                &v,
                "training.activation_checkpointing",
                json!(if b { "full" } else { "none" }),
            ),
            None => self.fail(key, &v, "must be true or false"),
        }
    }
    /// An offload device (`cpu`, `nvme`, `none`; DeepSpeed's and accelerate's spelling) read
    /// into `to`; an empty value is `none` when `empty_is_none` (accelerate's reader), an
    /// error otherwise (DeepSpeed's).
    pub fn offload_into(&mut self, key: &str, to: &str, empty_is_none: bool) {
        let Some(v) = self.take(key) else { return };
        match text(&v).to_ascii_lowercase().as_str() {
            d @ ("cpu" | "nvme" | "none") => self.put(key, &v, to, json!(d)),
            "" if empty_is_none => self.put(key, &v, to, json!("none")),
            _ => self.fail(key, &v, "must be cpu, nvme or none"),
        }
    }
    /// A ZeRO stage (0 to 3) read into `engine.zero_stage`.
    pub fn zero_stage(&mut self, key: &str) {
        let Some(v) = self.take(key) else { return };
        match as_count(&v) {
            Some(s) if s <= 3 => self.put(key, &v, "engine.zero_stage", json!(s)),
            _ => self.fail(key, &v, "must be 0, 1, 2 or 3"),
        }
    }
    /// The FSDP version (1 or 2) of the first of `keys` the file has, read into
    /// `engine.fsdp_version`.
    pub fn fsdp_version(&mut self, keys: &[&str]) -> Option<u64> {
        let (k, v) = self.take_any(keys)?;
        match as_count(&v) {
            Some(n @ (1 | 2)) => {
                self.put(&k, &v, "engine.fsdp_version", json!(n));
                Some(n)
            }
            _ => {
                self.fail(&k, &v, "must be 1 or 2");
                None
            }
        }
    }
    /// HF-style `bf16` / `fp16` flags read into `training.precision`: `on` is the precision
    /// each selects (`auto` counts as on when `auto_on`); with neither on, `fp32` when
    /// either flag is written or `absent_is_fp32`.
    pub fn half_flags(&mut self, on: [&str; 2], auto_on: bool, absent_is_fp32: bool) {
        let flags = [self.take("bf16"), self.take("fp16")];
        let is_on = |v: &Value| (auto_on && is_auto(v)) || as_bool(v) == Some(true);
        for ((key, v), p) in ["bf16", "fp16"].into_iter().zip(&flags).zip(on) {
            if let Some(v) = v.as_ref().filter(|v| is_on(v)) {
                self.put(key, v, "training.precision", json!(p));
                return;
            }
        }
        let [b, f] = flags;
        match b.or(f) {
            Some(v) => self.put("bf16, fp16", &v, "training.precision", json!("fp32")),
            None if absent_is_fp32 => self.put(
                "bf16, fp16",
                &json!(false),
                "training.precision",
                json!("fp32"),
            ),
            None => {}
        }
    }

    /// Sets `model` from a Hugging Face id or path (`meta-llama/Llama-3.1-8B`) when a preset
    /// has it, else keeps the base's model and says why.
    pub fn model_from_hf_id(&mut self, key: &str, v: &Value) {
        let id = text(v);
        match preset_for_hf_id(&id) {
            Some(p) => self.put(key, v, "model", json!({ "preset": p })),
            None => self.ignore(
                key,
                format!("{id:?} is not one of the model presets: the model is the base's (give it with --model, or pick it in the form)"),
            ),
        }
    }

    /// The config: every error so far, else the document checked, with the file's remaining
    /// keys reported as ignored (`reason` gives the format's reason for a key).
    fn finish(
        mut self,
        format: Format,
        model: Option<&ModelSpec>,
        reason: Reason,
    ) -> Result<Imported, Vec<FieldError>> {
        if let Some(m) = model {
            // the caller's model (`--model`) wins over the file's
            let (model_keys, rest): (Vec<Mapping>, Vec<Mapping>) = std::mem::take(&mut self.read)
                .into_iter()
                .partition(|r| at_or_under(&r.to, "model"));
            self.read = rest;
            for r in model_keys {
                self.ignore(&r.from, "the model was given separately (--model)");
            }
            set_path(&mut self.doc, "model", Value::Object(m.0.clone()));
        }
        if let Some(step) = self.with_layers.take() {
            let layers = get_path(&self.doc, "model")
                .and_then(Value::as_object)
                .and_then(|m| crate::resolve::resolve_model(m, &mut Vec::new()).ok())
                .map(|a| a.num_hidden_layers);
            if let Some(layers) = layers {
                step(&mut self, layers);
            }
        }
        let keys = std::mem::take(&mut self.input.keys);
        for (k, _) in keys {
            let why = reason(&k);
            self.ignore(&k, why);
        }
        for p in std::mem::take(&mut self.input.positional) {
            self.ignore(&p, "a positional argument this import does not use");
        }
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let mapped = |errs: Vec<FieldError>, read: &[Mapping]| -> Vec<FieldError> {
            errs.into_iter()
                .map(|mut e| {
                    if let Some(m) = read.iter().rev().find(|m| m.to == e.field) {
                        e.message =
                            format!("{} (read from {} into {})", e.message, m.from, e.field);
                        e.field = m.from.clone();
                    }
                    e
                })
                .collect()
        };
        let config = Config::from_value(self.doc).map_err(|e| mapped(e, &self.read))?;
        crate::resolve::resolve(&config).map_err(|e| mapped(e, &self.read))?;
        // the format's keys without a place of their own, less those this file did set (a
        // DeepSpeed file with an optimizer block, a line naming a preset)
        let from_base = format
            .from_base()
            .iter()
            .filter(|k| !self.read.iter().any(|m| at_or_under(&m.to, k)))
            .map(|s| s.to_string())
            .collect();
        Ok(Imported {
            format,
            format_name: format.name().to_string(),
            config,
            read: self.read,
            ignored: self.ignored,
            from_base,
        })
    }
}

/// `"auto"` (DeepSpeed's and accelerate's value filled from the other inputs).
pub(super) fn is_auto(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.eq_ignore_ascii_case("auto"))
}

/// A whole number written as a number or a string (`8`, `"8"`, `1e9`, `"5e8"`).
pub(super) fn as_count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
                .map(|f| f as u64)
        }),
        Value::String(s) => {
            let s = s.trim().replace('_', "");
            s.parse::<u64>().ok().or_else(|| {
                s.parse::<f64>()
                    .ok()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
                    .map(|f| f as u64)
            })
        }
        _ => None,
    }
}

/// A number written as a number or a string.
pub(super) fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// A boolean written as a boolean or a string (`true`, `"True"`, `"yes"`, `1`).
pub(super) fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_u64().filter(|n| *n <= 1).map(|n| n == 1),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" | "on" => Some(true),
            "false" | "no" | "0" | "off" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// The preset whose Hugging Face id is `id` (case-insensitive), or whose id's last part is
/// the last part of `id` (a local path or a mirror: `/models/Llama-3.1-8B`).
pub(super) fn preset_for_hf_id(id: &str) -> Option<String> {
    let last = |s: &str| {
        s.trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    let presets = crate::presets::model_presets();
    presets
        .iter()
        .find(|p| {
            p.hf_id
                .as_deref()
                .is_some_and(|h| h.eq_ignore_ascii_case(id))
        })
        .or_else(|| {
            presets
                .iter()
                .find(|p| p.hf_id.as_deref().is_some_and(|h| last(h) == last(id)))
        })
        .map(|p| p.id.clone())
}

/// The Hugging Face id of the config's model preset, if it has one.
pub(super) fn hf_id_of(config: &Config) -> Option<String> {
    let preset = config.model.0.get("preset")?.as_str()?;
    crate::presets::model_presets()
        .iter()
        .find(|p| p.id == preset)
        .and_then(|p| p.hf_id.clone())
}

/// The parsed file: a document (JSON, YAML, TOML) or a command line's words.
pub(super) enum Parsed {
    Tree(Value),
    Words(Vec<String>),
}

/// The file's format and its parsed content: JSON objects by their keys (DeepSpeed,
/// TrainingArguments), command lines by their program (`vllm serve`, `sglang.launch_server`,
/// Megatron's `pretrain_*.py` or its `--tensor-model-parallel-size`-style flags), TOML by
/// torchtitan's tables, YAML by each tool's keys.
pub(super) fn detect(text: &str) -> Result<(Format, Parsed), FieldError> {
    let t = text.trim_start_matches('\u{feff}').trim();
    if t.is_empty() {
        return Err(FieldError::new("file", "", "the file is empty"));
    }
    let unknown = |what: &str| {
        FieldError::new(
            "file",
            "",
            format!(
                "{what}; recognised: {}",
                Format::ALL.map(Format::name).join(", ")
            ),
        )
    };
    if t.starts_with('{') {
        let v: Value = serde_json::from_str(t)
            .map_err(|e| FieldError::new("file", "", format!("not valid JSON: {e}")))?;
        let has = |k: &str| v.get(k).is_some();
        if super::is_own_config(&v) {
            return Err(FieldError::new(
                "file",
                "",
                "this is a gpu-mem-calc config; load it as it is (the CLI's calculate --config, the page's Import)",
            ));
        }
        if [
            "zero_optimization",
            "train_micro_batch_size_per_gpu",
            "train_batch_size",
            "zero_allow_untested_optimizer",
        ]
        .iter()
        .any(|k| has(k))
        {
            return Ok((Format::Deepspeed, Parsed::Tree(v)));
        }
        if [
            "per_device_train_batch_size",
            "output_dir",
            "learning_rate",
            "gradient_checkpointing",
        ]
        .iter()
        .any(|k| has(k))
        {
            return Ok((Format::HfTrainer, Parsed::Tree(v)));
        }
        if ["fp16", "bf16", "optimizer", "gradient_accumulation_steps"]
            .iter()
            .any(|k| has(k))
        {
            return Ok((Format::Deepspeed, Parsed::Tree(v)));
        }
        return Err(unknown(
            "a JSON object with none of DeepSpeed's or TrainingArguments' keys",
        ));
    }
    // a command line: its words, with backslash-newline continuations joined
    let first_line = t
        .lines()
        .find(|l| !l.trim_start().starts_with('#'))
        .unwrap_or("");
    let looks_command = first_line.contains(" --")
        || first_line.trim_start().starts_with("vllm")
        || first_line.contains("python")
        || first_line.contains("torchrun")
        || t.starts_with("--");
    if looks_command && !first_line.trim_end().ends_with(':') {
        let joined: String = t
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
            .replace("\\\r\n", " ")
            .replace("\\\n", " ");
        if let Ok(words) = shell_words::split(&joined) {
            let has_word = |f: &dyn Fn(&str) -> bool| words.iter().any(|w| f(w));
            if has_word(&|w| w == "vllm" || w.starts_with("vllm.entrypoints")) {
                return Ok((Format::Vllm, Parsed::Words(words)));
            }
            if has_word(&|w| w.starts_with("sglang.launch_server") || w == "sglang") {
                return Ok((Format::Sglang, Parsed::Words(words)));
            }
            // a Trainer example script's flags: TrainingArguments on the command line
            // (transformers' examples: `python run_clm.py --per_device_train_batch_size 8
            // --do_train --output_dir ...`)
            if has_word(&|w| {
                let name = w.split('=').next().unwrap_or("");
                matches!(
                    name,
                    "--per_device_train_batch_size" | "--output_dir" | "--do_train"
                )
            }) {
                return Ok((Format::HfTrainer, Parsed::Words(words)));
            }
            if has_word(&|w| {
                w.contains("pretrain_")
                    || w.starts_with("--tensor-model-parallel-size")
                    || w.starts_with("--num-layers")
                    || w.starts_with("--micro-batch-size")
            }) {
                return Ok((Format::Megatron, Parsed::Words(words)));
            }
            return Err(unknown(
                "a command line of none of vllm serve, sglang.launch_server, a Trainer script's TrainingArguments or Megatron-LM's pretrain scripts",
            ));
        }
    }
    // TOML: torchtitan's tables
    if t.lines().any(|l| l.trim_start().starts_with('['))
        && let Ok(v) = toml::from_str::<Value>(t)
    {
        let has = |k: &str| v.get(k).is_some();
        if has("model") || has("parallelism") || has("training") || has("job") {
            return Ok((Format::Torchtitan, Parsed::Tree(v)));
        }
        return Err(unknown(
            "a TOML file without torchtitan's [model], [training], [parallelism] or [job] tables",
        ));
    }
    let v: Value = serde_saphyr::from_str(t).map_err(|e| {
        FieldError::new(
            "file",
            "",
            format!("not JSON, TOML, a command line or valid YAML: {e}"),
        )
    })?;
    let Value::Object(m) = &v else {
        return Err(unknown("a YAML document that is not a mapping"));
    };
    let has = |k: &str| m.contains_key(k);
    if has("distributed_type") || has("compute_environment") {
        return Ok((Format::Accelerate, Parsed::Tree(v)));
    }
    if has("base_model") || has("adapter") && has("sequence_len") {
        return Ok((Format::Axolotl, Parsed::Tree(v)));
    }
    let component = |k: &str| {
        m.get(k)
            .and_then(|x| x.get("_component_"))
            .and_then(Value::as_str)
            .is_some()
    };
    if component("model") || component("tokenizer") || component("optimizer") {
        return Ok((Format::Torchtune, Parsed::Tree(v)));
    }
    if [
        "tensor_model_parallel_size",
        "num_layers",
        "seq_length",
        "micro_batch_size",
    ]
    .iter()
    .any(|k| has(k))
    {
        return Ok((Format::Megatron, Parsed::Tree(v)));
    }
    Err(unknown(
        "a YAML file with none of accelerate's, Axolotl's, torchtune's or Megatron-LM's keys",
    ))
}

/// Which tool's file `text` is ([`Format`]), without importing it.
///
/// Errors: field `file` when no format is recognised (the message lists them) or the file does
/// not parse.
pub fn recognise(text: &str) -> Result<Format, FieldError> {
    detect(text).map(|(f, _)| f)
}

/// Imports another tool's file: `base` with what the file says ([`Imported`]). `model`, when
/// given, is the model (the CLI's `--model`), whatever the file names.
///
/// Errors: field `file` when the format is not recognised or does not parse; a field error
/// at the file's key (`zero_optimization.stage`) for a value we cannot represent; the config's
/// own validation errors, at the file's key where one was read into the failing field.
pub fn import(
    text: &str,
    base: &Config,
    model: Option<&ModelSpec>,
) -> Result<Imported, Vec<FieldError>> {
    let (format, parsed) = detect(text).map_err(|e| vec![e])?;
    let input = match parsed {
        // a YAML of Megatron-LM's arguments: `tensor_model_parallel_size: 2` is the flag
        // `--tensor-model-parallel-size 2` (argparse's dest)
        Parsed::Tree(v) if format == Format::Megatron => {
            let mut input = Input::tree(&v);
            input.keys = input
                .keys
                .into_iter()
                .filter(|(_, v)| !matches!(v, Value::Bool(false) | Value::Null))
                .map(|(k, v)| (format!("--{}", k.replace('_', "-")), v))
                .collect();
            input
        }
        Parsed::Tree(v) => Input::tree(&v),
        // TrainingArguments as flags: `--per_device_train_batch_size 8` is the JSON key
        // `per_device_train_batch_size` (HfArgumentParser's dest)
        Parsed::Words(w) if format == Format::HfTrainer => {
            let mut input = args::parse(&w, format);
            input.keys = input
                .keys
                .into_iter()
                .map(|(k, v)| (k.trim_start_matches('-').replace('-', "_"), v))
                .collect();
            // a flag left out is TrainingArguments' default (transformers/training_args.py),
            // not the base's: a script's line says everything it changes
            for (k, v) in hf_trainer::flag_defaults() {
                if !input.keys.contains_key(k) {
                    input.keys.insert(k.to_string(), v);
                }
            }
            input
        }
        Parsed::Words(w) => args::parse(&w, format),
    };
    // each format's reader and its reasons for the keys it leaves
    let (read, reason): (fn(&mut Import), Reason) = match format {
        Format::Deepspeed => (deepspeed::read, deepspeed::reason),
        Format::HfTrainer => (hf_trainer::read, hf_trainer::reason),
        Format::Accelerate => (accelerate::read, accelerate::reason),
        Format::Torchtune => (torchtune::read, torchtune::reason),
        Format::Axolotl => (axolotl::read, axolotl::reason),
        Format::Torchtitan => (torchtitan::read, torchtitan::reason),
        Format::Megatron => (megatron::read, megatron::reason),
        Format::Vllm => (serve::read_vllm, serve::reason),
        Format::Sglang => (serve::read_sglang, serve::reason),
    };
    let mut im = Import::new(input, base);
    read(&mut im);
    im.finish(format, model, reason)
}

/// The config in another tool's format: the file's text (JSON, YAML, TOML or a command
/// line), such that importing it with the config as base reproduces the config's estimate.
///
/// Errors: the config's own validation errors; a field error at our key when the format
/// cannot express the config (`mode` inference for a training format, `engine.type` megatron
/// for a DeepSpeed file, `training.precision` bf16 for DeepSpeed, ...).
pub fn export(config: &Config, format: Format) -> Result<String, Vec<FieldError>> {
    let r = crate::resolve::resolve(config)?;
    let training = config.effective_mode() == crate::config::Mode::Training;
    let needs_training = !format.serving();
    if training != needs_training {
        return Err(vec![FieldError::new(
            "mode",
            if training { "training" } else { "inference" },
            format!(
                "{}: for {} only",
                format.name(),
                if needs_training {
                    "training"
                } else {
                    "serving"
                }
            ),
        )]);
    }
    let yaml = |v: &Value| serde_saphyr::to_string(v).unwrap_or_default();
    let text = match format {
        Format::Deepspeed => deepspeed::write(config, &r)
            .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default()),
        Format::HfTrainer => hf_trainer::write(config, &r)
            .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default()),
        Format::Accelerate => accelerate::write(config, &r).map(|v| yaml(&v)),
        Format::Torchtune => torchtune::write(config, &r).map(|v| yaml(&v)),
        Format::Axolotl => axolotl::write(config, &r).map(|v| yaml(&v)),
        Format::Torchtitan => torchtitan::write(config, &r).map(|v| torchtitan::to_toml(&v)),
        Format::Megatron => megatron::write(config, &r),
        Format::Vllm => serve::write_vllm(config, &r),
        Format::Sglang => serve::write_sglang(config, &r),
    }?;
    verify(config, format, &text)?;
    Ok(text)
}

/// The base an import of `format` needs to reproduce `config`: the default config with
/// the keys the format has no place for ([`Format::from_base`]) copied from `config`.
pub fn base_for(config: &Config, format: Format) -> Config {
    let full = serde_json::to_value(config).unwrap_or(Value::Null);
    let mut doc = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
    for path in format.from_base() {
        if let Some(v) = get_path(&full, path) {
            set_path(&mut doc, path, v.clone());
        }
    }
    if let Some(m) = full.get("mode") {
        set_path(&mut doc, "mode", m.clone());
    }
    Config::from_value(doc).unwrap_or_else(|_| config.clone())
}

/// Leaves of a document, dotted.
pub(super) fn leaves(v: &Value) -> IndexMap<String, Value> {
    Input::tree(v).keys
}

/// Checks that importing `text` over [`base_for`] reproduces `config`'s estimate to the
/// byte; otherwise the export is refused, naming our keys the file could not carry.
pub(super) fn verify(config: &Config, format: Format, text: &str) -> Result<(), Vec<FieldError>> {
    let back = import(text, &base_for(config, format), None).map_err(|e| {
        e.into_iter()
            .map(|mut e| {
                e.message = format!(
                    "the exported {} does not import back: {}",
                    format.name(),
                    e.message
                );
                e
            })
            .collect::<Vec<_>>()
    })?;
    let same = |a: &Config, b: &Config| match (crate::estimate(a), crate::estimate(b)) {
        (Ok(x), Ok(y)) => serde_json::to_value(&x).ok() == serde_json::to_value(&y).ok(),
        _ => false,
    };
    if same(config, &back.config) {
        return Ok(());
    }
    let (a, b) = (
        leaves(&serde_json::to_value(config).unwrap_or(Value::Null)),
        leaves(&serde_json::to_value(&back.config).unwrap_or(Value::Null)),
    );
    let mut lost: Vec<FieldError> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, v)| {
            FieldError::new(
                k.clone(),
                crate::error::short(v),
                format!(
                    "{}: no place for this value (it would import as {})",
                    format.name(),
                    b.get(k)
                        .map_or("the default".to_string(), crate::error::short)
                ),
            )
        })
        .collect();
    if lost.is_empty() {
        lost.push(FieldError::new(
            "",
            "",
            format!(
                "the exported {} does not reproduce this estimate",
                format.name()
            ),
        ));
    }
    Err(lost)
}

/// A field error for a config the format cannot express.
pub(super) fn cannot(
    field: &str,
    value: impl std::fmt::Display,
    format: Format,
    why: &str,
) -> Vec<FieldError> {
    vec![FieldError::new(
        field,
        value,
        format!("{} cannot express this: {why}", format.name()),
    )]
}

/// Our precision as a JSON string.
pub(super) fn precision_id(p: crate::config::Precision) -> String {
    text(&serde_json::to_value(p).unwrap_or(Value::Null))
}
