//! The estimate against the distributed reference suite (`tests/reference/dist_records.jsonl`,
//! written by `probe/dist_probe.py` on PyTorch's fake process group; see probe/README.md):
//! the most loaded rank's peak of FSDP2 (with HSDP, tensor, sequence, pipeline, context and
//! expert parallelism), DDP and DeepSpeed ZeRO 1-3 runs of 1B-70B models on 2-64 GPUs.
//!
//! The budget is asserted per engine on the held-out records only: 30 % of each engine's
//! configurations drawn by a seeded shuffle (`probe/dist_grid.py`), which the model was not
//! developed against. Run with `-- --nocapture` to see the tables.

use calc_core::accuracy::{
    BUDGET_MEDIAN, BUDGET_P90, CaseResult, compare, dist_records, error_stats,
};
use std::collections::{BTreeMap, BTreeSet};

const GB: f64 = 1e9;

fn results() -> Vec<CaseResult> {
    dist_records()
        .iter()
        .map(|r| compare(r).unwrap_or_else(|e| panic!("{}: {e:?}", r.id)))
        .collect()
}

#[test]
fn the_suite_is_broad_and_split() {
    let recs = dist_records();
    assert!(recs.len() >= 120, "{} distributed records", recs.len());
    let res = results();
    let engines: BTreeSet<&str> = res.iter().map(|r| r.engine.as_str()).collect();
    for e in ["ddp", "fsdp2", "deepspeed"] {
        assert!(engines.contains(e), "no {e} record: {engines:?}");
    }
    let families: BTreeSet<&str> = res.iter().map(|r| r.family.as_str()).collect();
    for f in ["llama", "qwen", "mistral", "moe"] {
        assert!(families.contains(f), "no {f} record: {families:?}");
    }
    assert!(
        res.iter().any(|r| r.id.contains("deepseek")),
        "no MLA record"
    );
    let gpus: BTreeSet<u64> = res.iter().map(|r| r.gpus).collect();
    for g in [2, 4, 8, 16, 32, 64] {
        assert!(gpus.contains(&g), "no {g}-GPU record: {gpus:?}");
    }
    for (part, what) in [
        ("-t", "tensor parallel"),
        ("-p", "pipeline parallel"),
        ("-c", "context parallel"),
        ("-e", "expert parallel"),
        ("/zero1/", "ZeRO-1"),
        ("/zero2/", "ZeRO-2"),
        ("/zero3/", "ZeRO-3"),
        ("/full/", "recomputation"),
        ("/none/", "no recomputation"),
    ] {
        assert!(res.iter().any(|r| r.id.contains(part)), "no {what} record");
    }
    // every record is in one split, and about 30 % of each engine's are held out
    for e in &engines {
        let of: Vec<&CaseResult> = res.iter().filter(|r| r.engine == *e).collect();
        let held = of
            .iter()
            .filter(|r| r.split.as_deref() == Some("heldout"))
            .count();
        assert!(
            of.iter()
                .all(|r| matches!(r.split.as_deref(), Some("train" | "heldout"))),
            "{e}: a record without a split"
        );
        let share = held as f64 / of.len() as f64;
        assert!(
            (0.25..=0.35).contains(&share),
            "{e}: {held} of {} held out",
            of.len()
        );
    }
}

fn table(title: &str, res: &[&CaseResult]) {
    println!("{title}");
    println!(
        "{:<70} {:>9} {:>9} {:>8}",
        "case (most loaded rank's peak, GB)", "measured", "estimate", "error"
    );
    for r in res {
        println!(
            "{:<70} {:>9.3} {:>9.3} {:>+7.2}%",
            r.id,
            r.peak.measured as f64 / GB,
            r.peak.estimated as f64 / GB,
            r.peak.error * 100.0
        );
    }
}

#[test]
fn held_out_peaks_within_budget_per_engine() {
    let res = results();
    let mut by_engine: BTreeMap<&str, Vec<&CaseResult>> = BTreeMap::new();
    for r in res.iter().filter(|r| r.split.as_deref() == Some("heldout")) {
        by_engine.entry(r.engine.as_str()).or_default().push(r);
    }
    assert!(by_engine.len() >= 3, "{:?}", by_engine.keys());
    let mut failures = Vec::new();
    for (engine, cases) in &by_engine {
        table(&format!("held out, {engine}:"), cases);
        let errors: Vec<f64> = cases.iter().map(|r| r.peak.error).collect();
        let s = error_stats(&errors);
        println!(
            "{engine}: {} held-out cases, median |error| {:.2} %, p90 {:.2} %, max {:.2} %\n",
            s.count,
            s.median * 100.0,
            s.p90 * 100.0,
            s.max * 100.0
        );
        if s.median > BUDGET_MEDIAN || s.p90 > BUDGET_P90 {
            failures.push(format!(
                "{engine}: median {:.2} %, p90 {:.2} %",
                s.median * 100.0,
                s.p90 * 100.0
            ));
        }
    }
    assert!(failures.is_empty(), "over budget: {failures:?}");
}

#[test]
fn every_record_compares_its_measured_phases() {
    // a record whose phases the estimate does not name is a defect (pipeline records have
    // no separate forward: the schedule interleaves it with backward)
    for r in results() {
        assert!(!r.phases.is_empty(), "{}: no phase compared", r.id);
        assert!(r.peak.measured > 0 && r.peak.estimated > 0, "{}", r.id);
    }
}
