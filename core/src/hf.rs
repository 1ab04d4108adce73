//! Hugging Face `config.json` -> [`ModelArch`], for every supported family.
//!
//! The parser reads the keys each family's transformers configuration class reads, with
//! that class's defaults when a key is missing ([`FAMILY_DEFAULTS`], one table, taken from
//! transformers 5.23 `AutoConfig.for_model(model_type)`; ChatGLM from THUDM's
//! `configuration_chatglm.py`). Extra keys in a real `config.json` are ignored; in the
//! calculator's own `model` section the caller can make unknown keys an error
//! ([`parse_model_section`]).
//!
//! Multimodal wrappers (`llava`, `qwen2_5_vl`, `gemma3`) yield the language model from
//! `text_config` (or the top level for Qwen2.5-VL) and count the vision tower and
//! projector separately ([`VisionTower`]).

use crate::error::{FieldError, short};
use crate::limits;
use crate::model::{Mla, MlpKind, ModelArch, Moe, NormKind, VisionTower};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::BTreeSet;

/// The `model_type` values the parser accepts (language families, then wrappers).
pub const SUPPORTED_FAMILIES: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3_text",
    "phi",
    "phi3",
    "gpt2",
    "gpt_neox",
    "falcon",
    "deepseek_v2",
    "deepseek_v3",
    "chatglm",
    "glm",
    "glm4",
    "qwen2_5_vl_text",
    "llava",
    "qwen2_5_vl",
    "gemma3",
];

/// Defaults a family's configuration class uses for a missing key.
///
/// `0` in `num_key_value_heads` means "= num_attention_heads"; `0` in `head_dim` means
/// "= hidden_size / num_attention_heads"; `0` in `intermediate_size` means "4 x hidden_size".
#[derive(Debug, Clone, Copy)]
pub struct FamilyDefaults {
    pub model_type: &'static str,
    pub vocab_size: u64,
    pub hidden_size: u64,
    pub intermediate_size: u64,
    pub num_hidden_layers: u64,
    pub num_attention_heads: u64,
    pub num_key_value_heads: u64,
    pub head_dim: u64,
    pub max_position_embeddings: u64,
    pub tie_word_embeddings: bool,
    pub hidden_act: &'static str,
    /// Bias on q/k/v (`attention_bias`, or fixed by the family).
    pub qkv_bias: bool,
    /// Default `sliding_window` (0 = none).
    pub sliding_window: u64,
}

#[allow(clippy::too_many_arguments)] // one argument per column of the table below
const fn fam(
    model_type: &'static str,
    vocab_size: u64,
    hidden_size: u64,
    intermediate_size: u64,
    num_hidden_layers: u64,
    num_attention_heads: u64,
    num_key_value_heads: u64,
    head_dim: u64,
    max_position_embeddings: u64,
    tie_word_embeddings: bool,
    hidden_act: &'static str,
    qkv_bias: bool,
    sliding_window: u64,
) -> FamilyDefaults {
    FamilyDefaults {
        model_type,
        vocab_size,
        hidden_size,
        intermediate_size,
        num_hidden_layers,
        num_attention_heads,
        num_key_value_heads,
        head_dim,
        max_position_embeddings,
        tie_word_embeddings,
        hidden_act,
        qkv_bias,
        sliding_window,
    }
}

/// The one table of family defaults (transformers 5.23 configuration classes).
#[rustfmt::skip]
pub const FAMILY_DEFAULTS: &[FamilyDefaults] = &[
    //  model_type      vocab    hidden inter  layers heads kv  head_dim max_pos  tied   act                  qkv_bias sliding
    fam("llama",        32000,   4096, 11008,  32,    32,   0,   0,      2048,    false, "silu",              false,   0),
    fam("mistral",      32000,   4096, 14336,  32,    32,   8,   0,      131072,  false, "silu",              false,   4096),
    fam("mixtral",      32000,   4096, 14336,  32,    32,   8,   0,      131072,  false, "silu",              false,   0),
    fam("qwen2",        151936,  4096, 22016,  32,    32,   0,   0,      32768,   false, "silu",              true,    0),
    fam("qwen2_moe",    151936,  2048, 5632,   24,    16,   0,   0,      32768,   false, "silu",              true,    0),
    fam("qwen3",        151936,  4096, 22016,  32,    32,   0,   128,    32768,   false, "silu",              false,   0),
    fam("qwen3_moe",    151936,  2048, 6144,   24,    32,   4,   0,      32768,   false, "silu",              false,   0),
    fam("gemma",        256000,  3072, 24576,  28,    16,   0,   256,    8192,    true,  "gelu_pytorch_tanh", false,   0),
    fam("gemma2",       256000,  2304, 9216,   26,    8,    4,   256,    8192,    true,  "gelu_pytorch_tanh", false,   4096),
    fam("gemma3_text",  262208,  2304, 9216,   26,    8,    4,   256,    131072,  true,  "gelu_pytorch_tanh", false,   4096),
    fam("phi",          51200,   2048, 8192,   24,    32,   0,   0,      2048,    false, "gelu_new",          true,    0),
    fam("phi3",         32064,   3072, 8192,   32,    32,   0,   0,      4096,    false, "silu",              false,   0),
    fam("gpt2",         50257,   768,  0,      12,    12,   0,   0,      1024,    true,  "gelu_new",          true,    0),
    fam("gpt_neox",     50432,   6144, 24576,  44,    64,   0,   0,      2048,    false, "gelu",              true,    0),
    fam("falcon",       65024,   4544, 0,      32,    71,   0,   0,      2048,    true,  "gelu",              false,   0),
    fam("deepseek_v2",  102400,  4096, 11008,  32,    32,   0,   0,      2048,    false, "silu",              false,   0),
    fam("deepseek_v3",  129280,  7168, 18432,  61,    128,  0,   0,      4096,    false, "silu",              false,   0),
    fam("chatglm",      65024,   4096, 13696,  28,    32,   0,   128,    2048,    false, "swiglu",            false,   0),
    fam("glm",          151552,  4096, 13696,  40,    32,   2,   128,    131072,  false, "silu",              true,    0),
    fam("glm4",         151552,  4096, 13696,  40,    32,   2,   128,    131072,  false, "silu",              true,    0),
    fam("qwen2_5_vl_text", 152064, 8192, 29568, 80,    64,   8,   0,      128000,  false, "silu",              true,    0),
];

/// The defaults row of a language family.
pub fn family_defaults(model_type: &str) -> Option<&'static FamilyDefaults> {
    FAMILY_DEFAULTS.iter().find(|f| f.model_type == model_type)
}

/// Reads keys of one JSON object, remembering which keys were looked at and collecting
/// errors with the full path.
pub(crate) struct Reader<'a> {
    map: &'a Map<String, Value>,
    prefix: String,
    used: RefCell<BTreeSet<String>>,
    errors: &'a RefCell<Vec<FieldError>>,
}

impl<'a> Reader<'a> {
    pub fn new(
        map: &'a Map<String, Value>,
        prefix: &str,
        errors: &'a RefCell<Vec<FieldError>>,
    ) -> Self {
        Reader {
            map,
            prefix: prefix.to_string(),
            used: RefCell::new(BTreeSet::new()),
            errors,
        }
    }
    fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }
    fn err(&self, key: &str, v: &Value, msg: &str) {
        self.errors
            .borrow_mut()
            .push(FieldError::new(self.path(key), v, msg));
    }
    /// The value of `key`, `None` if absent or `null`.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.used.borrow_mut().insert(key.to_string());
        self.map.get(key).filter(|v| !v.is_null())
    }
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    /// A non-negative integer (JSON number or numeric string such as "7B").
    pub fn count(&self, key: &str) -> Option<u64> {
        let v = self.get(key)?;
        match v {
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    Some(u)
                } else if n.as_i64().is_some() {
                    self.err(key, v, "must not be negative");
                    None
                } else {
                    match n.as_f64() {
                        Some(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => {
                            Some(f as u64)
                        }
                        _ => {
                            self.err(key, v, "must be a whole number");
                            None
                        }
                    }
                }
            }
            Value::String(s) => match crate::units::parse_count(s) {
                Ok(u) => Some(u),
                Err(m) => {
                    self.err(key, v, &m);
                    None
                }
            },
            _ => {
                self.err(key, v, "must be a whole number");
                None
            }
        }
    }
    /// The first present key of `keys`, as a count.
    pub fn count_any(&self, keys: &[&str]) -> Option<u64> {
        let mut found = None;
        for k in keys {
            if found.is_none() {
                found = self.count(k);
            } else {
                self.used.borrow_mut().insert(k.to_string());
            }
        }
        found
    }
    pub fn count_or(&self, keys: &[&str], default: u64) -> u64 {
        self.count_any(keys).unwrap_or(default)
    }
    pub fn boolean(&self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                self.err(key, v, "must be true or false");
                default
            }
        }
    }
    pub fn float(&self, key: &str, default: f64) -> f64 {
        match self.get(key) {
            None => default,
            Some(v) => match v.as_f64() {
                Some(f) if f.is_finite() => f,
                _ => {
                    self.err(key, v, "must be a number");
                    default
                }
            },
        }
    }
    pub fn string(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s.clone()),
            v => {
                self.err(key, v, "must be a string");
                None
            }
        }
    }
    pub fn object(&self, key: &str) -> Option<&'a Map<String, Value>> {
        match self.get(key)? {
            Value::Object(m) => Some(m),
            v => {
                self.err(key, v, "must be a JSON object");
                None
            }
        }
    }
    pub fn count_list(&self, key: &str) -> Vec<u64> {
        match self.get(key) {
            None => Vec::new(),
            Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_u64()).collect(),
            Some(v) => {
                self.err(key, v, "must be a list of whole numbers");
                Vec::new()
            }
        }
    }
    /// Keys of the object never looked at.
    pub fn unused_keys(&self) -> Vec<String> {
        let used = self.used.borrow();
        self.map
            .keys()
            .filter(|k| !used.contains(*k))
            .cloned()
            .collect()
    }
}

/// Parses `config.json` text.
///
/// Errors: invalid JSON (field `""`), a non-object document, an unsupported `model_type`
/// (the message lists [`SUPPORTED_FAMILIES`]), wrong types or out-of-range sizes (each
/// naming its key).
pub fn parse_hf_config_str(text: &str) -> Result<ModelArch, Vec<FieldError>> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| vec![FieldError::new("", "", format!("invalid JSON: {e}"))])?;
    parse_hf_config(&v)
}

/// Parses a `config.json` document already read as JSON. Extra keys are ignored.
/// Errors as [`parse_hf_config_str`].
pub fn parse_hf_config(v: &Value) -> Result<ModelArch, Vec<FieldError>> {
    parse_at(v, "")
}

/// Parses a `config.json` document whose field paths are reported under `prefix`
/// (e.g. `model.hf_config`).
pub(crate) fn parse_at(v: &Value, prefix: &str) -> Result<ModelArch, Vec<FieldError>> {
    let Value::Object(map) = v else {
        return Err(vec![FieldError::new(
            prefix,
            short(v),
            "a config.json must be a JSON object",
        )]);
    };
    let errors = RefCell::new(Vec::new());
    let r = Reader::new(map, prefix, &errors);
    let arch = parse_reader(&r);
    finish(arch, errors)
}

/// Parses the calculator's own `model` section: the same keys as `config.json`, but
/// strict: a key the family does not read is an error naming it. `base` (a preset's or a
/// pasted `config.json`) supplies the keys the section does not override.
pub(crate) fn parse_model_section(
    section: &Map<String, Value>,
    base: Option<&Value>,
    prefix: &str,
    ignore: &[&str],
) -> Result<ModelArch, Vec<FieldError>> {
    let errors = RefCell::new(Vec::new());
    // Overrides apply to the language model: `text_config` of a wrapper if it has one.
    let mut merged = match base {
        Some(Value::Object(m)) => m.clone(),
        Some(_) | None => Map::new(),
    };
    let overrides: Map<String, Value> = section
        .iter()
        .filter(|(k, _)| !ignore.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let wrapped = matches!(merged.get("text_config"), Some(Value::Object(_)));
    if wrapped {
        if let Some(Value::Object(tc)) = merged.get_mut("text_config") {
            for (k, v) in &overrides {
                tc.insert(k.clone(), v.clone());
            }
        }
    } else {
        for (k, v) in &overrides {
            merged.insert(k.clone(), v.clone());
        }
    }
    let arch = {
        let r = Reader::new(&merged, prefix, &errors);
        let arch = parse_reader(&r);
        if !wrapped {
            let unused = r.unused_keys();
            for k in overrides.keys().filter(|k| unused.contains(k)) {
                errors.borrow_mut().push(FieldError::new(
                    format!("{prefix}.{k}"),
                    short(&overrides[k]),
                    format!(
                        "unknown key `{k}` for model_type `{}`; use Hugging Face config.json key names",
                        arch.as_ref().map(|a| a.model_type.as_str()).unwrap_or("?")
                    ),
                ));
            }
        }
        arch
    };
    finish(arch, errors)
}

fn finish(
    arch: Option<ModelArch>,
    errors: RefCell<Vec<FieldError>>,
) -> Result<ModelArch, Vec<FieldError>> {
    let errors = errors.into_inner();
    match arch {
        Some(a) if errors.is_empty() => Ok(a),
        _ if !errors.is_empty() => Err(errors),
        _ => Err(vec![FieldError::new("", "", "could not read the model")]),
    }
}

fn unsupported(r: &Reader, model_type: &str) {
    r.errors.borrow_mut().push(FieldError::new(
        r.path("model_type"),
        format!("{model_type:?}"),
        format!(
            "unsupported model family; supported: {}. For another architecture enter the fields by hand \
             (hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size, vocab_size) \
             with model_type \"llama\" for a Llama-style decoder",
            SUPPORTED_FAMILIES.join(", ")
        ),
    ));
}

/// Dispatches on `model_type`; wrappers recurse into `text_config`.
fn parse_reader(r: &Reader) -> Option<ModelArch> {
    let model_type = r
        .string("model_type")
        .unwrap_or_else(|| "llama".to_string());
    let name = r
        .string("_name_or_path")
        .or_else(|| r.string("name"))
        .unwrap_or_default();
    let mut arch = match model_type.as_str() {
        "llava" => parse_llava(r),
        "qwen2_5_vl" => parse_qwen2_5_vl(r),
        "gemma3" => parse_gemma3(r),
        mt if family_defaults(mt).is_some() => parse_language(r, mt),
        mt => {
            unsupported(r, mt);
            None
        }
    }?;
    if arch.name.is_empty() {
        arch.name = name;
    }
    Some(arch)
}

/// Checks a size against its allowed range; records an error and returns `None` if out.
fn bounded(r: &Reader, key: &str, v: u64, lo: u64, hi: u64) -> Option<u64> {
    if v < lo || v > hi {
        r.errors.borrow_mut().push(FieldError::new(
            r.path(key),
            v,
            format!("must be a whole number from {lo} to {hi}"),
        ));
        None
    } else {
        Some(v)
    }
}

/// A language model of family `mt` from reader `r`.
fn parse_language(r: &Reader, mt: &str) -> Option<ModelArch> {
    let d = family_defaults(mt)?;
    let is = |x: &str| mt == x;
    // --- sizes, with each family's key names -----------------------------------------
    let hidden = match mt {
        "gpt2" => r.count_or(&["n_embd", "hidden_size"], d.hidden_size),
        _ => r.count_or(&["hidden_size"], d.hidden_size),
    };
    let layers = match mt {
        "gpt2" => r.count_or(&["n_layer", "num_hidden_layers"], d.num_hidden_layers),
        "chatglm" => r.count_or(&["num_layers", "num_hidden_layers"], d.num_hidden_layers),
        _ => r.count_or(&["num_hidden_layers"], d.num_hidden_layers),
    };
    let heads = match mt {
        "gpt2" => r.count_or(&["n_head", "num_attention_heads"], d.num_attention_heads),
        _ => r.count_or(&["num_attention_heads"], d.num_attention_heads),
    };
    let vocab = match mt {
        "chatglm" => r.count_or(&["padded_vocab_size", "vocab_size"], d.vocab_size),
        _ => r.count_or(&["vocab_size"], d.vocab_size),
    };
    let max_pos = match mt {
        "gpt2" => r.count_or(
            &["n_positions", "max_position_embeddings"],
            d.max_position_embeddings,
        ),
        "chatglm" => r.count_or(
            &["seq_length", "max_position_embeddings"],
            d.max_position_embeddings,
        ),
        _ => r.count_or(&["max_position_embeddings"], d.max_position_embeddings),
    };
    let hidden = bounded(r, "hidden_size", hidden, 1, limits::MAX_HIDDEN)?;
    let layers = bounded(r, "num_hidden_layers", layers, 1, limits::MAX_LAYERS)?;
    let heads = bounded(r, "num_attention_heads", heads, 1, limits::MAX_HEADS)?;
    let vocab = bounded(r, "vocab_size", vocab, 1, limits::MAX_VOCAB)?;
    let max_pos = bounded(r, "max_position_embeddings", max_pos, 1, limits::MAX_SEQ)?;

    // key/value heads
    let kv = match mt {
        "falcon" => {
            let new_arch = r.boolean("new_decoder_architecture", false);
            let multi_query = r.boolean("multi_query", true);
            let nkv = r.count_or(&["num_kv_heads"], heads);
            if new_arch {
                nkv
            } else if multi_query {
                1
            } else {
                heads
            }
        }
        "chatglm" => {
            if r.boolean("multi_query_attention", false) {
                r.count_or(&["multi_query_group_num"], 1)
            } else {
                heads
            }
        }
        "gpt2" | "gpt_neox" | "phi" if !r.has("num_key_value_heads") => heads,
        _ => r.count_or(
            &["num_key_value_heads"],
            if d.num_key_value_heads == 0 {
                heads
            } else {
                d.num_key_value_heads
            },
        ),
    };
    let kv = bounded(r, "num_key_value_heads", kv, 1, heads)?;
    // head_dim: explicit (or the family's fixed default), else hidden / heads, which must
    // then divide evenly. GPT-2, NeoX, Falcon and Phi always use hidden / heads; MLA
    // (DeepSeek) sets its own head dimensions below.
    let explicit_head_dim = match mt {
        "gpt2" | "gpt_neox" | "falcon" | "phi" => None,
        "deepseek_v2" | "deepseek_v3" => {
            Some(r.count_or(&["qk_nope_head_dim"], 128) + r.count_or(&["qk_rope_head_dim"], 64))
        }
        "chatglm" => Some(r.count_or(&["kv_channels", "head_dim"], d.head_dim)),
        _ => r
            .count_any(&["head_dim"])
            .or((d.head_dim > 0).then_some(d.head_dim)),
    };
    let head_dim = match explicit_head_dim {
        Some(hd) => hd,
        None if hidden % heads != 0 => {
            r.errors.borrow_mut().push(FieldError::new(
                r.path("num_attention_heads"),
                heads,
                format!("must divide hidden_size ({hidden}) when head_dim is not given"),
            ));
            return None;
        }
        None => hidden / heads,
    };
    if heads % kv != 0 {
        r.errors.borrow_mut().push(FieldError::new(
            r.path("num_key_value_heads"),
            kv,
            format!("must divide num_attention_heads ({heads})"),
        ));
        return None;
    }
    let head_dim = bounded(r, "head_dim", head_dim, 1, limits::MAX_HEAD_DIM)?;

    let inter = match mt {
        "gpt2" => r
            .count_any(&["n_inner", "intermediate_size"])
            .unwrap_or(4 * hidden),
        "falcon" => r.count_any(&["ffn_hidden_size"]).unwrap_or(4 * hidden),
        "chatglm" => r.count_or(
            &["ffn_hidden_size", "intermediate_size"],
            d.intermediate_size,
        ),
        _ => r.count_or(
            &["intermediate_size"],
            if d.intermediate_size == 0 {
                4 * hidden
            } else {
                d.intermediate_size
            },
        ),
    };
    let inter = bounded(r, "intermediate_size", inter, 1, limits::MAX_INTERMEDIATE)?;
    let tie = r.boolean("tie_word_embeddings", d.tie_word_embeddings);
    let hidden_act = match mt {
        "gpt2" => r.string("activation_function"),
        "gemma2" | "gemma3_text" | "gemma" => r
            .string("hidden_activation")
            .or_else(|| r.string("hidden_act")),
        _ => r.string("hidden_act"),
    }
    .unwrap_or_else(|| d.hidden_act.to_string());

    // --- structure --------------------------------------------------------------------
    let mut a = ModelArch {
        name: String::new(),
        model_type: mt.to_string(),
        hidden_size: hidden,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        num_key_value_heads: kv,
        head_dim,
        intermediate_size: inter,
        vocab_size: vocab,
        max_position_embeddings: max_pos,
        tie_word_embeddings: tie,
        hidden_act,
        norm: NormKind::RmsNorm,
        mlp: MlpKind::Gated,
        norms_per_layer: 2,
        qk_norm: false,
        qkv_bias: d.qkv_bias,
        o_bias: false,
        mlp_bias: false,
        lm_head_bias: false,
        fused_qkv: false,
        fused_gate_up: false,
        parallel_attention: false,
        learned_position_embeddings: 0,
        attention_dropout: r.float("attention_dropout", 0.0),
        hidden_dropout: 0.0,
        mla: None,
        moe: None,
        sliding_window: None,
        sliding_layers: Vec::new(),
        vision: None,
    };
    match mt {
        "llama" => {
            a.qkv_bias = r.boolean("attention_bias", false);
            a.o_bias = a.qkv_bias;
            a.mlp_bias = r.boolean("mlp_bias", false);
        }
        "mistral" | "mixtral" | "phi3" => {}
        "qwen2" | "qwen2_moe" | "qwen2_5_vl_text" => {
            // Qwen2Attention: q/k/v bias=True, o_proj bias=False (qwen2/modeling_qwen2.py)
            a.qkv_bias = true;
        }
        "qwen3" | "qwen3_moe" => {
            a.qkv_bias = r.boolean("attention_bias", false);
            a.o_bias = a.qkv_bias;
            a.qk_norm = true;
        }
        "gemma" | "gemma2" | "gemma3_text" => {
            a.qkv_bias = r.boolean("attention_bias", false);
            a.o_bias = a.qkv_bias;
            if mt != "gemma" {
                a.norms_per_layer = 4;
            }
            a.qk_norm = mt == "gemma3_text";
        }
        "glm" => a.qkv_bias = r.boolean("attention_bias", true),
        "glm4" => {
            a.qkv_bias = r.boolean("attention_bias", true);
            a.norms_per_layer = 4;
        }
        "phi" => {
            // PhiAttention: q/k/v/dense with bias; PhiMLP fc1/fc2 with bias; one LayerNorm
            // feeding attention and MLP in parallel; lm_head with bias (phi/modeling_phi.py).
            a.norm = NormKind::LayerNorm;
            a.mlp = MlpKind::Standard;
            a.norms_per_layer = 1;
            a.qkv_bias = true;
            a.o_bias = true;
            a.mlp_bias = true;
            a.lm_head_bias = true;
            a.parallel_attention = true;
            a.qk_norm = r.boolean("qk_layernorm", false);
            a.hidden_dropout = r.float("resid_pdrop", 0.0);
        }
        "gpt2" => {
            a.norm = NormKind::LayerNorm;
            a.mlp = MlpKind::Standard;
            a.fused_qkv = true;
            a.qkv_bias = true;
            a.o_bias = true;
            a.mlp_bias = true;
            a.learned_position_embeddings = max_pos;
            a.attention_dropout = r.float("attn_pdrop", 0.1);
            a.hidden_dropout = r.float("resid_pdrop", 0.1);
        }
        "gpt_neox" => {
            a.norm = NormKind::LayerNorm;
            a.mlp = MlpKind::Standard;
            a.fused_qkv = true;
            a.qkv_bias = r.boolean("attention_bias", true);
            a.o_bias = a.qkv_bias;
            a.mlp_bias = true;
            a.parallel_attention = r.boolean("use_parallel_residual", true);
            a.hidden_dropout = r.float("hidden_dropout", 0.0);
        }
        "falcon" => {
            let bias = r.boolean("bias", false);
            let parallel = r.boolean("parallel_attn", true);
            let new_arch = r.boolean("new_decoder_architecture", false);
            let num_ln = r
                .count_any(&["num_ln_in_parallel_attn"])
                .unwrap_or(if new_arch { 2 } else { 1 });
            a.norm = NormKind::LayerNorm;
            a.mlp = MlpKind::Standard;
            a.fused_qkv = true;
            a.qkv_bias = bias;
            a.o_bias = bias;
            a.mlp_bias = bias;
            a.parallel_attention = parallel;
            a.norms_per_layer = if !parallel || num_ln == 2 { 2 } else { 1 };
            a.hidden_dropout = r.float("hidden_dropout", 0.0);
        }
        "chatglm" => {
            // THUDM modeling_chatglm.py: query_key_value (bias = add_qkv_bias), dense
            // (bias = add_bias_linear), dense_h_to_4h -> 2 x ffn (SwiGLU), dense_4h_to_h.
            a.fused_qkv = true;
            a.fused_gate_up = true;
            a.qkv_bias = r.boolean("add_qkv_bias", false);
            let bias_linear = r.boolean("add_bias_linear", false);
            a.o_bias = bias_linear;
            a.mlp_bias = bias_linear;
            if !r.boolean("rmsnorm", true) {
                a.norm = NormKind::LayerNorm;
            }
            a.hidden_dropout = r.float("hidden_dropout", 0.0);
        }
        "deepseek_v2" | "deepseek_v3" => {
            a.qkv_bias = r.boolean("attention_bias", false);
            a.o_bias = a.qkv_bias;
        }
        _ => {}
    }
    if matches!(mt, "phi3") {
        a.fused_qkv = true;
        a.fused_gate_up = true;
    }

    // --- MLA ----------------------------------------------------------------------------
    if mt.starts_with("deepseek") {
        let v3 = is("deepseek_v3");
        // An explicit `null` means no query compression (V2-Lite); absent means the default 1536.
        let q_lora_rank = match r.map.get("q_lora_rank") {
            None => Some(1536),
            Some(_) => r.count("q_lora_rank"),
        };
        let m = Mla {
            q_lora_rank,
            kv_lora_rank: r.count_or(&["kv_lora_rank"], 512),
            qk_rope_head_dim: r.count_or(&["qk_rope_head_dim"], 64),
            qk_nope_head_dim: r.count_or(&["qk_nope_head_dim"], 128),
            v_head_dim: r.count_or(&["v_head_dim"], 128),
        };
        for (k, v) in [
            ("kv_lora_rank", m.kv_lora_rank),
            ("qk_rope_head_dim", m.qk_rope_head_dim),
            ("qk_nope_head_dim", m.qk_nope_head_dim),
            ("v_head_dim", m.v_head_dim),
        ] {
            bounded(r, k, v, 1, limits::MAX_HIDDEN)?;
        }
        if let Some(q) = m.q_lora_rank {
            bounded(r, "q_lora_rank", q, 1, limits::MAX_HIDDEN)?;
        }
        // MLA: every head gets its own keys/values after the up-projection.
        a.num_key_value_heads = heads;
        a.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
        a.mla = Some(m);
        // --- DeepSeek MoE ------------------------------------------------------------------
        let experts = r
            .count_any(&["n_routed_experts", "num_local_experts"])
            .unwrap_or(if v3 { 256 } else { 64 });
        if experts > 0 {
            let moe_inter = r.count_or(&["moe_intermediate_size"], if v3 { 2048 } else { 1407 });
            let shared = r.count_or(&["n_shared_experts"], if v3 { 1 } else { 2 });
            a.moe = Some(Moe {
                num_experts: experts,
                num_experts_per_tok: r.count_or(&["num_experts_per_tok"], if v3 { 8 } else { 6 }),
                moe_intermediate_size: moe_inter,
                shared_expert_intermediate_size: shared * moe_inter,
                shared_expert_gate: false,
                first_k_dense_replace: r
                    .count_or(&["first_k_dense_replace"], if v3 { 3 } else { 0 }),
                moe_layer_freq: r.count_or(&["moe_layer_freq"], 1),
                mlp_only_layers: Vec::new(),
                qwen_layer_rule: false,
            });
        }
    }

    // --- other MoE families ----------------------------------------------------------------
    match mt {
        "mixtral" => {
            a.moe = Some(Moe {
                num_experts: r.count_or(&["num_local_experts"], 8),
                num_experts_per_tok: r.count_or(&["num_experts_per_tok"], 2),
                moe_intermediate_size: inter,
                shared_expert_intermediate_size: 0,
                shared_expert_gate: false,
                first_k_dense_replace: 0,
                moe_layer_freq: 1,
                mlp_only_layers: Vec::new(),
                qwen_layer_rule: false,
            })
        }
        "qwen2_moe" | "qwen3_moe" => {
            let q2 = is("qwen2_moe");
            let experts = r.count_or(&["num_experts"], if q2 { 60 } else { 128 });
            if experts > 0 {
                let shared = if q2 {
                    r.count_or(&["shared_expert_intermediate_size"], 5632)
                } else {
                    0
                };
                a.moe = Some(Moe {
                    num_experts: experts,
                    num_experts_per_tok: r
                        .count_or(&["num_experts_per_tok"], if q2 { 4 } else { 8 }),
                    moe_intermediate_size: r
                        .count_or(&["moe_intermediate_size"], if q2 { 1408 } else { 768 }),
                    shared_expert_intermediate_size: shared,
                    shared_expert_gate: q2,
                    first_k_dense_replace: 0,
                    moe_layer_freq: r.count_or(&["decoder_sparse_step"], 1),
                    mlp_only_layers: r.count_list("mlp_only_layers"),
                    qwen_layer_rule: true,
                });
            }
        }
        _ => {}
    }
    if let Some(m) = &a.moe {
        bounded(r, "num_experts", m.num_experts, 1, limits::MAX_EXPERTS)?;
        bounded(
            r,
            "num_experts_per_tok",
            m.num_experts_per_tok,
            1,
            m.num_experts,
        )?;
        bounded(
            r,
            "moe_intermediate_size",
            m.moe_intermediate_size,
            1,
            limits::MAX_INTERMEDIATE,
        )?;
        bounded(r, "moe_layer_freq", m.moe_layer_freq, 1, limits::MAX_LAYERS)?;
    }

    // --- sliding window ---------------------------------------------------------------------
    let sw = match mt {
        "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" | "qwen2_5_vl_text" => {
            if r.boolean("use_sliding_window", false) {
                r.count_any(&["sliding_window"])
            } else {
                None
            }
        }
        "mistral" | "mixtral" | "phi3" | "gemma2" | "gemma3_text" => {
            if r.map.contains_key("sliding_window") {
                r.count_any(&["sliding_window"])
            } else if d.sliding_window > 0 {
                Some(d.sliding_window)
            } else {
                None
            }
        }
        _ => None,
    }
    .filter(|w| *w > 0);
    if let Some(w) = sw {
        a.sliding_window = Some(w);
        let pattern = if is("gemma3_text") {
            r.count_or(&["sliding_window_pattern"], 6).max(1)
        } else {
            0
        };
        let max_window_layers = r.count_or(&["max_window_layers"], 0);
        a.sliding_layers = (0..layers)
            .map(|i| match mt {
                // transformers Gemma2Config: "sliding_attention" if bool((i + 1) % 2)
                "gemma2" => (i + 1) % 2 != 0,
                // Gemma3TextConfig: "sliding_attention" if bool((i + 1) % sliding_window_pattern)
                "gemma3_text" => (i + 1) % pattern != 0,
                // Qwen2Config: sliding for i >= max_window_layers
                "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" | "qwen2_5_vl_text" => {
                    i >= max_window_layers
                }
                _ => true,
            })
            .collect();
    }
    Some(a)
}

/// Counts a CLIP vision encoder (transformers `CLIPVisionModel`): class embedding, patch
/// convolution without bias, position table, pre/post LayerNorm, encoder layers.
fn clip_vision_params(
    h: u64,
    inter: u64,
    layers: u64,
    image: u64,
    patch: u64,
    channels: u64,
) -> u64 {
    let patches = (image / patch) * (image / patch);
    let embeddings = h + channels * patch * patch * h + (patches + 1) * h;
    let layer = 4 * (h * h + h) + 2 * 2 * h + (h * inter + inter) + (inter * h + h);
    embeddings + 2 * h + layers * layer + 2 * h
}

/// Counts a SigLIP vision encoder (`SiglipVisionModel`): patch convolution with bias,
/// position table, encoder layers, post LayerNorm, optional attention-pooling head.
fn siglip_vision_params(
    h: u64,
    inter: u64,
    layers: u64,
    image: u64,
    patch: u64,
    channels: u64,
    head: bool,
) -> u64 {
    let patches = (image / patch) * (image / patch);
    let embeddings = channels * patch * patch * h + h + patches * h;
    let mlp = (h * inter + inter) + (inter * h + h);
    let layer = 4 * (h * h + h) + 2 * 2 * h + mlp;
    let head_params = if head {
        // probe (1, 1, h) + nn.MultiheadAttention (in_proj 3h x h + 3h, out_proj h x h + h)
        // + LayerNorm + MLP
        h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + mlp
    } else {
        0
    };
    embeddings + layers * layer + 2 * h + head_params
}

fn text_config<'a>(r: &'a Reader<'a>) -> Option<&'a Map<String, Value>> {
    r.object("text_config")
}

fn parse_llava(r: &Reader) -> Option<ModelArch> {
    let empty = Map::new();
    let tc = text_config(r).unwrap_or(&empty);
    let tr = Reader::new(tc, &r.path("text_config"), r.errors);
    let mt = tr.string("model_type").unwrap_or_else(|| "llama".into());
    if family_defaults(&mt).is_none() {
        unsupported(&tr, &mt);
        return None;
    }
    let mut a = parse_language(&tr, &mt)?;
    let vc = r.object("vision_config").unwrap_or(&empty);
    let vr = Reader::new(vc, &r.path("vision_config"), r.errors);
    // LlavaConfig's default vision tower: CLIP ViT-L/14 at 336 px.
    let h = bounded(
        &vr,
        "hidden_size",
        vr.count_or(&["hidden_size"], 1024),
        1,
        limits::MAX_HIDDEN,
    )?;
    let inter = bounded(
        &vr,
        "intermediate_size",
        vr.count_or(&["intermediate_size"], 4096),
        1,
        limits::MAX_INTERMEDIATE,
    )?;
    let layers = bounded(
        &vr,
        "num_hidden_layers",
        vr.count_or(&["num_hidden_layers"], 24),
        1,
        limits::MAX_LAYERS,
    )?;
    let image = bounded(
        &vr,
        "image_size",
        vr.count_or(&["image_size"], 336),
        1,
        100_000,
    )?;
    let patch = bounded(
        &vr,
        "patch_size",
        vr.count_or(&["patch_size"], 14),
        1,
        image,
    )?;
    let channels = vr.count_or(&["num_channels"], 3);
    let feature_layers = match r.get("vision_feature_layer") {
        Some(Value::Array(v)) => v.len() as u64,
        _ => 1,
    };
    let bias = r.boolean("multimodal_projector_bias", true) as u64;
    let th = a.hidden_size;
    let projector = (h * feature_layers * th + bias * th) + (th * th + bias * th);
    a.vision = Some(VisionTower {
        model_type: vr
            .string("model_type")
            .unwrap_or_else(|| "clip_vision_model".into()),
        hidden_size: h,
        num_hidden_layers: layers,
        encoder_params: clip_vision_params(h, inter, layers, image, patch, channels),
        projector_params: projector,
    });
    a.tie_word_embeddings = r.boolean("tie_word_embeddings", false) && a.tie_word_embeddings;
    Some(a)
}

fn parse_qwen2_5_vl(r: &Reader) -> Option<ModelArch> {
    // Older files keep the text fields at the top level; newer ones under text_config.
    let mut a = match text_config(r) {
        Some(tc) => {
            let tr = Reader::new(tc, &r.path("text_config"), r.errors);
            parse_language(&tr, "qwen2_5_vl_text")?
        }
        None => parse_language(r, "qwen2_5_vl_text")?,
    };
    a.model_type = "qwen2_5_vl".into();
    let empty = Map::new();
    let vc = r.object("vision_config").unwrap_or(&empty);
    let vr = Reader::new(vc, &r.path("vision_config"), r.errors);
    // Qwen2_5_VLVisionConfig defaults (transformers 5.23).
    let depth = bounded(
        &vr,
        "depth",
        vr.count_or(&["depth"], 32),
        1,
        limits::MAX_LAYERS,
    )?;
    let h = bounded(
        &vr,
        "hidden_size",
        vr.count_or(&["hidden_size"], 3584),
        1,
        limits::MAX_HIDDEN,
    )?;
    let inter = bounded(
        &vr,
        "intermediate_size",
        vr.count_or(&["intermediate_size"], 3420),
        1,
        limits::MAX_INTERMEDIATE,
    )?;
    let channels = vr.count_or(&["in_channels", "in_chans"], 3);
    let patch = vr.count_or(&["patch_size", "spatial_patch_size"], 14);
    let temporal = vr.count_or(&["temporal_patch_size"], 2);
    let out = vr.count_or(&["out_hidden_size"], 3584);
    let merge = vr.count_or(&["spatial_merge_size"], 2);
    // Qwen2_5_VisionTransformerPretrainedModel: Conv3d patch embed (no bias); blocks of two
    // RMSNorms, qkv (bias), proj (bias), gated MLP with biases; merger: RMSNorm + two Linear.
    let block =
        2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * (h * inter + inter) + (inter * h + h);
    let m = h * merge * merge;
    let merger = h + (m * m + m) + (m * out + out);
    a.vision = Some(VisionTower {
        model_type: "qwen2_5_vl".into(),
        hidden_size: h,
        num_hidden_layers: depth,
        encoder_params: channels * temporal * patch * patch * h + depth * block,
        projector_params: merger,
    });
    Some(a)
}

fn parse_gemma3(r: &Reader) -> Option<ModelArch> {
    let empty = Map::new();
    let tc = text_config(r).unwrap_or(&empty);
    let tr = Reader::new(tc, &r.path("text_config"), r.errors);
    let mut a = parse_language(&tr, "gemma3_text")?;
    a.model_type = "gemma3".into();
    let vc = r.object("vision_config").unwrap_or(&empty);
    let vr = Reader::new(vc, &r.path("vision_config"), r.errors);
    // SiglipVisionConfig defaults (transformers 5.23).
    let h = bounded(
        &vr,
        "hidden_size",
        vr.count_or(&["hidden_size"], 768),
        1,
        limits::MAX_HIDDEN,
    )?;
    let inter = bounded(
        &vr,
        "intermediate_size",
        vr.count_or(&["intermediate_size"], 3072),
        1,
        limits::MAX_INTERMEDIATE,
    )?;
    let layers = bounded(
        &vr,
        "num_hidden_layers",
        vr.count_or(&["num_hidden_layers"], 12),
        1,
        limits::MAX_LAYERS,
    )?;
    let image = bounded(
        &vr,
        "image_size",
        vr.count_or(&["image_size"], 224),
        1,
        100_000,
    )?;
    let patch = bounded(
        &vr,
        "patch_size",
        vr.count_or(&["patch_size"], 16),
        1,
        image,
    )?;
    let channels = vr.count_or(&["num_channels"], 3);
    let head = vr.boolean("vision_use_head", true);
    // Gemma3MultiModalProjector: mm_input_projection_weight (vision h x text h) + RMSNorm(vision h)
    let projector = h * a.hidden_size + h;
    a.vision = Some(VisionTower {
        model_type: vr
            .string("model_type")
            .unwrap_or_else(|| "siglip_vision_model".into()),
        hidden_size: h,
        num_hidden_layers: layers,
        encoder_params: siglip_vision_params(h, inter, layers, image, patch, channels, head),
        projector_params: projector,
    });
    Some(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_family_lists_supported() {
        let e = parse_hf_config(&json!({"model_type": "mamba", "hidden_size": 768})).unwrap_err();
        assert_eq!(e[0].field, "model_type");
        assert!(
            e[0].message.contains("llama") && e[0].message.contains("deepseek_v3"),
            "{}",
            e[0].message
        );
    }

    #[test]
    fn invalid_json_and_wrong_types() {
        assert!(
            parse_hf_config_str("{\"model_type\": \"llama\",").unwrap_err()[0]
                .message
                .contains("invalid JSON")
        );
        let e = parse_hf_config(&json!({"model_type": "llama", "hidden_size": "big"})).unwrap_err();
        assert_eq!(e[0].field, "hidden_size");
        let e =
            parse_hf_config(&json!({"model_type": "llama", "num_hidden_layers": -2})).unwrap_err();
        assert_eq!(e[0].field, "num_hidden_layers");
        let e =
            parse_hf_config(&json!({"model_type": "llama", "num_hidden_layers": 1_000_000_000u64}))
                .unwrap_err();
        assert!(e[0].message.contains("from 1 to"), "{e:?}");
        let e = parse_hf_config(
            &json!({"model_type": "llama", "hidden_size": 4000, "num_attention_heads": 3}),
        )
        .unwrap_err();
        assert_eq!(e[0].field, "num_attention_heads");
        assert!(parse_hf_config(&json!([1, 2])).is_err());
    }
}
