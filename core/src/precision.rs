//! Precision regimes: bytes per parameter for weights, gradients, master weights and
//! optimizer states, per framework family.
//!
//! | regime | framework | weight | grad | master | state (each) | fp32 grad buffer | activations |
//! |---|---|---|---|---|---|---|---|
//! | `fp32` | all | 4 | 4 | - | 4 | - | 4 |
//! | `amp_bf16`/`amp_fp16` | PyTorch autocast (DDP, FSDP) | 4 | 4 | - (fp32 weights are the master) | 4 | - | 2, plus half copies of the linear weights saved for backward |
//! | `amp_bf16`/`amp_fp16` | DeepSpeed | 2 | 2 | 4 | 4 | 4 with bf16 at ZeRO 0 (`BF16_Optimizer`, `grad_accum_dtype` default) | 2 |
//! | `amp_bf16` | Megatron | 2 | 4 (`main_grad`, forced fp32 with `--bf16`) | 4 | 4 | - | 2 |
//! | `amp_fp16` | Megatron | 2 | 2 (`main_grad` in fp16 unless `--accumulate-allreduce-grads-in-fp32`) | 4 | 4 | - | 2 |
//! | `bf16`/`fp16` (pure) | all | 2 | 2 | - | 2 | - | 2 |
//! | `fp8` | Transformer Engine (Megatron) | 2 + 1 (fp8 weight copy) | 4 | 4 | 4 | - | 2; linear inputs 1 |
//! | `fp8` | PyTorch (torchao float8) | 4 | 4 | - | 4 | - | 2 (linear inputs saved in bf16: torchao's `input_hp`) |
//!
//! With AdamW (two states) this gives the familiar totals: 16 B/param for AMP under
//! PyTorch and DeepSpeed (ZeRO paper, Sec. 3.1: 2 + 2 + 12), 18 B/param under Megatron
//! (`theoretical_memory_usage.py`: "18 bytes per parameter"), 8 B/param for pure bf16
//! (torchtune), 16 B/param for fp32.

use crate::config::Precision;
use serde::{Deserialize, Serialize};

/// Which framework's conventions apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Framework {
    /// PyTorch training loops on Hugging Face models (HF Trainer, Accelerate, torchtune): DDP, FSDP.
    Torch,
    /// DeepSpeed engine (ZeRO) on Hugging Face models.
    DeepSpeed,
    /// Megatron-LM / Megatron-Core (also Megatron-DeepSpeed's model code).
    Megatron,
}

/// Whose model code runs, which decides what a layer keeps for backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelCode {
    /// Megatron-LM / Megatron-Core (also Megatron-DeepSpeed): Korthikanti et al. 2022.
    Megatron,
    /// Hugging Face transformers modules on PyTorch (DDP, FSDP, DeepSpeed, inference).
    Transformers,
}

/// Bytes per parameter (per element) of each model-state buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StateBytes {
    /// Stored weights (the copy used for compute, or the only copy).
    pub weight: u64,
    /// Gradients as kept between backward and step.
    pub grad: u64,
    /// fp32 master weights (0 when the weights themselves are fp32 or training is pure half).
    pub master: u64,
    /// One optimizer state element (fp32 with master weights, else the weight dtype).
    pub state: u64,
    /// An extra fp32 gradient accumulation buffer (0 = none).
    pub grad_accum: u64,
    /// One activation element (bf16/fp16 = 2, fp32 = 4).
    pub activation: u64,
    /// Bytes per element of inputs that linear layers save for backward (fp8 = 1).
    pub linear_input: u64,
    /// Autocast keeps half-precision copies of the fp32 linear weights for backward
    /// (PyTorch `torch.autocast`: the cast weight is an input saved by the matmul).
    pub autocast_weight_copy: u64,
    /// Extra bytes per linear-weight element for cached fp8 weight copies (Transformer Engine).
    pub fp8_weight_cache: u64,
}

/// Bytes per parameter for `precision` under `framework`.
///
/// `accumulate_grads_in_fp32`: `Some(b)` forces the fp32 gradient buffer on or off;
/// `None` takes the framework default (see the module table). `zero_stage` matters for
/// DeepSpeed's bf16 default. Source per row: module docs.
pub fn state_bytes(
    precision: Precision,
    framework: Framework,
    accumulate_grads_in_fp32: Option<bool>,
    zero_stage: u8,
) -> StateBytes {
    use Framework::*;
    use Precision::*;
    let base = StateBytes {
        weight: 2,
        grad: 2,
        master: 0,
        state: 2,
        grad_accum: 0,
        activation: 2,
        linear_input: 2,
        autocast_weight_copy: 0,
        fp8_weight_cache: 0,
    };
    let mut b = match (precision, framework) {
        (Fp32, _) => StateBytes {
            weight: 4,
            grad: 4,
            state: 4,
            activation: 4,
            linear_input: 4,
            ..base
        },
        (AmpBf16 | AmpFp16, Torch) => StateBytes {
            weight: 4,
            grad: 4,
            state: 4,
            autocast_weight_copy: 2,
            ..base
        },
        (AmpBf16 | AmpFp16, DeepSpeed) => StateBytes {
            master: 4,
            state: 4,
            ..base
        },
        (AmpBf16, Megatron) => StateBytes {
            grad: 4,
            master: 4,
            state: 4,
            ..base
        },
        (AmpFp16, Megatron) => StateBytes {
            master: 4,
            state: 4,
            ..base
        },
        (Bf16 | Fp16, _) => base,
        (Fp8, Megatron | DeepSpeed) => StateBytes {
            grad: 4,
            master: 4,
            state: 4,
            linear_input: 1,
            fp8_weight_cache: 1,
            ..base
        },
        // torchao float8 (`float8/float8_linear.py` `matmul_with_hp_or_float8_args`) casts
        // a linear's input to float8 for the matmul but saves the high-precision input
        // (`ctx.save_for_backward(input_hp, weight_hp_t)`, autocast's bf16) and casts it
        // again in backward; since torchao 2ec9bc15d (2025-01-13) on every recipe, where
        // the tensorwise one had saved the float8 input
        (Fp8, Torch) => StateBytes {
            weight: 4,
            grad: 4,
            state: 4,
            ..base
        },
    };
    match framework {
        // Megatron accumulates into main_grad, the gradient buffer itself
        Megatron => match accumulate_grads_in_fp32 {
            Some(true) => b.grad = 4,
            Some(false) if b.grad == 4 && b.master > 0 => b.grad = 2,
            _ => {}
        },
        // a separate fp32 buffer: DeepSpeed's BF16_Optimizer at ZeRO 0 by default
        // (`data_types.grad_accum_dtype`), on request otherwise
        Torch | DeepSpeed => {
            let default = framework == DeepSpeed && precision == AmpBf16 && zero_stage == 0;
            if accumulate_grads_in_fp32.unwrap_or(default) && b.grad < 4 {
                b.grad_accum = 4;
            }
        }
    }
    b
}

/// One line saying which framework convention the numbers follow.
pub fn describe(precision: Precision, framework: Framework) -> &'static str {
    use Framework::*;
    use Precision::*;
    match (precision, framework) {
        (Fp32, _) => "fp32 weights, gradients and optimizer states",
        (AmpBf16 | AmpFp16, Torch) => {
            "PyTorch autocast: fp32 weights (the master copy) and gradients; half-precision compute"
        }
        (AmpBf16 | AmpFp16, DeepSpeed) => {
            "DeepSpeed mixed precision: half weights and gradients, fp32 master weights and optimizer states"
        }
        (AmpBf16, Megatron) => {
            "Megatron --bf16: bf16 weights, fp32 main_grad, fp32 master weights and optimizer states"
        }
        (AmpFp16, Megatron) => {
            "Megatron --fp16: fp16 weights and main_grad, fp32 master weights and optimizer states"
        }
        (Bf16 | Fp16, _) => {
            "pure half precision: weights, gradients and optimizer states in 16 bits (torchtune style)"
        }
        (Fp8, Torch) => "torchao float8: fp32 weights, fp8 matmul inputs",
        (Fp8, _) => {
            "Transformer Engine fp8: bf16 weights plus cached fp8 copies, fp32 main_grad, master weights and states"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Framework::*;
    use Precision::*;

    fn adamw_total(p: Precision, f: Framework, zero: u8) -> u64 {
        let b = state_bytes(p, f, None, zero);
        b.weight + b.grad + b.master + 2 * b.state + b.grad_accum + b.fp8_weight_cache
    }

    #[test]
    fn documented_totals() {
        assert_eq!(adamw_total(AmpBf16, Torch, 0), 16); // 4 + 4 + 8
        assert_eq!(adamw_total(AmpBf16, DeepSpeed, 1), 16); // 2 + 2 + 4 + 8 (ZeRO paper)
        assert_eq!(adamw_total(AmpBf16, DeepSpeed, 0), 20); // + fp32 grad accumulation (BF16_Optimizer)
        assert_eq!(adamw_total(AmpBf16, Megatron, 0), 18); // 2 + 4 + 4 + 8 (Megatron)
        assert_eq!(adamw_total(Bf16, Torch, 0), 8); // torchtune pure bf16
        assert_eq!(adamw_total(Fp32, Torch, 0), 16);
        // forcing the fp32 buffer on a pure-bf16 run adds 4 B
        assert_eq!(state_bytes(Bf16, Torch, Some(true), 0).grad_accum, 4);
        // and forcing it off under Megatron bf16 keeps main_grad in bf16
        assert_eq!(state_bytes(AmpBf16, Megatron, Some(false), 0).grad, 2);
    }
}
