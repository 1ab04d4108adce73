//! The parallel shapes a model admits, shared by the plan search ([`crate::plan`]) and
//! the solvers' layout search ([`crate::solve`]): which tensor-parallel sizes split the
//! heads, how an uneven pipeline split is laid out.

use crate::model::ModelArch;

/// The divisors of `n`, ascending (`n` up to 2^40 in practice: GPU counts and batches).
pub(crate) fn divisors(n: u64) -> Vec<u64> {
    let mut d: Vec<u64> = (1..=n.min(1 << 20))
        .take_while(|i| i * i <= n)
        .filter(|i| n.is_multiple_of(*i))
        .flat_map(|i| [i, n / i])
        .collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// Tensor parallelism inside a node (`tp <= gpus_per_node`) that splits the attention heads
/// and the KV heads (Megatron `num_query_groups % TP == 0`); inference engines also
/// replicate KV heads when TP is a multiple of them (vLLM), and MLA has no KV heads to split.
/// The rule [`crate::resolve`] validates, stated once for the searches.
pub(crate) fn tensor_size_ok(
    arch: &ModelArch,
    tp: u64,
    gpus_per_node: u64,
    inference: bool,
) -> bool {
    let kv = arch.num_key_value_heads;
    tp <= gpus_per_node
        && arch.num_attention_heads.is_multiple_of(tp)
        && (arch.mla.is_some() || kv.is_multiple_of(tp) || (inference && tp.is_multiple_of(kv)))
}

/// An uneven split of `layers` over `pp` stages of `v` equal model chunks each (`v = 1`
/// without virtual stages): every middle stage takes `ceil(layers / pp)` rounded up to a
/// multiple of `v`, the first and last share the rest in multiples of `v` (the first the
/// smaller half). `(first, last)`; `None` when `v` does not divide the layers (Megatron-Core
/// needs every stage's layers divisible by `v`, so their sum is) or the split leaves the
/// first or the last stage without a layer.
pub(crate) fn uneven_split(layers: u64, pp: u64, v: u64) -> Option<(u64, u64)> {
    let v = v.max(1);
    if !layers.is_multiple_of(v) {
        return None;
    }
    let middle = layers.div_ceil(pp).next_multiple_of(v);
    let ends = layers.saturating_sub(pp.saturating_sub(2).saturating_mul(middle));
    let first = ends / v / 2 * v;
    let last = ends - first;
    (first > 0 && last > 0).then_some((first, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_and_splits() {
        assert_eq!(divisors(12), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(divisors(1), vec![1]);
        assert_eq!(divisors(977), vec![1, 977]);
        // 61 layers on 8 stages: 6 middle stages of 8 = 48, the ends share 13 as 6 + 7
        assert_eq!(uneven_split(61, 8, 1), Some((6, 7)));
        // 126 layers on 4 stages: 2 x 32 = 64 in the middle, 62 = 31 + 31 at the ends
        assert_eq!(uneven_split(126, 4, 1), Some((31, 31)));
        // 32 layers on 20 stages: 18 middle stages of 2 take 36, nothing is left at the ends
        assert_eq!(uneven_split(32, 20, 1), None);
        // 32 layers on 11 stages: 9 x 3 = 27, the ends share 5 as 2 + 3
        assert_eq!(uneven_split(32, 11, 1), Some((2, 3)));
        // 126 layers on 8 stages of 2 chunks: middle stages take ceil(126 / 8) = 16 (a
        // multiple of 2), 6 x 16 = 96, the ends share 30 in pairs as 14 + 16
        assert_eq!(uneven_split(126, 8, 2), Some((14, 16)));
        // 3 chunks: ceil(126 / 8) = 16 rounds up to 18, 6 x 18 = 108, the ends 18 = 9 + 9
        assert_eq!(uneven_split(126, 8, 3), Some((9, 9)));
        // 61 layers (a prime) cannot be cut into chunks of 2
        assert_eq!(uneven_split(61, 8, 2), None);
        // 4 chunks of 32 layers on 11 stages: the middle stages take 4 each, 36 > 32
        assert_eq!(uneven_split(32, 11, 4), None);
    }
}
