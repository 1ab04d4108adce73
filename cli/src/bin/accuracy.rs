//! Writes ACCURACY.md: the estimate against every reference record and published case.
//!
//!     cargo run -p gpu-mem-calc --bin accuracy [-- OUTPUT.md]
//!
//! All numbers come from `calc_core::accuracy` (the same functions the accuracy test and
//! the web UI use); this binary only formats them.

use calc_core::accuracy::{
    BUDGET_MEDIAN, BUDGET_P90, CaseResult, ErrorStats, HELDOUT_ACTIVATIONS_MEDIAN, HELDOUT_MAX,
    HELDOUT_MEDIAN, HELDOUT_P90, ProbeRecord, compare, compare_published, component_stats,
    dist_records, error_stats, peak_stats, probe_records, published_cases,
};
use std::collections::BTreeMap;
use std::fmt::Write;

const GB: f64 = 1e9;

/// Why the largest errors are what they are (case id -> explanation).
const EXPLAINED: &[(&str, &str)] = &[(
    "draw/train/gpt2-xl/bf16/lion_8bit-foreach/eager/full/b4-s1024-ga1",
    "Over at the end of backward; forward within 0.1 %. The estimate's last backward moment \
         holds every gradient with the tied embedding's waiting one (3.28 GB), the logits \
         (0.41 GB) and the first layer's recomputed eager attention with GPT-2's attention \
         dropout (1.74 GB); the measured peak (2.91 GB of gradients, 1.26 GB of activations, \
         0.34 GB of temporaries) comes earlier. Eager attention recomputed at the end of \
         backward is not yet traced op by op; the held-out Gemma-2 and Phi-2 cases show the \
         same pattern.",
)];

/// Why the worst held-out single-GPU cases are what they are (case id -> explanation).
/// Written after the held-out part was first compared.
const HELDOUT_EXPLAINED: &[(&str, &str)] = &[
    (
        "draw/train/gemma-2-9b-it/amp_bf16/adamw-fused/eager/full/b2-s4096-ga1",
        "Over at the end of backward; forward within 0.3 %. The estimate's backward peak is its \
         last moment (every gradient, the tied embedding's waiting one included, 40.6 GB, and the \
         first layer's recomputed eager attention with softcapping, 10.0 GB); the measured peak \
         comes earlier (33.2 GB of gradients, 8.2 GB of temporaries). The same pattern is in the \
         train split (GPT-2 XL, eager, full recomputation, tied embeddings: +10.0 %): eager \
         attention recomputed in the last layers of backward is not yet traced op by op.",
    ),
    (
        "draw/lora/pythia-1.4b/lora-r8-query_key_value/eager/none/b2-s1024-ga1",
        "Forward activations over by 0.65 GB (8.50 GB estimated with the logits, 7.85 GB \
         measured): GPT-NeoX eager attention under LoRA on the fused `query_key_value` \
         projection; which saved tensor the estimate counts twice is not yet traced.",
    ),
    (
        "draw/train/phi-2/amp_bf16/lion_8bit-foreach/eager/full/b2-s2048-ga1",
        "The pattern of the first case: eager attention, full recomputation, the estimate's \
         end-of-backward moment (all gradients and 4.1 GB of the first layer's backward) above \
         the measured peak (10.5 GB of gradients, 2.3 GB of temporaries).",
    ),
    (
        "draw/lora/qwen3-8b/lora-r8-q_proj+v_proj/sdpa/full/b4-s1024-ga2",
        "Forward over by 1.0 GB: the estimate keeps the loss's fp32 logits and log-softmax \
         beside the bf16 logits (10 B per logit, 6.2 GB) where 7.6 GB of activations are \
         measured in all; not yet traced.",
    ),
];

/// Why the worst held-out distributed cases are what they are (case id -> explanation).
/// Written after the model was frozen; the model was not changed for them.
const DIST_EXPLAINED: &[(&str, &str)] = &[(
    "dist/fsdp/llama-2-7b/g16/amp_bf16/full/b1-s2048",
    "Under by 0.87 GB, all at the end of backward: the root unit's (embedding + LM head) \
         reduce-scatter input (0.81 GB in fp32) is measured alive together with 0.89 GB of \
         temporaries, where the model has only the first layer's backward transient (0.52 GB). \
         The same end-of-backward temporaries appear in the train split (HSDP qwen3-8b on 64 \
         GPUs, -5.7 %); which tensors they are is not yet traced, so nothing is modelled for \
         them.",
)];

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

/// `records` compared with the estimate (records whose config fails are reported and
/// skipped).
fn results(records: &[ProbeRecord]) -> Vec<CaseResult> {
    records
        .iter()
        .filter_map(|r| match compare(r) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("{}: {e:?}", r.id);
                None
            }
        })
        .collect()
}

/// The distributed suite's section: the held-out budget per engine, the worst held-out
/// cases with their explanations, and every record.
fn distributed(o: &mut String, res: &[CaseResult]) {
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
        let held = res
            .iter()
            .filter(|r| r.engine == *engine && r.split.as_deref() == Some("heldout"));
        let _ = writeln!(o, "\n### {engine}\n\n{what}.\n\nWorst held-out cases:\n");
        worst_cases(o, held, 4, DIST_EXPLAINED, "Below 2 %.");
    }
    let _ = writeln!(
        o,
        "\n### Every multi-GPU record\n\nGB = 10^9 bytes; the most loaded rank's peak.\n\n\
         | case | split | measured peak GB | estimated GB | error |\n|---|---|---|---|---|"
    );
    for r in res {
        let _ = writeln!(o, "{} |", record_cells(r));
    }
}

/// A record's row cells in the every-record tables: id, split, measured and estimated peak
/// (GB), error.
fn record_cells(r: &CaseResult) -> String {
    format!(
        "| `{}` | {} | {:.3} | {:.3} | {:+.2} %",
        r.id,
        r.split.as_deref().unwrap_or(""),
        r.peak.measured as f64 / GB,
        r.peak.estimated as f64 / GB,
        r.peak.error * 100.0
    )
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

/// The error rows of a statistics table: the peak, forward activations, optimizer states
/// and the first iteration's peak of `res` (no trailing newline).
fn quantity_rows(res: &[CaseResult]) -> String {
    format!(
        "| peak {}\n| activations (forward) {}\n| optimizer states + step temporaries {}\n\
         | first iteration's peak (before the optimizer states exist) {}",
        stats_line(&peak_stats(res)),
        stats_line(&component_stats(res, "activations")),
        stats_line(&component_stats(res, "optimizer_states")),
        stats_line(&component_stats(res, "first_step")),
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
    let res = results(recs);
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
    let held: Vec<CaseResult> = res
        .iter()
        .filter(|r| r.split.as_deref() == Some("heldout"))
        .cloned()
        .collect();
    let train: Vec<CaseResult> = res
        .iter()
        .filter(|r| r.split.as_deref() != Some("heldout"))
        .cloned()
        .collect();
    let peak = peak_stats(&train);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Accuracy\n\n\
         Generated by `cargo run -p gpu-mem-calc --bin accuracy`; the same numbers are asserted by \
         `cargo test` (`core/tests/accuracy.rs`, `core/tests/dist_accuracy.rs`). Error = \
         (estimate - measured) / measured.\n\n\
         ## Held out\n\n\
         The single-GPU suite is {} runs of Hugging Face `transformers` models measured by \
         `probe/probe.py` ({versions}): live tensor bytes per phase under PyTorch's MemTracker on \
         fake tensors, with the CUDA code paths emulated where CPU differs (see `probe/README.md`), \
         compared with the estimate's tensor-level peak (`peak_allocated_bytes`, no CUDA context \
         or allocator cache). {} were hand-picked; the rest are seeded random draws over the \
         supported option space (`probe/grid.py`: families from 135M to 70B parameters including \
         MQA, MLA and MoE with and without shared experts, tied and untied embeddings; fp32, bf16, \
         fp16, AMP bf16 / fp16; AdamW / Adam fused, foreach and for-loop, SGD, both Adafactors, \
         bitsandbytes 8-bit AdamW and Lion; none / full recomputation and, in blocks of their \
         own, torchtitan's per-op selective checkpointing, activation offloading, gpt-oss and \
         `torch.compile` per decoder layer; \
         eager / SDPA; \
         gradient accumulation; LoRA \
         target sets; inference with `logits_to_keep` 0 and 1 in fp32 / bf16 / fp16). {} of them \
         (30 % of the suite, all from the draws, by seeded shuffles) are **held out**: chosen \
         before any modelling against the draws and not looked at while modelling (3 drawn later, \
         when 6 hand-picked configs joined the train split; 10 of the per-op block, 4 of the \
         offloading block, 4 of the gpt-oss block, 8 of the compile block).\n\n\
         Budget on the held-out part: peak median |error| <= {:.0} %, p90 <= {:.0} %, max <= \
         {:.0} %; forward activations median <= {:.0} %.\n\n\
         | held-out quantity | cases | median abs error | p90 | max |\n|---|---|---|---|---|\n{}",
        res.len(),
        res.iter().filter(|r| !r.id.starts_with("draw/")).count(),
        held.len(),
        HELDOUT_MEDIAN * 100.0,
        HELDOUT_P90 * 100.0,
        HELDOUT_MAX * 100.0,
        HELDOUT_ACTIVATIONS_MEDIAN * 100.0,
        quantity_rows(&held),
    );
    group_table(&mut o, "held-out family", &held, |r| r.family.as_str());
    group_table(&mut o, "held-out regime", &held, |r| r.regime.as_str());
    let _ = writeln!(
        o,
        "\nThe first comparison of the held-out part (after modelling against the train part) \
         gave peak median 0.06 %, p90 2.59 %, max 19.27 %: the worst, \
         `draw/lora/qwen1.5-moe-a2.7b/lora-r64-all-linear/eager/none/b4-s1024-ga1`, counted \
         LoRA adapters on Qwen1.5-MoE's 60 routed experts that PEFT does not create (transformers 5 \
         fuses them into parameters, and PEFT converts `all-linear` to expert targets only for \
         the families transformers converts from v4). The train split showed the same defect \
         (+5.0 %, left alone at first); it was fixed from PEFT's source \
         (`_convert_peft_config_moe`), checked against PEFT's own parameter counts on four MoE \
         families (core/tests/engines.rs), not against the held-out record.\n\n\
         The gpt-oss block (added with the family) first compared at max 111.4 %: \
         `draw/lora/gpt-oss-20b/lora-r64-all-linear/eager/none/b2-s4096-ga1`, LoRA under AMP, \
         whose half base the estimate ran with an fp32 residual stream (AMP's rule for fp32 \
         weights). Two new train configs (b1 s4096 r64, b2 s4096 r8 under bf16) did not show \
         it; the rule was corrected from the precision semantics (autocast casts only the fp32 \
         adapters when the base is half), which also moved the train split's Phi-2 LoRA AMP \
         record from +3.9 % to +1.9 %.\n\n\
         The `torch.compile` block (added with the input: 8 development configs and 16 \
         drawn, 8 held out) first compared at held-out max 0.96 %. The probe compiles each \
         layer with inductor's decompositions and partitioner but runs the graphs op by op \
         (`aot_eager_decomp_partition`: inductor's kernels cannot run on fake tensors), so the \
         saved tensors are inductor's while a layer's backward temporaries are the decomposed \
         graph's, modelled as eager's (train backward within +1.2 %).\n\n\
         Worst held-out cases now (explanations written after the held-out part was compared; \
         the model was not changed for them):\n"
    );
    worst_cases(&mut o, &held, 8, HELDOUT_EXPLAINED, "Below 2 %.");
    let dist = results(dist_records());
    let _ = writeln!(
        o,
        "\nMulti-GPU held-out runs (details below, in the multi-GPU section):\n\n\
         | engine | cases | median abs error | p90 | max |\n|---|---|---|---|---|"
    );
    for (engine, _) in ENGINES {
        let errs: Vec<f64> = dist
            .iter()
            .filter(|r| r.engine == *engine && r.split.as_deref() == Some("heldout"))
            .map(|r| r.peak.error)
            .collect();
        let _ = writeln!(o, "| {engine} {}", stats_line(&error_stats(&errs)));
    }
    let _ = writeln!(
        o,
        "\n## The suite (train split)\n\n\
         The {} single-GPU records the model was developed against (the hand-picked ones and the \
         random draws' train part). Budget: median |error| <= {:.0} %, 90th percentile <= {:.0} %, \
         for the peak and for each measured component.\n\n\
         | quantity | cases | median abs error | p90 | max |\n|---|---|---|---|---|\n{}",
        train.len(),
        BUDGET_MEDIAN * 100.0,
        BUDGET_P90 * 100.0,
        quantity_rows(&train),
    );
    group_table(&mut o, "family", &train, |r| r.family.as_str());
    group_table(&mut o, "regime", &train, |r| r.regime.as_str());

    let _ = writeln!(o, "\n## Worst cases\n");
    worst_cases(
        &mut o,
        &train,
        6,
        EXPLAINED,
        "Not yet explained; below 2 %.",
    );

    let mut worst_c: Vec<(&CaseResult, &calc_core::accuracy::Pair)> = train
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
         | case | split | measured peak GB | estimated GB | error | phase errors |\n|---|---|---|---|---|---|"
    );
    for r in &res {
        let phases = r
            .phases
            .iter()
            .map(|p| format!("{} {:+.1} %", p.name, p.error * 100.0))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(o, "{} | {phases} |", record_cells(r));
    }

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
                // token counts are counts, every other metric bytes
                let value = |v: u64| {
                    if p.metric.ends_with("_tokens") {
                        format!("{v} tokens")
                    } else {
                        format!("{:.3} GB", v as f64 / GB)
                    }
                };
                let _ = writeln!(
                    o,
                    "| {}: {} | {} | {} | {} | {:+.2} % | {} | {} |",
                    p.id,
                    p.title,
                    p.metric,
                    value(p.pair.measured),
                    value(p.pair.estimated),
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
         GT-57 (torch.compile with Float8 linears on top of GT-55's per-op selective \
         checkpointing)."
    );

    distributed(&mut o, &dist);
    step_time(&mut o);

    std::fs::write(&path, o).unwrap_or_else(|e| panic!("{path}: {e}"));
    println!(
        "wrote {path}: {} records, peak median {:.2} %, p90 {:.2} %",
        res.len(),
        peak.median * 100.0,
        peak.p90 * 100.0
    );
}

/// The `take` worst of `cases` by peak error as list items: error, measured and
/// estimated peak (GB), and the explanation from `explained`, else `small` below 2 % or
/// "Not yet explained.".
fn worst_cases<'a>(
    o: &mut String,
    cases: impl IntoIterator<Item = &'a CaseResult>,
    take: usize,
    explained: &[(&str, &str)],
    small: &str,
) {
    let mut worst: Vec<&CaseResult> = cases.into_iter().collect();
    worst.sort_by(|a, b| b.peak.error.abs().total_cmp(&a.peak.error.abs()));
    for r in worst.into_iter().take(take) {
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

/// The step-time model (core/src/steptime.rs) against published training throughput
/// (tests/reference/throughput_cases.json; core/tests/plan.rs asserts the same cases).
fn step_time(o: &mut String) {
    let v: serde_json::Value = serde_json::from_str(include_str!(
        "../../../tests/reference/throughput_cases.json"
    ))
    .expect("throughput_cases.json");
    let cases = v["cases"].as_array().cloned().unwrap_or_default();
    let mut rows = String::new();
    let mut errs = Vec::new();
    // per source: torchtitan (TT), Megatron-LM's README (MG), the Megatron-LM paper (NA),
    // Megatron-LM's CI golden iteration times (MC), torchtitan on H200 (TH), MosaicML
    // llm-foundry's MPT benchmarks (MF)
    let mut by_source: [(&str, &str, Vec<f64>); 6] = [
        ("TT", "torchtitan (H100)", Vec::new()),
        ("MG", "Megatron-LM README (H100, FP8)", Vec::new()),
        ("NA", "Megatron-LM paper, Tables 1-2 (A100)", Vec::new()),
        (
            "MC",
            "Megatron-LM CI golden iteration times (H100)",
            Vec::new(),
        ),
        ("TH", "torchtitan (H200)", Vec::new()),
        (
            "MF",
            "MosaicML llm-foundry MPT, FSDP1 (H100, A100)",
            Vec::new(),
        ),
    ];
    let mut tokens = std::collections::HashMap::new();
    let (mut train, mut heldout) = (Vec::new(), Vec::new());
    for c in &cases {
        let cfg = calc_core::Config::from_value(c["config"].clone()).expect("case config");
        let r = calc_core::resolve::resolve(&cfg).expect("case resolves");
        let t = calc_core::steptime::step_time_of(&r, Default::default()).expect("GPU rates");
        let published = c["tokens_per_second_per_gpu"].as_f64().unwrap_or(1.0);
        let err = t.tokens_per_second_per_gpu / published - 1.0;
        errs.push(err);
        let split = c["split"].as_str().unwrap_or("");
        if split == "heldout" {
            heldout.push(err);
        } else {
            train.push(err);
        }
        let id = c["id"].as_str().unwrap_or("");
        if let Some(g) = by_source.iter_mut().find(|g| id.starts_with(g.0)) {
            g.2.push(err);
        }
        tokens.insert(id.to_string(), (published, t.tokens_per_second_per_gpu));
        // three significant figures: the 1T-parameter model runs 20 tokens/s per GPU
        let fig = |x: f64| {
            if x < 100.0 {
                format!("{x:.1}")
            } else {
                format!("{x:.0}")
            }
        };
        let _ = writeln!(
            rows,
            "| {} | {} | {} | {} | {} | {:+.1} % | {:.1} % | {} | {} |",
            id,
            split,
            c["title"].as_str().unwrap_or(""),
            fig(published),
            fig(t.tokens_per_second_per_gpu),
            100.0 * err,
            100.0 * t.mfu,
            t.limiter,
            c["notes"].as_str().unwrap_or(""),
        );
    }
    let _ = writeln!(
        o,
        "\n## Step time (published throughput)\n\n\
         The step-time model of the plan search (`core/src/steptime.rs`, every term with its \
         source there) against published tokens/s per GPU with exact configurations \
         (`tests/reference/throughput_cases.json`, each case with its source), at the model's \
         default assumptions (GEMMs at 0.6 of the datasheet peak, attention kernels at 0.35 on \
         Hopper; eager attention's score traffic and the elementwise kernels' bytes at the \
         datasheet memory bandwidth), chosen before the comparison and not fitted to it. The \
         goal is tokens/s within 25 %; the median over all cases meets it, and so do the \
         Megatron-LM README's rows, torchtitan's H200 runs, the Megatron-LM paper's tensor x \
         pipeline runs and its ZeRO-3 runs, Megatron-LM's CI runs and llm-foundry's runs, not \
         torchtitan's H100 runs; \
         all sixteen faster-of-two comparisons are ordered as published (the paper's two \
         ZeRO-3 runs at micro-batch 4 against PTD-P since DeepSpeed's blocking ZeRO-3 fetch \
         before 0.6 is modelled, 2026-11-29). Error = (estimate - published) / published.\n\n\
         Held-out cases: 30 % of each source's, drawn by `scripts/throughput_split.py`'s \
         seeded shuffle on 2026-11-24, after every case had been compared (its efficiency \
         assumptions were chosen before any comparison and never changed; the nine changes made \
         after a comparison, `DpEdges`, FSDP's gather dtype under float8, eager attention's \
         time, the elementwise kernels' time, torchtitan's H100 card, torchao's float8 casts, \
         ZeRO-3's re-gathers under recomputation, MPT's Triton attention kernel and DeepSpeed's \
         blocking ZeRO-3 fetch before 0.6, are listed below, the last six made after the draw \
         and derived from the modules' source, the benchmark's hardware statement and the \
         kernel's published speed, not from the cases; the last was looked for because two \
         comparisons were wrong, one of them with a held-out case, NA-T2-ZeRO-3-529.6B-640, \
         whose estimate the comparison table showed); \
         from then on the model is not developed against them. Budget on them \
         (`core/tests/plan.rs`): median |error| <= {:.0} %, max <= {:.0} %.\n\n\
         | cases | count | median abs error | p90 | max |\n|---|---|---|---|---|\n| all {}\n| train {}\n| **held out** {}\n\n\
         | source | cases | median abs error | p90 | max |\n|---|---|---|---|---|\n{}\n\n\
         | case | split | configuration | published tokens/s/GPU | estimated | error | MFU (est.) | limited by | notes |\n\
         |---|---|---|---|---|---|---|---|---|\n{rows}",
        calc_core::accuracy::THROUGHPUT_HELDOUT_MEDIAN * 100.0,
        calc_core::accuracy::THROUGHPUT_HELDOUT_MAX * 100.0,
        stats_line(&error_stats(&errs)),
        stats_line(&error_stats(&train)),
        stats_line(&error_stats(&heldout)),
        by_source
            .iter()
            .map(|(_, name, e)| format!("| {name} {}", stats_line(&error_stats(e))))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let _ = writeln!(
        o,
        "What the misses say (read after the comparison; the model was not changed for them, \
         apart from the changes named):\n\n\
         * The memory-bound elementwise kernels between the matmuls (norms, activations, rotary \
           embeddings, residual adds, dropout, the loss over the logits) were folded into the \
           GEMM efficiency until 2026-11-24, when the MPT runs read about twice as optimistic on \
           H100 as on A100 (an H100 runs about 2x the FLOPs per byte of memory bandwidth). They \
           are now a term of their own (`elementwise`): the bytes each module's kernels read and \
           write, from transformers' (`LlamaRMSNorm`, `apply_rotary_pos_emb`, `ForCausalLMLoss`), \
           Megatron-LM's and Transformer Engine's fused kernels' source, `torch.compile` counted \
           as fused, at the datasheet memory bandwidth (`steptime::elementwise_bytes`); the GEMM \
           efficiency stays 0.6. All 174 cases: median 29.1 -> 20.5 %; held out (54): 34.4 -> \
           21.7 %; torchtitan H100 56.7 -> 36.7 %, llm-foundry 29.1 -> 20.7 %, the paper's \
           tensor x pipeline runs +0.3 to +8.7 % -> -3.3 to +2.0 % up to 175B and -5 to -12 % -> \
           -8 to -14 % above; comparisons still 14 of 16. torchtitan's runs with full \
           recomputation and `torch.compile` now say `compile` (before, the configurations left \
           it out, as it changed no time).\n\
         * Every collective had been timed by its bytes alone until 2026-11-24. It now also \
           pays NCCL's own fixed latency (`steptime::nccl_latency`, from NCCL's cost model in \
           `src/graph/tuning.cc`, Simple protocol: 8.4 us, plus 3.4 us per ring step inside a \
           node and 14 us per step across nodes; the faster of ring and tree for an \
           all-reduce), once per collective the engine issues (`engines::Collectives`: one per \
           FSDP unit, one per DeepSpeed ZeRO-3 sub-module above the persistence threshold, one \
           per DDP, ZeRO or Megatron-Core bucket; TP's per-layer all-reduces). A ring over \
           hundreds of ranks takes milliseconds per collective, whatever its size. Written from \
           NCCL's and the engines' source, run once. All 174 cases: median 20.5 -> 20.4 %; held \
           out 21.7 -> 21.7 %; the paper's ZeRO-3 runs +18..+45 % -> +12..+32 % (at 768-2240 \
           GPUs, where the traffic is exposed; the two at micro-batch 4 hide it and are \
           unchanged, so their comparisons with PTD-P stay wrong), its TP x PP runs \
           -14.2..+2.0 % -> -14.6..+1.5 % (each layer's TP all-reduces: 56 us over 8 ranks), \
           llm-foundry's 128-512 GPU H100 runs +9 -> +5 % (signed median; 7B at micro-batch 6 \
           +11..+20 % -> -2..+5 %), the README's 70B -10.3 -> -11.1 %.\n\
         * Until late on 2026-11-24 a micro-batch's data-parallel traffic hid behind its forward and \
           backward compute pooled; it now hides only behind the compute of its own pass: a \
           micro-batch's first parameter gather behind its forward, the backward's re-gather and \
           the gradients' reduction behind its backward (a gradient is reduced once computed, \
           and FSDP and ZeRO-3 prefetch one unit or bucket ahead, not into the other pass). \
           This matters where the passes' traffic is unequal, as under llm-foundry's fp32 \
           gradient reduction (2 bytes gathered, 4 reduced), and each pass's compute is now \
           its own (attention's backward is 2.5 times its forward, not 2). Written from the \
           engines' prefetch and run once. All 174 cases: median 20.39 -> 20.25 %; held out \
           unchanged (21.7 %); llm-foundry's 3B on 32 and 64 H100 +23.3 / +22.0 % -> +15.3 / \
           +14.1 %, its 128-512 GPU H100 runs +5.0 -> +3.4 % (signed median); torchtitan's \
           H200 runs -0.7 / +0.8 % -> -3.5 / -3.4 %.\n\
         * torchtitan's H100s are the 96 GB HBM2e part at a 500 W limit, whose peak lies between \
           the SXM and NVL figures (the benchmark's own footnote: MFU 33-39 % measured against \
           the SXM peak); the preset is the 700 W SXM5 card. Every torchtitan H100 case is \
           estimated too fast, by 10-97 %. \
           The same recipe as TT-3c (Llama 3.1 8B, FSDP, local batch 2, compile, Float8) run by \
           Trainy on standard H200 SXM hosts (TH-*: the H100 SXM's 989 / 1979 TFLOP/s bf16 / fp8 \
           peaks, 4.8 TB/s; added 2026-11-24 after the model was written, TH-8B-32 held out) is \
           estimated 12 % too fast on 32 and on 64 GPUs without the elementwise kernels' time, \
           -0.7 and +0.9 % with it.\n\
         * FSDP under torchao float8 (precision `fp8`) gathers bf16 parameters and reduce-scatters \
           fp32 gradients since 2026-11-24: torchtitan's mixed-precision policy \
           (`mixed_precision_param = \"bfloat16\"`, `mixed_precision_reduce = \"float32\"`), \
           applied with or without the float8 converter, and the bf16 compute the precision's \
           2-byte activations already assumed. Before, the fp32 weights were gathered: found \
           when TH-8B-64 (train) read -24 %, limited by that traffic; TT-3c then read -2.7 % \
           for the same reason. torchao's float8 all-gather (`enable_fsdp_float8_all_gather`), \
           which gathers the float8 linear weights in 1 byte, is `engine.float8_all_gather` \
           since 2026-11-24 (memory and step time, from torchao's `fsdp_pre_all_gather`) and \
           set where the source says it: the TH runs' command line and torchtitan 9dec370's \
           405B config (TT-5a/b, TT-6a-d). TH-8B-32 / 64 -3.5 / -3.4 % -> -0.5 / +1.1 %; \
           TT-5a/b +95.0 / +66.6 % -> +96.0 / +67.6 %; TT-6 unchanged (their parameter \
           traffic hides under compute either way).\n\
         * torchtitan's H100 runs (TT-*) were estimated on `h100-80gb` (HBM3, 3.35 TB/s) until \
           2026-11-25. Their benchmark page says the GPUs are Grand Teton's H100 with 96GB HBM2e \
           at 2.4 TB/s; they are now estimated on the `h100-96gb` preset built from that \
           statement (a change of card, nothing fitted), which slows the memory-bound kernels: \
           every TT case 0.4-8.1 points closer to the published figure (TT-1a +31.5 -> +23.4 %, \
           TT-3a +27.5 -> +20.2 %, TT-5a +96.0 -> +94.2 %), torchtitan (H100) median 36.7 -> \
           35.2 %, held-out median unchanged. The runs' 500 W power limit (700 W TDP) lowers the \
           clocks by an amount no source states and is not modelled.\n\
         * torchtitan's 405B runs of Table 5 (TT-5a/b, local batch 32 over PP 8) were read as 32 \
           micro-batches of 1 until 2026-11-29 (+87.0 / +59.9 %, the bubble of 7 micro-batch \
           times in 32). torchtitan 9dec370 splits the local batch into \
           `experimental.pipeline_parallel_microbatches` micro-batches, by default the PP degree \
           (`pipelining_utils.py` `build_pipeline_schedule`), and the benchmark sets none: 8 \
           micro-batches of 4, a bubble of 7 in 8 (+24.7 / +26.8 %, interleaved still the \
           faster). A correction of the cases' configuration to the framework's source; the \
           model is unchanged. Table 6's local batch 8 is 8 micro-batches of 1 either way.\n\
         * `torch.compile` is modelled only as its fusion of the elementwise kernels, and only \
           where `training.compile` is expressible (recomputation `none` or `full`): TT-1b, \
           TT-1c, TT-3b, TT-3c and the H200 runs (per-op recomputation) are the eager estimate \
           against compiled runs. Asynchronous TP is not modelled.\n\
         * Long contexts under context parallelism (TT-2, TT-6) lose more than the ring exchange \
           explains: the load-balanced ring runs `2 cp` attention chunks per step, each a \
           smaller, less efficient kernel than the whole sequence's.\n\
         * Float8 estimates use the FP8 peak for every converted matmul. Until 2026-11-29 the \
           casts around them were not counted (TT-1c +68 %, +29 % with the elementwise kernels' \
           time, +17.9 % on the 96 GB card). torchao's casts are now part of the elementwise term \
           (`steptime::float8_cast_bytes`, from torchao v0.7's `Float8Linear`, \
           `hp_tensor_to_float8_dynamic` and `preprocess_addmm`: each linear input's amax and \
           scaled cast, `2e + 1` bytes per element forward, its column-major copy 2 backward; \
           each output gradient's amax, cast and row-major copy, `2e + 3`; the weights' cast and \
           copy once per micro-batch; q, k, v and gate, up casting their shared input once), \
           written from the source and run once. All 174 cases: median 19.51 -> 19.51 %; train \
           16.18 -> 15.36 %; held out 21.71 -> 21.71 %; torchtitan (H100) 35.2 -> 31.0 % (TT-1c \
           +17.9 -> +6.7 %, TT-3c +11.3 -> +1.5 %, TT-4 +32.8 -> +26.7 %, TT-2a +46.1 -> +38.8 %, \
           TT-5a +94.2 -> +87.0 %); the H200 runs -0.5 / +1.1 % -> -4.9 / -3.4 %. Transformer \
           Engine fuses its casts into its norm, activation and cast-transpose kernels \
           (Megatron-LM rows): not counted.\n\
         * DeepSpeed ZeRO-3 gathered each sub-module twice per micro-batch in the model until \
           2026-11-29, also under full recomputation. DeepSpeed releases a sub-module after its \
           recomputed forward unless its backward follows within `stage3_max_reuse_distance` \
           elements of fetches (`partitioned_param_coordinator.py` `__params_to_release`; default \
           1e9), and gathers it again for its backward: in GPT-175B's layer (query-key-value \
           453M, projection 151M, the MLP's 604M and 604M) all but the last, two thirds of the \
           layer, a third pass over the backward's link (`steptime::regathered`). Written from \
           DeepSpeed's source and run once. All 174 cases: median 19.51 -> 17.47 %; train \
           15.36 -> 14.51 %; held out 21.71 -> 20.97 %; the paper's ZeRO-3 runs +11.5..+32.0 % \
           -> -6.2..+18.4 % (175B on 384 GPUs +23.9 -> +12.9 %, 530B on 2240 +14.8 -> -4.1 %); \
           the two micro-batch-4 comparisons with PTD-P stay wrong, by less (175B on 384: \
           ZeRO-3 113 against PTD-P's 102 tokens/s estimated, 100 against 107 published).\n\
         * The paper ran DeepSpeed's ZeRO-3 before DeepSpeed 0.6.0 (arXiv v1 2021-04, SC21 \
           2021-08; 0.6.0 is of 2022-03, with PR #1453's rewrite of the fetch). Until \
           2026-11-29 the model hid each pass's gathers behind the whole pass's compute, as \
           today's DeepSpeed, which queues them on their own stream, nearly does. DeepSpeed \
           v0.3.15's hooks (`stage3.py` `fetch_sub_module`, `prefetch_next_sub_modules`, \
           `_synchronize_communication`; `partition_parameters.py` `_allgather_param`) make \
           every fetch of a sub-module whose parameters are on the way wait for the device \
           (`torch.cuda.synchronize()`, which waits for the reduce-scatters too) and prefetch \
           only the next `stage3_prefetch_bucket_size` elements (5e7: one of GPT-175B's \
           453M-604M weights), so a gather hides only behind the one sub-module computing while \
           it runs: the MLP's first weight (604M) behind the attention projection's 151M. \
           `engine.stage3_blocking_fetch` times that hook by hook (`steptime::blocking_passes`, \
           `blocking_exposed`; never less exposed than the whole-pass rule), written from the \
           source and set on the six ZeRO-3 rows; run twice, first without the reduce-scatters \
           in the hook timeline (175B on 384 +12.9 -> +7.9 %, 530B on 640 +18.4 -> +13.1 %, \
           still 14 of 16), then with them, as the source has them (`torch.cuda.synchronize` \
           waits for every stream). The paper's ZeRO-3 runs -6.2..+18.4 \
           % -> -7.4..+8.9 % (175B on 384 GPUs +12.9 -> -5.6 %, 768 +10.4 -> +8.9 %; 530B on \
           1120 -6.2 -> -7.4 %; the runs at micro-batch 1, on 1536 and 2240 GPUs, unchanged, \
           their gathers outlasting every sub-module's compute either way); held out: 530B on 640 +18.4 -> \
           -0.9 %, 175B on 1536 unchanged +1.9 %. Both micro-batch-4 comparisons with PTD-P now \
           ordered as published (175B on 384: PTD-P 103.4 against ZeRO-3 94.8 estimated, 106.7 \
           against 100.4 published; 530B: 36.2 against 31.8, 39.7 against 32.1): 16 of 16. All \
           174 cases: median 10.40 -> 10.23 %; train 9.99 -> 9.92 %; held out 11.87 -> 11.60 \
           %; the paper's 4.51 -> 3.94 %.\n\
         * The data-parallel traffic at the ends of a micro-batch (FSDP's root and first unit, \
           ZeRO-3's first modules, the embedding's gradient bucket: `DpEdges`) was added after \
           this comparison had shown FSDP on 128 GPUs (TT-3a) estimated faster than on 8 (TT-1a); \
           it is read from the engines' sources, not fitted: 0.15 s per step exposed at 128 GPUs \
           over the 50 GB/s NICs, 15 ms over one node's NVLink.\n\
         * The Megatron-LM rows (NVIDIA's own tuned recipes, FP8) are within 11 % (the 70B \
           -5.0 % before the elementwise kernels' time, -10.3 % with it: Transformer Engine's \
           fp8 casts and its norms' fp8 outputs are not counted). The runs are NeMo's performance \
           configurations, which for Llama 3 70B on H100 overlap the tensor-parallel \
           all-gathers and reduce-scatters with the GEMMs beside them (Transformer Engine \
           userbuffers, `tp_comm_overlap`: Megatron-Bridge's performance scripts map llama3_70b \
           on h100 in fp8 to `userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192`, NeMo's \
           `MegatronCommOverlapCallback` the same); the model counts that traffic in full \
           (`tensor_parallel`: 1.24 s of the 70B's 11.36 s step, 10.9 %), so TP communication \
           overlap, not modelled yet (nor its userbuffers' memory), is the first candidate for \
           the 70B's -11 %.\n\
         * The Megatron-LM paper's rows (NA-*, A100, fp16) were added after the step-time model \
           was written. Until 2026-11-24 step time ignored `training.attention` and timed every \
           attention as FlashAttention; these cases were estimated so, and the tensor x pipeline \
           runs read 4-17 % too fast up to 146B, 2-11 % too slow above, and 24-32 % too fast \
           for the 1.7B and 3.6B runs. The 2021 runs materialize the scores (the paper's Sec. \
           4.2: strided batched GEMMs and a fused scale-mask-softmax kernel; FlashAttention \
           appeared in 2022), whose kernels move 9 bytes per score forward and 11 backward \
           besides the matmuls' 2 each (`eager_score_bytes`): memory-bound work whose share of \
           a layer grows as `a s / h^2`, largest for the small models. Step time now times eager \
           attention that way (the score matmuls over every key by roofline, the rest at \
           memory bandwidth, nothing fitted) and these cases say `eager`: tensor x pipeline \
           within 13 % at every size (+0.3 to +8.7 % up to 175B, 1.7B +6.4 % and 3.6B +5.4 %; \
           -5 to -12 % from 310B up); DeepSpeed ZeRO-3 without model parallelism 18-45 % too \
           fast, most at micro-batch 4, where the estimate hides every parameter gather but the \
           first modules' under compute.\n\
         * The paper's Table 1 rows (NA-T1-*) were read as micro-batch 1 without interleaving \
           (the table gives neither) until 2026-11-29. The authors' scripts for that table \
           (NVIDIA/Megatron-LM `examples/sc21/run_table_1.sh` and `CONFIG.sh`, de7dc40, \
           2021-08) give each row's micro-batch (16 for 1.7B-7.5B, 8, 4, 2, 2, then 1) and \
           interleaving (`--num-layers-per-virtual-pipeline-stage` 5, 5, 3 and 1: 3, 2, 2 and 3 \
           chunks per stage for 76B, 145B, 310B and 530B; the 1T row none), with full \
           recomputation, fp16 and no distributed optimizer; the cases now run those \
           configurations (a correction of the cases, the model unchanged). Train rows: 1.7B \
           +1.4 -> +5.7 %, 3.6B -1.0 -> +4.9 %, 7.5B -5.7 -> +1.5 %, 39B -0.8 -> -2.7 %, 76B \
           -1.2 -> -0.2 %, 310B -9.1 -> -6.6 %, 530B -14.6 -> -13.7 %, 1T unchanged. What then \
           stayed at 530B was largely the pipeline's send/recv (5.6 s of a 62.6 s step with 3 \
           chunks per stage): the runs had Megatron-LM's scatter/gather optimization on (Sec. \
           4.1, `--scatter-gather-tensors-in-pipeline`, the default of `megatron/p2p_communication.py` \
           until Megatron-Core took the pipeline over in 2023), each of the 8 tensor-parallel \
           ranks sending an eighth of the activation and all-gathering it over NVLink. It is \
           `engine.scatter_gather_tensors_in_pipeline` since 2026-11-29 (DeepSpeed's \
           PipelineEngine, which partitions the same way by default, as an engine fact of \
           `megatron_deepspeed`), set on every NA-T1 and PTD-P row: 530B -13.7 -> -7.1 %, 1T \
           -14.4 -> -11.9 %, 310B -6.6 -> -3.6 %, 76B -0.2 -> +2.6 %, 39B -2.7 -> -2.0 %; \
           the Table 2 PTD-P rows of 530B -11.2..-12.3 -> -8.9..-10.2 %.\n\
         * Megatron-LM's CI runs of a GPT 7B in bf16 on one DGX H100 (MC-*, golden iteration \
           times; added 2026-11-24 after the step-time model was written and not used to change \
           it; MC-7B-PP4 is held out) were estimated 25-37 % too fast, +12 and +22 % with the \
           elementwise kernels' time (their dropout and bias kernels counted), where the Megatron-LM README's \
           FP8 Llama rows are within 10 %. The CI runs are not tuned for speed: deterministic mode \
           (NCCL ring all-reduce, `NVTE_ALLOW_NONDETERMINISTIC_ALGO=0`), no gradient-accumulation \
           fusion, the parameter norm and zero-gradient counts logged every step, and Megatron's \
           default dropout (0.1 hidden and attention) with biased GPT-2-style blocks.\n\
         * MosaicML llm-foundry's MPT benchmarks (MF-*, 129 cases: every amp_bf16 row of its \
           H100 80GB BF16 and A100 80GB tables of 2023-10-19 and of its large-scale H100 table of \
           2024-01-06; Composer FSDP1 FULL_SHARD or SHARD_GRAD_OP, MPT 125M-70B as GPT-2-style \
           blocks; added 2026-11-24 after the step-time model was written and not used to change \
           it; 39 held out by the same draw, appended after the earlier ones). Signed median \
           error: +42 % on 52 H100 runs of 8-64 GPUs, +21 % on 59 A100 runs, +11 % on 18 H100 runs \
           of 128-512 GPUs before the elementwise kernels' time; +25, +9 and +9 % with it. What \
           stays grows with the sequence (760M on H100: +23 % at 512 tokens, +82 % at 32768; on \
           A100 +1 % to +40 %): the attention kernel. llm-foundry's benchmark script runs MPT's \
           Triton FlashAttention (`submit_benchmarks.py` `--attn_impl` default `triton`; \
           flash-attn's `flash_attn_triton.py`), timed as FlashAttention-2 (0.35 of the H100's \
           peak, 0.5 of the A100's) until 2026-11-29. The cases now name that kernel \
           (`training.attention` `flash_triton`), timed 1.4 times FlashAttention-2 forward and 2 \
           times backward (`steptime::TRITON_FLASH_SLOWDOWN`, from the FlashAttention-2 paper's \
           Sec. 4.1 against its Triton baseline, not from these cases): signed medians +12.4 % \
           (52 H100 runs of 8-64 GPUs), -9.6 % (59 A100 runs), +0.9 % (18 H100 runs of \
           128-512 GPUs); the 129 cases' median |error| 20.4 -> 10.8 %, all 174 cases' \
           17.5 -> 10.9 %, the held-out 54's 21.0 -> 11.9 %. Four multi-node \
           runs without recomputation read 56-58 % too slow, limited by data-parallel traffic \
           (13B at micro-batch 2 on 16, 32 and 64 GPUs, 70B on 32), where the published \
           tokens/s per GPU do not fall from 8 GPUs to 64: the model sends each rank's ring \
           traffic through that GPU's own network link, while NCCL's rings use every NIC of a \
           node at once (192 GB/s all-reduce bus bandwidth between DGX A100 nodes with eight \
           200 Gb/s NICs, NVIDIA/nccl#812). Counting the node's NICs (tried 2026-11-24, not \
           landed) moves those four to +24 to +48 % but the paper's ZeRO-3 runs on 768-2240 \
           A100s to +86 to +310 %: their published collapse with scale (100 to 31 teraFLOP/s \
           from 384 to 1536 GPUs) is not explained by bandwidth alone (per-collective latency \
           over hundreds of ranks, counted since; DeepSpeed's 2021 per-sub-module device \
           synchronization, modelled since 2026-11-29, see above). \
           Memory, not asserted: as transformers' GPT-2 code with exact GELU and no dropout \
           (MPT's low-precision LayerNorm and its default flash-attn fused cross-entropy, \
           `modeling_mpt.py` `loss_fn`, are not expressible), 30 of the 129 published runs \
           are estimated above their 80 GB (up to 93.5 GiB).\n\n\
         Published faster-of-two comparisons (tokens/s per GPU, published then estimated; \
         TT-5b's interleaved split is approximated, see its note):\n\n\
         | comparison | published | estimated | same order |\n|---|---|---|---|"
    );
    let pairs = [
        ("FSDP on 8 vs 128 GPUs", "TT-1a", "TT-3a"),
        ("CP 1 vs 2 (sequence 32k vs 64k)", "TT-2a", "TT-2b"),
        ("CP 2 vs 4 (64k vs 128k)", "TT-2b", "TT-2c"),
        ("CP 4 vs 8 (128k vs 256k)", "TT-2c", "TT-2d"),
        ("405B 1F1B vs interleaved 1F1B", "TT-5a", "TT-5b"),
        ("405B CP 1 vs 2", "TT-6a", "TT-6b"),
        ("405B CP 2 vs 4", "TT-6b", "TT-6c"),
        ("405B CP 4 vs 8", "TT-6c", "TT-6d"),
        (
            "175B on 384 GPUs: PTD-P vs ZeRO-3",
            "NA-T2-PTD-P-174.6B-384",
            "NA-T2-ZeRO-3-174.6B-384",
        ),
        (
            "175B on 768 GPUs: PTD-P vs ZeRO-3",
            "NA-T2-PTD-P-174.6B-768",
            "NA-T2-ZeRO-3-174.6B-768",
        ),
        (
            "175B on 1536 GPUs: PTD-P vs ZeRO-3",
            "NA-T2-PTD-P-174.6B-1536",
            "NA-T2-ZeRO-3-174.6B-1536",
        ),
        (
            "530B: PTD-P on 560 vs ZeRO-3 on 640 GPUs",
            "NA-T2-PTD-P-529.6B-560",
            "NA-T2-ZeRO-3-529.6B-640",
        ),
        (
            "530B on 1120 GPUs: PTD-P vs ZeRO-3",
            "NA-T2-PTD-P-529.6B-1120",
            "NA-T2-ZeRO-3-529.6B-1120",
        ),
        (
            "530B on 2240 GPUs: PTD-P vs ZeRO-3",
            "NA-T2-PTD-P-529.6B-2240",
            "NA-T2-ZeRO-3-529.6B-2240",
        ),
        (
            "GPT 7B on 8 H100: TP 4 vs PP 4 with 8 virtual stages",
            "MC-7B-TP4",
            "MC-7B-PP4",
        ),
        (
            "torchtitan Llama 3.1 8B FSDP on 32 vs 64 H200",
            "TH-8B-32",
            "TH-8B-64",
        ),
    ];
    let mut same = 0;
    for (what, a, b) in pairs {
        let (Some(&(pa, ea)), Some(&(pb, eb))) = (tokens.get(a), tokens.get(b)) else {
            continue;
        };
        let ok = (pa > pb) == (ea > eb);
        same += usize::from(ok);
        let _ = writeln!(
            o,
            "| {what} ({a} vs {b}) | {pa:.1} vs {pb:.1} | {ea:.1} vs {eb:.1} | {} |",
            if ok { "yes" } else { "**no**" }
        );
    }
    let _ = writeln!(o, "\n{same} of {} ordered as published.", pairs.len());
}
