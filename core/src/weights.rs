//! Weight storage formats: bytes of a weight matrix in each [`WeightFormat`] with the
//! quantization constants the format stores, and the weights one GPU of a stage holds in a
//! format (inference, and the frozen base of LoRA / QLoRA).
//!
//! Quantized formats apply to the linear layers of the decoder blocks
//! ([`crate::model::ParamGroup::is_quantized`]); embeddings, the LM head, norms, biases and
//! MoE routers stay in 16 bits, as GPTQ, AWQ, bitsandbytes and compressed-tensors
//! checkpoints keep them.

use crate::config::WeightFormat;
use crate::placement::{Stage, for_each_stage_group};
use crate::problem::Resolved;
use crate::term::{Num, Term};

/// One part of a stored matrix: `unit` bytes (`None`: the count is already bytes) times
/// `count`, named by `label`.
type Part = (Option<u64>, u64, &'static str);

/// The parts of one `rows x cols` (out x in) weight matrix stored in `format`:
///
/// * `fp32` 4 B, `bf16`/`fp16` 2 B per element;
/// * `fp8`: 1 B + one fp32 scale per output channel (compressed-tensors FP8 "channel");
/// * `int8` (LLM.int8): 1 B + one fp32 row scale `SCB` per output row (bitsandbytes `Int8Params`);
/// * `int4` (GPTQ): 4 bits per weight, per group of `group` input channels an fp16 scale
///   and (with zero points) a 4-bit packed zero per output channel, plus an int32 `g_idx`
///   per input channel (AutoGPTQ / GPTQModel `QuantLinear`);
/// * `awq`: as `int4` without `g_idx` (AutoAWQ `WQLinear_GEMM`);
/// * `nf4` (bitsandbytes): 4 bits per weight, one absmax per 64 weights: fp32, or with
///   double quantization an 8-bit absmax plus an fp32 absmax per 256 blocks, a 256-entry
///   fp32 code table and an fp32 offset; the NF4 code table (16 fp32) (bitsandbytes `QuantState`);
/// * `mxfp4`: 4 bits per weight and an 8-bit E8M0 scale per 32 (OCP Microscaling v1.0).
fn matrix_parts(
    format: WeightFormat,
    rows: u64,
    cols: u64,
    group: u64,
    zero_point: bool,
    double_quant: bool,
) -> MatrixParts {
    let numel = rows * cols;
    let packed4: Part = (None, numel.div_ceil(2), "B of packed int4 weights");
    let mut v = MatrixParts::default();
    match format {
        WeightFormat::Fp32 => v.push((Some(4), numel, "params")),
        WeightFormat::Bf16 | WeightFormat::Fp16 => v.push((Some(2), numel, "params")),
        WeightFormat::Fp8 => {
            v.push((Some(1), numel, "fp8 params"));
            v.push((Some(4), rows, "per-channel scales"));
        }
        WeightFormat::Int8 => {
            v.push((Some(1), numel, "int8 params"));
            v.push((Some(4), rows, "row scales"));
        }
        WeightFormat::Int4 | WeightFormat::Awq => {
            let groups = cols.div_ceil(group.max(1));
            v.push(packed4);
            v.push((Some(2), groups * rows, "group scales"));
            if zero_point {
                v.push((
                    None,
                    (groups * rows).div_ceil(2),
                    "B of packed int4 zero points",
                ));
            }
            if format == WeightFormat::Int4 {
                v.push((Some(4), cols, "g_idx entries"));
            }
        }
        WeightFormat::Nf4 => {
            let blocks = numel.div_ceil(64);
            v.push(packed4);
            if double_quant {
                v.push((None, blocks, "B of int8 absmax"));
                v.push((Some(4), blocks.div_ceil(256), "second-level absmax"));
                v.push((Some(4), 256 + 1, "code table entries and offset"));
            } else {
                v.push((Some(4), blocks, "absmax blocks"));
            }
            v.push((Some(4), 16, "NF4 code entries"));
        }
        WeightFormat::Mxfp4 => {
            v.push(packed4);
            v.push((None, numel.div_ceil(32), "B of E8M0 scales"));
        }
    }
    v
}

/// The parts of one matrix in its storage format, in order: at most five (NF4 with double
/// quantization), held inline (the estimate lists them for every linear layer it places).
#[derive(Default)]
struct MatrixParts {
    parts: [Option<Part>; 5],
    len: usize,
}

impl MatrixParts {
    fn push(&mut self, p: Part) {
        debug_assert!(self.len < self.parts.len(), "more than five parts");
        if let Some(slot) = self.parts.get_mut(self.len) {
            *slot = Some(p);
            self.len += 1;
        }
    }
    fn iter(&self) -> impl Iterator<Item = &Part> {
        self.parts.iter().flatten()
    }
}

/// Bytes of one `rows x cols` (out x in) weight matrix in `format`, with its quantization
/// constants (the parts are listed on the format's variant and in this module's source).
pub fn matrix_bytes(
    format: WeightFormat,
    rows: u64,
    cols: u64,
    group: u64,
    zero_point: bool,
    double_quant: bool,
) -> u64 {
    matrix_parts(format, rows, cols, group, zero_point, double_quant)
        .iter()
        .map(|(u, c, _)| u.unwrap_or(1) * c)
        .sum()
}

/// Bytes per element of a 16-bit (or fp32) tensor kept unquantized next to `format` weights.
pub fn unquantized_bytes(format: WeightFormat) -> u64 {
    if format == WeightFormat::Fp32 { 4 } else { 2 }
}

/// How a checkpoint stores its weights.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Storage {
    pub format: WeightFormat,
    /// Input channels per quantization group (`int4` / `awq`).
    pub group: u64,
    pub zero_point: bool,
    pub double_quant: bool,
    /// Only the routed experts are quantized.
    pub experts_only: bool,
}

/// The weights one GPU of `stage` holds in `s`'s format, quantization constants included.
pub(crate) fn stage_weights<N: Num>(r: &Resolved, st: &Stage, s: Storage) -> Term<N> {
    let tp = r.layout.tensor_parallel_size;
    let ep = r.layout.expert_parallel_size;
    let unq = unquantized_bytes(s.format);
    // the distinct (unit, label) parts of a format, and the unquantized elements
    let mut parts: Vec<Part> = Vec::with_capacity(8);
    let mut add = |(unit, count, label): Part, times: u64| match parts
        .iter_mut()
        // labels are string constants: the same pointer first, the text only if not
        .find(|p| p.0 == unit && (std::ptr::eq(p.2, label) || p.2 == label))
    {
        Some(p) => p.1 += count * times,
        None => parts.push((unit, count * times, label)),
    };
    let plain = matches!(
        s.format,
        WeightFormat::Fp32 | WeightFormat::Bf16 | WeightFormat::Fp16
    );
    let unq_label = if plain { "params" } else { "params in bf16" };
    for_each_stage_group(r, st, |sg| {
        let g = sg.group;
        let times = sg.copies(ep) * sg.times;
        let shapes = g.rank_shapes(tp);
        if g.is_quantized() && (!s.experts_only || g.part == crate::model::Part::Experts) {
            let (rows, cols) = shapes[0];
            for &p in
                matrix_parts(s.format, rows, cols, s.group, s.zero_point, s.double_quant).iter()
            {
                add(p, times);
            }
            let bias: u64 = shapes[1..].iter().map(|(r, c)| r * c).sum();
            add((Some(unq), bias, unq_label), times);
        } else {
            let numel: u64 = shapes.iter().map(|(r, c)| r * c).sum();
            add((Some(unq), numel, unq_label), times);
        }
    });
    let expr = N::sum(parts.into_iter().map(|(unit, count, label)| match unit {
        Some(u) => N::bytes(u) * N::n(count, label),
        None => N::n(count, label),
    }));
    let source = if plain {
        "parameter elements of this GPU (core/src/model.rs inventory, split by TP, PP and EP) x bytes per element"
    } else {
        "GPTQ/AWQ/bitsandbytes/compressed-tensors storage formats (core/src/weights.rs matrix_parts): linear layers of the decoder blocks quantized, the rest in 16 bits"
    };
    Term::new(expr, source)
}

/// The largest quantized linear layer one GPU of `stage` holds: `(rows, cols)` of its matrix.
pub(crate) fn largest_quantized_matrix(r: &Resolved, st: &Stage) -> (u64, u64) {
    let tp = r.layout.tensor_parallel_size;
    let mut largest = (0, 0);
    for_each_stage_group(r, st, |sg| {
        if sg.group.is_quantized() {
            let m = sg.group.rank_shapes(tp)[0];
            // the last of equally large ones, as before
            if m.0 * m.1 >= largest.0 * largest.1 {
                largest = m;
            }
        }
    });
    largest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gptq_and_nf4_of_one_matrix() {
        // 4096 x 11008 GPTQ g128 with zero points: 22 544 384 B weights, 86 groups x 4096
        // rows: scales 704 512 B, zeros 176 128 B, g_idx 11008 x 4 = 44 032 B
        assert_eq!(
            matrix_bytes(WeightFormat::Int4, 4096, 11008, 128, true, true),
            22_544_384 + 704_512 + 176_128 + 44_032
        );
        // NF4 double-quant of 4096 x 4096: 8 388 608 B + 262 144 absmax bytes + 1024 second-level
        // absmax x 4 + code 1024 + offset 4 + NF4 code 64
        assert_eq!(
            matrix_bytes(WeightFormat::Nf4, 4096, 4096, 64, false, true),
            8_388_608 + 262_144 + 4096 + 1028 + 64
        );
        assert_eq!(
            matrix_bytes(WeightFormat::Mxfp4, 4096, 4096, 32, false, false),
            8_388_608 + 524_288
        );
    }
}
