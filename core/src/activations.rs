//! Activation memory: the tensors each decoder layer saves for backward, per micro-batch.
//!
//! Two implementations are modelled, chosen by the engine:
//!
//! * **Megatron** (Megatron-LM / Megatron-Core, also Megatron-DeepSpeed): Korthikanti et
//!   al. 2022, "Reducing Activation Recomputation in Large Transformer Models", Table 2,
//!   generalized to GQA (K and V have `num_key_value_heads` heads), the real
//!   `intermediate_size`, SwiGLU (the fused `bias_swiglu` keeps the fc1 output, 2 x I, and
//!   the fc2 input), flash attention (output + fp32 softmax statistics instead of the
//!   `b x a x s^2` terms), dropout only where its probability is non-zero, tensor and
//!   sequence parallelism (Sec. 4.2.2: everything outside the attention/MLP cores is
//!   divided by TP only with SP).
//! * **Hugging Face on PyTorch** (DDP, FSDP, DeepSpeed engines): what the transformers
//!   modules keep. RMSNorm upcasts to fp32 and saves that copy plus the normalized result
//!   (`LlamaRMSNorm.forward`); under autocast every linear casts its input to half
//!   precision separately, so q/k/v (and gate/up) each keep their own copy; a gated MLP
//!   keeps gate, act(gate), up and their product (8 x I bytes per token in bf16); eager
//!   attention keeps the fp32 softmax and its half copy; SDPA/flash keep q, k, v, the
//!   output and the fp32 logsumexp.
//!
//! All results are bytes for one micro-batch on one GPU.

use crate::config::{Attention, Recompute};
use crate::model::{FfnKind, MlpKind, ModelArch, NormKind};
use crate::term::Num;

pub use crate::precision::ModelCode;

/// Inputs of the activation model for one GPU.
#[derive(Debug, Clone, Copy)]
pub struct ActCtx<'a> {
    pub arch: &'a ModelArch,
    /// `arch`'s family row ([`ModelArch::family`]), looked up once per estimate.
    pub family: &'static crate::families::Family,
    /// Micro-batch size.
    pub b: u64,
    /// Sequence length held by this GPU (seq_len / context-parallel size).
    pub s: u64,
    /// Full sequence length (attention spans it under context parallelism).
    pub s_full: u64,
    pub tp: u64,
    /// Megatron sequence parallelism.
    pub sp: bool,
    /// Expert-parallel size (tokens dispatched to this GPU's experts).
    pub ep: u64,
    /// Expert tensor-parallel size (Megatron-Core `--expert-tensor-parallel-size`).
    pub etp: u64,
    pub code: ModelCode,
    pub attention: Attention,
    pub recompute: Recompute,
    /// Bytes per activation element (2 half, 4 fp32).
    pub act: u64,
    /// Bytes per element of the residual stream (4 under PyTorch autocast with fp32
    /// weights, else `act`).
    pub residual: u64,
    /// Bytes per element of inputs saved by linear layers (1 with fp8).
    pub linear_input: u64,
    /// Under PyTorch autocast each linear casts its (fp32) input itself.
    pub autocast: bool,
    /// The half type is fp16 (else bf16 when `act` is 2).
    pub fp16: bool,
    /// LoRA fine-tuning, with its targets on the model
    /// ([`crate::problem::Resolved::lora_targets`]): frozen base layers keep no inputs;
    /// targeted ones keep an adapter copy of theirs.
    pub lora: Option<(&'a crate::config::Lora, &'a crate::lora::Targets)>,
    /// Each decoder layer runs under `torch.compile` (`training.compile`): it keeps
    /// [`compiled_saved`] instead of [`layer_saved`].
    pub compiled: bool,
    /// Megatron's attention gets its keys and values repeated to every query head
    /// (Megatron-DeepSpeed's `repeat_kv`, the engine's `repeats_kv`), and keeps them so.
    pub repeat_kv: bool,
}

/// One saved tensor (or group) with its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub name: &'static str,
    pub bytes: u64,
}

/// The capacity a layer's list of saved tensors is allocated with.
const SAVED_CAPACITY: usize = 32;

/// Where a layer's saved tensors are recorded: their sum, and where the names are wanted
/// (the public `*_saved` lists) the list. The estimate reads only sums, so it allocates
/// no list.
struct Saves {
    total: u64,
    list: Option<Vec<Saved>>,
}

impl Saves {
    /// The sum only.
    fn sum() -> Saves {
        Saves {
            total: 0,
            list: None,
        }
    }
    /// The sum and the list.
    fn list() -> Saves {
        Saves {
            total: 0,
            list: Some(Vec::with_capacity(SAVED_CAPACITY)),
        }
    }
    /// The list `record` writes for one layer of `kind` (the public `*_saved` functions).
    fn listed(c: &ActCtx, kind: FfnKind, record: fn(&ActCtx, FfnKind, &mut Saves)) -> Vec<Saved> {
        let mut v = Saves::list();
        record(c, kind, &mut v);
        v.list.unwrap_or_default()
    }
    /// The bytes `record` writes for one layer of `kind`, no list built (the estimate's).
    fn summed(c: &ActCtx, kind: FfnKind, record: fn(&ActCtx, FfnKind, &mut Saves)) -> u64 {
        let mut v = Saves::sum();
        record(c, kind, &mut v);
        v.total
    }
}

fn push(v: &mut Saves, name: &'static str, bytes: u64) {
    if bytes > 0 {
        v.total += bytes;
        if let Some(list) = &mut v.list {
            list.push(Saved { name, bytes });
        }
    }
}

impl ActCtx<'_> {
    fn tokens(&self) -> u64 {
        self.b * self.s
    }
    /// Divides tensors outside attention/MLP cores: by TP only with sequence parallelism.
    fn sp_div(&self) -> u64 {
        if self.sp { self.tp } else { 1 }
    }
    fn heads(&self) -> u64 {
        self.arch.num_attention_heads.div_ceil(self.tp)
    }
    fn kv_heads(&self) -> u64 {
        if self.arch.mla.is_some() {
            self.heads()
        } else {
            self.arch.num_key_value_heads.div_ceil(self.tp)
        }
    }
    /// Bytes per intermediate element the MLP activation function keeps (HF modules),
    /// besides the fc2 input. `gelu_new` (`NewGELUActivation`, GPT-2 and Phi-2) is written
    /// out in elementwise ops, `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`,
    /// and autograd keeps x (saved by `pow`), `tanh(..)`, `1 + tanh(..)` and `0.5 * x`.
    /// Under autocast `pow` runs in fp32 (it is on the CUDA autocast fp32 list), so x, the
    /// tanh and the sum are fp32 copies while `0.5 * x` stays half. Fused activations
    /// (`gelu`, `gelu_pytorch_tanh`, `silu`, ...) keep only their input.
    fn activation_saved(&self) -> u64 {
        match self.arch.hidden_act.as_str() {
            "gelu_new" if self.autocast => 3 * 4 + self.act,
            "gelu_new" => 4 * self.act,
            _ => self.act,
        }
    }
    fn dropout_mask(&self, p: f64, elems: u64) -> u64 {
        if p > 0.0 { elems } else { 0 }
    }
    /// Elements of the `b x a x s x s_full` attention score matrix on this GPU (sliding
    /// window layers do not shrink it in eager mode: transformers masks a full matrix).
    fn score_elems(&self) -> u64 {
        self.b * self.heads() * self.s * self.s_full
    }
}

/// Tensors a normalization layer keeps for backward (per layer norm), input included.
fn norm_saved(c: &ActCtx, v: &mut Saves, name: &'static str, elems: u64) {
    match c.code {
        ModelCode::Megatron => push(v, name, elems * c.act / c.sp_div()),
        // With sequence parallelism (torchtitan: `SequenceParallel` on the norms) each norm
        // runs on this rank's share of the sequence.
        ModelCode::Transformers => match c.arch.norm {
            // LlamaRMSNorm: fp32 copy of the input (the input itself when already fp32) saved
            // by pow/mul, rsqrt (one fp32 per token), and the normalized result cast back
            // to the input dtype, saved by `weight * x`.
            // With a frozen norm weight (LoRA) `weight * x` keeps only the weight.
            NormKind::RmsNorm => {
                let scaled = if c.lora.is_some() {
                    0
                } else if c.family.norm_scales_in_fp32 {
                    4
                } else {
                    c.residual
                };
                push(
                    v,
                    name,
                    (elems * 4 + c.tokens() * 4 + elems * scaled) / c.sp_div(),
                );
            }
            // nn.LayerNorm: keeps its input plus mean and rstd (fp32 per token).
            NormKind::LayerNorm => push(
                v,
                name,
                (elems * c.residual + 2 * c.tokens() * 4) / c.sp_div(),
            ),
        },
    }
}

/// Inputs a group of `n` linear layers reading the same tensor keep: one shared copy,
/// or one autocast cast each.
fn shared_linear_input(c: &ActCtx, elems: u64, n: u64) -> u64 {
    let copies = if c.autocast { n } else { 1 };
    copies * elems * c.linear_input
}

/// Bytes a LoRA-targeted linear layer keeps for backward (PEFT `LoraLayer.forward`): its
/// input cast to the adapter dtype (fp32 copy; under autocast the bf16 cast `lora_A` makes),
/// with dropout > 0 the dropout output and mask instead, and the `r`-wide `lora_A` output
/// kept by `lora_B`. `None` without LoRA; `Some(0)` for a frozen, untargeted layer (its
/// gradient w.r.t. the input needs only the weight).
fn lora_input(c: &ActCtx, name: &str, tokens: u64, in_dim: u64) -> Option<u64> {
    let (lo, targets) = c.lora?;
    if !targets.module(name) {
        return Some(0);
    }
    let dtype = if c.autocast || !lo.adapters_fp32 {
        c.act
    } else {
        4
    };
    let elems = tokens * in_dim;
    let input = if lo.dropout > 0.0 {
        elems * (dtype + 1)
    } else {
        elems * dtype
    };
    Some(input + tokens * lo.rank * dtype)
}

/// Inputs kept by the linear layers `names` reading the same `tokens x in_dim` tensor:
/// LoRA per targeted module, else one shared copy (or one autocast cast each).
fn linear_inputs(c: &ActCtx, names: &[&str], tokens: u64, in_dim: u64) -> u64 {
    if c.lora.is_some() {
        names
            .iter()
            .map(|n| lora_input(c, n, tokens, in_dim).unwrap_or(0))
            .sum()
    } else {
        shared_linear_input(c, tokens * in_dim, names.len() as u64)
    }
}

/// Shapes of one layer's attention on this GPU.
struct AttnShapes {
    t: u64,
    h: u64,
    heads: u64,
    kv: u64,
    q_elems: u64,
    k_elems: u64,
    v_elems: u64,
    o_elems: u64,
    qd: u64,
    vd: u64,
    selective: bool,
    eager: bool,
}

impl AttnShapes {
    fn of(c: &ActCtx) -> AttnShapes {
        let a = c.arch;
        let t = c.tokens();
        let (qd, vd) = (a.qk_head_dim(), a.v_head_dim());
        let (heads, kv) = (c.heads(), c.kv_heads());
        AttnShapes {
            t,
            h: a.hidden_size,
            heads,
            kv,
            q_elems: t * heads * qd,
            k_elems: t * kv * qd,
            v_elems: t * kv * vd,
            o_elems: t * heads * vd,
            qd,
            vd,
            selective: c.recompute == Recompute::Selective,
            eager: c.attention == Attention::Eager,
        }
    }
}

/// Attention block of one layer (excluding its input norm).
fn attention_saved(c: &ActCtx, v: &mut Saves) {
    match c.code {
        ModelCode::Megatron => megatron_attention_saved(c, v),
        ModelCode::Transformers => hf_attention_saved(c, v),
    }
}

/// Megatron's attention: Korthikanti Table 2.
fn megatron_attention_saved(c: &ActCtx, v: &mut Saves) {
    let a = c.arch;
    let AttnShapes {
        t,
        h,
        heads,
        q_elems,
        k_elems,
        v_elems,
        o_elems,
        selective,
        eager,
        ..
    } = AttnShapes::of(c);
    // Korthikanti Table 2: QKV input 2sbh (/t with SP), Q and K, V, softmax 2as^2b,
    // its dropout mask as^2b and output 2as^2b, projection input 2sbh, dropout mask sbh.
    push(v, "qkv_input", t * h * c.linear_input / c.sp_div());
    if let Some(m) = &a.mla {
        // MLA keeps the compressed latents for the up-projections.
        push(
            v,
            "mla_latents",
            t * (m.kv_lora_rank + m.q_lora_rank.unwrap_or(0)) * c.act,
        );
    }
    // Megatron-DeepSpeed repeats grouped keys and values to every query head first (MLA's
    // are per head already)
    let (k_elems, v_elems) = if c.repeat_kv {
        (q_elems, o_elems)
    } else {
        (k_elems, v_elems)
    };
    push(v, "q_k", (q_elems + k_elems) * c.act);
    push(v, "v", v_elems * c.act);
    if eager && !selective {
        let s2 = c.score_elems();
        push(v, "softmax_output", s2 * c.act);
        push(
            v,
            "softmax_dropout_mask",
            c.dropout_mask(a.attention_dropout, s2),
        );
        push(
            v,
            "softmax_dropout_output",
            if a.attention_dropout > 0.0 {
                s2 * c.act
            } else {
                0
            },
        );
    } else if !eager {
        // flash / fused attention: fp32 softmax statistics per query row
        push(v, "softmax_lse", c.b * heads * c.s * 4);
    }
    push(v, "proj_input", o_elems * c.linear_input);
    push(
        v,
        "attention_dropout_mask",
        c.dropout_mask(a.hidden_dropout, t * h / c.sp_div()),
    );
}

/// V as attention keeps it: a view of the projection's output; with a fused qkv
/// projection that view keeps the whole output alive (rotary makes q and k new tensors
/// beside it). `qk_elems` and `v_elems` are the q + k and v elements of this GPU.
fn value_saved(c: &ActCtx, v: &mut Saves, qk_elems: u64, v_elems: u64) {
    if c.arch.fused_qkv && c.arch.learned_position_embeddings == 0 {
        push(v, "qkv_output", (qk_elems + v_elems) * c.act);
    } else {
        push(v, "v", v_elems * c.act);
    }
}

/// transformers attention modules (LlamaAttention with sdpa/eager/flash).
fn hf_attention_saved(c: &ActCtx, v: &mut Saves) {
    let a = c.arch;
    let AttnShapes {
        t,
        h,
        heads,
        kv,
        q_elems,
        k_elems,
        v_elems,
        o_elems,
        qd,
        vd,
        selective,
        eager,
    } = AttnShapes::of(c);
    let (qn, kn, vn, qkvn, on) = a.attention_names();
    let (fused, split) = ([qkvn], [qn, kn, vn]);
    let names: &[&str] = if a.fused_qkv { &fused } else { &split };
    push(v, "qkv_input", linear_inputs(c, names, t, h));
    if let Some(m) = &a.mla {
        // DeepseekV3Attention: q_a_layernorm / kv_a_layernorm inputs and outputs,
        // kv_b_proj input.
        let latents = m.kv_lora_rank + m.q_lora_rank.unwrap_or(0);
        push(
            v,
            "mla_latents",
            t * latents * (4 + 2 * c.act) + t * m.qk_rope_head_dim * c.act,
        );
    }
    // q and k after rotary embedding (rotary keeps only the shared cos/sin)
    push(v, "q_k", (q_elems + k_elems) * c.act);
    if a.qk_norm {
        // q_norm / k_norm (RMSNorm over head_dim): fp32 copies + normalized results (with a
        // frozen norm weight, LoRA, `weight * x` keeps only the weight)
        let scaled = if c.lora.is_some() { 0 } else { c.act };
        push(v, "qk_norm", (q_elems + k_elems) * (4 + scaled));
    }
    value_saved(c, v, q_elems + k_elems, v_elems);
    if eager {
        if !selective {
            let s2 = c.score_elems();
            if c.family.gpt_oss_blocks {
                // gpt-oss eager_attention_forward: the sink column joins the scores, the
                // row max is subtracted (max keeps its int64 indices), softmax runs in the
                // combined dtype (fp32 when the fp32 sinks or mask join half scores) and
                // keeps its output; `.to(value dtype)` copies the s columns back to half
                let rows = c.b * heads * c.s;
                let combined = if c.residual == 4 { 4 } else { c.act };
                let half_copy = if combined > c.act { s2 * c.act } else { 0 };
                push(v, "attention_probs", (s2 + rows) * combined + half_copy);
                push(v, "sink_max_indices", rows * 8);
            } else {
                // softmax(dim=-1, dtype=float32) keeps its fp32 output; .to(dtype) makes
                // the half copy the second matmul keeps (one tensor when already fp32).
                let half_copy = if c.act < 4 { s2 * c.act } else { 0 };
                push(v, "attention_probs", s2 * 4 + half_copy);
                if c.family.logit_softcapping {
                    // tanh(scores / cap), kept by tanh's backward
                    push(v, "softcap_tanh", s2 * c.act);
                }
                push(
                    v,
                    "attention_dropout_mask",
                    c.dropout_mask(a.attention_dropout, s2),
                );
            }
            // repeat_kv materializes K and V per query head for the matmuls
            if kv < heads {
                push(v, "repeat_kv", t * (heads - kv) * (qd + vd) * c.act);
            }
        }
    } else {
        // SDPA / flash keep the output and the fp32 logsumexp
        push(v, "attention_output", o_elems * c.act);
        push(v, "attention_lse", c.b * heads * c.s * 4);
    }
    // o_proj input: under SDPA/flash the kernel's output follows q's layout, which is
    // (b, s, h, d) after elementwise rotary, so transpose + reshape is a view of the
    // tensor already kept above; eager attention's output and that of models whose
    // rotary concatenates are (b, h, s, d) and `.transpose(1, 2).contiguous()` copies
    let own_copy = if eager || a.rotates_by_concatenation(c.family) {
        o_elems * c.linear_input
    } else {
        0
    };
    push(
        v,
        "o_proj_input",
        lora_input(c, on, t, heads * vd).unwrap_or(own_copy),
    );
    push(
        v,
        "attention_dropout_mask",
        c.dropout_mask(a.hidden_dropout, t * h),
    );
}

/// MLP of intermediate size `inter` over `t` tokens (excluding its input norm).
fn mlp_saved(c: &ActCtx, v: &mut Saves, t: u64, inter: u64, input_shared: bool) {
    mlp_saved_split(c, v, t, inter, input_shared, c.tp)
}

/// [`mlp_saved`] with the intermediate size split over `split` ranks (routed experts:
/// the expert tensor-parallel ranks).
fn mlp_saved_split(c: &ActCtx, v: &mut Saves, t: u64, inter: u64, input_shared: bool, split: u64) {
    let a = c.arch;
    let h = a.hidden_size;
    let i = inter.div_ceil(split.max(1));
    match c.code {
        ModelCode::Megatron => {
            push(
                v,
                "fc1_input",
                if input_shared {
                    0
                } else {
                    t * h * c.linear_input / c.sp_div()
                },
            );
            match a.mlp {
                // bias_swiglu keeps the fc1 output (gate and up), fc2 keeps the product
                MlpKind::Gated => push(v, "swiglu", t * i * (2 * c.act + c.linear_input)),
                // GeLU input and fc2 input (Korthikanti: 8sbh + 8sbh for I = 4h)
                MlpKind::Standard => push(v, "gelu", t * i * (c.act + c.linear_input)),
            }
            push(
                v,
                "mlp_dropout_mask",
                c.dropout_mask(a.hidden_dropout, t * h / c.sp_div()),
            );
        }
        ModelCode::Transformers => {
            let (gate, up, gate_up, down) = a.mlp_names();
            if !input_shared {
                let names: &[&str] = match a.mlp {
                    MlpKind::Gated if !a.fused_gate_up => &[gate, up],
                    MlpKind::Gated => &[gate_up],
                    MlpKind::Standard => &[up],
                };
                push(v, "mlp_input", linear_inputs(c, names, t, h));
            }
            // the down projection keeps its input (the activated product) when it is trained
            let down_input = lora_input(c, down, t, i).unwrap_or(t * i * c.linear_input);
            match a.mlp {
                // gate (act input), act(gate), up (mul inputs), product (down_proj input)
                MlpKind::Gated if c.family.gpt_oss_blocks => {
                    // gpt-oss `_apply_gate`: gate_up output (2I), clamped gate, its
                    // sigmoid, up + 1 and their product (I each), and the down input
                    push(v, "gated_mlp", t * i * 6 * c.act + down_input)
                }
                MlpKind::Gated => push(v, "gated_mlp", t * i * 3 * c.act + down_input),
                // fc1 output (activation input) and activation output (fc2 input); for
                // `gelu_new`, the intermediates of its formula too
                MlpKind::Standard => push(v, "mlp", t * i * c.activation_saved() + down_input),
            }
            push(
                v,
                "mlp_dropout_mask",
                c.dropout_mask(a.hidden_dropout, t * h),
            );
        }
    }
}

/// MoE block: router, the tokens x top-k routed through the experts held here, shared experts.
fn moe_saved(c: &ActCtx, v: &mut Saves) {
    let a = c.arch;
    let Some(m) = &a.moe else { return };
    let t = c.tokens();
    let h = a.hidden_size;
    // router input (shared with the experts' input) and fp32 router probabilities
    // (a frozen router, LoRA, keeps no input: its input's gradient needs only the weight)
    let router_input = if c.lora.is_some() {
        0
    } else {
        shared_linear_input(c, t * h, 1)
    };
    push(v, "router", router_input + t * m.num_experts * 4);
    if c.family.router_fp32 && c.code == ModelCode::Transformers {
        // DeepSeek's gate: fp32 copies of the half input and router weight, kept by the
        // fp32 linear (an fp32 model's `.type(float32)` returns the tensors themselves;
        // under autocast the linear casts both back to half, counted with the other
        // linear inputs and autocast weight copies)
        let copy = if c.act < 4 && !c.autocast {
            t * h * 4 + h * m.num_experts * 4
        } else {
            0
        };
        push(v, "router_fp32_copies", copy);
    }
    // Each token visits top-k experts; with EP the tokens are spread over the EP ranks,
    // so on average one GPU processes t x k token-expert pairs for its share of experts
    // (dispatched input, expert MLP, and the weighted output for the combine). With MoE
    // parallel folding (Megatron-Core) the expert x expert-tensor parallel ranks hold
    // `ep x etp / tp` distinct token batches (tensor-parallel ranks share theirs): `t x k x
    // etp / tp` pairs per GPU, each expert's intermediate split over the etp ranks.
    let routed = (t * m.num_experts_per_tok * c.etp / c.tp.max(1)).max(1);
    // transformers' fused experts multiply with `grouped_mm`, which autocast does not
    // cast (integrations/moe.py `_grouped_mm`: `input.to(weight.dtype)`): under autocast
    // with fp32 weights the routed experts run in fp32, and keep fp32 tensors
    let e = if c.autocast && c.code == ModelCode::Transformers {
        ActCtx {
            act: c.residual,
            linear_input: c.residual,
            autocast: false,
            ..*c
        }
    } else {
        *c
    };
    // a frozen expert's grouped_mm needs only its weight for the input's gradient (LoRA
    // without expert adapters): it keeps no input
    let frozen_experts = c.lora.is_some_and(|(_, targets)| {
        let (_, _, _, down) = a.mlp_names();
        !targets.module_at("experts.", down)
    });
    if !frozen_experts {
        push(v, "expert_inputs", routed * h * e.linear_input);
    }
    mlp_saved_split(&e, v, routed, m.moe_intermediate_size, true, c.etp);
    push(v, "expert_outputs", routed * h * e.act);
    if m.shared_expert_intermediate_size > 0 {
        mlp_saved(c, v, t, m.shared_expert_intermediate_size, true);
    }
}

/// Tensors one decoder layer keeps for backward when nothing is recomputed (selective
/// recompute drops the attention-score terms).
pub fn layer_saved(c: &ActCtx, kind: FfnKind) -> Vec<Saved> {
    Saves::listed(c, kind, layer_saved_into)
}

/// The bytes of [`layer_saved`] (no list built).
pub fn layer_saved_bytes(c: &ActCtx, kind: FfnKind) -> u64 {
    Saves::summed(c, kind, layer_saved_into)
}

fn layer_saved_into(c: &ActCtx, kind: FfnKind, v: &mut Saves) {
    let t = c.tokens();
    let h = c.arch.hidden_size;
    let norms = c.arch.norms_per_layer;
    // input norm (and for Gemma-2/3 the extra post-norms, which keep the same tensors)
    norm_saved(c, v, "input_norm", t * h);
    attention_saved(c, v);
    if norms >= 2 {
        norm_saved(c, v, "post_attention_norm", t * h);
    }
    if norms >= 4 {
        norm_saved(c, v, "pre_feedforward_norm", t * h);
        norm_saved(c, v, "post_feedforward_norm", t * h);
    }
    // A parallel block (Phi-2, Falcon-7B) feeds the MLP from the same norm output.
    let shared = c.arch.parallel_attention && norms == 1;
    match kind {
        FfnKind::Moe => moe_saved(c, v),
        FfnKind::Dense => mlp_saved(c, v, t, c.arch.intermediate_size, shared),
    }
}

/// A layer's input as a checkpoint saves it: `b x s x h` in the residual dtype (divided
/// by TP with sequence parallelism).
pub fn layer_input_bytes(c: &ActCtx) -> u64 {
    c.tokens() * c.arch.hidden_size * c.residual / c.sp_div()
}

/// What one decoder layer keeps for backward under `torch.compile` (transformers modules,
/// dense layers, SDPA / flash attention). Inductor's partitioner
/// (torch/_functorch/partitioners.py `min_cut_rematerialization_partition`,
/// compiler="inductor") saves the smallest set of tensors from which backward can recompute
/// the rest with elementwise ops. It may not recompute a matmul or attention kernel, nor a
/// tensor a matmul reads again in backward (`is_materialized_backwards`), nor a reduction
/// whose output is 4x smaller than its input (`should_ban_recomputation`). What is left:
///
/// * the layer's input in the residual dtype (its first norm's input: the fp32 upcast and
///   the normalized copies are recomputed from it);
/// * each norm's per-token statistics (RMSNorm `rsqrt`: 4 B; LayerNorm mean and rstd: 8 B;
///   q_norm / k_norm per head);
/// * each linear layer group's input once, in its compute dtype (the weight gradient's
///   matmul reads it; AOTAutograd's CSE merges the per-projection autocast casts);
/// * the attention kernel's inputs (q and k after rotary, v) and its output and logsumexp;
///   with q_norm / k_norm also their inputs (the projections' outputs);
/// * the matmul outputs a later norm or activation function needs in backward: the
///   attention output projection's (the next norm's input is the residual plus it, and the
///   residual is saved already; none in a parallel block), gate and up (the activation's
///   backward reads both) or a plain MLP's fc1 output, and with Gemma's post-feedforward
///   norm the down projection's;
/// * dropout masks (1 B per element: random ops are never recomputed).
///
/// Measured (probe/probe.py with `compile: true`, the `aot_eager_decomp_partition` backend:
/// inductor's decompositions and partitioner): Llama-3.2-1B in bf16 keeps 75 912 B per
/// token per layer (eager: 108 680).
pub fn compiled_saved(c: &ActCtx, kind: FfnKind) -> Vec<Saved> {
    Saves::listed(c, kind, compiled_saved_into)
}

/// The bytes of [`compiled_saved`] (no list built).
pub fn compiled_saved_bytes(c: &ActCtx, kind: FfnKind) -> u64 {
    Saves::summed(c, kind, compiled_saved_into)
}

fn compiled_saved_into(c: &ActCtx, kind: FfnKind, v: &mut Saves) {
    let a = c.arch;
    let t = c.tokens();
    let h = a.hidden_size;
    let AttnShapes {
        heads,
        kv,
        q_elems,
        k_elems,
        v_elems,
        o_elems,
        ..
    } = AttnShapes::of(c);
    push(v, "layer_input", layer_input_bytes(c));
    let per_token = match a.norm {
        NormKind::RmsNorm => 4,
        NormKind::LayerNorm => 8,
    };
    let qk_stats = if a.qk_norm { (heads + kv) * 4 } else { 0 };
    push(
        v,
        "norm_statistics",
        t * (a.norms_per_layer * per_token + qk_stats),
    );
    push(v, "qkv_input", t * h * c.linear_input);
    if a.qk_norm {
        push(v, "qk_norm_inputs", (q_elems + k_elems) * c.act);
    }
    push(v, "q_k", (q_elems + k_elems) * c.act);
    value_saved(c, v, q_elems + k_elems, v_elems);
    push(v, "attention_output", o_elems * c.act);
    push(v, "attention_lse", c.b * heads * c.s * 4);
    if a.rotates_by_concatenation(c.family) {
        push(v, "o_proj_input", o_elems * c.linear_input);
    }
    let parallel = a.parallel_attention;
    if !parallel {
        push(v, "o_proj_output", t * h * c.act);
    }
    if !(parallel && a.norms_per_layer == 1) {
        push(v, "mlp_input", t * h * c.linear_input);
    }
    if kind == FfnKind::Dense {
        let i = a.intermediate_size.div_ceil(c.tp);
        match a.mlp {
            MlpKind::Gated => push(v, "gated_mlp", t * i * (2 * c.act + c.linear_input)),
            MlpKind::Standard => push(v, "mlp", t * i * (c.act + c.linear_input)),
        }
    }
    if a.norms_per_layer >= 4 {
        push(v, "down_proj_output", t * h * c.act);
    }
    push(
        v,
        "dropout_masks",
        2 * c.dropout_mask(a.hidden_dropout, t * h),
    );
}

/// Bytes one layer keeps under the configured recomputation.
///
/// * none / selective: [`layer_saved`] ([`compiled_saved`] under `torch.compile`);
/// * full: the layer input only (`b x s x h`, divided by TP with SP under Megatron;
///   Korthikanti Sec. 5: "2sbh per layer");
/// * selective_op: the input and [`op_sac_saved`].
pub fn layer_bytes(c: &ActCtx, kind: FfnKind) -> u64 {
    let input = || layer_input_bytes(c);
    match c.recompute {
        Recompute::Full => input(),
        Recompute::SelectiveOp => input() + op_sac_saved_bytes(c, kind),
        _ if c.compiled => compiled_saved_bytes(c, kind),
        _ => layer_saved_bytes(c, kind),
    }
}

/// What torchtitan's per-op selective checkpointing keeps of one layer besides its input
/// (torchtitan `_apply_ac_to_transformer_block`, option "op": `_save_list` = `aten.mm`,
/// the SDPA flash / memory-efficient kernels, `reduce_scatter_tensor`, `aten.max`; every
/// second `mm` of the layer is recomputed): the outputs of the odd-numbered `mm`s in
/// forward order, and the attention kernel's output and fp32 logsumexp. A linear layer
/// with a bias runs `addmm` (aten `linear` on a contiguous 3-D input), which is not on the
/// list; the routed experts' `grouped_mm` is not either. Eager attention's matmuls are
/// `bmm`s: nothing of it is kept. Measured: Llama-3.2-1B keeps q, v, gate and down outputs
/// and the SDPA output + logsumexp, 29 824 B per token per layer.
pub fn op_sac_saved(c: &ActCtx, kind: FfnKind) -> Vec<Saved> {
    Saves::listed(c, kind, op_sac_saved_into)
}

/// The bytes of [`op_sac_saved`] (no list built).
pub fn op_sac_saved_bytes(c: &ActCtx, kind: FfnKind) -> u64 {
    Saves::summed(c, kind, op_sac_saved_into)
}

fn op_sac_saved_into(c: &ActCtx, kind: FfnKind, v: &mut Saves) {
    use crate::model::{Part, Shape, TpSplit};
    let a = c.arch;
    let t = c.tokens();
    let mut mms = 0u64;
    let mut outputs = 0u64;
    for g in a.layer_groups(kind) {
        let Shape::Linear {
            out_features, bias, ..
        } = g.shape
        else {
            continue;
        };
        if bias || g.part == Part::Experts {
            continue;
        }
        mms += 1;
        if mms.is_multiple_of(2) {
            continue;
        }
        let out = match g.tp {
            TpSplit::Column | TpSplit::Vocab => out_features.div_ceil(c.tp),
            _ => out_features,
        };
        let elem = if g.part == Part::Router && c.family.router_fp32 && !c.autocast {
            4
        } else {
            c.act
        };
        outputs += t * out * elem;
    }
    push(v, "saved_mm_outputs", outputs);
    if c.attention != Attention::Eager {
        let AttnShapes { heads, o_elems, .. } = AttnShapes::of(c);
        push(v, "attention_output", o_elems * c.act);
        push(v, "attention_lse", c.b * heads * c.s * 4);
    }
}

/// transformers passes SDPA an explicit mask on its sliding-window layers: once a
/// sequence of `s_full` tokens reaches the window (`masking_utils._ignore_causal_mask_sdpa`
/// skips the mask only while `kv_length < sliding_window`), for transformers' SDPA
/// attention on models without MLA. With a mask SDPA cannot take `is_causal`: its
/// memory-efficient kernel runs instead of flash and visits every key
/// ([`sliding_mask_bytes`] is what the mask costs in memory; step time counts every key).
pub(crate) fn sdpa_sliding_mask(
    code: ModelCode,
    attention: Attention,
    arch: &ModelArch,
    s_full: u64,
) -> bool {
    code == ModelCode::Transformers
        && attention == Attention::Sdpa
        && arch.mla.is_none()
        && arch.sliding_window.is_some_and(|w| s_full >= w)
}

/// What one sliding-window layer keeps beyond [`layer_bytes`] when SDPA gets an explicit
/// mask: transformers builds the sliding-window mask once the keys reach the window
/// (`masking_utils._ignore_causal_mask_sdpa` skips it only while `kv_length <
/// sliding_window`); with a mask SDPA cannot take `is_causal` nor native GQA
/// (`sdpa_attention.use_gqa_in_sdpa`), so `repeat_kv` expands K and V to every query head
/// (the expanded copies replace K and V as what attention keeps), and SDPA converts the
/// boolean mask to an additive one per call (`convert_boolean_attn_mask`: `b x 1 x s x s_kv`
/// in the activation dtype), which the memory-efficient kernel keeps for backward.
/// Measured: the DeepSpeed and single-GPU probes of Mistral-7B at 4096 tokens (window
/// 4096) keep 83.9 MB per layer more than at 4095, which is this term. Under
/// `torch.compile` the mask only (probe: Gemma-3-1B's sliding layers at 1024 tokens).
pub fn sliding_mask_bytes(c: &ActCtx) -> u64 {
    let a = c.arch;
    let masked =
        !c.recompute.checkpoints_layers() && sdpa_sliding_mask(c.code, c.attention, a, c.s_full);
    if !masked {
        return 0;
    }
    let heads = a.num_attention_heads.div_ceil(c.tp);
    let kv = a.num_key_value_heads.div_ceil(c.tp);
    let d = a.head_dim;
    // a compiled layer recomputes the repeated K and V from K and V (a copy of an expanded
    // view is elementwise), which it saves anyway; the mask is an input of its graph
    let repeated = if c.compiled {
        0
    } else {
        c.tokens() * heads.saturating_sub(kv) * 2 * d * c.act
    };
    c.b * c.s * c.s_full * c.act + repeated
}

/// Extra memory while one layer runs its forward, beyond what it keeps (transformers
/// modules; Megatron's fused kernels keep no such intermediates).
///
/// * Eager attention (`eager_attention_forward`): the scores are half, or fp32 under
///   autocast where adding the fp32 causal mask promotes them. `softmax(scores, dim=-1,
///   dtype=float32)` converts half scores to an fp32 copy before the softmax kernel (ATen
///   `SoftMax.cpp softmax`; only CUDA fp16 has the fused half-to-float path), so the scores,
///   that copy and the fp32 result are alive at once; `.to(dtype)` then adds the half copy
///   while the scores and the result are still held. Without recomputation the result and
///   its half copy are saved anyway, so the scores and the copy are the extra.
/// * Under full recomputation nothing is saved inside the layer, so the MLP's working set
///   (`act(gate)`, `up` and their product: 3 x I per token; for a plain MLP the
///   activation's intermediates and its output) is extra too.
pub fn forward_transient<N: Num>(c: &ActCtx, kind: FfnKind) -> N {
    let (n, bytes) = (N::n, N::bytes);
    if c.code == ModelCode::Megatron {
        return N::zero();
    }
    let full = c.recompute.checkpoints_layers();
    let attn = if c.attention == Attention::Eager {
        let scores = if c.autocast { 4 } else { c.act };
        let converted = if scores == 2 && !c.fp16 { 4 } else { 0 };
        let half = if c.act < 4 { c.act } else { 0 };
        let per = if full {
            (scores + converted + 4).max(scores + 4 + half)
        } else {
            scores + converted
        };
        n(c.score_elems(), "attention scores") * bytes(per)
    } else {
        N::zero()
    };
    let mlp = match kind {
        FfnKind::Dense if full => {
            let i = c.arch.intermediate_size.div_ceil(c.tp);
            let per = match c.arch.mlp {
                MlpKind::Gated => 3 * c.act,
                MlpKind::Standard => c.activation_saved() + c.act,
            };
            n(c.tokens(), "tokens") * n(i, "intermediate") * bytes(per)
        }
        _ => N::zero(),
    };
    max_bytes([attn, mlp])
}

/// Extra memory while one layer runs its backward: the layer's recomputed activations under
/// full recomputation (or its attention core under selective), plus the gradients of its
/// largest intermediates (grad of the MLP product, of act(gate) and up: 3 x I per token;
/// eager attention: the fp32 softmax gradient and its half copy).
pub fn backward_transient<N: Num>(c: &ActCtx, kind: FfnKind) -> N {
    let (n, bytes) = (N::n, N::bytes);
    let t = c.tokens();
    let a = c.arch;
    let inter = match (kind, &a.moe) {
        (FfnKind::Moe, Some(m)) => m.moe_intermediate_size * m.num_experts_per_tok,
        _ => a.intermediate_size,
    };
    let mlp_grads = n(t, "tokens")
        * n(inter.div_ceil(c.tp), "intermediate")
        * bytes(c.act)
        * n(if a.mlp == MlpKind::Gated { 3 } else { 2 }, "gradients");
    let attn_grads = if c.attention == Attention::Eager {
        n(c.score_elems(), "attention scores") * bytes(4 + c.act)
    } else {
        N::zero()
    };
    let recomputed = match c.recompute {
        // a compiled checkpointed layer recomputes its compiled saved set; its input is
        // the checkpoint's, held already
        Recompute::Full if c.compiled => n(
            compiled_saved_bytes(c, kind) - layer_input_bytes(c),
            "B recomputed activations",
        ),
        // per-op selective checkpointing recomputes what it did not save; the saved outputs
        // of this layer are still alive until its backward ends: the whole set, as full
        Recompute::Full | Recompute::SelectiveOp => {
            n(layer_saved_bytes(c, kind), "B recomputed activations")
        }
        Recompute::Selective if c.attention == Attention::Eager => {
            n(c.score_elems(), "recomputed attention scores") * bytes(4 + c.act)
        }
        _ => N::zero(),
    };
    recomputed + max_bytes([mlp_grads, attn_grads])
}

/// The largest of byte counts, writing only the non-zero ones.
pub(crate) fn max_bytes<N: Num>(terms: impl IntoIterator<Item = N>) -> N {
    N::max(terms.into_iter().filter(|t| !t.is_zero()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Moe;

    /// A GPT-3-style layer (MHA, GeLU MLP with I = 4h, LayerNorm, dropout 0.1).
    fn gpt_like(h: u64, a: u64) -> ModelArch {
        ModelArch {
            name: "gpt".into(),
            model_type: "gpt2".into(),
            hidden_size: h,
            num_hidden_layers: 2,
            num_attention_heads: a,
            num_key_value_heads: a,
            head_dim: h / a,
            intermediate_size: 4 * h,
            vocab_size: 50257,
            max_position_embeddings: 2048,
            tie_word_embeddings: true,
            hidden_act: "gelu".into(),
            norm: NormKind::LayerNorm,
            mlp: MlpKind::Standard,
            norms_per_layer: 2,
            qk_norm: false,
            qkv_bias: true,
            o_bias: true,
            mlp_bias: true,
            lm_head_bias: false,
            fused_qkv: true,
            fused_gate_up: false,
            parallel_attention: false,
            learned_position_embeddings: 2048,
            attention_dropout: 0.1,
            hidden_dropout: 0.1,
            mla: None,
            moe: None,
            sliding_window: None,
            sliding_layers: vec![],
            vision: None,
            num_nextn_predict_layers: 0,
        }
    }

    fn ctx(
        arch: &ModelArch,
        tp: u64,
        sp: bool,
        attention: Attention,
        recompute: Recompute,
    ) -> ActCtx<'_> {
        ActCtx {
            arch,
            family: arch.family(),
            b: 1,
            s: 2048,
            s_full: 2048,
            tp,
            sp,
            ep: 1,
            etp: 1,
            code: ModelCode::Megatron,
            attention,
            recompute,
            act: 2,
            residual: 2,
            linear_input: 2,
            autocast: false,
            fp16: false,
            lora: None,
            compiled: false,
            repeat_kv: false,
        }
    }

    #[test]
    fn korthikanti_table2() {
        // Korthikanti et al. 2022, Table 2, one layer: sbh (34 + 5 a s / h), in bytes.
        let (h, a, s, b) = (12288u64, 96u64, 2048u64, 1u64);
        let arch = gpt_like(h, a);
        let none = layer_bytes(
            &ctx(&arch, 1, false, Attention::Eager, Recompute::None),
            FfnKind::Dense,
        );
        assert_eq!(none, s * b * h * 34 + 5 * a * s * s * b);
        // tensor parallel t = 8 without SP: sbh (10 + 24/t + 5 a s / (h t))
        let t = 8;
        let tp = layer_bytes(
            &ctx(&arch, t, false, Attention::Eager, Recompute::None),
            FfnKind::Dense,
        );
        assert_eq!(
            tp,
            s * b * h * 10 + s * b * h * 24 / t + 5 * a * s * s * b / t
        );
        // TP + SP: sbh/t (34 + 5as/h)
        let tpsp = layer_bytes(
            &ctx(&arch, t, true, Attention::Eager, Recompute::None),
            FfnKind::Dense,
        );
        assert_eq!(tpsp, (s * b * h * 34 + 5 * a * s * s * b) / t);
        // TP + SP + selective: 34 sbh / t (the formula Megatron's
        // theoretical_memory_usage.py uses: sbh (18 + 4 ffn/h) / t)
        let sel = layer_bytes(
            &ctx(&arch, t, true, Attention::Eager, Recompute::Selective),
            FfnKind::Dense,
        );
        assert_eq!(sel, s * b * h * (18 + 4 * 4) / t);
        // full recompute: 2sbh / t with SP
        let full = layer_bytes(
            &ctx(&arch, t, true, Attention::Eager, Recompute::Full),
            FfnKind::Dense,
        );
        assert_eq!(full, 2 * s * b * h / t);
    }

    #[test]
    fn flash_drops_the_quadratic_term() {
        let arch = gpt_like(4096, 32);
        let eager = layer_bytes(
            &ctx(&arch, 1, false, Attention::Eager, Recompute::None),
            FfnKind::Dense,
        );
        let flash = layer_bytes(
            &ctx(&arch, 1, false, Attention::Flash, Recompute::None),
            FfnKind::Dense,
        );
        // 5 a s^2 b out, lse (4 bytes x a x s x b) in
        assert_eq!(eager - flash, 5 * 32 * 2048 * 2048 - 4 * 32 * 2048);
    }

    #[test]
    fn moe_layer_uses_top_k_tokens() {
        let mut arch = gpt_like(1024, 16);
        arch.mlp = MlpKind::Gated;
        arch.hidden_dropout = 0.0;
        arch.moe = Some(Moe {
            num_experts: 8,
            num_experts_per_tok: 2,
            moe_intermediate_size: 512,
            shared_expert_intermediate_size: 0,
            shared_expert_gate: false,
            first_k_dense_replace: 0,
            moe_layer_freq: 1,
            mlp_only_layers: vec![],
            qwen_layer_rule: false,
        });
        let c = ctx(&arch, 1, false, Attention::Flash, Recompute::None);
        let saved = layer_saved(&c, FfnKind::Moe);
        let get = |n| {
            saved
                .iter()
                .find(|s| s.name == n)
                .map(|s| s.bytes)
                .unwrap_or(0)
        };
        // swiglu over 2 x 2048 routed tokens: 2 x 2048 x 512 x (2 x 2 + 2)
        assert_eq!(get("swiglu"), 2 * 2048 * 512 * 6);
        assert_eq!(get("expert_inputs"), 2 * 2048 * 1024 * 2);
    }
}
