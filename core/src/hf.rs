//! Hugging Face `config.json` -> [`ModelArch`], for every supported family.
//!
//! The parser reads the keys each family's transformers configuration class reads, with
//! that class's defaults when a key is missing: both are columns of the family's row in
//! [`crate::families::FAMILIES`], which this parser reads (it matches on no `model_type`).
//! Extra keys in a real `config.json` are ignored; in the calculator's own `model` section
//! the caller can make unknown keys an error ([`parse_model_section`]).
//!
//! Multimodal wrappers (`llava`, `qwen2_5_vl`, `gemma3`) yield the language model from
//! `text_config` (or the top level for Qwen2.5-VL) and count the vision tower and
//! projector separately ([`VisionTower`]).

use crate::arch::{ModelArch, NormKind, VisionTower};
use crate::error::{FieldError, short};
use crate::families::{Family, HeadDim, KvHeads, Sliding, Wrapper, find, supported_families};
use crate::limits;
use crate::reader::{Reader, bounded};
use serde_json::{Map, Value};
use std::cell::RefCell;

/// The `model_type` values the parser accepts (language families, then wrappers): the
/// rows of [`crate::families::FAMILIES`].
pub fn families() -> Vec<&'static str> {
    supported_families()
}

/// Parses `config.json` text.
///
/// Errors: invalid JSON (field `""`), a non-object document, an unsupported `model_type`
/// (the message lists the supported families), wrong types or out-of-range sizes (each
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
    parse_noting_defaults(v, prefix).map(|(arch, _)| arch)
}

/// Sizes a `config.json` did not give: each key's path and the family default used.
pub type Defaulted = Vec<(String, u64)>;

/// As [`parse_hf_config`], also returning the language model's sizes the file does not
/// have (path and the value used) (`hidden_size`, `num_hidden_layers`, `num_attention_heads`,
/// `intermediate_size`, `vocab_size`, `max_position_embeddings`,
/// under `text_config.` for a wrapper), for which the family's configuration class default
/// was used, as transformers does; an explicit `null` counts as given. Empty for a complete
/// file. Errors as [`parse_hf_config_str`].
pub fn parse_hf_config_noting_defaults(
    v: &Value,
) -> Result<(ModelArch, Defaulted), Vec<FieldError>> {
    parse_noting_defaults(v, "")
}

fn parse_noting_defaults(
    v: &Value,
    prefix: &str,
) -> Result<(ModelArch, Defaulted), Vec<FieldError>> {
    let Value::Object(map) = v else {
        return Err(vec![FieldError::new(
            prefix,
            short(v),
            "a config.json must be a JSON object",
        )]);
    };
    let errors = RefCell::new(Vec::new());
    let defaulted = RefCell::new(Vec::new());
    let r = Reader::new(map, prefix, &errors, &defaulted);
    let arch = parse_reader(&r);
    finish(arch, errors).map(|a| (a, defaulted.into_inner()))
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
    let defaulted = RefCell::new(Vec::new());
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
        let r = Reader::new(&merged, prefix, &errors, &defaulted);
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
    if wrapped {
        // the section's keys override the wrapper's text_config: an error there is reported
        // at the section's key, where the user gives (or would give) it
        let nested = format!("{prefix}.text_config.");
        for e in errors.borrow_mut().iter_mut() {
            if let Some(key) = e.field.strip_prefix(&nested) {
                e.field = format!("{prefix}.{key}");
            }
        }
    }
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
            supported_families().join(", ")
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
    let mut arch = match find(&model_type) {
        Some(Family {
            wrapper: Some((w, _)),
            ..
        }) => match w {
            Wrapper::Llava => parse_llava(r),
            Wrapper::Qwen2_5Vl => parse_qwen2_5_vl(r),
            Wrapper::Gemma3 => parse_gemma3(r),
        },
        Some(f) => parse_language(r, f),
        None => {
            unsupported(r, &model_type);
            None
        }
    }?;
    if arch.name.is_empty() {
        arch.name = name;
    }
    Some(arch)
}

/// A language model of family `f` from reader `r`.
fn parse_language(r: &Reader, f: &Family) -> Option<ModelArch> {
    let d = &f.defaults;
    let k = &f.keys;
    // --- sizes, with the family's key names ---------------------------------------------
    let hidden = r.size_or(k.hidden_size, d.hidden_size);
    let layers = r.size_or(k.num_hidden_layers, d.num_hidden_layers);
    let heads = r.size_or(k.num_attention_heads, d.num_attention_heads);
    let vocab = r.size_or(k.vocab_size, d.vocab_size);
    let max_pos = r.size_or(k.max_position_embeddings, d.max_position_embeddings);

    // key/value heads
    let kv = match f.kv_heads {
        // absent means one KV head per attention head (MHA), the classes' convention, not a
        // guessed size: not recorded as defaulted
        KvHeads::Key => r.count_or(
            &["num_key_value_heads"],
            if d.num_key_value_heads == 0 {
                heads
            } else {
                d.num_key_value_heads
            },
        ),
        KvHeads::Falcon => {
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
        KvHeads::ChatGlm => {
            if r.boolean("multi_query_attention", false) {
                r.count_or(&["multi_query_group_num"], 1)
            } else {
                heads
            }
        }
    };
    let kv_key = r.present(&[
        "num_key_value_heads",
        "num_kv_heads",
        "multi_query_group_num",
    ]);
    let kv = bounded(r, kv_key, kv, 1, heads)?;
    // head_dim: explicit (or the family's fixed default), else hidden / heads, which must
    // then divide evenly
    let explicit_head_dim = match f.head_dim {
        HeadDim::Derived => None,
        HeadDim::Mla => {
            Some(r.count_or(&["qk_nope_head_dim"], 128) + r.count_or(&["qk_rope_head_dim"], 64))
        }
        HeadDim::Keys(keys) => r.count_any(keys).or((d.head_dim > 0).then_some(d.head_dim)),
    };
    let head_dim = match explicit_head_dim {
        Some(hd) => hd,
        None if !hidden.is_multiple_of(heads) => {
            r.errors.borrow_mut().push(FieldError::new(
                r.path("num_attention_heads"),
                heads,
                format!("must divide hidden_size ({hidden}) when head_dim is not given"),
            ));
            return None;
        }
        None => hidden / heads,
    };
    if !heads.is_multiple_of(kv) {
        r.errors.borrow_mut().push(FieldError::new(
            r.path(kv_key),
            kv,
            format!("must divide num_attention_heads ({heads})"),
        ));
        return None;
    }
    // a head_dim derived from values already reported (and clamped) is not reported again
    let head_dim = if r.errors.borrow().is_empty() {
        bounded(r, "head_dim", head_dim, 1, limits::MAX_HEAD_DIM)?
    } else {
        head_dim.clamp(1, limits::MAX_HEAD_DIM)
    };
    let inter = r.size_or(
        k.intermediate_size,
        if d.intermediate_size == 0 {
            4 * hidden
        } else {
            d.intermediate_size
        },
    );
    let tie = r.boolean("tie_word_embeddings", d.tie_word_embeddings);
    let hidden_act = k
        .hidden_act
        .iter()
        .find_map(|key| r.string(key))
        .unwrap_or_else(|| d.hidden_act.to_string());

    // --- structure --------------------------------------------------------------------
    let mut a = ModelArch {
        name: String::new(),
        model_type: f.model_type.to_string(),
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
        mlp: f.mlp,
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
        num_nextn_predict_layers: 0,
    };
    (f.structure)(r, &mut a)?;
    if let Some(m) = &a.moe {
        let experts = ["num_experts", "num_local_experts", "n_routed_experts"];
        bounded(
            r,
            r.present(&experts),
            m.num_experts,
            1,
            limits::MAX_EXPERTS,
        )?;
        bounded(
            r,
            r.present(&["num_experts_per_tok", "experts_per_token"]),
            m.num_experts_per_tok,
            1,
            m.num_experts,
        )?;
    }

    // --- sliding window ---------------------------------------------------------------------
    let sw = match f.sliding {
        Sliding::None => None,
        Sliding::Qwen => {
            if r.boolean("use_sliding_window", false) {
                r.count_any(&["sliding_window"])
            } else {
                None
            }
        }
        Sliding::AllLayers | Sliding::EveryOther | Sliding::Pattern => {
            if r.map.contains_key("sliding_window") {
                r.count_any(&["sliding_window"])
            } else if d.sliding_window > 0 {
                Some(d.sliding_window)
            } else {
                None
            }
        }
    }
    .filter(|w| *w > 0);
    if let Some(w) = sw {
        a.sliding_window = Some(w);
        let pattern = if matches!(f.sliding, Sliding::Pattern) {
            r.count_or(&["sliding_window_pattern"], 6).max(1)
        } else {
            0
        };
        let max_window_layers = r.count_or(&["max_window_layers"], 0);
        a.sliding_layers = (0..layers)
            .map(|i| match f.sliding {
                // transformers Gemma2Config: "sliding_attention" if bool((i + 1) % 2)
                Sliding::EveryOther => (i + 1) % 2 != 0,
                // Gemma3TextConfig: "sliding_attention" if bool((i + 1) % sliding_window_pattern)
                Sliding::Pattern => (i + 1) % pattern != 0,
                // Qwen2Config: sliding for i >= max_window_layers
                Sliding::Qwen => i >= max_window_layers,
                Sliding::AllLayers | Sliding::None => true,
            })
            .collect();
        // an explicit `layer_types` (transformers 5 writes it into every config it saves)
        // is what the model builds its layers from
        if let Some(types) = r.get("layer_types").and_then(Value::as_array)
            && types.len() as u64 == layers
            && types.iter().all(Value::is_string)
        {
            a.sliding_layers = types
                .iter()
                .map(|t| t.as_str() == Some("sliding_attention"))
                .collect();
        }
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
    let [h, inter, layers, image, patch, channels] =
        [h, inter, layers, image, patch, channels].map(u128::from);
    let patches = (image / patch) * (image / patch);
    let embeddings = h + channels * patch * patch * h + (patches + 1) * h;
    let layer = 4 * (h * h + h) + 2 * 2 * h + (h * inter + inter) + (inter * h + h);
    saturate(embeddings + 2 * h + layers * layer + 2 * h)
}

/// A parameter count computed in `u128` (every input is bounded by `limits::MODEL_KEYS`, so
/// the products stay far below 2^128), as `u64`, saturating: a count past `u64` is refused
/// by the total-parameter check.
fn saturate(n: u128) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
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
    let [h, inter, layers, image, patch, channels] =
        [h, inter, layers, image, patch, channels].map(u128::from);
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
    saturate(embeddings + layers * layer + 2 * h + head_params)
}

/// The language family of a wrapper's row.
fn text_family(wrapper: &str) -> Option<&'static Family> {
    find(wrapper)
        .and_then(|f| f.wrapper)
        .and_then(|(_, text)| find(text))
}

fn text_config<'a>(r: &'a Reader<'a>) -> Option<&'a Map<String, Value>> {
    r.object("text_config")
}

fn parse_llava(r: &Reader) -> Option<ModelArch> {
    let empty = Map::new();
    let tc = text_config(r).unwrap_or(&empty);
    let tr = r.child(tc, "text_config");
    let mt = tr.string("model_type").unwrap_or_else(|| "llama".into());
    let Some(f) = find(&mt).filter(|f| f.wrapper.is_none()) else {
        unsupported(&tr, &mt);
        return None;
    };
    let mut a = parse_language(&tr, f)?;
    let vc = r.object("vision_config").unwrap_or(&empty);
    let vr = r.child(vc, "vision_config");
    // LlavaConfig's default vision tower: CLIP ViT-L/14 at 336 px.
    let h = vr.count_or(&["hidden_size"], 1024);
    let inter = vr.count_or(&["intermediate_size"], 4096);
    let layers = vr.count_or(&["num_hidden_layers"], 24);
    let image = vr.count_or(&["image_size"], 336);
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
    let projector = saturate(
        (u128::from(h) * u128::from(feature_layers) * u128::from(th) + u128::from(bias * th))
            + (u128::from(th) * u128::from(th) + u128::from(bias * th)),
    );
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
            let tr = r.child(tc, "text_config");
            parse_language(&tr, text_family("qwen2_5_vl")?)?
        }
        None => parse_language(r, text_family("qwen2_5_vl")?)?,
    };
    a.model_type = "qwen2_5_vl".into();
    let empty = Map::new();
    let vc = r.object("vision_config").unwrap_or(&empty);
    let vr = r.child(vc, "vision_config");
    // Qwen2_5_VLVisionConfig defaults (transformers 5.23).
    let depth = vr.count_or(&["depth"], 32);
    let h = vr.count_or(&["hidden_size"], 3584);
    let inter = vr.count_or(&["intermediate_size"], 3420);
    let channels = vr.count_or(&["in_channels", "in_chans"], 3);
    let patch = vr.count_or(&["patch_size", "spatial_patch_size"], 14);
    let temporal = vr.count_or(&["temporal_patch_size"], 2);
    let out = vr.count_or(&["out_hidden_size"], 3584);
    let merge = vr.count_or(&["spatial_merge_size"], 2);
    // Qwen2_5_VisionTransformerPretrainedModel: Conv3d patch embed (no bias); blocks of two
    // RMSNorms, qkv (bias), proj (bias), gated MLP with biases; merger: RMSNorm + two Linear.
    let vision_h = h;
    let [h, inter, depth_n, channels, patch, temporal, out, merge] =
        [h, inter, depth, channels, patch, temporal, out, merge].map(u128::from);
    let block =
        2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * (h * inter + inter) + (inter * h + h);
    let m = h * merge * merge;
    let merger = h + (m * m + m) + (m * out + out);
    a.vision = Some(VisionTower {
        model_type: "qwen2_5_vl".into(),
        hidden_size: vision_h,
        num_hidden_layers: depth,
        encoder_params: saturate(channels * temporal * patch * patch * h + depth_n * block),
        projector_params: saturate(merger),
    });
    Some(a)
}

fn parse_gemma3(r: &Reader) -> Option<ModelArch> {
    let empty = Map::new();
    let tc = text_config(r).unwrap_or(&empty);
    let tr = r.child(tc, "text_config");
    let mut a = parse_language(&tr, text_family("gemma3")?)?;
    a.model_type = "gemma3".into();
    let vc = r.object("vision_config").unwrap_or(&empty);
    let vr = r.child(vc, "vision_config");
    // SiglipVisionConfig defaults (transformers 5.23).
    let h = vr.count_or(&["hidden_size"], 768);
    let inter = vr.count_or(&["intermediate_size"], 3072);
    let layers = vr.count_or(&["num_hidden_layers"], 12);
    let image = vr.count_or(&["image_size"], 224);
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
    fn explicit_layer_types_decide_the_sliding_layers() {
        // Gemma-2's rule makes layer 0 sliding; an explicit layer_types list wins
        let base = json!({"model_type": "gemma2", "num_hidden_layers": 4, "sliding_window": 512});
        let a = parse_hf_config(&base).unwrap();
        assert_eq!(a.sliding_layers, vec![true, false, true, false]);
        let mut v = base.clone();
        v["layer_types"] = json!([
            "full_attention",
            "full_attention",
            "sliding_attention",
            "full_attention"
        ]);
        let a = parse_hf_config(&v).unwrap();
        assert_eq!(a.sliding_layers, vec![false, false, true, false]);
        // a list of the wrong length is left to the family's rule
        v["layer_types"] = json!(["full_attention"]);
        assert_eq!(
            parse_hf_config(&v).unwrap().sliding_layers,
            vec![true, false, true, false]
        );
    }

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
