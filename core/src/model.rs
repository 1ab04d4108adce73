//! The normalized model architecture and its exact parameter inventory.
//!
//! [`ModelArch`] is what every model source (preset, Hugging Face `config.json`, manual
//! fields) resolves to. Field names follow Hugging Face `config.json` where one exists.
//! [`ModelArch::inventory`] lists every parameter tensor group of the model with the
//! module name transformers uses, so that parameter counts, LoRA targets, quantization
//! and tensor-parallel splits all derive from one list.

pub use crate::arch::{FfnKind, Mla, MlpKind, ModelArch, Moe, NormKind, VisionTower};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Which part of the model a parameter group belongs to (for the count breakdown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Part {
    Embeddings,
    Attention,
    Mlp,
    Experts,
    SharedExperts,
    Router,
    Norms,
    LmHead,
}

/// How Megatron-style tensor parallelism splits a parameter group
/// (Shoeybi et al. 2019, Sec. 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum TpSplit {
    /// Column-parallel linear: weight and bias split along the output dimension.
    Column,
    /// Row-parallel linear: weight split along the input dimension, bias replicated.
    Row,
    /// Vocabulary-parallel embedding / LM head: rows split.
    Vocab,
    /// Not split (norms, routers, MLA down-projections).
    Replicated,
}

/// Shape of one parameter group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Shape {
    /// `nn.Linear(in_features, out_features, bias)`.
    Linear {
        in_features: u64,
        out_features: u64,
        bias: bool,
    },
    /// A normalization layer of `size` elements (weight, plus bias for LayerNorm).
    Norm { size: u64, bias: bool },
    /// An embedding table `rows x cols`.
    Embedding { rows: u64, cols: u64 },
}

impl Shape {
    /// Elements of the group (one copy).
    pub fn numel(&self) -> u64 {
        match *self {
            Shape::Linear {
                in_features,
                out_features,
                bias,
            } => in_features * out_features + if bias { out_features } else { 0 },
            Shape::Norm { size, bias } => size * if bias { 2 } else { 1 },
            Shape::Embedding { rows, cols } => rows * cols,
        }
    }
}

/// One group of identical parameter tensors of one decoder layer (or of the model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ParamGroup {
    /// Module name as in transformers (`q_proj`, `experts.down_proj`, `embed_tokens`).
    pub name: Cow<'static, str>,
    pub part: Part,
    pub shape: Shape,
    /// Identical copies (number of routed experts; 1 otherwise).
    pub copies: u64,
    pub tp: TpSplit,
    /// A linear-shaped module that is not `nn.Linear` (transformers' `Conv1D`,
    /// [`crate::families::Family::conv1d`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conv1d: bool,
}

/// The (rows, cols) of a group's tensors on one rank ([`ParamGroup::rank_shapes`]): the
/// weight, then the bias if any. At most two, kept inline (the plan search asks for them
/// per candidate); reads as a slice.
#[derive(Debug, Clone, Copy)]
pub struct RankShapes {
    shapes: [(u64, u64); 2],
    len: usize,
}

impl RankShapes {
    fn new(shapes: [(u64, u64); 2], len: usize) -> RankShapes {
        RankShapes { shapes, len }
    }
}

impl std::ops::Deref for RankShapes {
    type Target = [(u64, u64)];
    fn deref(&self) -> &[(u64, u64)] {
        &self.shapes[..self.len]
    }
}

impl ParamGroup {
    fn new(name: impl Into<Cow<'static, str>>, part: Part, shape: Shape, tp: TpSplit) -> Self {
        ParamGroup {
            name: name.into(),
            part,
            shape,
            copies: 1,
            tp,
            conv1d: false,
        }
    }
    fn linear(
        name: impl Into<Cow<'static, str>>,
        part: Part,
        i: u64,
        o: u64,
        bias: bool,
        tp: TpSplit,
    ) -> Self {
        Self::new(
            name,
            part,
            Shape::Linear {
                in_features: i,
                out_features: o,
                bias,
            },
            tp,
        )
    }
    /// Whether torchao's float8 training converts this group's weight when it sits in a
    /// decoder layer: an attention, dense-MLP or shared-expert `nn.Linear` whose input and
    /// output features are both divisible by 16 (torchao `float8/float8_linear_utils.py`
    /// `convert_to_float8_training` swaps `nn.Linear` modules; torchtitan's
    /// `module_filter_fn` skips those with dims not divisible by 16, and its configs filter
    /// the LM head and the routers). Routed experts are not `nn.Linear` (a fused
    /// `[experts, ...]` parameter), so they stay in `param_dtype`. The caller decides the
    /// decoder-layer context: an MTP module's `eh_proj` is an attention-part linear outside
    /// one. A [`ParamGroup::conv1d`] module is not `nn.Linear`. The one rule memory
    /// (FSDP2's float8 all-gather, [`crate::placement`]) and step time (its gather bytes,
    /// and which matmuls run in float8 under transformers' modules) read.
    pub fn float8_linear(&self) -> bool {
        !self.conv1d
            && matches!(self.part, Part::Attention | Part::Mlp | Part::SharedExperts)
            && matches!(self.shape, Shape::Linear { in_features, out_features, .. }
                if in_features % 16 == 0 && out_features % 16 == 0)
    }
    /// Elements over all copies.
    pub fn numel(&self) -> u64 {
        self.shape.numel() * self.copies
    }
    /// Element shapes `(rows, cols)` of one copy of the group on one of `tp`
    /// tensor-parallel ranks: the weight first, then its bias (a vector is `(n, 1)`). A
    /// column-parallel (or vocabulary-parallel) linear splits its output rows, bias
    /// included; a row-parallel linear splits its input columns and keeps its bias whole;
    /// a vocabulary-parallel embedding splits its rows; everything else is held whole.
    /// Sizes not divisible by `tp` round up (the largest shard; Shoeybi et al. 2019, Sec. 3).
    /// This is the one tensor-parallel split of the model.
    pub fn rank_shapes(&self, tp: u64) -> RankShapes {
        let split = |n: u64| n.div_ceil(tp.max(1));
        match self.shape {
            Shape::Linear {
                in_features,
                out_features,
                bias,
            } => {
                let (rows, cols, bias_rows) = match self.tp {
                    TpSplit::Column | TpSplit::Vocab => {
                        (split(out_features), in_features, split(out_features))
                    }
                    TpSplit::Row => (out_features, split(in_features), out_features),
                    TpSplit::Replicated => (out_features, in_features, out_features),
                };
                RankShapes::new([(rows, cols), (bias_rows, 1)], if bias { 2 } else { 1 })
            }
            Shape::Norm { size, bias } => {
                RankShapes::new([(size, 1), (size, 1)], if bias { 2 } else { 1 })
            }
            Shape::Embedding { rows, cols } if self.tp == TpSplit::Vocab => {
                RankShapes::new([(split(rows), cols), (0, 0)], 1)
            }
            Shape::Embedding { rows, cols } => RankShapes::new([(rows, cols), (0, 0)], 1),
        }
    }

    /// `true` for the groups a quantized checkpoint quantizes (GPTQ, AWQ, bitsandbytes,
    /// compressed-tensors): linear layers of the decoder blocks, not routers, embeddings or
    /// the LM head.
    pub fn is_quantized(&self) -> bool {
        matches!(self.shape, Shape::Linear { .. })
            && matches!(
                self.part,
                Part::Attention | Part::Mlp | Part::Experts | Part::SharedExperts
            )
    }
}

/// The parameter inventory of a model: model-level groups and the groups of each distinct
/// decoder-layer kind with how many layers have that kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Inventory {
    /// Embedding table(s), final norm, LM head.
    pub model: Vec<ParamGroup>,
    /// Groups of a decoder layer with a dense MLP, and the number of such layers.
    pub dense_layer: Vec<ParamGroup>,
    pub num_dense_layers: u64,
    /// Groups of a decoder layer with a MoE block, and the number of such layers.
    pub moe_layer: Vec<ParamGroup>,
    pub num_moe_layers: u64,
}

/// Exact parameter counts, per component. `total` counts tied embeddings once and
/// includes a vision tower if present.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ParamCounts {
    pub total: u64,
    /// Language model only (total minus vision tower and projector).
    pub language_model: u64,
    pub embeddings: u64,
    pub attention: u64,
    /// Dense MLPs (including the dense layers of a MoE model).
    pub mlp: u64,
    /// Routed experts, all of them.
    pub experts: u64,
    pub shared_experts: u64,
    pub router: u64,
    pub norms: u64,
    /// Untied LM head (0 when tied).
    pub lm_head: u64,
    /// Vision encoder plus projector (multimodal wrappers).
    pub vision: u64,
    /// Parameters used per token: total minus the routed experts a token does not visit.
    pub active_per_token: u64,
}

impl ModelArch {
    /// Module names of the attention projections: (q, k, v, fused qkv, o).
    pub(crate) fn attention_names(
        &self,
    ) -> (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    ) {
        let n = self.names();
        (n.q, n.k, n.v, n.qkv, n.o)
    }

    /// Module names of the MLP: (gate, up, fused gate_up, down).
    pub(crate) fn mlp_names(&self) -> (&'static str, &'static str, &'static str, &'static str) {
        let n = self.names();
        (n.gate, n.up, n.gate_up, n.down)
    }

    fn attention_groups(&self) -> Vec<ParamGroup> {
        let h = self.hidden_size;
        let mut g = Vec::new();
        if let Some(m) = &self.mla {
            // DeepseekV2Attention / DeepseekV3Attention (transformers modeling_deepseek_v3.py).
            let a = self.num_attention_heads;
            let qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
            match m.q_lora_rank {
                None => g.push(ParamGroup::linear(
                    "q_proj",
                    Part::Attention,
                    h,
                    a * qk,
                    false,
                    TpSplit::Column,
                )),
                Some(r) => {
                    g.push(ParamGroup::linear(
                        "q_a_proj",
                        Part::Attention,
                        h,
                        r,
                        self.qkv_bias,
                        TpSplit::Replicated,
                    ));
                    g.push(ParamGroup::new(
                        "q_a_layernorm",
                        Part::Norms,
                        Shape::Norm {
                            size: r,
                            bias: false,
                        },
                        TpSplit::Replicated,
                    ));
                    g.push(ParamGroup::linear(
                        "q_b_proj",
                        Part::Attention,
                        r,
                        a * qk,
                        false,
                        TpSplit::Column,
                    ));
                }
            }
            g.push(ParamGroup::linear(
                "kv_a_proj_with_mqa",
                Part::Attention,
                h,
                m.kv_lora_rank + m.qk_rope_head_dim,
                self.qkv_bias,
                TpSplit::Replicated,
            ));
            g.push(ParamGroup::new(
                "kv_a_layernorm",
                Part::Norms,
                Shape::Norm {
                    size: m.kv_lora_rank,
                    bias: false,
                },
                TpSplit::Replicated,
            ));
            g.push(ParamGroup::linear(
                "kv_b_proj",
                Part::Attention,
                m.kv_lora_rank,
                a * (m.qk_nope_head_dim + m.v_head_dim),
                false,
                TpSplit::Column,
            ));
            g.push(ParamGroup::linear(
                "o_proj",
                Part::Attention,
                a * m.v_head_dim,
                h,
                self.o_bias,
                TpSplit::Row,
            ));
            return g;
        }
        let (q, k, v, qkv, o) = self.attention_names();
        let qd = self.num_attention_heads * self.head_dim;
        let kvd = self.num_key_value_heads * self.head_dim;
        if self.fused_qkv {
            g.push(ParamGroup::linear(
                qkv,
                Part::Attention,
                h,
                qd + 2 * kvd,
                self.qkv_bias,
                TpSplit::Column,
            ));
        } else {
            g.push(ParamGroup::linear(
                q,
                Part::Attention,
                h,
                qd,
                self.qkv_bias,
                TpSplit::Column,
            ));
            g.push(ParamGroup::linear(
                k,
                Part::Attention,
                h,
                kvd,
                self.qkv_bias,
                TpSplit::Column,
            ));
            g.push(ParamGroup::linear(
                v,
                Part::Attention,
                h,
                kvd,
                self.qkv_bias,
                TpSplit::Column,
            ));
        }
        g.push(ParamGroup::linear(
            o,
            Part::Attention,
            qd,
            h,
            self.o_bias,
            TpSplit::Row,
        ));
        if self.qk_norm {
            let bias = self.norm == NormKind::LayerNorm;
            let (qn, kn) = self.names().qk_norms;
            g.push(ParamGroup::new(
                qn,
                Part::Norms,
                Shape::Norm {
                    size: self.head_dim,
                    bias,
                },
                TpSplit::Replicated,
            ));
            g.push(ParamGroup::new(
                kn,
                Part::Norms,
                Shape::Norm {
                    size: self.head_dim,
                    bias,
                },
                TpSplit::Replicated,
            ));
        }
        g
    }

    /// A gated or standard MLP of intermediate size `i`, named with `prefix`.
    fn mlp_groups(&self, prefix: &str, part: Part, inter: u64, copies: u64) -> Vec<ParamGroup> {
        let h = self.hidden_size;
        let (gate, up, gate_up, down) = self.mlp_names();
        let n = |s: &'static str| -> Cow<'static, str> {
            if prefix.is_empty() {
                Cow::Borrowed(s)
            } else {
                format!("{prefix}.{s}").into()
            }
        };
        let mut g = Vec::new();
        let bias = self.mlp_bias;
        match self.mlp {
            MlpKind::Gated if self.fused_gate_up => {
                g.push(ParamGroup::linear(
                    n(gate_up),
                    part,
                    h,
                    2 * inter,
                    bias,
                    TpSplit::Column,
                ));
            }
            MlpKind::Gated => {
                g.push(ParamGroup::linear(
                    n(gate),
                    part,
                    h,
                    inter,
                    bias,
                    TpSplit::Column,
                ));
                g.push(ParamGroup::linear(
                    n(up),
                    part,
                    h,
                    inter,
                    bias,
                    TpSplit::Column,
                ));
            }
            MlpKind::Standard => g.push(ParamGroup::linear(
                n(up),
                part,
                h,
                inter,
                bias,
                TpSplit::Column,
            )),
        }
        g.push(ParamGroup::linear(
            n(down),
            part,
            inter,
            h,
            bias,
            TpSplit::Row,
        ));
        for x in &mut g {
            x.copies = copies;
        }
        g
    }

    fn norm_groups(&self) -> Vec<ParamGroup> {
        let bias = self.norm == NormKind::LayerNorm;
        let names: &[&'static str] = match self.norms_per_layer {
            1 => self.names().norms[0],
            4 => self.names().norms[2],
            _ => self.names().norms[1],
        };
        names
            .iter()
            .map(|n| {
                ParamGroup::new(
                    *n,
                    Part::Norms,
                    Shape::Norm {
                        size: self.hidden_size,
                        bias,
                    },
                    TpSplit::Replicated,
                )
            })
            .collect()
    }

    /// Parameter groups of one decoder layer of the given feed-forward kind.
    pub fn layer_groups(&self, kind: FfnKind) -> Vec<ParamGroup> {
        let mut g = self.norm_groups();
        g.extend(self.attention_groups());
        if self.gpt_oss_blocks() {
            // gpt-oss `self_attn.sinks`: one learned logit per attention head
            g.push(ParamGroup::new(
                "sinks",
                Part::Attention,
                Shape::Norm {
                    size: self.num_attention_heads,
                    bias: false,
                },
                TpSplit::Column,
            ));
        }
        match (kind, &self.moe) {
            (FfnKind::Moe, Some(m)) => {
                let h = self.hidden_size;
                g.push(ParamGroup::linear(
                    "gate",
                    Part::Router,
                    h,
                    m.num_experts,
                    self.gpt_oss_blocks(),
                    TpSplit::Replicated,
                ));
                g.extend(self.mlp_groups(
                    "experts",
                    Part::Experts,
                    m.moe_intermediate_size,
                    m.num_experts,
                ));
                if m.shared_expert_intermediate_size > 0 {
                    let prefix = self.names().shared_experts;
                    g.extend(self.mlp_groups(
                        prefix,
                        Part::SharedExperts,
                        m.shared_expert_intermediate_size,
                        1,
                    ));
                }
                if m.shared_expert_gate {
                    g.push(ParamGroup::linear(
                        "shared_expert_gate",
                        Part::Router,
                        h,
                        1,
                        false,
                        TpSplit::Replicated,
                    ));
                }
            }
            _ => g.extend(self.mlp_groups("", Part::Mlp, self.intermediate_size, 1)),
        }
        if self.family().conv1d {
            for group in g
                .iter_mut()
                .filter(|x| matches!(x.shape, Shape::Linear { .. }))
            {
                group.conv1d = true;
            }
        }
        g
    }

    /// Model-level groups: token (and position) embeddings, final norm, LM head.
    pub fn model_groups(&self) -> Vec<ParamGroup> {
        let (h, v) = (self.hidden_size, self.vocab_size);
        let embed_name = self.names().embed;
        let mut g = vec![ParamGroup::new(
            embed_name,
            Part::Embeddings,
            Shape::Embedding { rows: v, cols: h },
            TpSplit::Vocab,
        )];
        if self.learned_position_embeddings > 0 {
            g.push(ParamGroup::new(
                "wpe",
                Part::Embeddings,
                Shape::Embedding {
                    rows: self.learned_position_embeddings,
                    cols: h,
                },
                TpSplit::Replicated,
            ));
        }
        let final_norm = self.names().final_norm;
        g.push(ParamGroup::new(
            final_norm,
            Part::Norms,
            Shape::Norm {
                size: h,
                bias: self.norm == NormKind::LayerNorm,
            },
            TpSplit::Replicated,
        ));
        if !self.tie_word_embeddings {
            let name = self.names().lm_head;
            g.push(ParamGroup::linear(
                name,
                Part::LmHead,
                h,
                v,
                self.lm_head_bias,
                TpSplit::Vocab,
            ));
        }
        g
    }

    /// The non-layer groups of one multi-token prediction module (Megatron-Core
    /// `multi_token_prediction.py` MultiTokenPredictionLayer): `enorm` and `hnorm` on the
    /// embedding and hidden inputs, `eh_proj` (2h -> h, column-parallel) and the final
    /// layernorm; its transformer layer is a decoder layer of the next layer's kind, and the
    /// embedding and output layer are the model's own.
    pub fn mtp_groups(&self) -> Vec<ParamGroup> {
        let h = self.hidden_size;
        let norm = |name: &'static str| {
            ParamGroup::new(
                name,
                Part::Norms,
                Shape::Norm {
                    size: h,
                    bias: self.norm == NormKind::LayerNorm,
                },
                TpSplit::Replicated,
            )
        };
        vec![
            norm("mtp.enorm"),
            norm("mtp.hnorm"),
            ParamGroup::linear(
                "mtp.eh_proj",
                Part::Attention,
                2 * h,
                h,
                false,
                TpSplit::Column,
            ),
            norm("mtp.final_layernorm"),
        ]
    }

    /// The full parameter inventory.
    pub fn inventory(&self) -> Inventory {
        let num_moe_layers = self.num_moe_layers();
        Inventory {
            model: self.model_groups(),
            dense_layer: self.layer_groups(FfnKind::Dense),
            num_dense_layers: self.num_hidden_layers - num_moe_layers,
            moe_layer: if num_moe_layers > 0 {
                self.layer_groups(FfnKind::Moe)
            } else {
                Vec::new()
            },
            num_moe_layers,
        }
    }

    /// Exact parameter counts by component, as `sum(p.numel() for p in model.parameters())`
    /// in transformers counts them (tied embeddings once). Saturates instead of overflowing
    /// for absurd inputs (validation rejects those first).
    pub fn param_counts(&self) -> ParamCounts {
        let inv = self.inventory();
        let mut c = ParamCounts::default();
        let mut add = |groups: &[ParamGroup], times: u64| {
            for gr in groups {
                let n = gr.numel().saturating_mul(times);
                let slot = match gr.part {
                    Part::Embeddings => &mut c.embeddings,
                    Part::Attention => &mut c.attention,
                    Part::Mlp => &mut c.mlp,
                    Part::Experts => &mut c.experts,
                    Part::SharedExperts => &mut c.shared_experts,
                    Part::Router => &mut c.router,
                    Part::Norms => &mut c.norms,
                    Part::LmHead => &mut c.lm_head,
                };
                *slot = slot.saturating_add(n);
            }
        };
        add(&inv.model, 1);
        add(&inv.dense_layer, inv.num_dense_layers);
        add(&inv.moe_layer, inv.num_moe_layers);
        c.vision = self
            .vision
            .as_ref()
            .map_or(0, |v| v.encoder_params + v.projector_params);
        c.language_model = [
            c.embeddings,
            c.attention,
            c.mlp,
            c.experts,
            c.shared_experts,
            c.router,
            c.norms,
            c.lm_head,
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b));
        c.total = c.language_model.saturating_add(c.vision);
        let inactive = match &self.moe {
            Some(m) if m.num_experts > 0 => {
                c.experts / m.num_experts
                    * (m.num_experts - m.num_experts_per_tok.min(m.num_experts))
            }
            _ => 0,
        };
        c.active_per_token = c.language_model - inactive;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn llama2_7b() -> ModelArch {
        ModelArch {
            name: "Llama-2-7B".into(),
            model_type: "llama".into(),
            hidden_size: 4096,
            num_hidden_layers: 32,
            num_attention_heads: 32,
            num_key_value_heads: 32,
            head_dim: 128,
            intermediate_size: 11008,
            vocab_size: 32000,
            max_position_embeddings: 4096,
            tie_word_embeddings: false,
            hidden_act: "silu".into(),
            norm: NormKind::RmsNorm,
            mlp: MlpKind::Gated,
            norms_per_layer: 2,
            qk_norm: false,
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            lm_head_bias: false,
            fused_qkv: false,
            fused_gate_up: false,
            parallel_attention: false,
            learned_position_embeddings: 0,
            attention_dropout: 0.0,
            hidden_dropout: 0.0,
            mla: None,
            moe: None,
            sliding_window: None,
            sliding_layers: Vec::new(),
            vision: None,
            num_nextn_predict_layers: 0,
        }
    }

    #[test]
    fn llama2_7b_count() {
        // embed 32000*4096 = 131_072_000, lm_head the same;
        // per layer: attention 4 * 4096^2 = 67_108_864, MLP 3 * 4096 * 11008 = 135_266_304,
        // norms 2 * 4096 = 8192 -> 202_383_360; x32 = 6_476_267_520; final norm 4096.
        // total = 2 * 131_072_000 + 6_476_267_520 + 4096 = 6_738_415_616 (the figure
        // transformers prints for Llama-2-7b-hf).
        let c = llama2_7b().param_counts();
        assert_eq!(c.total, 6_738_415_616);
        assert_eq!(c.embeddings, 131_072_000);
        assert_eq!(c.lm_head, 131_072_000);
        assert_eq!(c.attention, 32 * 67_108_864);
        assert_eq!(c.mlp, 32 * 135_266_304);
        assert_eq!(c.norms, (2 * 32 + 1) * 4096); // two RMSNorms per layer and the final norm
        assert_eq!(c.active_per_token, c.total);
    }

    #[test]
    fn rank_shapes_split_as_megatron() {
        // row-parallel: weight 4096 x 4096/4, bias whole
        let g = ParamGroup::linear("o_proj", Part::Attention, 4096, 4096, true, TpSplit::Row);
        assert_eq!(*g.rank_shapes(4), [(4096, 1024), (4096, 1)]);
        // column-parallel: rows and bias split
        let g = ParamGroup::linear("q_proj", Part::Attention, 4096, 4096, true, TpSplit::Column);
        assert_eq!(*g.rank_shapes(4), [(1024, 4096), (1024, 1)]);
        // 32000-row vocabulary over 3 ranks: the largest shard, 10667 rows
        let g = ParamGroup::new(
            "embed_tokens",
            Part::Embeddings,
            Shape::Embedding {
                rows: 32000,
                cols: 4096,
            },
            TpSplit::Vocab,
        );
        assert_eq!(*g.rank_shapes(3), [(10667, 4096)]);
        // a LayerNorm keeps weight and bias whole
        let g = ParamGroup::new(
            "ln",
            Part::Norms,
            Shape::Norm {
                size: 4096,
                bias: true,
            },
            TpSplit::Replicated,
        );
        assert_eq!(*g.rank_shapes(8), [(4096, 1), (4096, 1)]);
    }
}
