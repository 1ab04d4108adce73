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

/// An uneven split of `layers` over `pp` stages: every middle stage takes `ceil(layers /
/// pp)`, the first and last share the rest (the first the smaller half). `(first, last)`;
/// `None` when that leaves the first or the last stage without a layer.
pub(crate) fn uneven_split(layers: u64, pp: u64) -> Option<(u64, u64)> {
    let middle = layers.div_ceil(pp);
    let ends = layers.saturating_sub(pp.saturating_sub(2) * middle);
    let (first, last) = (ends / 2, ends - ends / 2);
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
        assert_eq!(uneven_split(61, 8), Some((6, 7)));
        // 126 layers on 4 stages: 2 x 32 = 64 in the middle, 62 = 31 + 31 at the ends
        assert_eq!(uneven_split(126, 4), Some((31, 31)));
        // 32 layers on 20 stages: 18 middle stages of 2 take 36, nothing is left at the ends
        assert_eq!(uneven_split(32, 20), None);
        // 32 layers on 11 stages: 9 x 3 = 27, the ends share 5 as 2 + 3
        assert_eq!(uneven_split(32, 11), Some((2, 3)));
    }
}
