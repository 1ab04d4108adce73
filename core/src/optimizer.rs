//! Optimizers: state bytes per parameter, one table row each.
//!
//! Adding an optimizer is adding one row to [`OPTIMIZERS`]: the JSON name, the UI label
//! and the memory facts all come from the row.
//! `states` counts tensors of the parameter's shape kept between steps; their dtype is
//! the regime's optimizer-state dtype (fp32 with master weights, bf16 in pure bf16), unless
//! the row fixes a quantized width. Adafactor's factored second moment is computed from the
//! real matrix shapes by the caller ([`StateLayout::Factored`]).

use crate::term::Num;
use serde::{Deserialize, Serialize};

/// Which implementation of a PyTorch optimizer runs the step (`torch.optim` `foreach=` /
/// `fused=`). DeepSpeed and Megatron use their own fused Adam/LAMB kernels regardless.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OptimizerImpl {
    /// Multi-tensor `_foreach_*` ops over all parameters at once: PyTorch's default on CUDA.
    /// Allocates the optimizer's temporaries for every parameter at once.
    #[default]
    Foreach,
    /// One fused kernel (`fused=True`; HF Trainer `adamw_torch_fused`, its default with
    /// torch >= 2.8): no temporaries.
    Fused,
    /// One parameter at a time (`foreach=False`): temporaries of the largest tensor only.
    ForLoop,
}

/// The `training.optimizer` value: a row of [`OPTIMIZERS`], written in JSON by its name
/// (`"adamw"`). Unknown names are rejected with the list of known ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Optimizer(usize);

impl Default for Optimizer {
    fn default() -> Self {
        Optimizer::named("adamw").expect("adamw is in the table")
    }
}

impl Serialize for Optimizer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Optimizer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Optimizer::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown optimizer {name:?}; expected one of {}",
                OPTIMIZERS
                    .iter()
                    .map(|r| r.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Optimizer {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Optimizer".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = OPTIMIZERS.iter().map(|r| r.name).collect();
        schemars::json_schema!({
            "type": "string",
            "enum": names,
            "description": "Optimizer name (states per parameter in core/src/optimizer.rs)."
        })
    }
}

/// How an optimizer's state is laid out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StateLayout {
    /// `n` full-size state tensors in the regime's state dtype.
    Full(u32),
    /// `n` full-size states quantized to `bits` with one fp32 scale per `block` elements;
    /// tensors with fewer than `min_numel` elements keep 32-bit states
    /// (bitsandbytes `min_8bit_size` = 4096; torchao 4-bit likewise).
    Quantized {
        states: u32,
        bits: u32,
        block: u64,
        min_numel: u64,
    },
    /// Adafactor (Shazeer & Stern 2018, Alg. 4): a matrix keeps a row and a column vector of
    /// second moments (rows + cols elements); a vector keeps a full second moment; plus
    /// `momentum` full states when beta1 is set.
    Factored { momentum: u32 },
}

/// One optimizer's row.
#[derive(Debug, Clone, Copy)]
pub struct OptimizerInfo {
    /// The JSON name.
    pub name: &'static str,
    /// Display name.
    pub label: &'static str,
    pub layout: StateLayout,
    /// Full-size temporaries the multi-tensor (`foreach`) step allocates at once over all
    /// parameters, in state dtype (PyTorch `_multi_tensor_*`: e.g. AdamW's
    /// `exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)`).
    pub foreach_temporaries: u32,
    /// DeepSpeed / Megatron / apex ship a fused multi-tensor kernel for it (FusedAdam,
    /// FusedLamb, FusedSGD): no temporaries under those engines.
    pub fused_kernel: bool,
    /// Where the state sizes come from.
    pub source: &'static str,
    /// Optimizers that step one parameter at a time whatever `optimizer_impl` says: fp32
    /// temporaries (4 B each) per element of the tensor being stepped, at the step's peak.
    pub loop_fp32_temporaries: u32,
    /// The per-parameter loop upcasts a half-precision gradient and parameter to fp32
    /// working copies first (2 x 4 B per element more).
    pub loop_upcasts_half: bool,
    /// bitsandbytes paged optimizer: states in CUDA unified memory (`cudaMallocManaged`),
    /// outside PyTorch's allocator.
    pub paged: bool,
    /// DeepSpeed's `optimizer.type` for it, when DeepSpeed names it.
    pub deepspeed_name: Option<&'static str>,
}

const fn row(
    name: &'static str,
    label: &'static str,
    layout: StateLayout,
    foreach_temporaries: u32,
    fused_kernel: bool,
    source: &'static str,
) -> OptimizerInfo {
    OptimizerInfo {
        name,
        label,
        layout,
        foreach_temporaries,
        fused_kernel,
        source,
        loop_fp32_temporaries: 0,
        loop_upcasts_half: false,
        paged: false,
        deepspeed_name: None,
    }
}

impl OptimizerInfo {
    /// Marks a per-parameter-loop optimizer (see [`OptimizerInfo::loop_fp32_temporaries`]).
    const fn looped(mut self, fp32_temporaries: u32, upcasts_half: bool) -> Self {
        self.loop_fp32_temporaries = fp32_temporaries;
        self.loop_upcasts_half = upcasts_half;
        self
    }
    /// Marks a bitsandbytes paged optimizer (see [`OptimizerInfo::paged`]).
    const fn paged(mut self) -> Self {
        self.paged = true;
        self
    }
    /// DeepSpeed's `optimizer.type` (deepspeed/runtime/config.py optimizer names).
    const fn deepspeed(mut self, name: &'static str) -> Self {
        self.deepspeed_name = Some(name);
        self
    }
}

use StateLayout::{Factored, Full, Quantized};

/// The optimizer table.
#[rustfmt::skip]
pub const OPTIMIZERS: &[OptimizerInfo] = &[
    row("sgd", "SGD", Full(0), 0, true, "torch.optim.SGD, momentum=0: no state"),
    row("sgd_momentum", "SGD + momentum", Full(1), 0, true, "torch.optim.SGD(momentum>0): momentum_buffer"),
    row("nesterov", "SGD Nesterov", Full(1), 1, true, "torch.optim.SGD(nesterov=True): momentum_buffer; foreach adds grads + momentum x buf into a new list"),
    row("adagrad", "Adagrad", Full(1), 1, false, "torch.optim.Adagrad: sum; foreach std = sqrt(sum) + eps").deepspeed("Adagrad"),
    row("rmsprop", "RMSprop", Full(1), 1, false, "torch.optim.RMSprop: square_avg (momentum_buffer / grad_avg only if enabled); foreach avg = sqrt(square_avg)"),
    row("adam", "Adam", Full(2), 1, true, "torch.optim.Adam: exp_avg, exp_avg_sq (Kingma & Ba 2015); foreach exp_avg_sq_sqrt").deepspeed("Adam"),
    row("adamw", "AdamW", Full(2), 1, true, "torch.optim.AdamW: exp_avg, exp_avg_sq (Loshchilov & Hutter 2019); foreach exp_avg_sq_sqrt").deepspeed("AdamW"),
    row("amsgrad", "AMSGrad", Full(3), 1, false, "torch.optim.AdamW(amsgrad=True): exp_avg, exp_avg_sq, max_exp_avg_sq"),
    row("nadam", "NAdam", Full(2), 2, false, "torch.optim.NAdam: exp_avg, exp_avg_sq (+ scalar mu_product); foreach exp_avg_sq_sqrt and a grad copy"),
    row("radam", "RAdam", Full(2), 1, false, "torch.optim.RAdam: exp_avg, exp_avg_sq"),
    row("adamax", "Adamax", Full(2), 1, false, "torch.optim.Adamax: exp_avg, exp_inf"),
    row("adadelta", "Adadelta", Full(2), 2, false, "torch.optim.Adadelta: square_avg, acc_delta"),
    row("adabelief", "AdaBelief", Full(2), 1, false, "AdaBelief (Zhuang et al. 2020, adabelief-pytorch): exp_avg, exp_avg_var"),
    row("lamb", "LAMB", Full(2), 1, true, "LAMB (You et al. 2020; apex FusedLAMB): exp_avg, exp_avg_sq").deepspeed("Lamb"),
    row("lion", "Lion", Full(1), 1, false, "Lion (Chen et al. 2023, lion-pytorch): exp_avg").deepspeed("Lion"),
    row("adafactor", "Adafactor", Factored { momentum: 0 }, 0, false, "Adafactor (Shazeer & Stern 2018; transformers.optimization.Adafactor, beta1=None): exp_avg_sq_row + exp_avg_sq_col per matrix, exp_avg_sq per vector; steps each parameter in a Python loop: grad.float() and p.float() for half tensors, then `update = grad**2 + eps` and `_approx_sq_grad` (2 fp32 tensors alive)").looped(2, true),
    row("torch_adafactor", "Adafactor (torch.optim)", Factored { momentum: 0 }, 1, false, "torch.optim.Adafactor (PyTorch >= 2.5; foreach by default on CUDA): row_var + col_var per matrix, variance per vector; the foreach step (torch/optim/_adafactor.py _multi_tensor_adafactor) builds var_estimates = row_var @ col_var for every matrix of a dtype group at once, one parameter-sized tensor each"),
    row("sophia", "Sophia", Full(2), 1, false, "Sophia (Liu et al. 2023, SophiaG): exp_avg, hessian"),
    row("adamw_8bit", "AdamW 8-bit (bitsandbytes)", Quantized { states: 2, bits: 8, block: 256, min_numel: 4096 }, 0, false, "bitsandbytes AdamW8bit: two 8-bit states, blockwise absmax (fp32) per 256 elements; tensors < 4096 elements keep fp32 states (min_8bit_size)"),
    row("paged_adamw_8bit", "Paged AdamW 8-bit (bitsandbytes)", Quantized { states: 2, bits: 8, block: 256, min_numel: 4096 }, 0, false, "bitsandbytes PagedAdamW8bit: as AdamW8bit, in CUDA unified (pageable) memory").paged(),
    row("adamw_4bit", "AdamW 4-bit (torchao)", Quantized { states: 2, bits: 4, block: 128, min_numel: 4096 }, 0, false, "torchao AdamW4bit: two 4-bit states, one scale per 128 elements; small tensors in fp32"),
    row("lion_8bit", "Lion 8-bit (bitsandbytes)", Quantized { states: 1, bits: 8, block: 256, min_numel: 4096 }, 0, false, "bitsandbytes Lion8bit: one 8-bit state, blockwise absmax per 256"),
];

impl Optimizer {
    /// The optimizer with this JSON name.
    pub fn named(name: &str) -> Option<Optimizer> {
        OPTIMIZERS
            .iter()
            .position(|r| r.name == name)
            .map(Optimizer)
    }
    /// This optimizer's table row.
    pub fn info(self) -> &'static OptimizerInfo {
        &OPTIMIZERS[self.0]
    }
    /// The JSON name.
    pub fn name(self) -> &'static str {
        self.info().name
    }
    /// Every optimizer, in table order.
    pub fn all() -> impl Iterator<Item = Optimizer> {
        (0..OPTIMIZERS.len()).map(Optimizer)
    }
}

/// State bytes of one parameter tensor of `rows x cols` elements (`cols = 1` for a vector)
/// under `layout`, with full states of `state_bytes` bytes per element.
/// Source of each layout: see [`StateLayout`].
pub fn state_bytes_for_tensor(layout: StateLayout, rows: u64, cols: u64, state_bytes: u64) -> u64 {
    let n = rows * cols;
    match layout {
        Full(k) => k as u64 * n * state_bytes,
        Quantized {
            states,
            bits,
            block,
            min_numel,
        } => {
            if n < min_numel {
                // bitsandbytes keeps 32-bit states for small tensors
                states as u64 * n * 4
            } else {
                states as u64 * (n * bits as u64).div_ceil(8)
                    + states as u64 * n.div_ceil(block) * 4
            }
        }
        Factored { momentum } => {
            let second = if cols > 1 && rows > 1 { rows + cols } else { n };
            (second + momentum as u64 * n) * state_bytes
        }
    }
}

/// Optimizer-state elements of a set of parameter tensors, counted tensor by tensor as
/// the [`StateLayout`] sizes them, so that the sum renders as one formula:
/// [`StateCount::expr`] equals the sum of [`state_bytes_for_tensor`] over the tensors.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StateCount {
    /// Elements of every tensor.
    pub numel: u64,
    /// Quantized layouts: elements of the tensors under `min_numel` (32-bit states).
    pub small: u64,
    /// Quantized layouts: bytes of one packed state over the other tensors
    /// (sum of `ceil(numel x bits / 8)`).
    pub packed: u64,
    /// Quantized layouts: scale blocks of one state (sum of `ceil(numel / block)`).
    pub blocks: u64,
    /// Factored layouts: second-moment elements (`rows + cols` per matrix, `numel` per vector).
    pub second: u64,
}

impl StateCount {
    /// Adds `times` tensors of `rows x cols` elements.
    pub fn add(&mut self, layout: StateLayout, rows: u64, cols: u64, times: u64) {
        let numel = rows * cols;
        self.numel += numel * times;
        match layout {
            Full(_) => {}
            Quantized {
                bits,
                block,
                min_numel,
                ..
            } => {
                if numel < min_numel {
                    self.small += numel * times;
                } else {
                    self.packed += (numel * bits as u64).div_ceil(8) * times;
                    self.blocks += numel.div_ceil(block) * times;
                }
            }
            Factored { .. } => {
                let second = if cols > 1 && rows > 1 {
                    rows + cols
                } else {
                    numel
                };
                self.second += second * times;
            }
        }
    }
    /// The count of `k` times the tensors (every field is a sum over them).
    pub fn times(self, k: u64) -> StateCount {
        StateCount {
            numel: self.numel * k,
            small: self.small * k,
            packed: self.packed * k,
            blocks: self.blocks * k,
            second: self.second * k,
        }
    }
    /// Adds another count.
    pub fn plus(mut self, o: StateCount) -> StateCount {
        self.numel += o.numel;
        self.small += o.small;
        self.packed += o.packed;
        self.blocks += o.blocks;
        self.second += o.second;
        self
    }
    /// The state bytes, full states being `state_bytes` per element (source: the layout's
    /// row in [`OPTIMIZERS`]).
    pub fn expr<N: Num>(&self, layout: StateLayout, state_bytes: u64) -> N {
        let (n, bytes) = (N::n, N::bytes);
        match layout {
            Full(k) => n(k as u64, "states") * bytes(state_bytes) * n(self.numel, "params"),
            Quantized { states, .. } => {
                n(states as u64, "states")
                    * N::sum([
                        bytes(4) * n(self.small, "params of small tensors"),
                        n(self.packed, "B packed"),
                        bytes(4) * n(self.blocks, "absmax blocks"),
                    ])
                    .label("")
            }
            Factored { momentum } => {
                bytes(state_bytes)
                    * N::sum([
                        n(self.second, "factored second-moment elements"),
                        n(momentum as u64, "momentum states") * n(self.numel, "params"),
                    ])
                    .label("")
            }
        }
    }
}

/// The step's temporaries for `params` parameter elements, the largest tensor having
/// `largest` (PyTorch optimizers allocate their temporaries for all parameters at once in
/// the multi-tensor `foreach` implementation, its CUDA default; none when `fused`; one
/// tensor's worth in the for-loop implementation). Per-parameter-loop optimizers (HF
/// Adafactor) add their fp32 work on the largest tensor, and fp32 copies of a half one.
pub fn step_temporaries<N: Num>(
    info: &OptimizerInfo,
    imp: OptimizerImpl,
    state_bytes: u64,
    weight_bytes: u64,
    params: u64,
    largest: u64,
) -> N {
    let (n, bytes) = (N::n, N::bytes);
    let span = match imp {
        OptimizerImpl::Foreach => n(params, "params"),
        OptimizerImpl::Fused => N::zero(),
        OptimizerImpl::ForLoop => N::min([
            n(params, "params"),
            n(largest, "params of the largest tensor"),
        ]),
    };
    let upcast = if info.loop_upcasts_half && weight_bytes < 4 {
        8
    } else {
        0
    };
    let looped = info.loop_fp32_temporaries as u64 * 4 + upcast;
    n(info.foreach_temporaries as u64, "temporaries") * bytes(state_bytes) * span
        + bytes(looped)
            * N::min([
                n(params, "params"),
                n(largest, "params of the largest tensor"),
            ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_least_18_optimizers_with_distinct_names() {
        assert!(OPTIMIZERS.len() >= 18);
        let mut names: Vec<_> = OPTIMIZERS.iter().map(|r| r.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), OPTIMIZERS.len());
        for o in Optimizer::all() {
            // the JSON name round-trips through serde
            let v: Optimizer = serde_json::from_str(&format!("\"{}\"", o.name())).unwrap();
            assert_eq!(v, o);
        }
        let e = serde_json::from_str::<Optimizer>("\"adamw_9bit\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("adamw_8bit"), "{e}");
    }

    #[test]
    fn state_bytes() {
        // AdamW fp32 states: 2 x 4 B = 8 B per element
        assert_eq!(
            state_bytes_for_tensor(
                Optimizer::named("adamw").unwrap().info().layout,
                4096,
                4096,
                4
            ),
            8 * 4096 * 4096
        );
        // Adafactor: 4096 x 11008 matrix keeps 4096 + 11008 fp32 values
        assert_eq!(
            state_bytes_for_tensor(
                Optimizer::named("adafactor").unwrap().info().layout,
                4096,
                11008,
                4
            ),
            (4096 + 11008) * 4
        );
        // Adafactor on a vector keeps it whole
        assert_eq!(
            state_bytes_for_tensor(
                Optimizer::named("adafactor").unwrap().info().layout,
                4096,
                1,
                4
            ),
            4096 * 4
        );
        // 8-bit AdamW on 4096 x 4096: 2 x 16 777 216 B + 2 x 65 536 absmax x 4 B
        assert_eq!(
            state_bytes_for_tensor(
                Optimizer::named("adamw_8bit").unwrap().info().layout,
                4096,
                4096,
                4
            ),
            2 * 16_777_216 + 2 * 65_536 * 4
        );
        // ...and a 4096-vector is under min_8bit_size? no: exactly 4096 is quantized
        assert_eq!(
            state_bytes_for_tensor(
                Optimizer::named("adamw_8bit").unwrap().info().layout,
                4095,
                1,
                4
            ),
            2 * 4095 * 4
        );
    }
}

crate::config::choices!(OptimizerImpl {
    Foreach => "foreach (PyTorch default)",
    Fused => "fused",
    ForLoop => "for-loop",
});
