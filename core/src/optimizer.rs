//! Optimizers: state bytes per parameter, one table row each.
//!
//! Adding an optimizer is adding one row to [`OPTIMIZERS`] and one enum variant.
//! `states` counts tensors of the parameter's shape kept between steps; their dtype is
//! the regime's optimizer-state dtype (fp32 with master weights, bf16 in pure bf16), unless
//! the row fixes a quantized width. Adafactor's factored second moment is computed from the
//! real matrix shapes by the caller ([`StateLayout::Factored`]).

use serde::{Deserialize, Serialize};

/// The `training.optimizer` value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Optimizer {
    Sgd,
    SgdMomentum,
    Nesterov,
    Adagrad,
    Rmsprop,
    Adam,
    #[default]
    Adamw,
    Amsgrad,
    Nadam,
    Radam,
    Adamax,
    Adadelta,
    Adabelief,
    Lamb,
    Lion,
    Adafactor,
    Sophia,
    #[serde(rename = "adamw_8bit")]
    Adamw8bit,
    #[serde(rename = "paged_adamw_8bit")]
    PagedAdamw8bit,
    #[serde(rename = "adamw_4bit")]
    Adamw4bit,
    #[serde(rename = "lion_8bit")]
    Lion8bit,
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
    pub optimizer: Optimizer,
    /// The JSON name.
    pub name: &'static str,
    pub layout: StateLayout,
    /// Full-size temporaries the multi-tensor (`foreach`) step allocates at once over all
    /// parameters, in state dtype (PyTorch `_multi_tensor_*`: e.g. AdamW's
    /// `exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)`).
    pub foreach_temporaries: u32,
    /// Where the state sizes come from.
    pub source: &'static str,
}

const fn row(
    optimizer: Optimizer,
    name: &'static str,
    layout: StateLayout,
    foreach_temporaries: u32,
    source: &'static str,
) -> OptimizerInfo {
    OptimizerInfo {
        optimizer,
        name,
        layout,
        foreach_temporaries,
        source,
    }
}

use Optimizer as O;
use StateLayout::{Factored, Full, Quantized};

/// The optimizer table.
#[rustfmt::skip]
pub const OPTIMIZERS: &[OptimizerInfo] = &[
    row(O::Sgd,            "sgd",              Full(0), 0, "torch.optim.SGD, momentum=0: no state"),
    row(O::SgdMomentum,    "sgd_momentum",     Full(1), 0, "torch.optim.SGD(momentum>0): momentum_buffer"),
    row(O::Nesterov,       "nesterov",         Full(1), 1, "torch.optim.SGD(nesterov=True): momentum_buffer; foreach adds grads + momentum x buf into a new list"),
    row(O::Adagrad,        "adagrad",          Full(1), 1, "torch.optim.Adagrad: sum; foreach std = sqrt(sum) + eps"),
    row(O::Rmsprop,        "rmsprop",          Full(1), 1, "torch.optim.RMSprop: square_avg (momentum_buffer / grad_avg only if enabled); foreach avg = sqrt(square_avg)"),
    row(O::Adam,           "adam",             Full(2), 1, "torch.optim.Adam: exp_avg, exp_avg_sq (Kingma & Ba 2015); foreach exp_avg_sq_sqrt"),
    row(O::Adamw,          "adamw",            Full(2), 1, "torch.optim.AdamW: exp_avg, exp_avg_sq (Loshchilov & Hutter 2019); foreach exp_avg_sq_sqrt"),
    row(O::Amsgrad,        "amsgrad",          Full(3), 1, "torch.optim.AdamW(amsgrad=True): exp_avg, exp_avg_sq, max_exp_avg_sq"),
    row(O::Nadam,          "nadam",            Full(2), 2, "torch.optim.NAdam: exp_avg, exp_avg_sq (+ scalar mu_product); foreach exp_avg_sq_sqrt and a grad copy"),
    row(O::Radam,          "radam",            Full(2), 1, "torch.optim.RAdam: exp_avg, exp_avg_sq"),
    row(O::Adamax,         "adamax",           Full(2), 1, "torch.optim.Adamax: exp_avg, exp_inf"),
    row(O::Adadelta,       "adadelta",         Full(2), 2, "torch.optim.Adadelta: square_avg, acc_delta"),
    row(O::Adabelief,      "adabelief",        Full(2), 1, "AdaBelief (Zhuang et al. 2020, adabelief-pytorch): exp_avg, exp_avg_var"),
    row(O::Lamb,           "lamb",             Full(2), 1, "LAMB (You et al. 2020; apex FusedLAMB): exp_avg, exp_avg_sq"),
    row(O::Lion,           "lion",             Full(1), 1, "Lion (Chen et al. 2023, lion-pytorch): exp_avg"),
    row(O::Adafactor,      "adafactor",        Factored { momentum: 0 }, 0, "Adafactor (Shazeer & Stern 2018; transformers.optimization.Adafactor, beta1=None): exp_avg_sq_row + exp_avg_sq_col per matrix, exp_avg_sq per vector"),
    row(O::Sophia,         "sophia",           Full(2), 1, "Sophia (Liu et al. 2023, SophiaG): exp_avg, hessian"),
    row(O::Adamw8bit,      "adamw_8bit",       Quantized { states: 2, bits: 8, block: 256, min_numel: 4096 }, 0, "bitsandbytes AdamW8bit: two 8-bit states, blockwise absmax (fp32) per 256 elements; tensors < 4096 elements keep fp32 states (min_8bit_size)"),
    row(O::PagedAdamw8bit, "paged_adamw_8bit", Quantized { states: 2, bits: 8, block: 256, min_numel: 4096 }, 0, "bitsandbytes PagedAdamW8bit: as AdamW8bit, in CUDA unified (pageable) memory"),
    row(O::Adamw4bit,      "adamw_4bit",       Quantized { states: 2, bits: 4, block: 128, min_numel: 4096 }, 0, "torchao AdamW4bit: two 4-bit states, one scale per 128 elements; small tensors in fp32"),
    row(O::Lion8bit,       "lion_8bit",        Quantized { states: 1, bits: 8, block: 256, min_numel: 4096 }, 0, "bitsandbytes Lion8bit: one 8-bit state, blockwise absmax per 256"),
];

impl Optimizer {
    /// This optimizer's table row.
    pub fn info(self) -> &'static OptimizerInfo {
        OPTIMIZERS
            .iter()
            .find(|r| r.optimizer == self)
            .unwrap_or(&OPTIMIZERS[6])
    }
    /// The JSON name.
    pub fn name(self) -> &'static str {
        self.info().name
    }
    /// Every optimizer, in table order.
    pub fn all() -> impl Iterator<Item = Optimizer> {
        OPTIMIZERS.iter().map(|r| r.optimizer)
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
        for r in OPTIMIZERS {
            // the JSON name round-trips through serde
            let v: Optimizer = serde_json::from_str(&format!("\"{}\"", r.name)).unwrap();
            assert_eq!(v, r.optimizer);
        }
    }

    #[test]
    fn state_bytes() {
        // AdamW fp32 states: 2 x 4 B = 8 B per element
        assert_eq!(
            state_bytes_for_tensor(Optimizer::Adamw.info().layout, 4096, 4096, 4),
            8 * 4096 * 4096
        );
        // Adafactor: 4096 x 11008 matrix keeps 4096 + 11008 fp32 values
        assert_eq!(
            state_bytes_for_tensor(Optimizer::Adafactor.info().layout, 4096, 11008, 4),
            (4096 + 11008) * 4
        );
        // Adafactor on a vector keeps it whole
        assert_eq!(
            state_bytes_for_tensor(Optimizer::Adafactor.info().layout, 4096, 1, 4),
            4096 * 4
        );
        // 8-bit AdamW on 4096 x 4096: 2 x 16 777 216 B + 2 x 65 536 absmax x 4 B
        assert_eq!(
            state_bytes_for_tensor(Optimizer::Adamw8bit.info().layout, 4096, 4096, 4),
            2 * 16_777_216 + 2 * 65_536 * 4
        );
        // ...and a 4096-vector is under min_8bit_size? no: exactly 4096 is quantized
        assert_eq!(
            state_bytes_for_tensor(Optimizer::Adamw8bit.info().layout, 4095, 1, 4),
            2 * 4095 * 4
        );
    }
}
