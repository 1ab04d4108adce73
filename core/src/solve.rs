//! Inverse questions, each a search over [`crate::estimate`]: the largest micro-batch, the
//! longest sequence or context, the fewest GPUs, the most concurrent sequences.
//!
//! Memory grows monotonically with batch and sequence length, and shrinks (for sharded
//! engines) with data parallelism, so an exponential search for a bound followed by a
//! binary search finds the exact boundary in O(log n) estimates.

use crate::config::{Config, InferenceEngine, Mode};
use crate::error::FieldError;
use crate::limits;
use crate::{Estimate, estimate};
use serde::{Deserialize, Serialize};

/// What to solve for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Training: the largest `training.micro_batch_size` that fits.
    MaxMicroBatch,
    /// Training: the longest `training.seq_len`; inference: the longest `inference.context_len`.
    MaxSequence,
    /// The fewest GPUs (a multiple of tensor x pipeline x context parallel) that fit.
    MinGpus,
    /// Inference: the most sequences (`inference.batch_size`) of `context_len` at once
    /// (vLLM: the KV cache's capacity).
    MaxConcurrency,
}

/// The answer to a [`Target`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Solution {
    pub target: Target,
    /// The best value that fits; `None` when even the smallest does not.
    pub value: Option<u64>,
    /// The search stopped at the largest allowed value, which still fits.
    pub at_limit: bool,
    /// Estimates computed.
    pub evaluations: u32,
    /// The estimate at `value`.
    pub estimate: Option<Estimate>,
    /// One line for the user.
    pub message: String,
}

/// Sets the searched quantity in a copy of `config`.
fn with_value(config: &Config, target: Target, v: u64) -> Config {
    let mut c = config.clone();
    let inference = config.effective_mode() == Mode::Inference;
    match target {
        Target::MaxMicroBatch => c.training.micro_batch_size = v,
        Target::MaxSequence if inference => {
            let inf = c.inference.get_or_insert_with(Default::default);
            inf.context_len = v;
            inf.prompt_len = inf.prompt_len.map(|p| p.min(v));
            if inf.engine == InferenceEngine::Vllm {
                inf.max_model_len = Some(v);
            }
        }
        Target::MaxSequence => c.training.seq_len = v,
        Target::MinGpus => {
            c.hardware.num_gpus = Some(v);
            c.parallelism.data_parallel_size = None;
        }
        Target::MaxConcurrency => c.inference.get_or_insert_with(Default::default).batch_size = v,
    }
    c
}

/// Searches the largest `k` in `[1, max]` with `fits(k)`, assuming `fits` is true up to a
/// boundary and false after it. Returns (k or None, evaluations).
fn largest<F: FnMut(u64) -> Result<bool, Vec<FieldError>>>(
    max: u64,
    mut fits: F,
) -> Result<(Option<u64>, u32), Vec<FieldError>> {
    let mut n = 0u32;
    let mut eval = |k: u64| {
        n += 1;
        fits(k)
    };
    if !eval(1)? {
        return Ok((None, n));
    }
    // exponential search for the first failing value
    let (mut lo, mut hi) = (1u64, 2u64);
    loop {
        if hi >= max {
            if eval(max)? {
                return Ok((Some(max), n));
            }
            hi = max;
            break;
        }
        if !eval(hi)? {
            break;
        }
        lo = hi;
        hi = hi.saturating_mul(2);
    }
    // lo fits, hi does not
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if eval(mid)? { lo = mid } else { hi = mid }
    }
    Ok((Some(lo), n))
}

/// Solves `target` for `config`. Errors: the config's field errors, or a target that does
/// not apply to the mode.
pub fn solve(config: &Config, target: Target) -> Result<Solution, Vec<FieldError>> {
    // the config itself must be valid
    crate::validate(config)?;
    let inference = config.effective_mode() == Mode::Inference;
    let wrong = |msg: &str| Err(vec![FieldError::new("solve", format!("{target:?}"), msg)]);
    match (target, inference) {
        (Target::MaxMicroBatch, true) => {
            return wrong("max micro-batch applies to training; use max concurrency for inference");
        }
        (Target::MaxConcurrency, false) => {
            return wrong("max concurrency applies to inference; use max micro-batch for training");
        }
        _ => {}
    }
    let l = crate::resolve::resolve(config)?.layout;
    let cp = l.context_parallel_size;
    let model_parallel = l.tensor_parallel_size * l.pipeline_parallel_size * cp;
    let ep = l.expert_parallel_size;
    let fits = |e: &Estimate| e.fits;
    let (scale, max) = match target {
        Target::MaxMicroBatch => (1, limits::MAX_BATCH),
        // sequence lengths stay divisible by the context-parallel size
        Target::MaxSequence => (
            if inference { 1 } else { cp },
            limits::MAX_SEQ / if inference { 1 } else { cp },
        ),
        // GPU counts in whole model-parallel replicas, divisible by EP where experts are split
        Target::MinGpus => (
            model_parallel * ep / gcd(ep, model_parallel),
            limits::MAX_GPUS / model_parallel.max(1),
        ),
        Target::MaxConcurrency => (1, limits::MAX_BATCH),
    };
    let run = |k: u64| estimate(&with_value(config, target, k * scale));
    let solution = |value: Option<u64>,
                    evaluations: u32,
                    at_limit: bool|
     -> Result<Solution, Vec<FieldError>> {
        let est = match value {
            Some(v) => Some(estimate(&with_value(config, target, v))?),
            None => None,
        };
        let what = match target {
            Target::MaxMicroBatch => "micro-batch",
            Target::MaxSequence if inference => "context",
            Target::MaxSequence => "sequence length",
            Target::MinGpus => "GPUs",
            Target::MaxConcurrency => "concurrent sequences",
        };
        let message = match (value, target) {
            (None, Target::MinGpus) => format!(
                "no GPU count up to {} fits: the memory does not shrink enough with data parallelism",
                limits::MAX_GPUS
            ),
            (None, _) => format!("nothing fits: even a {what} of {scale} exceeds the GPU"),
            (Some(v), Target::MinGpus) => format!("fewest {what}: {v}"),
            (Some(v), _) => format!(
                "max {what}: {v}{}",
                if at_limit {
                    " (the largest allowed)"
                } else {
                    ""
                }
            ),
        };
        Ok(Solution {
            target,
            value,
            at_limit,
            evaluations,
            estimate: est,
            message,
        })
    };

    // a serving runtime (vLLM) reports its KV cache's capacity: concurrency is read off it
    if target == Target::MaxConcurrency {
        let e = estimate(config)?;
        if let (Some(s), Some(inf)) = (&e.serving, &config.inference) {
            let per_seq = s.kv_bytes_per_token.max(1) * inf.context_len;
            let n = if s.kv_cache_bytes > 0 {
                (s.kv_cache_bytes as u64 / per_seq).min(inf.max_num_seqs)
            } else {
                0
            };
            return solution((n > 0).then_some(n), 1, false);
        }
    }

    match target {
        Target::MinGpus => {
            // memory does not grow with more GPUs for sharded engines; the first GPU count
            // that fits is found by searching upward (1 replica first: a single GPU has no
            // NCCL buffers or DDP buckets)
            let mut evaluations = 1;
            if fits(&run(1)?) {
                return solution(Some(scale), evaluations, false);
            }
            // g(k) = "k + 1 replicas do not fit" holds up to a boundary K; K + 2 is then the
            // first count that fits
            let (last_short, n) = largest(max - 1, |k| run(k + 1).map(|e| !fits(&e)))?;
            evaluations += n;
            match last_short {
                None => solution(Some(2 * scale), evaluations, false),
                Some(k) if k < max - 1 => solution(Some((k + 2) * scale), evaluations, false),
                Some(_) => solution(None, evaluations, false),
            }
        }
        _ => {
            let (v, evaluations) = largest(max, |k| run(k).map(|e| fits(&e)))?;
            solution(v.map(|k| k * scale), evaluations, v == Some(max))
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_finds_the_boundary() {
        for boundary in [1u64, 2, 3, 7, 64, 65, 1000, 1 << 20] {
            let (v, _) = largest(1 << 20, |k| Ok::<_, Vec<FieldError>>(k <= boundary)).unwrap();
            assert_eq!(v, Some(boundary));
        }
        let (v, _) = largest(100, |_| Ok::<_, Vec<FieldError>>(false)).unwrap();
        assert_eq!(v, None);
        let (v, n) = largest(100, |_| Ok::<_, Vec<FieldError>>(true)).unwrap();
        assert_eq!(v, Some(100));
        assert!(n <= 9, "{n}");
    }
}
