//! Plan search: which layout to run. Given a model, a GPU, a number of GPUs, a sequence
//! length and a global batch, every valid layout (tensor x pipeline x context x expert x
//! data parallel sizes, virtual stages, engine and sharding, recomputation, micro-batch and
//! gradient accumulation) is timed ([`crate::steptime`]), and the fastest that fit with the
//! stated headroom are returned, ranked by step time per sequence (step time itself when
//! every plan runs the same global batch).
//!
//! The search is exact. Step time needs no memory estimate, so the candidates are visited
//! fastest first; memory is estimated only until `top` fit. A candidate is timed only when
//! it can still rank: each layout, engine and recomputation (a family) has a lower bound of
//! its candidates' step time, whatever their micro-batch
//! ([`crate::steptime::step_seconds_compute_bound`], then the closer
//! [`crate::steptime::step_seconds_lower_bound`]), and a family is timed only when the
//! search reaches its bound (`Order`: the candidates come out in the order of their exact
//! step times). A candidate is skipped without an estimate only when a smaller micro-batch
//! of the same layout, engine and recomputation (both with, or both without, gradient
//! accumulation) already did not fit: memory never falls when the micro-batch grows and the
//! accumulation steps shrink (1F1B holds `min(stages, accumulation) x micro-batch`
//! sequences). [`plan_exhaustive`] times and estimates every candidate; tests check both
//! agree, and that the bounds are below every candidate's step time.
//!
//! Layout rules (the others are what [`crate::resolve`] accepts): tensor parallelism inside
//! a node and dividing the attention and KV heads; pipeline stages dividing the layers, or
//! an uneven split (first and last stages taking the remainder) for engines that model it;
//! virtual stages dividing each stage's layers (of an uneven split too, whose middle and
//! end stages are then whole multiples of the chunk count, `shapes::uneven_split`);
//! context parallelism dividing the sequence into `2 cp` chunks (load-balanced ring
//! attention; `cp` chunks under DeepSpeed-Ulysses:
//! [`crate::engines::Parallelism::sequence_multiple`]); expert parallelism dividing the
//! experts; data parallelism dividing the global batch when it is given in sequences, or,
//! given in tokens, the batch rounded per layout to whole sequences per data-parallel rank
//! (so that 4M tokens of 4096, 977 sequences, a prime, still runs on DP 64 as 960).
//! Sequence parallelism is on with tensor parallelism wherever the engine models it
//! (Megatron, torchtitan). Under torchao float8 (precision `fp8`) each FSDP2 variant is
//! tried with and without its float8 all-gather (`engine.float8_all_gather`): it needs
//! tensorwise scaling, which not every recipe uses. Megatron-DeepSpeed's pipeline takes
//! layers its stages do not divide as DeepSpeed splits them
//! ([`crate::problem::StageLayers::balanced`]), not a first/last split.

use crate::config::{
    Config, DdpOptions, Engine, FsdpOptions, MegatronDeepspeedOptions, MegatronOptions, Mode,
    Offload, PipelineSchedule, Recompute, ReshardAfterForward, ZeroOptions,
};
use crate::engines::Sizes;
use crate::error::{Errors, FieldError};
use crate::problem::{Layout, StageLayers};
use crate::shapes::{divisors, tensor_size_ok, uneven_split};
use crate::steptime::{StepTime, TimeAssumptions, TimeInputs};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What to plan for. The base `config` says the model, precision, optimizer, attention,
/// loss, LoRA, `hardware.gpu`, `hardware.gpus_per_node` and `training.seq_len`; its
/// parallel layout, engine, recomputation, micro-batch and accumulation are what the search
/// chooses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct PlanRequest {
    /// The base document, loaded as [`Config::from_value`] loads one (older schemas migrated).
    #[serde(deserialize_with = "de_config")]
    pub config: Config,
    /// GPUs in the job (also `hardware.num_gpus` of the plans). Default: the config's, else 8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_gpus: Option<u64>,
    /// Also try every GPU count up to this (powers of two within a node, then whole
    /// nodes). Default: `num_gpus` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_gpus: Option<u64>,
    /// Sequences per optimizer step over all data-parallel ranks, exactly: only data-parallel
    /// sizes dividing it are tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_batch_sequences: Option<u64>,
    /// Tokens per optimizer step, used when `global_batch_sequences` is not given: each
    /// layout rounds it to whole sequences of `training.seq_len` per data-parallel rank
    /// (at least one), so that every data-parallel size can run it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_batch_tokens: Option<u64>,
    /// Engines allowed (`engine.type` values). Default: all.
    pub engines: Vec<String>,
    /// Recomputation allowed. Default: none, selective, selective_op, full.
    pub recompute: Vec<Recompute>,
    /// Also try offloading (ZeRO-Offload optimizer, ZeRO-3 parameters, FSDP CPU offload).
    /// Default false.
    pub allow_offload: bool,
    /// Fraction of the GPU's memory a plan must leave free. Default 0.05.
    pub min_headroom: f64,
    /// Plans returned. Default 10.
    pub top: u64,
    /// Most virtual pipeline stages per rank tried. Default 4.
    pub max_virtual_stages: u64,
    /// Largest micro-batch tried. Default 64.
    pub max_micro_batch: u64,
    pub assumptions: TimeAssumptions,
}

fn de_config<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Config, D::Error> {
    use serde::de::Error;
    let v = serde_json::Value::deserialize(d)?;
    Config::from_value(v).map_err(|e| {
        D::Error::custom(
            e.iter()
                .map(|e| format!("config.{e}"))
                .collect::<Vec<_>>()
                .join("; "),
        )
    })
}

impl Default for PlanRequest {
    fn default() -> Self {
        PlanRequest {
            config: Config::default(),
            num_gpus: None,
            max_gpus: None,
            global_batch_sequences: None,
            global_batch_tokens: None,
            engines: crate::engines::ENGINES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            recompute: vec![
                Recompute::None,
                Recompute::Selective,
                Recompute::SelectiveOp,
                Recompute::Full,
            ],
            allow_offload: false,
            min_headroom: 0.05,
            top: 10,
            max_virtual_stages: 4,
            max_micro_batch: 64,
            assumptions: TimeAssumptions::default(),
        }
    }
}

/// One ranked plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Plan {
    /// 1 = fastest.
    pub rank: u64,
    /// "FSDP2 (reshard after forward), TP 2, DP 32, full recomputation, micro-batch 2 x 8".
    pub summary: String,
    /// The whole document of this plan ("use this plan").
    pub config: Config,
    pub layout: Layout,
    /// `engine.type` and its variant ("fsdp", "deepspeed ZeRO-3", ...).
    pub engine: String,
    pub recompute: Recompute,
    pub micro_batch_size: u64,
    pub gradient_accumulation_steps: u64,
    /// Sequences per optimizer step: micro-batch x accumulation x data-parallel size (the
    /// asked batch, rounded to a multiple of the data-parallel size when asked in tokens).
    pub global_batch_sequences: u64,
    /// What the most loaded GPU must hold (the estimate's `total_bytes`).
    pub total_bytes: u64,
    pub gpu_memory_bytes: u64,
    /// `gpu_memory_bytes - total_bytes`.
    pub headroom_bytes: i64,
    pub step: StepTime,
}

/// The answer to a [`PlanRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PlanResult {
    /// The fastest plans that fit, fastest first (least step time per sequence: step time
    /// when every plan runs the same batch).
    pub plans: Vec<Plan>,
    /// The global batch asked, in sequences (tokens rounded to whole sequences); a plan's
    /// own is [`Plan::global_batch_sequences`].
    pub global_batch_sequences: u64,
    /// Layouts x engines x recomputation x micro-batches searched.
    pub candidates: u64,
    /// Of them, the candidates whose step time was worked out: those a lower bound of
    /// their layout, engine and recomputation's step time
    /// ([`crate::steptime::step_seconds_lower_bound`]) could not rank behind the plans
    /// found (every candidate under [`plan_exhaustive`]).
    pub timed: u64,
    /// Memory estimates computed.
    pub estimates: u64,
    /// Candidates skipped because a smaller micro-batch did not fit.
    pub pruned: u64,
    /// Estimated candidates the config validation rejected.
    pub invalid: u64,
    /// One line for the user.
    pub message: String,
}

/// An engine as the search varies it.
fn engine_variants(kind: &str, offload: bool, fp8: bool) -> Vec<(String, Engine)> {
    let zero = |stage: u8| ZeroOptions {
        zero_stage: stage,
        ..ZeroOptions::default()
    };
    let mut v: Vec<(String, Engine)> = Vec::new();
    match kind {
        "ddp" => v.push(("DDP".into(), Engine::Ddp(DdpOptions::default()))),
        "deepspeed" => {
            for stage in 0..=3 {
                v.push((format!("ZeRO-{stage}"), Engine::Deepspeed(zero(stage))));
            }
            if offload {
                for stage in 1..=3 {
                    v.push((
                        format!("ZeRO-{stage} + optimizer offload"),
                        Engine::Deepspeed(ZeroOptions {
                            offload_optimizer: Offload::Cpu,
                            ..zero(stage)
                        }),
                    ));
                }
                v.push((
                    "ZeRO-3 + optimizer and parameter offload".into(),
                    Engine::Deepspeed(ZeroOptions {
                        offload_optimizer: Offload::Cpu,
                        offload_param: Offload::Cpu,
                        ..zero(3)
                    }),
                ));
            }
        }
        "fsdp" => {
            // under torchao float8 (precision fp8), each with and without its float8
            // all-gather (it needs tensorwise scaling, which not every recipe uses)
            let float8 = if fp8 {
                &[false, true][..]
            } else {
                &[false][..]
            };
            for (label, raf) in [("FSDP2", true), ("FSDP2 (no reshard after forward)", false)] {
                for &float8_all_gather in float8 {
                    v.push((
                        if float8_all_gather {
                            format!("{label} + float8 all-gather")
                        } else {
                            label.into()
                        },
                        Engine::Fsdp(FsdpOptions {
                            reshard_after_forward: Some(ReshardAfterForward::Always(raf)),
                            float8_all_gather,
                            ..FsdpOptions::default()
                        }),
                    ));
                }
            }
            if offload {
                v.push((
                    "FSDP2 + CPU offload".into(),
                    Engine::Fsdp(FsdpOptions {
                        cpu_offload: true,
                        ..FsdpOptions::default()
                    }),
                ));
            }
        }
        "megatron" => {
            for (label, d) in [
                ("Megatron", false),
                ("Megatron (distributed optimizer)", true),
            ] {
                v.push((
                    label.into(),
                    Engine::Megatron(MegatronOptions {
                        distributed_optimizer: d,
                        ..MegatronOptions::default()
                    }),
                ));
            }
        }
        "megatron_deepspeed" => {
            for stage in 0..=1 {
                v.push((
                    format!("Megatron-DeepSpeed ZeRO-{stage}"),
                    Engine::MegatronDeepspeed(MegatronDeepspeedOptions(zero(stage))),
                ));
            }
        }
        _ => {}
    }
    v
}

/// GPU counts from `min` to `max`: powers of two below a node, then whole nodes.
fn gpu_counts(min: u64, max: u64, per_node: u64) -> Vec<u64> {
    let mut v = vec![min];
    let mut k = 1u64;
    while k < per_node && k <= max {
        if k > min {
            v.push(k);
        }
        k *= 2;
    }
    let mut n = per_node;
    while n <= max && v.len() < 4096 {
        if n > min {
            v.push(n);
        }
        n += per_node;
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// A layout, engine and recomputation (the memory-monotone family of a candidate), and
/// what timing its candidates needs.
#[derive(Debug, Clone)]
struct Family {
    layout: Layout,
    engine: usize,
    recompute: Recompute,
    /// The layout's stage work, `Space::works[work]`.
    work: usize,
    bytes: crate::precision::StateBytes,
    traffic: crate::engines::DpTraffic,
    /// What step time reads of its engine besides the traffic.
    timing: crate::steptime::EngineTiming,
    /// Its candidates, `Space::candidates[first..end]`, by micro-batch.
    first: usize,
    end: usize,
    /// Sequences of the global batch it runs (per data-parallel rank x ranks): a
    /// candidate's rank is its step time per sequence.
    sequences: u64,
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    family: usize,
    micro_batch: u64,
    accumulation: u64,
}

/// A candidate's document (as the plan hands it out), its resolved problem and the
/// numbers of its estimate.
struct Evaluated {
    config: Config,
    resolved: crate::problem::Resolved,
    estimate: crate::Peak,
}

/// Everything a search shares.
struct Space {
    perf: &'static crate::presets::GpuPerf,
    assumptions: TimeAssumptions,
    base: Config,
    /// The base document resolved: its model is every candidate's.
    model: crate::problem::Resolved,
    engines: Vec<(String, Engine)>,
    /// The layouts' stage work (step time's), one per layout and per engine split.
    works: Vec<crate::steptime::LayoutWork>,
    families: Vec<Family>,
    candidates: Vec<Candidate>,
    batch: u64,
    capacity_limit: u64,
}

fn validate_request(req: &PlanRequest) -> Result<(), Vec<FieldError>> {
    let mut e = Errors::default();
    if req.config.effective_mode() != Mode::Training {
        e.add(
            "config.mode",
            "inference",
            "plan searches training layouts; serving layouts are the vLLM solver's",
        );
    }
    e.frange("min_headroom", req.min_headroom, 0.0, 0.9);
    e.range("top", req.top, 1, 1000);
    e.range("max_virtual_stages", req.max_virtual_stages, 1, 64);
    e.range("max_micro_batch", req.max_micro_batch, 1, 4096);
    e.frange(
        "assumptions.compute_efficiency",
        req.assumptions.compute_efficiency,
        0.01,
        1.0,
    );
    if let Some(a) = req.assumptions.attention_efficiency {
        e.frange("assumptions.attention_efficiency", a, 0.01, 1.0);
    }
    for (i, k) in req.engines.iter().enumerate() {
        if !crate::engines::ENGINES.contains(&k.as_str()) {
            e.add(
                format!("engines[{i}]"),
                format!("{k:?}"),
                format!("must be one of {}", crate::engines::ENGINES.join(", ")),
            );
        }
    }
    if req.engines.is_empty() {
        e.add("engines", "[]", "must allow at least one engine");
    }
    if req.recompute.is_empty() {
        e.add(
            "recompute",
            "[]",
            "must allow at least one recomputation option",
        );
    }
    if e.is_empty() { Ok(()) } else { Err(e.0) }
}

/// Builds every candidate (its family and micro-batch; timed by [`Order`]).
fn space(req: &PlanRequest) -> Result<Space, Vec<FieldError>> {
    validate_request(req)?;
    let mut base = req.config.clone();
    base.parallelism = crate::config::Parallelism {
        loss_parallel: req.config.parallelism.loss_parallel,
        ..Default::default()
    };
    base.hardware.num_gpus = None;
    base.training.micro_batch_size = 1;
    base.training.gradient_accumulation_steps = 1;
    base.training.activation_checkpointing = Recompute::None;
    // the model, GPU and options must be valid on one GPU's layout
    let r = crate::resolve::resolve(&base)?;
    let perf = crate::steptime::gpu_perf(&r.gpu).map_err(|e| vec![e])?;
    let (arch, params) = (&r.arch, &r.params);
    let seq = base.training.seq_len;
    let mut e = Errors::default();
    let n_min = req.num_gpus.or(req.config.hardware.num_gpus).unwrap_or(8);
    e.range("num_gpus", n_min, 1, crate::limits::MAX_GPUS);
    let n_max = req.max_gpus.unwrap_or(n_min);
    e.range(
        "max_gpus",
        n_max,
        n_min,
        (n_min.max(1) * 64).min(crate::limits::MAX_GPUS),
    );
    let batch = match (req.global_batch_sequences, req.global_batch_tokens) {
        (Some(b), _) => b,
        (None, Some(t)) => (t + seq / 2) / seq.max(1),
        (None, None) => {
            e.add(
                "global_batch_sequences",
                "none",
                "give the global batch in sequences or in tokens (global_batch_tokens)",
            );
            0
        }
    };
    if e.is_empty() {
        e.range(
            if req.global_batch_sequences.is_some() {
                "global_batch_sequences"
            } else {
                "global_batch_tokens"
            },
            batch,
            1,
            crate::limits::MAX_BATCH,
        );
    }
    if !e.is_empty() {
        return Err(e.0);
    }
    let per_node = base.hardware.gpus_per_node;
    let fp8 = base.training.precision == crate::config::Precision::Fp8;
    let engines: Vec<(String, Engine)> = req
        .engines
        .iter()
        .flat_map(|k| engine_variants(k, req.allow_offload, fp8))
        .collect();
    let layers = arch.num_hidden_layers;
    let experts = arch.moe.as_ref().map(|m| m.num_experts);
    let mut families = Vec::new();
    let mut candidates = Vec::new();
    let mut works = Vec::new();
    for n in gpu_counts(n_min, n_max, per_node) {
        for tp in divisors(n) {
            if !tensor_size_ok(arch, tp, per_node, false) {
                continue;
            }
            for pp in divisors(n / tp) {
                if pp > layers {
                    continue;
                }
                let even = layers.is_multiple_of(pp);
                for cp in divisors(n / tp / pp) {
                    if !seq.is_multiple_of(cp) {
                        continue;
                    }
                    let dp = n / tp / pp / cp;
                    // sequences per data-parallel rank
                    let local = match req.global_batch_sequences {
                        Some(_) if !batch.is_multiple_of(dp) => continue,
                        Some(_) => batch / dp,
                        None => {
                            let tokens = req.global_batch_tokens.unwrap_or(0);
                            let per_rank = seq.saturating_mul(dp).max(1);
                            ((tokens + per_rank / 2) / per_rank).max(1)
                        }
                    };
                    let eps = match experts {
                        Some(x) => divisors(x)
                            .into_iter()
                            .filter(|ep| (dp * cp * tp).is_multiple_of(*ep))
                            .collect(),
                        None => vec![1],
                    };
                    // virtual stages cutting every stage into equal model chunks, each with
                    // its uneven split (first, last) if the layers do not divide: an even
                    // split's stage, or the uneven split made of whole chunks; one chunk
                    // always (DeepSpeed's own split needs none, `StageLayers::balanced`)
                    let vs: Vec<(u64, Option<(u64, u64)>)> = if pp > 1 {
                        (1..=req.max_virtual_stages)
                            .filter_map(|v| {
                                if even {
                                    (layers / pp).is_multiple_of(v).then_some((v, None))
                                } else {
                                    let split = uneven_split(layers, pp, v);
                                    (v == 1 || split.is_some()).then_some((v, split))
                                }
                            })
                            .collect()
                    } else {
                        vec![(1, None)]
                    };
                    // micro-batches dividing the data-parallel rank's share of the batch
                    let mbs: Vec<u64> = divisors(local)
                        .into_iter()
                        .take_while(|&mb| mb <= req.max_micro_batch)
                        .collect();
                    for &ep in &eps {
                        for &(v, split) in &vs {
                            let p = crate::config::Parallelism {
                                first_pipeline_stage_layers: split.map(|s| s.0),
                                last_pipeline_stage_layers: split.map(|s| s.1),
                                ..Default::default()
                            };
                            let mut se = Errors::default();
                            let stage_layers =
                                crate::resolve::split_layers(layers, pp, &p, v, &mut se);
                            if !se.is_empty() {
                                continue;
                            }
                            // the layout before the engine's sequence parallelism, and its
                            // stage work (step time's, the same for every engine)
                            let shape = Layout {
                                num_gpus: n,
                                data_parallel_size: dp,
                                tensor_parallel_size: tp,
                                pipeline_parallel_size: pp,
                                context_parallel_size: cp,
                                expert_parallel_size: ep,
                                virtual_pipeline_parallel_size: v,
                                pipeline_schedule: if v > 1 {
                                    PipelineSchedule::Interleaved1F1B
                                } else {
                                    PipelineSchedule::OneFOneB
                                },
                                sequence_parallel: false,
                                data_parallel_replicate_size: 1,
                                expert_tensor_parallel_size: tp,
                                loss_parallel: base.parallelism.loss_parallel,
                                gpus_per_node: per_node,
                                stage_layers,
                            };
                            let work = works.len();
                            works.push(crate::steptime::layout_work(arch, params, &shape, seq));
                            // the engines that split uneven layers themselves (DeepSpeed's
                            // pipeline) run them as `StageLayers::balanced`, timed for the
                            // first such engine
                            let mut balanced = None;
                            for (ei, (_, engine)) in engines.iter().enumerate() {
                                let par = engine.parallelism();
                                let own_split = !even && par.balanced_pipeline;
                                let ok = (tp == 1 || par.tensor)
                                    && (pp == 1 || par.pipeline)
                                    && (cp == 1 || par.context)
                                    && (ep == 1 || par.expert)
                                    && (v == 1 || par.virtual_pipeline)
                                    && if own_split {
                                        v == 1 && pp <= layers
                                    } else {
                                        even || (par.uneven_pipeline && split.is_some())
                                    }
                                    && seq.is_multiple_of(par.sequence_multiple(cp))
                                    && engine.runs_sizes(arch, Sizes { tp, pp, cp, ep });
                                if !ok {
                                    continue;
                                }
                                let (stage_layers, work) = if own_split {
                                    *balanced.get_or_insert_with(|| {
                                        let sl = StageLayers::balanced(layers, pp);
                                        let l = Layout {
                                            stage_layers: sl,
                                            ..shape
                                        };
                                        works.push(crate::steptime::layout_work(
                                            arch, params, &l, seq,
                                        ));
                                        (sl, works.len() - 1)
                                    })
                                } else {
                                    (shape.stage_layers, work)
                                };
                                let layout = Layout {
                                    sequence_parallel: par.sequence_parallel(tp, cp),
                                    stage_layers,
                                    ..shape
                                };
                                for &rc in &req.recompute {
                                    let training = crate::config::Training {
                                        activation_checkpointing: rc,
                                        ..base.training.clone()
                                    };
                                    // a recomputation the engine cannot run (torchtitan's
                                    // per-op policy under Megatron) is not a candidate
                                    let mut re = Errors::default();
                                    crate::resolve::check_recompute(&training, engine, &mut re);
                                    if !re.is_empty() {
                                        continue;
                                    }
                                    let family = families.len();
                                    let bytes = crate::resolve::training_bytes(&training, engine);
                                    let traffic =
                                        engine.traffic(&layout, training.precision, bytes);
                                    let first = candidates.len();
                                    for &mb in &mbs {
                                        candidates.push(Candidate {
                                            family,
                                            micro_batch: mb,
                                            accumulation: local / mb,
                                        });
                                    }
                                    families.push(Family {
                                        layout,
                                        engine: ei,
                                        recompute: rc,
                                        work,
                                        bytes,
                                        traffic,
                                        timing: crate::steptime::EngineTiming::of(engine, &bytes),
                                        first,
                                        end: candidates.len(),
                                        sequences: local * dp,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let capacity_limit = capacity_limit(r.gpu.memory_bytes, req.min_headroom);
    Ok(Space {
        perf,
        assumptions: req.assumptions,
        base,
        model: r,
        engines,
        works,
        families,
        candidates,
        batch,
        capacity_limit,
    })
}

/// The candidates of a [`Space`] fastest first (least step time per sequence; ties in
/// enumeration order), lazily: a heap of the families' lower bounds and the timed
/// candidates' step times. A family popped by its cheap bound has its closer bound worked
/// out and pushed; popped by that, its candidates are timed and pushed by their own step
/// times (never below the bounds). So a candidate is yielded only when every entry left is
/// at least its step time, and every candidate not timed is at least its bound: the order
/// is exact. Popped only as far as the search goes (usually a few hundred of 10^5
/// candidates), so that the families whose bound already ranks them behind the plans found
/// are never timed.
struct Order<'a> {
    sp: &'a Space,
    /// (step time per sequence or its bound, as bits: finite and non-negative, they order
    /// as the numbers; the candidate, a family by its first; [`Entry`]).
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize, Entry)>>,
    /// Candidates timed so far.
    timed: u64,
    /// The training section step time reads (see [`Space::seconds`]).
    training: crate::config::Training,
}

/// What a heap entry of [`Order`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Entry {
    /// A family by its cheap bound.
    Compute,
    /// A family by its closer bound.
    Bound,
    /// A candidate by its step time (seconds, as bits).
    Timed(u64),
}

impl Iterator for Order<'_> {
    /// A candidate's index and its step time, seconds.
    type Item = (usize, f64);
    fn next(&mut self) -> Option<(usize, f64)> {
        use std::cmp::Reverse;
        loop {
            let Reverse((key, i, entry)) = self.heap.pop()?;
            let sp = self.sp;
            let f = &sp.families[sp.candidates[i].family];
            match entry {
                Entry::Timed(s) => return Some((i, f64::from_bits(s))),
                Entry::Compute => {
                    let bound = sp.family_bound(
                        &mut self.training,
                        f,
                        crate::steptime::step_seconds_lower_bound,
                    );
                    // never below the bound popped: keys leave the heap in order
                    let key = key.max(bound.max(0.0).to_bits());
                    self.heap.push(Reverse((key, i, Entry::Bound)));
                    continue;
                }
                Entry::Bound => {}
            }
            for ci in f.first..f.end {
                let seconds = sp.seconds(
                    &mut self.training,
                    f,
                    &sp.candidates[ci],
                    crate::steptime::step_seconds_with,
                );
                let per_sequence = seconds / f.sequences as f64;
                self.heap.push(Reverse((
                    per_sequence.max(0.0).to_bits(),
                    ci,
                    Entry::Timed(seconds.to_bits()),
                )));
            }
            self.timed += (f.end - f.first) as u64;
        }
    }
}

impl Space {
    /// `time` (one of step time's functions: [`crate::steptime::step_seconds_with`] or a
    /// lower bound of it) of family `f` at candidate `c`'s micro-batch and accumulation,
    /// seconds per step. `training` is the base's training section, a copy kept by the
    /// caller (not made per candidate), whose recomputation, micro-batch and accumulation
    /// are set here.
    fn seconds(
        &self,
        training: &mut crate::config::Training,
        f: &Family,
        c: &Candidate,
        time: impl Fn(&TimeInputs, &crate::steptime::LayoutWork) -> f64,
    ) -> f64 {
        training.activation_checkpointing = f.recompute;
        training.micro_batch_size = c.micro_batch;
        training.gradient_accumulation_steps = c.accumulation;
        let inputs = TimeInputs {
            arch: &self.model.arch,
            params: &self.model.params,
            layout: &f.layout,
            training,
            traffic: f.traffic,
            bytes: f.bytes,
            perf: self.perf,
            gpu_arch: &self.model.gpu.arch,
            assumptions: self.assumptions,
            engine: f.timing,
        };
        time(&inputs, &self.works[f.work])
    }

    /// A lower bound, by `bound`, of family `f`'s step time per sequence whatever its
    /// micro-batch: worked out on its largest micro-batch, where the bounds hold for every
    /// split of the rank's sequences (see [`crate::steptime::step_seconds_lower_bound`]).
    fn family_bound(
        &self,
        training: &mut crate::config::Training,
        f: &Family,
        bound: impl Fn(&TimeInputs, &crate::steptime::LayoutWork) -> f64,
    ) -> f64 {
        self.seconds(training, f, &self.candidates[f.end - 1], bound) / f.sequences as f64
    }

    fn config(&self, c: &Candidate) -> Config {
        let f = &self.families[c.family];
        let l = &f.layout;
        let mut cfg = self.base.clone();
        cfg.engine = self.engines[f.engine].1.clone();
        let p = &mut cfg.parallelism;
        p.tensor_parallel_size = l.tensor_parallel_size;
        p.pipeline_parallel_size = l.pipeline_parallel_size;
        p.context_parallel_size = l.context_parallel_size;
        p.expert_parallel_size = l.expert_parallel_size;
        p.sequence_parallel = l.sequence_parallel;
        p.data_parallel_size = Some(l.data_parallel_size);
        if l.virtual_pipeline_parallel_size > 1 {
            p.virtual_pipeline_parallel_size = Some(l.virtual_pipeline_parallel_size);
        }
        let pp = l.pipeline_parallel_size;
        let sl = l.stage_layers;
        // a first/last split only where the engine takes one (not DeepSpeed's own split)
        if pp > 1
            && cfg.engine.parallelism().uneven_pipeline
            && (sl.first != sl.middle || sl.last != sl.middle)
        {
            p.first_pipeline_stage_layers = Some(sl.first);
            p.last_pipeline_stage_layers = Some(sl.last);
        }
        cfg.hardware.num_gpus = Some(l.num_gpus);
        let t = &mut cfg.training;
        t.micro_batch_size = c.micro_batch;
        t.gradient_accumulation_steps = c.accumulation;
        t.activation_checkpointing = f.recompute;
        cfg
    }

    fn summary(&self, c: &Candidate) -> String {
        let f = &self.families[c.family];
        let l = &f.layout;
        let mut parts = vec![self.engines[f.engine].0.clone(), l.describe()];
        parts.push(match f.recompute {
            Recompute::None => "no recomputation".into(),
            r => format!("{} recomputation", r.label()),
        });
        parts.push(format!(
            "micro-batch {}, {} accumulation steps",
            c.micro_batch, c.accumulation
        ));
        parts.join(", ")
    }

    /// The candidate's document, resolved and estimated; `None` when validation rejects it.
    fn evaluate(&self, c: &Candidate) -> Option<Evaluated> {
        let config = self.config(c);
        let resolved = crate::resolve::resolve_given(&config, Some(&self.model)).ok()?;
        // the numeric path: the report's numbers without its formulas (core/tests/numeric.rs)
        let estimate = crate::estimate_peak(&resolved);
        Some(Evaluated {
            config,
            resolved,
            estimate,
        })
    }

    fn plan(
        &self,
        rank: u64,
        c: &Candidate,
        seconds: f64,
        e: Evaluated,
        a: TimeAssumptions,
    ) -> Plan {
        let f = &self.families[c.family];
        // the step time of the resolved problem: the same function on the resolved layout
        let step = crate::steptime::step_time_with(&e.resolved, self.perf, a);
        // the search timed the layout it built; the resolved problem must agree
        debug_assert!(
            (step.seconds - seconds).abs() <= 1e-9 * seconds,
            "search and resolved step times differ for {}",
            self.summary(c)
        );
        let est = e.estimate;
        Plan {
            rank,
            summary: self.summary(c),
            layout: e.resolved.layout,
            engine: self.engines[f.engine].0.clone(),
            recompute: f.recompute,
            micro_batch_size: c.micro_batch,
            gradient_accumulation_steps: c.accumulation,
            global_batch_sequences: c.micro_batch * c.accumulation * f.layout.data_parallel_size,
            total_bytes: est.total_bytes,
            gpu_memory_bytes: est.gpu_memory_bytes,
            headroom_bytes: est.headroom_bytes,
            step,
            config: e.config,
        }
    }

    /// The candidates fastest first ([`Order`]): a heap of the families' bounds, built in
    /// linear time.
    fn order(&self) -> Order<'_> {
        use std::cmp::Reverse;
        let mut training = self.base.training.clone();
        let heap = self
            .families
            .iter()
            .filter(|f| f.end > f.first)
            .map(|f| {
                let lower = self.family_bound(
                    &mut training,
                    f,
                    crate::steptime::step_seconds_compute_bound,
                );
                Reverse((lower.max(0.0).to_bits(), f.first, Entry::Compute))
            })
            .collect();
        Order {
            sp: self,
            heap,
            timed: 0,
            training,
        }
    }

    /// The result of a search that kept `plans` (at most `top`): fewer than `top` means the
    /// search visited every candidate, so they are all that fit.
    fn result(&self, plans: Vec<Plan>, top: u64, counts: Counts) -> PlanResult {
        let message = match plans.first() {
            Some(p) => format!(
                "{}; fastest: {} ({:.2} s per step, {:.0} tokens/s per GPU)",
                if (plans.len() as u64) < top {
                    format!("{} plans fit", plans.len())
                } else {
                    format!("the {} fastest plans that fit (more may fit)", plans.len())
                },
                p.summary,
                p.step.seconds,
                p.step.tokens_per_second_per_gpu
            ),
            None => format!(
                "no layout of the {} tried fits with the headroom asked",
                self.candidates.len()
            ),
        };
        PlanResult {
            plans,
            global_batch_sequences: self.batch,
            candidates: self.candidates.len() as u64,
            timed: counts.timed,
            estimates: counts.estimates,
            pruned: counts.pruned,
            invalid: counts.invalid,
            message,
        }
    }
}

/// What a search did (see [`PlanResult`]).
#[derive(Default)]
struct Counts {
    timed: u64,
    estimates: u64,
    pruned: u64,
    invalid: u64,
}

/// The most a plan may need on a GPU of `gpu_memory_bytes` that must keep `min_headroom`
/// (a fraction) free, bytes: a plan fits when its `total_bytes` is at most this.
pub fn capacity_limit(gpu_memory_bytes: u64, min_headroom: f64) -> u64 {
    (gpu_memory_bytes as f64 * (1.0 - min_headroom)) as u64
}

/// Searches the fastest plans that fit (see the module docs). Errors: the request's field
/// errors (`config.*` for the base document), or a GPU without datasheet rates.
pub fn plan(req: &PlanRequest) -> Result<PlanResult, Vec<FieldError>> {
    let sp = space(req)?;
    // smallest micro-batch known not to fit, per family and "accumulates" flag
    let mut failed: HashMap<(usize, bool), u64> = HashMap::new();
    let mut n = Counts::default();
    let mut plans = Vec::new();
    let mut order = sp.order();
    for (i, seconds) in order.by_ref() {
        if plans.len() as u64 >= req.top {
            break;
        }
        let c = &sp.candidates[i];
        let key = (c.family, c.accumulation > 1);
        if failed.get(&key).is_some_and(|&mb| c.micro_batch >= mb) {
            n.pruned += 1;
            continue;
        }
        n.estimates += 1;
        let Some(e) = sp.evaluate(c) else {
            n.invalid += 1;
            continue;
        };
        if e.estimate.total_bytes <= sp.capacity_limit {
            plans.push(sp.plan(plans.len() as u64 + 1, c, seconds, e, req.assumptions));
        } else {
            let e = failed.entry(key).or_insert(u64::MAX);
            *e = (*e).min(c.micro_batch);
        }
    }
    n.timed = order.timed;
    Ok(sp.result(plans, req.top, n))
}

/// [`plan`] without pruning: every candidate estimated (for tests and benchmarks).
pub fn plan_exhaustive(req: &PlanRequest) -> Result<PlanResult, Vec<FieldError>> {
    let sp = space(req)?;
    let mut n = Counts::default();
    let mut fitting = Vec::new();
    let mut order = sp.order();
    for (i, seconds) in order.by_ref() {
        let c = &sp.candidates[i];
        n.estimates += 1;
        match sp.evaluate(c) {
            Some(e) if e.estimate.total_bytes <= sp.capacity_limit => fitting.push((i, seconds, e)),
            Some(_) => {}
            None => n.invalid += 1,
        }
    }
    n.timed = order.timed;
    let plans = fitting
        .into_iter()
        .take(req.top as usize)
        .enumerate()
        .map(|(k, (i, seconds, e))| {
            sp.plan(k as u64 + 1, &sp.candidates[i], seconds, e, req.assumptions)
        })
        .collect();
    Ok(sp.result(plans, req.top, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both of every family's lower bounds are at most each of its candidates' step time
    /// per sequence (what makes the lazy order exact), on searches over dense and MoE
    /// models, every engine, recomputation option and micro-batch, pipeline, context and
    /// expert layouts, eager attention and LoRA.
    #[test]
    fn family_bounds_are_below_their_candidates() {
        let request = |config: &str, gpus: u64, max: u64| PlanRequest {
            config: Config::from_json_str(config).unwrap(),
            num_gpus: Some(gpus),
            max_gpus: Some(max),
            global_batch_tokens: Some(1 << 20),
            allow_offload: true,
            ..Default::default()
        };
        let requests = [
            request(
                r#"{"model": {"preset": "llama-3.1-8b"}, "training": {"seq_len": 4096}}"#,
                8,
                32,
            ),
            request(
                r#"{"model": {"preset": "qwen3-30b-a3b"}, "training": {"seq_len": 2048, "precision": "fp8"}}"#,
                16,
                16,
            ),
            request(
                r#"{"model": {"preset": "gpt2-xl"}, "training": {"seq_len": 1024, "attention": "eager"}}"#,
                4,
                8,
            ),
            request(
                r#"{"model": {"preset": "llama-3.2-1b"}, "training": {"seq_len": 2048, "lora": {"rank": 8}}}"#,
                2,
                4,
            ),
        ];
        for req in &requests {
            let sp = space(req).unwrap();
            let mut order = sp.order();
            let mut checked = 0;
            for (i, seconds) in order.by_ref() {
                let c = &sp.candidates[i];
                let f = &sp.families[c.family];
                let per_sequence = seconds / f.sequences as f64;
                // both bounds, as the search works them out
                let mut training = sp.base.training.clone();
                let cheap = sp.family_bound(
                    &mut training,
                    f,
                    crate::steptime::step_seconds_compute_bound,
                );
                let closer =
                    sp.family_bound(&mut training, f, crate::steptime::step_seconds_lower_bound);
                for (name, bound) in [("cheap", cheap), ("closer", closer)] {
                    assert!(
                        bound <= per_sequence,
                        "{}: {name} bound {bound} above {per_sequence}",
                        sp.summary(c),
                    );
                    // not a vacuous 0
                    assert!(bound > 0.0, "{}: {name} bound", sp.summary(c));
                }
                checked += 1;
            }
            assert_eq!(checked, sp.candidates.len());
            assert_eq!(order.timed, sp.candidates.len() as u64);
        }
    }
}
