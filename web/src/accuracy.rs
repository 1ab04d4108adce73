//! "How accurate is this?": the measured error of the model (computed by
//! `calc_core::accuracy` from the reference suite, which the app fetches from the site,
//! `tests/reference/` copied by Trunk, when the panel is first opened, and the service
//! worker keeps for offline use), the reference runs nearest to the current config, and the
//! user's own measurement against the estimate.
//! Nothing here computes memory: it only shows what `calc_core` returns.

use calc_core::Estimate;
use calc_core::accuracy::{
    Calibration, CaseResult, ErrorStats, HELDOUT_MAX, HELDOUT_MEDIAN, HELDOUT_P90, Pair,
    compare_all, compare_dist, compare_published, error_stats, nearest_cases, published_cases,
};
use calc_core::units::fmt_gib;
use calc_core::{Config, FieldError};
use gloo_storage::{LocalStorage, Storage};
use leptos::prelude::*;
use serde_json::{Value, json};

/// localStorage key of the pasted calibration text.
pub const CALIBRATION_KEY: &str = "gpu-mem-calc.calibration.v1";

fn pct(x: f64) -> String {
    // no "-0.0 %" for an error that rounds to zero
    let v = (x * 1000.0).round() / 10.0;
    if v == 0.0 {
        "0.0 %".into()
    } else {
        format!("{v:+.1} %")
    }
}

fn abs_pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// Error statistics of one kind of pair over the held-out part of the probe suite (never
/// modelled against).
fn heldout_stats(pick: impl Fn(&CaseResult) -> Option<f64>) -> ErrorStats {
    let errors: Vec<f64> = compare_all()
        .iter()
        .filter(|r| r.split.as_deref() == Some("heldout"))
        .filter_map(pick)
        .collect();
    error_stats(&errors)
}

/// Peak error statistics of the held-out distributed records, per engine group.
fn dist_stats() -> Vec<(String, ErrorStats)> {
    let mut groups: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for r in compare_dist()
        .iter()
        .filter(|r| r.split.as_deref() == Some("heldout"))
    {
        groups
            .entry(r.engine.clone())
            .or_default()
            .push(r.peak.error);
    }
    groups
        .into_iter()
        .map(|(k, v)| (k, error_stats(&v)))
        .collect()
}

fn component(r: &CaseResult, name: &str) -> Option<f64> {
    r.components
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.error)
}

fn stats_row(label: impl Into<String>, s: ErrorStats) -> impl IntoView {
    let label: String = label.into();
    view! {
        <tr>
            <th scope="row">{label}</th>
            <td class="num">{s.count}</td>
            <td class="num">{abs_pct(s.median)}</td>
            <td class="num">{abs_pct(s.p90)}</td>
            <td class="num">{abs_pct(s.max)}</td>
        </tr>
    }
}

fn pair_rows(pairs: Vec<Pair>) -> impl IntoView {
    pairs
        .into_iter()
        .map(|p| {
            view! {
                <tr>
                    <th scope="row">{p.name}</th>
                    <td class="num">{fmt_gib(p.measured)}</td>
                    <td class="num">{fmt_gib(p.estimated)}</td>
                    <td class="num">{pct(p.error)}</td>
                </tr>
            }
        })
        .collect_view()
}

/// The panel, collapsed; its content (which estimates every reference record) is built
/// when it is first opened. `doc` is written only by the "use these overheads" button (the
/// form's fields follow the document).
#[component]
pub fn AccuracyPanel(
    parsed: Memo<Result<Config, Vec<FieldError>>>,
    last_good: Memo<Option<Estimate>>,
    doc: RwSignal<Value>,
) -> impl IntoView {
    let opened = RwSignal::new(false);
    // the suite: None while fetching, then loaded or the reason it is not
    let suite = RwSignal::new(None::<Result<(), String>>);
    let open = move |_| {
        if opened.get_untracked() {
            return;
        }
        opened.set(true);
        if calc_core::accuracy::reference_loaded() {
            suite.set(Some(Ok(())));
            return;
        }
        wasm_bindgen_futures::spawn_local(async move {
            let files = REFERENCE_FILES.map(fetch_text);
            let [p, d, c] = files;
            let loaded = match (p.await, d.await, c.await) {
                (Ok(p), Ok(d), Ok(c)) => calc_core::accuracy::load_reference(&p, &d, &c),
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(e),
            };
            suite.set(Some(loaded));
        });
    };
    view! {
        <details id="accuracy" class="group accuracy" on:toggle=open>
            <summary>"How accurate is this?"</summary>
            <Show when=move || opened.get()>
                {move || match suite.get() {
                    None => view! { <p id="accuracy-loading" class="hint">"Loading the measured runs ..."</p> }.into_any(),
                    Some(Ok(())) => view! { <SuiteResults parsed=parsed /> }.into_any(),
                    Some(Err(e)) => view! {
                        <p id="accuracy-error" class="field-error" role="alert">{format!(
                            "The measured runs could not be loaded ({e}); they are fetched once, when this panel is \
                             first opened online, and kept for offline use. Your own measurement below works without them."
                        )}</p>
                    }.into_any(),
                }}
                <OwnMeasurement last_good=last_good doc=doc />
            </Show>
        </details>
    }
}

/// The reference suite's files, as Trunk copies them to the site's root (index.html).
const REFERENCE_FILES: [&str; 3] = [
    "probe_records.jsonl",
    "dist_records.jsonl",
    "published_cases.json",
];

/// Fetches a file of the site (relative to the page) as text; errors are messages.
async fn fetch_text(url: &'static str) -> Result<String, String> {
    use crate::net::FetchError;
    crate::net::fetch_text(url).await.map_err(|e| match e {
        FetchError::Unreachable => format!("{url}: offline"),
        FetchError::Status(s) => format!("{url}: HTTP {s}"),
        FetchError::Unreadable => format!("{url}: unreadable"),
    })
}

/// The suite's figures and the runs nearest to the configuration (the suite is loaded).
#[component]
fn SuiteResults(parsed: Memo<Result<Config, Vec<FieldError>>>) -> impl IntoView {
    let peak = heldout_stats(|r| Some(r.peak.error));
    let acts = heldout_stats(|r| component(r, "activations"));
    let opt = heldout_stats(|r| component(r, "optimizer_states"));
    let suite = compare_all().len();
    let published: Vec<_> = published_cases()
        .iter()
        .filter_map(|c| compare_published(c).ok())
        .collect();
    let within = published
        .iter()
        .filter(|p| p.within() == Some(true))
        .count();
    let checked = published.iter().filter(|p| p.within().is_some()).count();
    let dist = dist_stats();
    let dist_count = compare_dist().len();

    let nearest = Memo::new(move |_| {
        parsed.with(|c| c.as_ref().map(|c| nearest_cases(c, 3)).unwrap_or_default())
    });
    view! {
            <p>
                {format!(
                    "The model is checked in CI against {suite} measured single-GPU training and \
                     inference runs (the PyTorch memory probe in probe/, exact live-tensor bytes \
                     per phase). {} of them, drawn at random, are held out from development; \
                     their error (budget: median |error| ≤ {:.0} %, 90th percentile ≤ {:.0} %, \
                     max ≤ {:.0} %):",
                    peak.count,
                    HELDOUT_MEDIAN * 100.0,
                    HELDOUT_P90 * 100.0,
                    HELDOUT_MAX * 100.0
                )}
            </p>
            <table class="breakdown" id="accuracy-summary">
                <thead>
                    <tr><th scope="col">"|error| of"</th><th scope="col" class="num">"runs"</th>
                        <th scope="col" class="num">"median"</th><th scope="col" class="num">"p90"</th>
                        <th scope="col" class="num">"max"</th></tr>
                </thead>
                <tbody>
                    {stats_row("peak allocated", peak)}
                    {stats_row("activations", acts)}
                    {stats_row("optimizer states", opt)}
                </tbody>
            </table>
            <p>{format!(
                "Multi-GPU runs: {dist_count} measured FSDP2 / DDP / DeepSpeed runs (2-64 GPUs, the most \
                 loaded rank, on PyTorch's fake process group); the error on the 30 % held out \
                 from development, per engine:"
            )}</p>
            <table class="breakdown" id="accuracy-distributed">
                <thead>
                    <tr><th scope="col">"engine (held out)"</th><th scope="col" class="num">"runs"</th>
                        <th scope="col" class="num">"median"</th><th scope="col" class="num">"p90"</th>
                        <th scope="col" class="num">"max"</th></tr>
                </thead>
                <tbody>
                    {dist.into_iter().map(|(e, s)| stats_row(e, s)).collect_view()}
                </tbody>
            </table>
            <p>{format!(
                "Published measurements: {within} of {checked} within their stated tolerance; \
                 {} more reported without one (setups the source does not pin down; see ACCURACY.md).",
                published.len() - checked
            )}</p>
            <h3>"Measured runs nearest to this configuration"</h3>
            <table class="breakdown" id="nearest">
                <thead>
                    <tr><th scope="col">"run"</th><th scope="col" class="num">"measured"</th>
                        <th scope="col" class="num">"estimated"</th><th scope="col" class="num">"error"</th></tr>
                </thead>
                <tbody>
                    {move || nearest.get().into_iter().map(|r| view! {
                        <tr>
                            <th scope="row"><code>{r.id.clone()}</code></th>
                            <td class="num">{fmt_gib(r.peak.measured)}</td>
                            <td class="num">{fmt_gib(r.peak.estimated)}</td>
                            <td class="num">{pct(r.peak.error)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
    }
}

/// "Your own measurement": pasted numbers against the estimate (needs no suite).
#[component]
fn OwnMeasurement(last_good: Memo<Option<Estimate>>, doc: RwSignal<Value>) -> impl IntoView {
    let text = RwSignal::new(LocalStorage::get::<String>(CALIBRATION_KEY).unwrap_or_default());
    Effect::new(move |_| {
        let _ = LocalStorage::set(CALIBRATION_KEY, text.get());
    });
    let calibration = Memo::new(move |_| {
        let t = text.get();
        if t.trim().is_empty() {
            None
        } else {
            Some(Calibration::parse(&t))
        }
    });
    let cal_error = move || match calibration.get() {
        Some(Err(e)) => e.first().map(|e| e.message.clone()),
        _ => None,
    };
    let cal_pairs = move || match (calibration.get(), last_good.get()) {
        (Some(Ok(c)), Some(e)) => c.compare(&e),
        _ => Vec::new(),
    };
    let implied = move || match calibration.get() {
        Some(Ok(c)) => c.implied_overheads(),
        _ => (None, None),
    };
    let apply = move |_| {
        let (ctx, reserve) = implied();
        doc.update(|d| {
            if !d.get("overheads").is_some_and(Value::is_object) {
                d["overheads"] = json!({});
            }
            if let Some(m) = ctx {
                d["overheads"]["cuda_context_mib"] = json!((m * 10.0).round() / 10.0);
            }
            if let Some(r) = reserve {
                d["overheads"]["allocator_reserve_fraction"] = json!((r * 1000.0).round() / 1000.0);
            }
        });
    };

    view! {
            <h3>"Your own measurement"</h3>
            <label for="calibration">
                "Paste torch.cuda.max_memory_allocated() / max_memory_reserved() (e.g. "
                <code>"allocated: 61.2 GiB"</code>", one per line), a JSON object of them in bytes, "
                "or a probe record. Kept in this browser only."
            </label>
            <textarea id="calibration" rows="4" spellcheck="false"
                aria-invalid=move || if cal_error().is_some() { "true" } else { "false" }
                aria-describedby="calibration-error"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <p id="calibration-error" class="error" role="alert">{cal_error}</p>
            <table class="breakdown" id="calibration-table"
                style:display=move || if cal_pairs().is_empty() { "none" } else { "" }>
                <thead>
                    <tr><th scope="col">""</th><th scope="col" class="num">"you measured"</th>
                        <th scope="col" class="num">"this estimate"</th><th scope="col" class="num">"error"</th></tr>
                </thead>
                <tbody>{move || pair_rows(cal_pairs())}</tbody>
            </table>
            <p style:display=move || if implied() == (None, None) { "none" } else { "" }>
                {move || {
                    let (ctx, reserve) = implied();
                    let mut parts = Vec::new();
                    if let Some(m) = ctx { parts.push(format!("CUDA context {m:.0} MiB")); }
                    if let Some(r) = reserve { parts.push(format!("allocator reserve {:.1} % of allocated", r * 100.0)); }
                    format!("Your measurement implies: {}. ", parts.join(", "))
                }}
                <button id="apply-calibration" on:click=apply>"Use these overheads"</button>
            </p>
    }
}
