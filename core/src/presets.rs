//! Built-in presets, embedded at build time from `presets/` (see `build.rs`): model
//! configs (real Hugging Face `config.json` files), GPUs and example configs.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/presets_gen.rs"));

/// A model preset: a Hugging Face `config.json` plus provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelPreset {
    /// The preset id used in `model.preset` (`llama-2-7b`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Hugging Face model id, if the model is on the Hub.
    pub hf_id: Option<String>,
    /// File under `presets/models/hf/`.
    pub file: String,
    /// Parameter count as published (model card / paper), verbatim.
    pub published_params: String,
    /// Where the config file comes from.
    pub provenance: String,
}

/// A GPU preset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuPreset {
    /// The preset id used in `hardware.gpu` (`h100-80gb`).
    pub id: String,
    pub name: String,
    /// Capacity in bytes as the driver reports it (nvidia-smi).
    pub memory_bytes: u64,
    /// Total memory CUDA reports to PyTorch, where measured; the capacity used when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_total_bytes: Option<u64>,
    /// CUDA context and driver memory outside PyTorch's allocator, MiB.
    pub cuda_context_mib: f64,
    /// CPU memory of the GPU's typical node (the default of `hardware.cpu_memory_gb`), GiB.
    pub node_cpu_memory_gib: u64,
    /// Where the node's CPU memory comes from (a reference system's datasheet, or stated as
    /// assumed).
    pub node_source: String,
    /// Architecture family (`ampere`, `hopper`, ...).
    pub arch: String,
    /// Where the numbers come from.
    pub source: String,
    /// Peak compute and bandwidths, for step time ([`crate::steptime`]); `None` where not
    /// known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf: Option<GpuPerf>,
}

/// A GPU's datasheet peaks: what step time divides work by. Rates are dense (no sparsity),
/// per GPU; bandwidths per GPU and per direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GpuPerf {
    /// BF16 / FP16 tensor-core rate with FP32 accumulation, 10^12 FLOP/s.
    pub bf16_tflops: f64,
    /// FP8 tensor-core rate, 10^12 FLOP/s; `None` where the GPU has no FP8 (Ampere).
    pub fp8_tflops: Option<f64>,
    /// FP32 rate without TF32 (PyTorch's default for matmuls,
    /// `torch.backends.cuda.matmul.allow_tf32 = False`), 10^12 FLOP/s.
    pub fp32_tflops: f64,
    /// Memory bandwidth, 10^9 B/s.
    pub memory_gbs: f64,
    /// GPU-to-GPU bandwidth inside a node, each way (NVLink, Infinity Fabric, or PCIe
    /// peer-to-peer), 10^9 B/s.
    pub intra_node_gbs: f64,
    /// Network bandwidth per GPU between nodes, each way, 10^9 B/s.
    pub inter_node_gbs: f64,
    /// Host-device bandwidth (PCIe) each way, 10^9 B/s.
    pub pcie_gbs: f64,
    /// Where the numbers come from.
    pub source: String,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct ModelIndex {
    models: Vec<ModelPreset>,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct GpuIndex {
    gpus: Vec<GpuPreset>,
}

/// All model presets, sorted by id.
pub fn model_presets() -> &'static [ModelPreset] {
    static P: OnceLock<Vec<ModelPreset>> = OnceLock::new();
    P.get_or_init(|| {
        serde_json::from_str::<ModelIndex>(MODEL_INDEX)
            .map(|i| i.models)
            .unwrap_or_default()
    })
}

impl GpuPreset {
    /// The capacity estimates are checked against: CUDA's total where known, else the driver's.
    pub fn capacity_bytes(&self) -> u64 {
        self.cuda_total_bytes.unwrap_or(self.memory_bytes)
    }
}

/// All GPU presets.
pub fn gpu_presets() -> &'static [GpuPreset] {
    static P: OnceLock<Vec<GpuPreset>> = OnceLock::new();
    P.get_or_init(|| {
        serde_json::from_str::<GpuIndex>(GPUS)
            .map(|i| i.gpus)
            .unwrap_or_default()
    })
}

/// The example configs shipped in `presets/examples/`: (file name, JSON text).
pub fn example_configs() -> &'static [(&'static str, &'static str)] {
    EXAMPLE_FILES
}

/// Lower-case alphanumerics only, so that "Llama2-7B", "llama-2-7b" and "llama_2_7b" match.
pub fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The model preset with this id (exact, or equal after [`normalize`]).
pub fn model_preset(id: &str) -> Option<&'static ModelPreset> {
    let n = normalize(id);
    model_presets()
        .iter()
        .find(|p| p.id == id)
        .or_else(|| model_presets().iter().find(|p| normalize(&p.id) == n))
}

/// The `config.json` of a model preset.
pub fn model_preset_config(id: &str) -> Option<Value> {
    let p = model_preset(id)?;
    let text = MODEL_FILES.iter().find(|(f, _)| *f == p.file)?.1;
    serde_json::from_str(text).ok()
}

/// The raw text of a preset's `config.json`.
pub fn model_preset_text(id: &str) -> Option<&'static str> {
    let p = model_preset(id)?;
    MODEL_FILES
        .iter()
        .find(|(f, _)| *f == p.file)
        .map(|(_, t)| *t)
}

/// The GPU preset with this id or name (exact, or equal after [`normalize`]).
pub fn gpu_preset(id: &str) -> Option<&'static GpuPreset> {
    let n = normalize(id);
    gpu_presets().iter().find(|g| g.id == id).or_else(|| {
        gpu_presets().iter().find(|g| {
            normalize(&g.id) == n || normalize(&g.name) == n || normalize(&g.name).ends_with(&n)
        })
    })
}

/// Ids of all model presets (for error messages).
pub fn model_preset_ids() -> Vec<&'static str> {
    model_presets().iter().map(|p| p.id.as_str()).collect()
}

/// Ids of all GPU presets (for error messages).
pub fn gpu_preset_ids() -> Vec<&'static str> {
    gpu_presets().iter().map(|g| g.id.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_entry_has_its_file_and_parses() {
        assert!(model_presets().len() >= 31);
        for p in model_presets() {
            assert!(
                model_preset_config(&p.id).is_some(),
                "{} has no embedded file {}",
                p.id,
                p.file
            );
        }
        // every embedded file is listed in the index
        for (f, _) in MODEL_FILES {
            assert!(
                model_presets().iter().any(|p| &p.file == f),
                "{f} is not in index.json"
            );
        }
        assert_eq!(gpu_presets().len(), 9);
        // every GPU has its datasheet figures, positive and finite
        for g in gpu_presets() {
            let p = g
                .perf
                .as_ref()
                .unwrap_or_else(|| panic!("{} has no perf", g.id));
            for v in [
                p.bf16_tflops,
                p.fp32_tflops,
                p.memory_gbs,
                p.intra_node_gbs,
                p.inter_node_gbs,
                p.pcie_gbs,
            ] {
                assert!(v.is_finite() && v > 0.0, "{}: {v}", g.id);
            }
        }
    }

    #[test]
    fn lookups_normalize() {
        assert_eq!(model_preset("llama2-7b").unwrap().id, "llama-2-7b");
        assert_eq!(model_preset("Llama-3.1-8B").unwrap().id, "llama-3.1-8b");
        assert_eq!(gpu_preset("H100-80GB").unwrap().id, "h100-80gb");
        assert_eq!(gpu_preset("NVIDIA A100 80GB").unwrap().id, "a100-80gb");
        assert!(model_preset("nonexistent-model").is_none());
    }
}
