//! The resolved problem: a validated config with every default applied, the model
//! architecture parsed, the parallel layout and the GPU known. Plain data, produced by
//! [`crate::resolve::resolve`] and read by every estimator.

use crate::config::{Config, Mode, PipelineSchedule};
use crate::model::{ModelArch, ParamCounts};
use crate::precision::{Framework, ModelCode, StateBytes};
use serde::{Deserialize, Serialize};

/// The GPU the estimate is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuSpec {
    /// Preset id, or `custom`.
    pub id: String,
    pub name: String,
    /// Capacity in bytes.
    pub memory_bytes: u64,
    /// CUDA context + driver memory in bytes.
    pub cuda_context_bytes: u64,
    /// Architecture family (`hopper`, ...), `unknown` for a custom size.
    pub arch: String,
    /// CPU memory per node, bytes: `hardware.cpu_memory_gb`, else the preset's typical
    /// node (`node_cpu_memory_gib`; the default preset's for a custom GPU). What offloaded
    /// and paged states must fit in.
    #[serde(default)]
    pub node_cpu_memory_bytes: u64,
}

/// The parallel layout after defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Layout {
    pub num_gpus: u64,
    pub data_parallel_size: u64,
    pub tensor_parallel_size: u64,
    pub pipeline_parallel_size: u64,
    pub context_parallel_size: u64,
    pub expert_parallel_size: u64,
    /// Virtual stages per pipeline rank (1 = not interleaved).
    pub virtual_pipeline_parallel_size: u64,
    /// The pipeline schedule (meaningful with `pipeline_parallel_size` > 1).
    pub pipeline_schedule: PipelineSchedule,
    pub sequence_parallel: bool,
    /// HSDP replicas (1: one shard group).
    pub data_parallel_replicate_size: u64,
    /// Ranks a routed expert is split over (Megatron `--expert-tensor-parallel-size`).
    pub expert_tensor_parallel_size: u64,
    /// Logits stay vocabulary-parallel over the tensor-parallel ranks.
    pub loss_parallel: bool,
    pub gpus_per_node: u64,
    /// Decoder layers on each pipeline stage, first to last.
    pub stage_layers: StageLayers,
}

impl Layout {
    /// The ranks that hold the same weights and over which ZeRO, FSDP and the distributed
    /// optimizer shard: the data-parallel group times the context-parallel group (Megatron
    /// `data_parallel_group_with_cp`, DeepSpeed-Ulysses' sequence-data-parallel group,
    /// torchtitan's `dp_shard_cp` mesh).
    pub fn shard_group(&self) -> u64 {
        self.data_parallel_size * self.context_parallel_size
    }
    /// The shard group of routed experts: the ranks that hold the same experts
    /// (Megatron-Core's expert-data-parallel group: with MoE parallel folding the
    /// tensor x context x data parallel ranks are refolded as expert-tensor x expert x
    /// expert-data parallel, `parallel_state.py`), `dp x cp x tp / (etp x ep)`.
    pub fn expert_shard_group(&self) -> u64 {
        (self.shard_group() * self.tensor_parallel_size
            / (self.expert_tensor_parallel_size * self.expert_parallel_size))
            .max(1)
    }
    /// Process groups of more than one rank that a GPU belongs to, one NCCL communicator
    /// each (`report::nccl_buffers`): in training the data, tensor, pipeline,
    /// context and expert parallel groups (none on one GPU); in inference the tensor and
    /// pipeline groups (data-parallel replicas are separate servers).
    pub fn communicators(&self, mode: Mode) -> u64 {
        let groups = match mode {
            Mode::Training if self.num_gpus > 1 => &[
                self.data_parallel_size,
                self.tensor_parallel_size,
                self.pipeline_parallel_size,
                self.context_parallel_size,
                self.expert_parallel_size,
            ][..],
            Mode::Training => &[],
            Mode::Inference => &[self.tensor_parallel_size, self.pipeline_parallel_size][..],
        };
        groups.iter().filter(|&&g| g > 1).count() as u64
    }
    /// Nodes in the job.
    pub fn nodes(&self) -> u64 {
        self.num_gpus.div_ceil(self.gpus_per_node).max(1)
    }
    /// GPUs on one (full) node.
    pub fn gpus_on_node(&self) -> u64 {
        self.num_gpus.min(self.gpus_per_node)
    }
    /// The model-parallel sizes above 1, as the field writes them: "TP 8, PP 2" (empty for
    /// data parallelism alone); an uneven pipeline split with its stages' layers, first /
    /// middle x count / last: "PP 8 (14 / 16 x 6 / 16 layers)".
    pub fn describe_model_parallel(&self) -> String {
        let pp = self.pipeline_parallel_size;
        let sl = self.stage_layers;
        let split = if pp > 1
            && (sl.first != sl.middle || sl.last != sl.middle || sl.heavier_middles > 0)
        {
            // runs of equal middle stages: "16 x 6", or "16" for one
            let k = sl.heavier_middles.min(pp - 2);
            let mut runs = [(sl.middle, pp - 2 - k), (sl.middle + 1, k)];
            if sl.heavier_first {
                runs.reverse();
            }
            let mut parts = vec![sl.first.to_string()];
            for (layers, count) in runs {
                match count {
                    0 => {}
                    1 => parts.push(layers.to_string()),
                    _ => parts.push(format!("{layers} x {count}")),
                }
            }
            parts.push(sl.last.to_string());
            format!(" ({} layers)", parts.join(" / "))
        } else {
            String::new()
        };
        [
            ("TP", self.tensor_parallel_size, ""),
            ("PP", pp, split.as_str()),
            ("VP", self.virtual_pipeline_parallel_size, ""),
            ("CP", self.context_parallel_size, ""),
            ("EP", self.expert_parallel_size, ""),
        ]
        .iter()
        .filter(|(_, v, _)| *v > 1)
        .map(|(k, v, more)| format!("{k} {v}{more}"))
        .collect::<Vec<_>>()
        .join(", ")
    }
    /// Of the decoder layers pipeline stage `s` holds (its model chunks with virtual
    /// stages, [`StageLayers::chunks`]), how many are MoE layers and how many
    /// sliding-window layers: `(moe, sliding)`.
    pub fn stage_layer_kinds(&self, arch: &ModelArch, s: u64) -> (u64, u64) {
        let layers = arch.num_hidden_layers;
        self.stage_layers
            .chunks(
                s,
                self.pipeline_parallel_size,
                self.virtual_pipeline_parallel_size,
            )
            .fold((0, 0), |(moe, sliding), (a, b)| {
                let b = b.min(layers);
                (
                    moe + arch.moe_layers_in(a, b),
                    sliding + arch.sliding_layers_in(a, b),
                )
            })
    }
    /// [`Layout::describe_model_parallel`] and the data-parallel size: "TP 8, PP 2, DP 4".
    pub fn describe(&self) -> String {
        match self.describe_model_parallel() {
            m if m.is_empty() => format!("DP {}", self.data_parallel_size),
            m => format!("{m}, DP {}", self.data_parallel_size),
        }
    }
}

/// How the decoder layers are split over the pipeline stages (each stage's total; with
/// virtual stages, a stage's layers form `virtual_pipeline_parallel_size` equal model
/// chunks, Megatron-Core's rule: `get_num_layers_to_build` divides each rank's count by the
/// virtual size).
///
/// The first stage, `pp - 2` middle stages and the last. The middle stages hold `middle`
/// layers each, except the last `heavier_middles` of them, which hold one more: the splits
/// vLLM and SGLang choose when the layers do not divide (`resolve::serving_split`: vLLM's
/// 15 / 15 / 16 / 15 for 61 layers on 4 stages is `first` 15, `middle` 15,
/// `heavier_middles` 1, `last` 15), or, with `heavier_first`, the first of them: DeepSpeed's
/// (Megatron-DeepSpeed's 16 / 16 / 16 / 15 / 15 for 78 layers on 5 stages is `first` 16,
/// `middle` 15, `heavier_middles` 2, `last` 15). Megatron's and torchtitan's splits have
/// none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StageLayers {
    pub first: u64,
    /// Each stage between the first and the last (but the `heavier_middles` of them).
    pub middle: u64,
    pub last: u64,
    /// How many of the middle stages, the last ones before the last stage (unless
    /// `heavier_first`), hold `middle + 1` layers (never with virtual stages).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub heavier_middles: u64,
    /// The `heavier_middles` are the first middle stages instead, right after the first
    /// stage (DeepSpeed's split, [`StageLayers::balanced`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub heavier_first: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl StageLayers {
    /// `first`, `middle` and `last` layers, every middle stage alike.
    pub fn new(first: u64, middle: u64, last: u64) -> StageLayers {
        StageLayers {
            first,
            middle,
            last,
            heavier_middles: 0,
            heavier_first: false,
        }
    }

    /// DeepSpeed's split of `layers` decoder layers over `pp` stages (`pp >= 1`): `layers /
    /// pp` each, the first `layers % pp` stages one more. `PipelineModule` with
    /// `partition_method='type:transformer'` (Megatron-DeepSpeed's `GPTModelPipe`) weighs the
    /// decoder layers 1 and the embedding, norm and head 0, and `ds_utils.partition_balanced`
    /// minimizes the spread of the stages' weights; its ties (`>=`) put the larger stages
    /// first (checked against that function for 22 to 80 layers on 3 to 8 stages, with 0 to
    /// 4 zero-weight layers at either end).
    pub fn balanced(layers: u64, pp: u64) -> StageLayers {
        let pp = pp.max(1);
        let (c, r) = (layers / pp, layers % pp);
        if r == 0 {
            return StageLayers::new(c, c, c);
        }
        // r < pp, so pp >= 2 and the last stage holds c
        StageLayers {
            heavier_middles: r - 1,
            heavier_first: true,
            ..StageLayers::new(c + 1, c, c)
        }
    }

    /// The first of the middle stages that hold `middle + 1` layers, if any (with the
    /// most in-flight micro-batches of them in training).
    pub fn first_heavier_middle(&self, pp: u64) -> Option<u64> {
        (self.heavier_middles > 0 && pp >= 3).then(|| {
            if self.heavier_first {
                1
            } else {
                (pp - 1).saturating_sub(self.heavier_middles.min(pp - 2))
            }
        })
    }

    /// The layer index range `[start, end)` of stage `s` of `pp`.
    pub fn range(&self, s: u64, pp: u64) -> (u64, u64) {
        if pp == 1 {
            return (0, self.first);
        }
        let k = self.heavier_middles.min(pp.saturating_sub(2));
        // the heavier middle stages are 1 ..= k (heavier_first) or pp - 1 - k ..= pp - 2: of
        // the stages before s, min(s - 1, k) or (s + k) - (pp - 1) of them
        let front = self.heavier_first;
        let heavier_before = |s: u64| {
            if front {
                s.saturating_sub(1).min(k)
            } else {
                (s + k).saturating_sub(pp - 1)
            }
        };
        let start = if s == 0 {
            0
        } else {
            self.first + (s - 1) * self.middle + heavier_before(s)
        };
        let len = if s == 0 {
            self.first
        } else if s == pp - 1 {
            self.last
        } else {
            self.middle + heavier_before(s + 1) - heavier_before(s)
        };
        (start, start + len)
    }

    /// The decoder-layer index ranges `[start, end)` that stage `s` of `pp` holds with `v`
    /// model chunks per stage (interleaved 1F1B): chunk `j` of stage `s` is virtual stage
    /// `j x pp + s`, so it starts after `j` whole passes over the stages (`j x` the layers
    /// of one chunk of every stage) and the chunks of the stages before `s` (Megatron-Core
    /// `get_transformer_layer_offset`). With `v = 1`, [`StageLayers::range`] alone. Every
    /// stage's layers must divide by `v` (resolve checks it); ranges are clamped to the
    /// stage's layers otherwise.
    pub fn chunks(&self, s: u64, pp: u64, v: u64) -> impl Iterator<Item = (u64, u64)> {
        let v = v.max(1);
        let (start, end) = self.range(s, pp);
        let (len, stage_start) = ((end - start) / v, start / v);
        // one pass over the stages: a chunk of each, `layers / v`
        let (_, layers) = self.range(pp.max(1) - 1, pp.max(1));
        let pass = layers / v;
        (0..v).map(move |j| {
            let a = j * pass + stage_start;
            (a, a + len)
        })
    }
}

/// A validated problem, ready for [`crate::estimate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub config: Config,
    pub arch: ModelArch,
    pub params: ParamCounts,
    /// `arch.inventory()`, built once per problem (every stage of every estimate reads it).
    pub inventory: crate::model::Inventory,
    /// `training.lora`'s targets on the model ([`crate::lora::Targets`]), worked out once per
    /// problem; `None` without LoRA and in inference (which ignores the training section).
    pub lora_targets: Option<crate::lora::Targets>,
    pub layout: Layout,
    pub framework: Framework,
    /// The model code: Megatron's (Megatron-LM and Megatron-DeepSpeed) or Hugging Face's;
    /// decides the activation and loss model, while `framework` decides the model states.
    pub model_code: ModelCode,
    pub bytes: StateBytes,
    pub gpu: GpuSpec,
    pub warnings: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::StageLayers;

    #[test]
    fn model_chunks_of_a_stage() {
        // 32 layers on 4 stages (6, 10, 10, 6) of 2 chunks: one pass over the stages takes
        // 3 + 5 + 5 + 3 = 16 layers, so stage 0 holds [0, 3) and [16, 19), stage 1 [3, 8)
        // and [19, 24), stage 3 [13, 16) and [29, 32)
        let sl = StageLayers::new(6, 10, 6);
        let chunks = |s| sl.chunks(s, 4, 2).collect::<Vec<_>>();
        assert_eq!(chunks(0), vec![(0, 3), (16, 19)]);
        assert_eq!(chunks(1), vec![(3, 8), (19, 24)]);
        assert_eq!(chunks(3), vec![(13, 16), (29, 32)]);
        // without virtual stages, the stage's range
        assert_eq!(sl.chunks(2, 4, 1).collect::<Vec<_>>(), vec![(16, 26)]);
        // one stage
        let one = StageLayers::new(12, 12, 12);
        assert_eq!(one.chunks(0, 1, 1).collect::<Vec<_>>(), vec![(0, 12)]);
    }

    #[test]
    fn heavier_middle_stages() {
        // vLLM's split of Llama-3.1-70B's 80 layers over 6 stages, 13 / 13 / 13 / 14 / 14 /
        // 13: stages 3 and 4 hold [39, 53) and [53, 67) (13 x 3 = 39 layers before them)
        let sl = StageLayers {
            heavier_middles: 2,
            ..StageLayers::new(13, 13, 13)
        };
        let ranges: Vec<_> = (0..6).map(|s| sl.range(s, 6)).collect();
        assert_eq!(
            ranges,
            [(0, 13), (13, 26), (26, 39), (39, 53), (53, 67), (67, 80)]
        );
        assert_eq!(sl.chunks(4, 6, 1).collect::<Vec<_>>(), vec![(53, 67)]);
    }

    #[test]
    fn deepspeed_balanced_split() {
        // 78 layers on 5 stages: 15 each and 3 left over, to the first 3 stages: 16 / 16 /
        // 16 / 15 / 15, ranges [0, 16), [16, 32), [32, 48), [48, 63), [63, 78)
        let sl = StageLayers::balanced(78, 5);
        let ranges: Vec<_> = (0..5).map(|s| sl.range(s, 5)).collect();
        assert_eq!(ranges, [(0, 16), (16, 32), (32, 48), (48, 63), (63, 78)]);
        assert_eq!(sl.first_heavier_middle(5), Some(1));
        // 30 on 4: 8 / 8 / 7 / 7 (partition_balanced's parts [0, 10, 18, 25, 35] with the
        // embedding and a cast before the layers and three modules after them)
        let sl = StageLayers::balanced(30, 4);
        let lens: Vec<_> = (0..4).map(|s| sl.range(s, 4)).map(|(a, b)| b - a).collect();
        assert_eq!(lens, [8, 8, 7, 7]);
        // divisible: even; one left over: the first stage alone (DeepSpeed's split still)
        assert_eq!(StageLayers::balanced(32, 4), StageLayers::new(8, 8, 8));
        let one = StageLayers::balanced(33, 4);
        assert_eq!((one.first, one.middle, one.last), (9, 8, 8));
        assert_eq!((one.heavier_middles, one.heavier_first), (0, true));
    }
}
