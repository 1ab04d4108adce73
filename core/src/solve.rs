//! Inverse questions, each a search over the estimate: the largest micro-batch, the
//! longest sequence or context, the fewest GPUs, the most concurrent sequences.
//!
//! Memory grows monotonically with batch and sequence length, and shrinks (for sharded
//! engines) with data parallelism, so an exponential search for a bound followed by a
//! binary search finds the exact boundary of one layout in O(log n) estimates.
//!
//! **The layout is searched too.** The largest micro-batch, the longest sequence or context
//! and the fewest GPUs are answered over every parallel layout the engine runs (tensor
//! parallel inside a node splitting the heads, pipeline stages dividing the layers or, where
//! the engine splits unevenly, any count up to the layers, context parallel dividing the
//! sequence, expert parallel dividing the experts and the data x context ranks; inference:
//! tensor x pipeline parallel), the engine, recomputation, precision and everything else
//! held as the config sets them. The answer states its layout, and
//! [`Solution::value_with_config_layout`] is the answer with the config's own layout (which
//! wins ties; then the layout with the least model parallelism). Exact pruning: a layout is
//! estimated at the one value that would beat the best answer so far, and searched only when
//! that fits (memory is monotone in the searched value).
//!
//! The fewest GPUs of a training layout are searched over its data-parallel size (one
//! replica first: a single GPU has no NCCL buffers or DDP buckets, so memory is not monotone
//! from 1 to 2 replicas). Inference memory does not shrink with replicas: an inference layout
//! needs tensor x pipeline x context parallel GPUs, or none.
//!
//! Candidates are estimated on the numeric path ([`crate::estimate_peak`], equal to the
//! report to the byte); the full [`Estimate`] is built once, for the answer.

use crate::Estimate;
use crate::config::{Config, InferenceEngine, Mode};
use crate::error::FieldError;
use crate::limits;
use crate::problem::{Layout, Resolved};
use crate::resolve::resolve_given;
use crate::shapes::{divisors, tensor_size_ok, uneven_split};
use serde::{Deserialize, Serialize};

/// What to solve for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Training: the largest `training.micro_batch_size` that fits on the config's GPU
    /// count, over its layouts.
    MaxMicroBatch,
    /// Training: the longest `training.seq_len`; inference: the longest
    /// `inference.context_len` (vLLM: `max_model_len` with it), on the config's GPU count,
    /// over its layouts.
    MaxSequence,
    /// The fewest GPUs that fit, over the layouts.
    MinGpus,
    /// Inference: the most sequences (`inference.batch_size`) of `context_len` at once
    /// (vLLM: the KV cache's capacity), with the config's layout.
    MaxConcurrency,
}

/// The answer to a [`Target`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Solution {
    pub target: Target,
    /// The best value that fits over the layouts searched; `None` when nothing fits.
    pub value: Option<u64>,
    /// The search stopped at the largest allowed value, which still fits.
    pub at_limit: bool,
    /// Estimates computed.
    pub evaluations: u32,
    /// The estimate at `value`.
    pub estimate: Option<Estimate>,
    /// The parallel layout `value` assumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    /// The whole document at `value` (the config with the value and the layout set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Config>,
    /// The answer with the config's own layout (GPU count scaled by data parallelism for
    /// [`Target::MinGpus`]); `None` when nothing fits it.
    #[serde(default)]
    pub value_with_config_layout: Option<u64>,
    /// One line for the user, with the layout.
    pub message: String,
}

/// A parallel layout to try: the sizes the search sets (everything else as the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    tp: u64,
    pp: u64,
    cp: u64,
    ep: u64,
    /// First and last stage layers of an uneven pipeline split.
    uneven: Option<(u64, u64)>,
}

/// Sets the searched quantity in `c`.
fn set_value(c: &mut Config, target: Target, v: u64) {
    let inference = c.effective_mode() == Mode::Inference;
    match target {
        Target::MaxMicroBatch => c.training.micro_batch_size = v,
        Target::MaxSequence if inference => {
            let inf = c.inference.get_or_insert_with(Default::default);
            inf.context_len = v;
            inf.prompt_len = inf.prompt_len.map(|p| p.min(v));
            // a serving runtime's length is max_model_len (vLLM, SGLang)
            if inf.engine != InferenceEngine::Hf {
                inf.max_model_len = Some(v);
            }
        }
        Target::MaxSequence => c.training.seq_len = v,
        Target::MinGpus => {}
        Target::MaxConcurrency => c.inference.get_or_insert_with(Default::default).batch_size = v,
    }
}

/// `config` with `shape` (the config's own layout when `None`) on `gpus` GPUs (`None`: as
/// the config says) and the searched quantity at `v`.
fn document(
    config: &Config,
    target: Target,
    shape: Option<&Shape>,
    gpus: Option<u64>,
    v: u64,
) -> Config {
    let mut c = config.clone();
    if let Some(s) = shape {
        let inference = c.effective_mode() == Mode::Inference;
        let sequence = !inference && c.engine.parallelism().sequence_parallel(s.tp, s.cp);
        let loss_parallel = c.parallelism.loss_parallel;
        c.parallelism = crate::config::Parallelism {
            tensor_parallel_size: s.tp,
            pipeline_parallel_size: s.pp,
            context_parallel_size: s.cp,
            expert_parallel_size: s.ep,
            sequence_parallel: sequence,
            first_pipeline_stage_layers: s.uneven.map(|u| u.0),
            last_pipeline_stage_layers: s.uneven.map(|u| u.1),
            loss_parallel,
            ..Default::default()
        };
    }
    if let Some(n) = gpus {
        c.hardware.num_gpus = Some(n);
        c.parallelism.data_parallel_size = None;
    }
    set_value(&mut c, target, v);
    c
}

/// Searches the largest `k` in `[lo, max]` with `fits(k)`, given that `fits(lo)` holds and
/// `fits` is true up to a boundary and false after it.
fn largest_from<F: FnMut(u64) -> bool>(lo: u64, max: u64, mut fits: F) -> u64 {
    if lo >= max {
        return max;
    }
    let (mut lo, mut hi) = (lo, lo.saturating_mul(2).max(lo + 1));
    // exponential search for the first failing value
    loop {
        if hi >= max {
            if fits(max) {
                return max;
            }
            hi = max;
            break;
        }
        if !fits(hi) {
            break;
        }
        lo = hi;
        hi = hi.saturating_mul(2);
    }
    // lo fits, hi does not
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) { lo = mid } else { hi = mid }
    }
    lo
}

/// [`largest_from`] with a test that can fail: the first error is returned.
fn try_largest_from<E>(
    lo: u64,
    max: u64,
    mut fits: impl FnMut(u64) -> Result<bool, E>,
) -> Result<u64, E> {
    let mut err = None;
    let k = largest_from(lo, max, |k| match fits(k) {
        Ok(f) => f,
        Err(e) => {
            err.get_or_insert(e);
            false
        }
    });
    err.map_or(Ok(k), Err)
}

/// The searches' shared state: the config, its resolved model, the estimates counted.
struct Search<'a> {
    config: &'a Config,
    target: Target,
    model: Resolved,
    inference: bool,
    evaluations: u32,
}

impl Search<'_> {
    /// Whether `c` fits (numeric estimate); `Err` when it does not validate.
    fn fits(&mut self, c: &Config) -> Result<bool, Vec<FieldError>> {
        self.evaluations += 1;
        let r = resolve_given(c, Some(&self.model))?;
        Ok(crate::estimate_peak(&r).fits)
    }

    /// `fits` for a searched layout: a document that does not validate does not fit.
    fn fits_or_not(&mut self, c: &Config) -> bool {
        self.fits(c).unwrap_or(false)
    }

    /// The layouts to try besides the config's own, on `gpus` GPUs (`None`: any count, for
    /// the fewest GPUs), in the order ties are broken: least model parallelism first, then
    /// fewer pipeline stages, less context parallelism.
    fn shapes(&self, gpus: Option<u64>) -> Vec<Shape> {
        let a = &self.model.arch;
        let c = self.config;
        let per_node = c.hardware.gpus_per_node;
        let layers = a.num_hidden_layers;
        let (par, seq) = if self.inference {
            (
                // uneven splits: vLLM's and SGLang's own (`runtime_split` below), else
                // first / last stage sizes as the training engines give them
                crate::engines::Parallelism {
                    tensor: true,
                    pipeline: true,
                    uneven_pipeline: true,
                    ..crate::engines::Parallelism::DATA_ONLY
                },
                1,
            )
        } else {
            (c.engine.parallelism(), c.training.seq_len)
        };
        let runtime_split = crate::resolve::layer_splitting_runtime(c).is_some();
        let upto = |n: u64, allowed: bool| -> Vec<u64> {
            if !allowed {
                return vec![1];
            }
            match gpus {
                Some(g) => divisors(g).into_iter().filter(|d| *d <= n).collect(),
                None => (1..=n).collect(),
            }
        };
        let mut out = Vec::new();
        for tp in upto(per_node, par.tensor) {
            if !tensor_size_ok(a, tp, per_node, self.inference) {
                continue;
            }
            let rest = gpus.map(|g| g / tp);
            let pps: Vec<u64> = match rest {
                Some(r) => divisors(r).into_iter().filter(|p| *p <= layers).collect(),
                None => (1..=layers).collect(),
            };
            for pp in pps.into_iter().filter(|&p| p == 1 || par.pipeline) {
                let uneven = if layers.is_multiple_of(pp)
                    || runtime_split
                    || (par.balanced_pipeline && !self.inference)
                {
                    // vLLM, SGLang and DeepSpeed's pipeline: resolve takes the runtime's own
                    // split
                    None
                } else if par.uneven_pipeline {
                    match uneven_split(layers, pp, 1) {
                        Some(split) => Some(split),
                        None => continue,
                    }
                } else {
                    continue;
                };
                let cps: Vec<u64> = match (par.context, gpus) {
                    (false, _) => vec![1],
                    // a searched sequence is made a multiple of what the engine's context
                    // parallelism splits it into (`Parallelism::sequence_multiple`)
                    (true, Some(g)) => divisors(g / tp / pp)
                        .into_iter()
                        .filter(|&cp| {
                            self.target == Target::MaxSequence
                                || seq.is_multiple_of(par.sequence_multiple(cp))
                        })
                        .collect(),
                    (true, None) => (0..7)
                        .map(|k| 1u64 << k)
                        .filter(|&cp| seq.is_multiple_of(par.sequence_multiple(cp)))
                        .collect(),
                };
                for cp in cps {
                    let dp = gpus.map(|g| g / tp / pp / cp);
                    let eps: Vec<u64> = match (&a.moe, par.expert) {
                        (Some(m), true) => divisors(m.num_experts)
                            .into_iter()
                            .filter(|ep| dp.is_none_or(|d| (d * cp).is_multiple_of(*ep)))
                            .collect(),
                        _ => vec![1],
                    };
                    for ep in eps {
                        let sizes = crate::engines::Sizes { tp, pp, cp, ep };
                        if !self.inference && !c.engine.runs_sizes(a, sizes) {
                            continue;
                        }
                        out.push(Shape {
                            tp,
                            pp,
                            cp,
                            ep,
                            uneven,
                        });
                    }
                }
            }
        }
        out.sort_by_key(|s| (s.tp * s.pp * s.cp, s.pp, s.cp, s.ep));
        out
    }

    /// The smallest data-parallel size step of `s` that validates: data x context ranks
    /// divisible by EP (expert parallelism borrows data-parallel ranks) and by the HSDP
    /// replicas, expert-tensor x expert parallel dividing tensor x context x data.
    fn dp_step(tp: u64, cp: u64, ep: u64, etp: u64, replicate: u64) -> u64 {
        (1..=ep * etp * replicate)
            .find(|&d| {
                (d * cp).is_multiple_of(ep)
                    && d.is_multiple_of(replicate)
                    && (d * cp * tp).is_multiple_of(etp * ep)
            })
            .unwrap_or(ep * etp * replicate)
    }
}

/// Solves `target` for `config`, searching the layout (see the module docs). Errors: the
/// config's field errors, or a target that does not apply to the mode.
pub fn solve(config: &Config, target: Target) -> Result<Solution, Vec<FieldError>> {
    // the config itself must be valid
    let base = crate::resolve::resolve(config)?;
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
    let own = base.layout;
    let mut s = Search {
        config,
        target,
        model: base,
        inference,
        evaluations: 0,
    };
    let found = match target {
        Target::MinGpus => min_gpus(&mut s, &own)?,
        Target::MaxConcurrency => max_concurrency(&mut s)?,
        _ => largest_value(&mut s, &own)?,
    };
    finish(s, found)
}

/// What a search found: the best answer (value, shape or the config's own, the document)
/// and the config layout's answer.
struct Found {
    best: Option<(u64, Config)>,
    own: Option<u64>,
    at_limit: bool,
}

/// The largest micro-batch or sequence on the config's GPU count.
fn largest_value(s: &mut Search, own: &Layout) -> Result<Found, Vec<FieldError>> {
    let (target, config, inference) = (s.target, s.config, s.inference);
    // a sequence or context never goes past the model's positions (`max_position_embeddings`:
    // vLLM refuses a longer max_model_len, transformers warns and RoPE models degrade)
    let positions = s.model.arch.max_position_embeddings.min(limits::MAX_SEQ);
    let max_for = |cp: u64| -> (u64, u64) {
        match target {
            Target::MaxSequence if inference => (1, positions),
            // training sequences stay divisible by what the engine's context parallelism
            // splits them into
            Target::MaxSequence => {
                let m = config.engine.parallelism().sequence_multiple(cp);
                (m, positions / m)
            }
            _ => (1, limits::MAX_BATCH),
        }
    };
    // the config's own layout: errors are the config's
    let (scale, max) = max_for(own.context_parallel_size);
    let own_value = own_largest(s, scale, max)?;
    let mut best = own_value.map(|v| (v, document(config, target, None, None, v)));
    let mut at_limit = own_value == Some(max * scale);
    let gpus = own.num_gpus;
    for shape in s.shapes(Some(gpus)) {
        if shape_is_own(&shape, own) {
            continue;
        }
        let (scale, max) = max_for(shape.cp);
        let at = |k: u64| document(config, target, Some(&shape), Some(gpus), k * scale);
        // the first value that would beat the best so far
        let k0 = best.as_ref().map_or(1, |(v, _)| v / scale + 1);
        if k0 > max || !s.fits_or_not(&at(k0)) {
            continue;
        }
        let k = largest_from(k0, max, |k| s.fits_or_not(&at(k)));
        at_limit = k == max;
        best = Some((k * scale, at(k)));
    }
    Ok(Found {
        best,
        own: own_value,
        at_limit,
    })
}

/// The largest value `k x scale` (`k` in `[1, max]`) that fits with the config's own
/// layout, or `None`; the config's errors are returned.
fn own_largest(s: &mut Search, scale: u64, max: u64) -> Result<Option<u64>, Vec<FieldError>> {
    let (config, target) = (s.config, s.target);
    let at = |k: u64| document(config, target, None, None, k * scale);
    if !s.fits(&at(1))? {
        return Ok(None);
    }
    Ok(Some(try_largest_from(1, max, |k| s.fits(&at(k)))? * scale))
}

/// Whether a searched shape is the config's own layout (searched first, with its own
/// settings: virtual stages, schedule, replicas).
fn shape_is_own(s: &Shape, l: &Layout) -> bool {
    s.tp == l.tensor_parallel_size
        && s.pp == l.pipeline_parallel_size
        && s.cp == l.context_parallel_size
        && s.ep == l.expert_parallel_size
}

/// The fewest GPUs: each layout's fewest data-parallel replicas (training) or its one
/// replica (inference), the smallest over the layouts.
fn min_gpus(s: &mut Search, own: &Layout) -> Result<Found, Vec<FieldError>> {
    let config = s.config;
    let inference = s.inference;
    // the config's own layout, scaled by data parallelism
    let mp = own.tensor_parallel_size * own.pipeline_parallel_size * own.context_parallel_size;
    let step = mp
        * Search::dp_step(
            own.tensor_parallel_size,
            own.context_parallel_size,
            own.expert_parallel_size,
            own.expert_tensor_parallel_size,
            own.data_parallel_replicate_size,
        );
    let own_doc = |k: u64| document(config, Target::MinGpus, None, Some(k * step), 0);
    let own_value = replicas(step, u64::MAX, inference, |k| s.fits(&own_doc(k)))?;
    let mut best = own_value.map(|k| (k * step, own_doc(k)));
    for shape in s.shapes(None) {
        if shape_is_own(&shape, own) {
            continue;
        }
        let step = shape.tp
            * shape.pp
            * shape.cp
            * Search::dp_step(shape.tp, shape.cp, shape.ep, shape.tp, 1);
        let bound = best.as_ref().map_or(u64::MAX, |(n, _)| *n);
        let at = |k: u64| document(config, Target::MinGpus, Some(&shape), Some(k * step), 0);
        if let Some(k) = replicas(step, bound, inference, |k| Ok(s.fits_or_not(&at(k))))? {
            best = Some((k * step, at(k)));
        }
    }
    Ok(Found {
        best,
        own: own_value.map(|k| k * step),
        at_limit: false,
    })
}

/// The fewest replicas `k` (each of `step` GPUs) with `k x step < bound` that fit, or
/// `None`. Training: one replica, then the range from two up, where memory falls with
/// replicas; inference: one replica.
///
/// Without a bound the search doubles from two replicas to the first count that fits and
/// bisects below it: sharded memory is not monotone without end (FSDP pads every dim-0 to
/// a multiple of the ranks, so past the rows of a weight each rank's share stops falling
/// and the gathered buffer grows), so the largest count is no test. With a bound, the
/// count just under it is tested first and the layout skipped when that does not fit.
fn replicas(
    step: u64,
    bound: u64,
    inference: bool,
    mut fits: impl FnMut(u64) -> Result<bool, Vec<FieldError>>,
) -> Result<Option<u64>, Vec<FieldError>> {
    if step >= bound {
        return Ok(None);
    }
    if fits(1)? {
        return Ok(Some(1));
    }
    let most = ((bound - 1) / step).min(limits::MAX_GPUS / step);
    if inference || most < 2 {
        return Ok(None);
    }
    if bound == u64::MAX {
        // "k does not fit" holds from two replicas up to a boundary; the count after it fits
        if fits(2)? {
            return Ok(Some(2));
        }
        let k = try_largest_from(2, most, |k| fits(k).map(|f| !f))?;
        return Ok((k < most).then_some(k + 1));
    }
    if !fits(most)? {
        return Ok(None);
    }
    // lo does not fit, hi does
    let (mut lo, mut hi) = (1u64, most);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid)? { hi = mid } else { lo = mid }
    }
    Ok(Some(hi))
}

/// Inference concurrency with the config's layout.
fn max_concurrency(s: &mut Search) -> Result<Found, Vec<FieldError>> {
    let config = s.config;
    let target = s.target;
    // a serving runtime (vLLM) reports its KV cache's capacity: concurrency is read off it
    // (the config's report: `s.model` is the config resolved)
    let e = crate::report_of(&s.model);
    s.evaluations += 1;
    // (the runtime's own figure: vLLM's "Maximum concurrency for max_model_len tokens per
    // request", `kv_cache_tokens / max_model_len`, whole requests, at most max_num_seqs)
    if let (Some(sv), Some(inf)) = (&e.serving, &config.inference) {
        let n = (sv.kv_cache_tokens / sv.max_model_len.max(1)).min(inf.max_num_seqs);
        let best = (n > 0).then(|| (n, document(config, target, None, None, n)));
        return Ok(Found {
            best,
            own: (n > 0).then_some(n),
            at_limit: false,
        });
    }
    let value = own_largest(s, 1, limits::MAX_BATCH)?;
    let at_limit = value == Some(limits::MAX_BATCH);
    Ok(Found {
        best: value.map(|v| (v, document(config, target, None, None, v))),
        own: value,
        at_limit,
    })
}

/// The estimate and message of what a search found.
fn finish(s: Search, f: Found) -> Result<Solution, Vec<FieldError>> {
    let target = s.target;
    let inference = s.inference;
    // the answer's value, layout, report and document
    let answer = match f.best {
        Some((v, c)) => {
            let r = crate::resolve::resolve(&c)?;
            Some((v, r.layout, crate::report_of(&r), c))
        }
        None => None,
    };
    // serving: concurrency counts requests of max_model_len tokens
    let answer_serving = answer
        .as_ref()
        .and_then(|(_, _, e, _)| e.serving.as_ref())
        .map(|sv| sv.max_model_len);
    let what = match target {
        Target::MaxMicroBatch => "micro-batch",
        Target::MaxSequence if inference => "context",
        Target::MaxSequence => "sequence length",
        Target::MinGpus => "GPUs",
        Target::MaxConcurrency => "concurrent sequences",
    };
    let own = s.model.layout;
    // the config's layout (for the fewest GPUs of training, its model-parallel sizes scaled
    // by data parallelism)
    let own_text = if target == Target::MinGpus && !inference {
        own.describe_model_parallel()
    } else {
        own.describe()
    };
    let this = match own_text {
        t if t.is_empty() => "this layout".to_string(),
        t => format!("this layout, {t}"),
    };
    let message = match &answer {
        None => match target {
            Target::MinGpus => format!(
                "no GPU count up to {} fits with any layout the engine runs",
                limits::MAX_GPUS
            ),
            Target::MaxConcurrency => {
                format!("nothing fits: not even one sequence ({this})")
            }
            _ => format!(
                "nothing fits with any layout of {}: even a {what} of 1 exceeds the GPU",
                match own.num_gpus {
                    1 => "1 GPU".to_string(),
                    n => format!("{n} GPUs"),
                }
            ),
        },
        Some((v, l, ..)) => {
            let v = *v;
            let head = match target {
                Target::MinGpus => format!("fewest {what}: {v} at {}", l.describe()),
                _ => format!(
                    "max {what}: {v}{} at {}",
                    match (f.at_limit, target, answer_serving) {
                        (_, Target::MaxConcurrency, Some(len)) => {
                            format!(" of {len} tokens each (max_model_len)")
                        }
                        (false, ..) => String::new(),
                        (true, Target::MaxSequence, _) => {
                            " (the model's max_position_embeddings)".to_string()
                        }
                        (true, ..) => " (the largest allowed)".to_string(),
                    },
                    l.describe()
                ),
            };
            let same = f.own == Some(v);
            let tail = match (target, same, f.own) {
                (Target::MaxConcurrency, ..) => String::new(),
                (_, true, _) => format!(" ({this}; no other layout does better)"),
                (_, false, Some(o)) => format!(" ({this}: {o})"),
                (_, false, None) => format!(" (nothing fits {this})"),
            };
            format!("{head}{tail}")
        }
    };
    let (value, layout, estimate, config) = match answer {
        Some((v, l, e, c)) => (Some(v), Some(l), Some(e), Some(c)),
        None => (None, None, None, None),
    };
    Ok(Solution {
        target,
        value,
        at_limit: f.at_limit,
        evaluations: s.evaluations,
        estimate,
        layout,
        config,
        value_with_config_layout: f.own,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_from_finds_the_boundary() {
        for boundary in [1u64, 2, 3, 7, 64, 65, 1000, 1 << 20] {
            for lo in [1u64, 2, 5] {
                if lo > boundary {
                    continue;
                }
                let mut n = 0;
                let v = largest_from(lo, 1 << 20, |k| {
                    n += 1;
                    k <= boundary
                });
                assert_eq!(v, boundary, "from {lo}");
                assert!(n <= 42, "{n}");
            }
        }
        assert_eq!(largest_from(1, 100, |_| true), 100);
        assert_eq!(largest_from(3, 3, |_| true), 3);
    }

    #[test]
    fn dp_step_is_the_smallest_valid_size() {
        // EP 8 over CP 2: data x context ranks divisible by 8 needs DP 4
        assert_eq!(Search::dp_step(1, 2, 8, 1, 1), 4);
        // HSDP with 3 replicas
        assert_eq!(Search::dp_step(1, 1, 1, 1, 3), 3);
        // expert tensor 4 x EP 2 over TP 2: DP x 2 divisible by 8 and DP divisible by 2
        assert_eq!(Search::dp_step(2, 1, 2, 4, 1), 4);
        assert_eq!(Search::dp_step(8, 1, 1, 8, 1), 1);
    }
}
