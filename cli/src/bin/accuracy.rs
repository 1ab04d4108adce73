//! Writes ACCURACY.md: the estimate against every reference record and published case.
//!
//!     cargo run -p gpu-mem-calc --bin accuracy [-- OUTPUT.md]
//!
//! All numbers come from `calc_core::accuracy` (the same functions the accuracy test and
//! the web UI use); this binary only formats them.

use calc_core::accuracy::{
    BUDGET_MEDIAN, BUDGET_P90, CaseResult, ErrorStats, compare, compare_published, dist_records,
    error_stats, probe_records, published_cases,
};
use std::collections::BTreeMap;
use std::fmt::Write;

const GB: f64 = 1e9;

/// Why the largest errors are what they are (case id -> explanation).
const EXPLAINED: &[(&str, &str)] = &[(
    "infer/deepseek-v2-lite/b1-c4096/sdpa",
    "A CPU-only path in the measurement: DeepSeek's MLA has query/key heads of 192 and value \
         heads of 128, for which CPU SDPA has no fused kernel and falls back to the math path \
         (inputs upcast to fp32, the 16 x 4092 x 4092 scores materialized, ~2 GB); CUDA's \
         memory-efficient kernel takes those shapes without either. The estimate models CUDA. \
         (transformers 5 caches MLA latents, 1152 B per token per layer, which the estimate \
         now follows.)",
)];

/// Why the worst held-out distributed cases are what they are (case id -> explanation).
/// Written after the model was frozen; the model was not changed for them.
const DIST_EXPLAINED: &[(&str, &str)] = &[
    (
        "dist/fsdp/llama-2-7b/g16/amp_bf16/full/b1-s2048",
        "Under by 0.87 GB, all at the end of backward: the root unit's (embedding + LM head) \
         reduce-scatter input (0.81 GB in fp32) is measured alive together with 0.89 GB of \
         temporaries, where the model has only the first layer's backward transient (0.52 GB). \
         The same end-of-backward temporaries appear in the train split (HSDP qwen3-8b on 64 \
         GPUs, -5.7 %); which tensors they are is not yet traced, so nothing is modelled for \
         them.",
    ),
    (
        "corner/dist/fsdp/deepseek-v2-lite/g64/amp_bf16/none/b1-s4096",
        "Activations under by 5.1 GB (27.2 GB measured in forward, 22.1 GB estimated): \
         DeepSeek-V2's MoE + MLA layer on the efficient-SDPA route (unequal query/key and \
         value head dims). The layer's saved tensors were derived against single-GPU DeepSeek \
         records taken on the math-SDPA route; regenerating those records on the CUDA route is \
         scheduled with the single-GPU work (issue 14).",
    ),
];

/// What each engine group of the distributed suite is.
const ENGINES: &[(&str, &str)] = &[
    (
        "fsdp2",
        "FSDP2 (`fully_shard` per decoder layer and root), with HSDP, DTensor tensor and sequence parallelism (torchtitan's plan), pipeline parallelism (torch.distributed.pipelining, GPipe / 1F1B / interleaved 1F1B), context parallelism and transformers' expert parallelism",
    ),
    (
        "ddp",
        "DistributedDataParallel with `torch.autocast` (bucket sizes, gradient-as-bucket-view)",
    ),
    (
        "deepspeed",
        "DeepSpeed ZeRO 1-3 (`deepspeed.initialize` on the CPU accelerator; bucket, prefetch, persistence and live-parameter options)",
    ),
];

/// The distributed suite's section: the held-out budget per engine, the worst held-out
/// cases with their explanations, and every record.
fn distributed(o: &mut String) {
    let res: Vec<CaseResult> = dist_records()
        .iter()
        .filter_map(|r| match compare(r) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("{}: {e:?}", r.id);
                None
            }
        })
        .collect();
    let _ = writeln!(
        o,
        "\n## Multi-GPU runs (distributed probe)\n\n\
         {} runs measured by `probe/dist_probe.py` on PyTorch's fake process group (the most \
         loaded rank of 2-64 GPUs, 1B-70B models, dense GQA / MHA, MoE and MLA; validated \
         against real multi-process gloo runs, see `probe/README.md`). The configurations are \
         drawn by a seeded sampler (`probe/dist_grid.py`) plus hand-picked corners; 30 % of each \
         engine's are held out: the model was not developed against them, and `cargo test` \
         (`core/tests/dist_accuracy.rs`) asserts the budget on them, per engine.\n\n\
         | engine | split | cases | median abs error | p90 | max |\n|---|---|---|---|---|---|",
        res.len()
    );
    for (engine, _) in ENGINES {
        for split in ["heldout", "train"] {
            let errs: Vec<f64> = res
                .iter()
                .filter(|r| r.engine == *engine && r.split.as_deref() == Some(split))
                .map(|r| r.peak.error)
                .collect();
            let _ = writeln!(
                o,
                "| {engine} | {split} {}",
                stats_line(&error_stats(&errs))
            );
        }
    }
    for (engine, what) in ENGINES {
        let mut held: Vec<&CaseResult> = res
            .iter()
            .filter(|r| r.engine == *engine && r.split.as_deref() == Some("heldout"))
            .collect();
        held.sort_by(|a, b| b.peak.error.abs().total_cmp(&a.peak.error.abs()));
        let _ = writeln!(o, "\n### {engine}\n\n{what}.\n\nWorst held-out cases:\n");
        worst_cases(o, &held, 4, DIST_EXPLAINED, "Below 2 %.");
    }
    let _ = writeln!(
        o,
        "\n### Every multi-GPU record\n\nGB = 10^9 bytes; the most loaded rank's peak.\n\n\
         | case | split | measured peak GB | estimated GB | error |\n|---|---|---|---|---|"
    );
    for r in &res {
        let _ = writeln!(
            o,
            "| `{}` | {} | {:.3} | {:.3} | {:+.2} % |",
            r.id,
            r.split.as_deref().unwrap_or(""),
            r.peak.measured as f64 / GB,
            r.peak.estimated as f64 / GB,
            r.peak.error * 100.0
        );
    }
}

fn stats_line(s: &ErrorStats) -> String {
    format!(
        "| {} | {:.2} % | {:.2} % | {:.2} % |",
        s.count,
        s.median * 100.0,
        s.p90 * 100.0,
        s.max * 100.0
    )
}

fn group_table(out: &mut String, title: &str, res: &[CaseResult], key: fn(&CaseResult) -> &str) {
    let mut groups: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in res {
        groups.entry(key(r)).or_default().push(r.peak.error);
    }
    let _ = writeln!(
        out,
        "\n| {title} | cases | median abs error | p90 | max |\n|---|---|---|---|---|"
    );
    for (k, errs) in groups {
        let s = error_stats(&errs);
        let _ = writeln!(out, "| {k} {}", stats_line(&s));
    }
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ACCURACY.md".into());
    let recs = probe_records();
    let res: Vec<CaseResult> = recs
        .iter()
        .filter_map(|r| match compare(r) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("{}: {e:?}", r.id);
                None
            }
        })
        .collect();
    let versions = recs
        .first()
        .map(|r| {
            r.versions
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let peak = error_stats(&res.iter().map(|r| r.peak.error).collect::<Vec<_>>());
    let comp = |name: &str| {
        error_stats(
            &res.iter()
                .flat_map(|r| r.components.iter().filter(|c| c.name == name))
                .map(|c| c.error)
                .collect::<Vec<_>>(),
        )
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Accuracy\n\n\
         Generated by `cargo run -p gpu-mem-calc --bin accuracy`; the same numbers are asserted by \
         `cargo test` (`core/tests/accuracy.rs`). Error = (estimate - measured) / measured.\n\n\
         ## Probe records\n\n\
         {} runs of Hugging Face `transformers` models measured by `probe/probe.py` ({versions}): \
         live tensor bytes per phase under PyTorch's MemTracker on fake tensors, with the CUDA \
         code paths emulated where CPU differs (see `probe/README.md`). Compared with the \
         estimate's tensor-level peak (`peak_allocated_bytes`, no CUDA context or allocator cache).\n\n\
         Budget: median |error| <= {:.0} %, 90th percentile <= {:.0} %, for the peak and for each \
         measured component.\n\n\
         | quantity | cases | median abs error | p90 | max |\n|---|---|---|---|---|\n\
         | peak {}\n| activations (forward) {}\n| optimizer states + step temporaries {}",
        res.len(),
        BUDGET_MEDIAN * 100.0,
        BUDGET_P90 * 100.0,
        stats_line(&peak),
        stats_line(&comp("activations")),
        stats_line(&comp("optimizer_states")),
    );
    group_table(&mut o, "family", &res, |r| r.family.as_str());
    group_table(&mut o, "regime", &res, |r| r.regime.as_str());

    let mut worst: Vec<&CaseResult> = res.iter().collect();
    worst.sort_by(|a, b| b.peak.error.abs().total_cmp(&a.peak.error.abs()));
    let _ = writeln!(o, "\n## Worst cases\n");
    worst_cases(
        &mut o,
        &worst,
        6,
        EXPLAINED,
        "Not yet explained; below 2 %.",
    );

    let mut worst_c: Vec<(&CaseResult, &calc_core::accuracy::Pair)> = res
        .iter()
        .flat_map(|r| r.components.iter().map(move |c| (r, c)))
        .collect();
    worst_c.sort_by(|a, b| b.1.error.abs().total_cmp(&a.1.error.abs()));
    let _ = writeln!(o, "\n## Worst components\n");
    for (r, c) in worst_c.iter().take(4) {
        let why = EXPLAINED
            .iter()
            .find(|(id, _)| *id == r.id)
            .map(|(_, w)| *w)
            .unwrap_or(if c.error.abs() < 0.02 {
                "Not yet explained; below 2 %."
            } else {
                "Not yet explained."
            });
        let _ = writeln!(
            o,
            "* `{}` {}: {:+.2} % ({:.3} GB measured, {:.3} GB estimated). {why}",
            r.id,
            c.name,
            c.error * 100.0,
            c.measured as f64 / GB,
            c.estimated as f64 / GB
        );
    }

    let _ = writeln!(
        o,
        "\n## Every record\n\nGB = 10^9 bytes. Phases: forward / backward / optimizer step \
         (training) or prefill / decode (inference), error of each.\n\n\
         | case | measured peak GB | estimated GB | error | phase errors |\n|---|---|---|---|---|"
    );
    for r in &res {
        let phases = r
            .phases
            .iter()
            .map(|p| format!("{} {:+.1} %", p.name, p.error * 100.0))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            o,
            "| `{}` | {:.3} | {:.3} | {:+.2} % | {phases} |",
            r.id,
            r.peak.measured as f64 / GB,
            r.peak.estimated as f64 / GB,
            r.peak.error * 100.0
        );
    }

    distributed(&mut o);

    let _ = writeln!(
        o,
        "\n## Published measurements\n\nFrom published measurements, the cases the schema can express \
         (`tests/reference/published_cases.json` holds each one's config and source). Each is \
         compared in the metric it reports; a tolerance is asserted only where the configuration \
         is known well enough.\n\n\
         | case | metric | measured | estimated | error | tolerance | notes |\n|---|---|---|---|---|---|---|"
    );
    for c in published_cases() {
        match compare_published(c) {
            Ok(p) => {
                let _ = writeln!(
                    o,
                    "| {}: {} | {} | {:.3} GB | {:.3} GB | {:+.2} % | {} | {} |",
                    p.id,
                    p.title,
                    p.metric,
                    p.pair.measured as f64 / GB,
                    p.pair.estimated as f64 / GB,
                    p.pair.error * 100.0,
                    p.tolerance
                        .map_or("reported only".into(), |t| format!("{:.0} %", t * 100.0)),
                    p.notes
                );
            }
            Err(e) => eprintln!("{}: {e:?}", c.id),
        }
    }
    let _ = writeln!(
        o,
        "\nNot expressible (left out): GT-01 to GT-11 (BERT sequence classification), GT-13 \
         (inference without a KV cache), GT-15 to GT-27 (torch.compile, packed or \
         data-dependent sequence lengths, activation offloading), GT-29 (sequence length of \
         unpacked alpaca unknown under FSDP), GT-33 (sequence length and optimizer sharding \
         not stated: plausible settings give 42.8 to 95.7 GB), GT-47 (gpt-oss-20b is not a preset), \
         GT-55 and GT-57 (torchtitan's per-op selective activation checkpointing, which saves \
         matmul outputs and recomputes the rest, is not in the schema: full recomputation gives \
         45.5 GiB and none 139.6 GiB for the 82.4 GiB measured)."
    );
    std::fs::write(&path, o).unwrap_or_else(|e| panic!("{path}: {e}"));
    println!(
        "wrote {path}: {} records, peak median {:.2} %, p90 {:.2} %",
        res.len(),
        peak.median * 100.0,
        peak.p90 * 100.0
    );
}

/// The first `take` of `cases` (sorted worst first) as list items: error, measured and
/// estimated peak (GB), and the explanation from `explained`, else `small` below 2 % or
/// "Not yet explained.".
fn worst_cases(
    o: &mut String,
    cases: &[&CaseResult],
    take: usize,
    explained: &[(&str, &str)],
    small: &str,
) {
    for r in cases.iter().take(take) {
        let why = explained
            .iter()
            .find(|(id, _)| *id == r.id)
            .map(|(_, w)| *w)
            .unwrap_or(if r.peak.error.abs() < 0.02 {
                small
            } else {
                "Not yet explained."
            });
        let _ = writeln!(
            o,
            "* `{}`: {:+.2} % ({:.3} GB measured, {:.3} GB estimated). {why}",
            r.id,
            r.peak.error * 100.0,
            r.peak.measured as f64 / GB,
            r.peak.estimated as f64 / GB
        );
    }
}
