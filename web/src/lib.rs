//! The gpu-mem-calc web app (Leptos, client-side rendered).
//!
//! Data flows one way: the config document (a JSON value) is the only state a user edits;
//! `calc_core` turns it into a `Result<Estimate, Vec<FieldError>>` in one memo; the form's
//! errors, the chart, the table and the export all read that memo. The last valid estimate
//! stays on screen, marked stale, while the input is invalid.

pub mod accuracy;
pub mod chart;
pub mod doc;
pub mod formats;
pub mod hf_import;
pub mod net;
pub mod plan;
pub mod state;

use calc_core::fields::{self, Context, Field, Kind, SECTIONS, Task};
use calc_core::units::fmt_gib;
use calc_core::{COMPONENTS, Estimate, OVERHEADS};
use calc_core::{Config, FieldError, presets};
use gloo_storage::{LocalStorage, Storage};
use leptos::prelude::*;
use serde_json::{Value, json};
use wasm_bindgen::{JsCast, JsValue};

/// localStorage key of the saved config document (the last valid one).
pub const STORAGE_KEY: &str = "gpu-mem-calc.config.v1";
/// localStorage key of the page's document while it is invalid (kept, never loaded over the
/// saved one).
pub const DRAFT_KEY: &str = "gpu-mem-calc.draft.v1";
/// localStorage key of the plan panel's inputs (a JSON object; absent while they are the defaults).
pub const PLAN_STORAGE_KEY: &str = "gpu-mem-calc.plan.v1";

/// The document a first visit starts from.
pub fn default_doc() -> Value {
    json!({
        "schema_version": calc_core::SCHEMA_VERSION,
        "model": {"preset": "llama-3.1-8b"},
        "training": {"micro_batch_size": 1, "seq_len": 4096, "gradient_accumulation_steps": 8,
                     "precision": "amp_bf16", "optimizer": "adamw", "activation_checkpointing": "full",
                     "attention": "flash", "loss": "standard"},
        "parallelism": {},
        "engine": {"type": "deepspeed", "zero_stage": 3},
        "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}
    })
}

/// localStorage key where a saved document that cannot be read (not JSON, cut off, not an
/// object) is moved, so that nothing the user saved is overwritten.
pub const UNREADABLE_KEY: &str = "gpu-mem-calc.config.unreadable.v1";

thread_local! {
    /// Set when an unreadable saved document could not be moved aside (storage full): the
    /// page then never writes over it.
    static SAVE_BLOCKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The saved document (a JSON object, migrated from older schema versions), and a message
/// when one was saved but cannot be read: it is moved to [`UNREADABLE_KEY`] (or, when
/// storage has no room for the copy, left in place and never overwritten).
fn load_saved() -> (Option<Value>, Option<String>) {
    let raw = LocalStorage::raw();
    let Ok(Some(text)) = raw.get_item(STORAGE_KEY) else {
        return (None, None);
    };
    let why = match serde_json::from_str::<Value>(&text) {
        Ok(v) if v.is_object() => return (Some(state::migrate_saved(v)), None),
        Ok(_) => "it is not a configuration object".to_string(),
        Err(e) if e.is_eof() => "it is cut off".to_string(),
        Err(e) => format!("it is not JSON ({e})"),
    };
    let size = text.len();
    let message = if raw.set_item(UNREADABLE_KEY, &text).is_ok() {
        let _ = raw.remove_item(STORAGE_KEY);
        format!(
            "Your saved configuration could not be read: {why} ({size} bytes). It is kept in localStorage under \"{UNREADABLE_KEY}\"; showing the default configuration."
        )
    } else {
        SAVE_BLOCKED.with(|b| b.set(true));
        format!(
            "Your saved configuration could not be read: {why} ({size} bytes), and the browser's storage has no room for a copy. It is left where it is and this page will not save over it; the link keeps your changes."
        )
    };
    (None, Some(message))
}

/// The document to start from: the link's (URL fragment) when it holds an acceptable one,
/// else the saved one, else the default; and a message about the link, the saved document
/// or an unsaved draft.
fn initial_doc() -> (Value, String) {
    let (saved_doc, saved_note) = load_saved();
    let saved = || saved_doc.clone().unwrap_or_else(default_doc);
    let hash = window().location().hash().unwrap_or_default();
    let draft = LocalStorage::get::<Value>(DRAFT_KEY).is_ok();
    const DRAFT: &str =
        "Your last edit was invalid and was not saved: showing your last valid configuration.";
    let (doc, message) = match state::decode_fragment(&hash) {
        // a reload: the page's own link is the saved configuration
        Some(Ok(v)) if draft && saved_doc.as_ref() == Some(&v) => (v, DRAFT.into()),
        Some(Ok(v)) => (v, "Loaded the configuration from the link".into()),
        Some(Err(e)) => (
            saved(),
            format!(
                "The link's configuration was rejected: {e}. Showing your last valid configuration."
            ),
        ),
        None => (saved(), if draft { DRAFT.into() } else { String::new() }),
    };
    match saved_note {
        Some(note) if message.is_empty() => (doc, note),
        Some(note) => (doc, format!("{message} {note}")),
        None => (doc, message),
    }
}

/// A Performance API mark (read by the benchmark in tests/e2e/bench.mjs).
fn mark(name: &str) {
    if let Some(p) = window().performance() {
        let _ = p.mark(name);
    }
}

fn dom_id(path: &str) -> String {
    path.replace('.', "-")
}

/// Mounts the app on `<body>`.
pub fn run() {
    console_error_panic_hook::set_once();
    // index.html's loading message (it says what failed when the app cannot load)
    if let Some(boot) = window()
        .document()
        .and_then(|d| d.get_element_by_id("boot"))
    {
        boot.remove();
    }
    leptos::mount::mount_to_body(App);
    mark("first-render");
}

#[component]
pub fn App() -> impl IntoView {
    let (initial, link_message) = initial_doc();
    let doc = RwSignal::new(initial);
    let status = RwSignal::new(link_message);
    // the plan panel's inputs: the link's, else the saved ones (kept beside the document)
    let plan_inputs: RwSignal<Option<Value>> = RwSignal::new(
        state::decode_plan_inputs(&window().location().hash().unwrap_or_default()).or_else(|| {
            LocalStorage::get::<Value>(PLAN_STORAGE_KEY)
                .ok()
                .filter(Value::is_object)
        }),
    );

    // the fields the form hides are left out (calc-core's rule): a value left in one never
    // blocks the result
    let parsed = Memo::new(move |_| doc.with(fields::parse_form));
    // What each field shows where the document leaves it out: the value calc-core computes
    // with (the parsed config, defaults filled in, as "Export JSON" writes it); the last
    // one that parsed while a field is unparseable.
    let effective: Memo<Value> = Memo::new(move |prev: Option<&Value>| match parsed.get() {
        Ok(c) => serde_json::to_value(&c).unwrap_or_default(),
        Err(_) => prev.cloned().unwrap_or_default(),
    });
    let result: Memo<Result<Estimate, Vec<FieldError>>> =
        Memo::new(move |_| parsed.get().and_then(|c| calc_core::estimate(&c)));
    let last_good: Memo<Option<Estimate>> =
        Memo::new(move |prev: Option<&Option<Estimate>>| match result.get() {
            Ok(e) => Some(e),
            Err(_) => prev.cloned().flatten(),
        });
    let errors = Memo::new(move |_| result.get().err().unwrap_or_default());
    // The secondary views (solvers, sweep, which GPUs fit) run dozens of estimates each;
    // they follow the config one task later, so that a keystroke's frame shows the
    // validation, the numbers and the main chart first.
    let settled_config = RwSignal::new(Err::<Config, Vec<FieldError>>(Vec::new()));
    Effect::new(move |_| {
        // a config that parses but does not validate counts as invalid here
        let c = match (parsed.get(), result.with(|r| r.is_ok())) {
            (Ok(c), true) => Ok(c),
            (Ok(_), false) => Err(Vec::new()),
            (Err(e), _) => Err(e),
        };
        set_timeout(move || settled_config.set(c), std::time::Duration::ZERO);
    });
    // like the estimate, they keep the last valid config's answers (marked stale with the
    // results) while the input is invalid
    let settled = Memo::new(move |prev: Option<&Result<Config, Vec<FieldError>>>| {
        match settled_config.get() {
            Ok(c) => Ok(c),
            Err(e) => match prev {
                Some(Ok(c)) => Ok(c.clone()),
                _ => Err(e),
            },
        }
    });
    let stale = Memo::new(move |_| result.with(|r| r.is_err()));
    // what decides which fields apply (task, engine, runtime, weight format): calc-core's rule
    let ctx = Memo::new(move |_| doc.with(Context::of));

    // persistence: the saved document and the link hold the last valid configuration (as
    // computed: the hidden fields left out); an invalid one is kept in the page and in a
    // draft slot, never over the saved one. Both are browser calls slow enough
    // (localStorage and history are synchronous IPC, 5-25 ms measured) to delay a
    // keystroke's frame, so they run 100 ms after the last change, and at once when the
    // page is hidden or left.
    let persist = move || {
        let d = doc.get_untracked();
        let plan = plan_inputs.get_untracked();
        match &plan {
            Some(p) => {
                let _ = LocalStorage::set(PLAN_STORAGE_KEY, p);
            }
            None => LocalStorage::delete(PLAN_STORAGE_KEY),
        }
        // a failed write (storage full or blocked) is never silently dropped: said once while
        // its message shows (not restarting its timer), and again by the next failed write
        // after the message has hidden itself
        let failed = move |what: &str, kept: &str, e: gloo_storage::errors::StorageError| {
            let m = format!("Not saved: the browser refused to store {what} ({e}). {kept}");
            if status.get_untracked() != m {
                status.set(m);
            }
        };
        if result.with_untracked(|r| r.is_ok()) {
            let valid = fields::without_hidden(&d);
            if !SAVE_BLOCKED.with(|b| b.get()) {
                match LocalStorage::set(STORAGE_KEY, &valid) {
                    Ok(()) => LocalStorage::delete(DRAFT_KEY),
                    Err(e) => failed(
                        "the configuration",
                        "The link in the address bar keeps it.",
                        e,
                    ),
                }
            }
            let fragment = state::encode_fragment(&valid, plan.as_ref());
            if window().location().hash().ok().as_deref() != Some(fragment.as_str())
                && let Ok(h) = window().history()
            {
                let _ = h.replace_state_with_url(&JsValue::NULL, "", Some(&fragment));
            }
        } else if let Err(e) = LocalStorage::set(DRAFT_KEY, &d) {
            failed(
                "the invalid edit",
                "The page keeps it while open; the saved configuration is unchanged.",
                e,
            );
        }
    };
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        doc.track();
        plan_inputs.track();
        let g = generation.get_value() + 1;
        generation.set_value(g);
        set_timeout(
            move || {
                if generation.get_value() == g {
                    persist();
                }
            },
            std::time::Duration::from_millis(100),
        );
    });
    let _ = window_event_listener(leptos::ev::pagehide, move |_| persist());
    // a link pasted into the address bar of an open page changes only the fragment
    let _ = window_event_listener(leptos::ev::hashchange, move |_| {
        let hash = window().location().hash().unwrap_or_default();
        if let Some(p) = state::decode_plan_inputs(&hash)
            && plan_inputs.with_untracked(|x| x.as_ref() != Some(&p))
        {
            plan_inputs.set(Some(p));
        }
        match state::decode_fragment(&hash) {
            // our own replaceState does not fire this; a link equal to the page changes nothing
            Some(Ok(v))
                if doc.with_untracked(|d| {
                    fields::without_hidden(d) != fields::without_hidden(&v)
                }) =>
            {
                doc.set(v);
                status.set("Loaded the configuration from the link".into());
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => status.set(format!(
                "The link's configuration was rejected: {e}. Your configuration is unchanged."
            )),
            None => {}
        }
    });

    let export_text = move || match parsed.get_untracked() {
        Ok(c) => c.to_json_pretty(),
        Err(_) => serde_json::to_string_pretty(&doc.get_untracked()).unwrap_or_default(),
    };
    let on_export = move |_| match download("gpu-mem-calc-config.json", &export_text()) {
        Ok(()) => status.set("Exported gpu-mem-calc-config.json".into()),
        Err(e) => status.set(format!("Export failed: {e}")),
    };
    let on_copy = move |_| {
        let text = export_text();
        let p = window().navigator().clipboard().write_text(&text);
        wasm_bindgen_futures::spawn_local(async move {
            match wasm_bindgen_futures::JsFuture::from(p).await {
                Ok(_) => status.set("Copied the config JSON to the clipboard".into()),
                Err(_) => status.set("Copy failed: the browser refused clipboard access".into()),
            }
        });
    };
    let on_copy_link = move |_| {
        let url = window().location().href().unwrap_or_default();
        let p = window().navigator().clipboard().write_text(&url);
        wasm_bindgen_futures::spawn_local(async move {
            match wasm_bindgen_futures::JsFuture::from(p).await {
                Ok(_) => status.set("Copied a link to this configuration".into()),
                Err(_) => status.set("Copy failed: the browser refused clipboard access".into()),
            }
        });
    };
    // the charts are drawn at their container's width (so that their text is drawn at the
    // size it is set in, not shrunk with the SVG), measured once mounted and on resize; the
    // estimates they draw do not depend on it
    let chart_width = RwSignal::new(chart::MAX_WIDTH_PX);
    let measure = move || {
        let w = document()
            .get_element_by_id("chart")
            .map(|el| el.client_width())
            .unwrap_or(0);
        if w > 0 {
            let w = (w as u32).clamp(chart::MIN_WIDTH_PX, chart::MAX_WIDTH_PX);
            if chart_width.get_untracked() != w {
                chart_width.set(w);
            }
        }
    };
    request_animation_frame(measure);
    let _ = window_event_listener(leptos::ev::resize, move |_| measure());
    let fits = Memo::new(move |_| {
        settled.with(|c| {
            c.as_ref()
                .ok()
                .and_then(|c| calc_core::export::gpu_fits(c).ok())
        })
    });
    let sweep = Memo::new(move |_| settled.with(|c| c.as_ref().ok().map(sweep_points)));
    let on_reset = move |_| {
        doc.set(default_doc());
        status.set("Reset to the default configuration".into());
    };

    view! {
        <header class="top">
            <h1>"GPU memory calculator"</h1>
            <p class="tagline">
                "Will this model fit? Per-GPU memory for training large language models, by component, "
                "computed in your browser."
            </p>
        </header>
        <Summary last_good=last_good stale=stale />
        <main class="layout">
            <section class="inputs" aria-label="Configuration">
                <ModeSwitch doc=doc ctx=ctx />
                <ModelPicker doc=doc last_good=last_good errors=errors />
                <GpuPicker doc=doc last_good=last_good errors=errors />
                {SECTIONS
                    .iter()
                    .map(|sec| {
                        view! {
                            <details class="group" open=sec.open
                                style:display=move || if ctx.with(|c| sec.applies(c)) { "" } else { "none" }>
                                <summary>{sec.title}</summary>
                                {sec.fields.iter().map(|f| view! { <Field spec=f doc=doc effective=effective ctx=ctx errors=errors /> }).collect_view()}
                            </details>
                        }
                    })
                    .collect_view()}
            </section>
            <section id="results" class="results" class:stale=move || stale.get() aria-live="polite">
                <Verdict last_good=last_good stale=stale />
                <GeneralErrors errors=errors />
                <div id="chart" class="chart" role="img" aria-label="Memory per phase against the GPU's capacity"
                    inner_html=move || last_good.with(|e| e.as_ref().map(|e| {
                        let svg = chart::render_svg(e, chart_width.get());
                        mark("chart-rendered");
                        svg
                    }).unwrap_or_default())></div>
                <div id="fits" class="chart" role="img" aria-label="Which GPUs fit"
                    inner_html=move || fits.with(|f| f.as_ref()
                        .map(|f| chart::render_fits_svg(f, chart_width.get()))
                        .unwrap_or_default())></div>
                <Solvers parsed=settled doc=doc status=status />
                <plan::PlanPanel settled=settled last_good=last_good doc=doc status=status inputs=plan_inputs />
                <Breakdown last_good=last_good />
                <CpuMemory last_good=last_good />
                <accuracy::AccuracyPanel parsed=parsed last_good=last_good doc=doc />
                <Import doc=doc status=status />
                <p id="sweep-caption" class="hint">{move || settled.with(|c| c.as_ref().ok().map(sweep_caption).unwrap_or_default())}</p>
                <div id="sweep" class="chart" inner_html=move || sweep.with(|p| p.as_ref()
                    .map(|(points, label)| chart::render_sweep_svg(points, label, chart_width.get()))
                    .unwrap_or_default())></div>
                <div class="actions">
                    <button id="export" on:click=on_export>"Export JSON"</button>
                    <button id="copy" on:click=on_copy>"Copy JSON"</button>
                    <button id="copy-link" on:click=on_copy_link>"Copy link"</button>
                    <ExportTool doc=doc ctx=ctx status=status />
                    <button id="reset" class="secondary" on:click=on_reset>"Reset"</button>
                </div>
            </section>
        </main>
        <StatusToast status=status />
        <footer class="bottom">
            <p>"All numbers are computed by calc-core (Rust, WebAssembly) on this page; your configuration is not sent anywhere. "
                "Only \"Fetch\" under Hugging Face model contacts huggingface.co, to download the config.json you name."</p>
        </footer>
    }
}

/// How long a status message stays before it hides itself: 5 s and 60 ms per character
/// to read it (about 200 words a minute), at most 30 s.
fn status_duration(message: &str) -> std::time::Duration {
    let chars = message.chars().count() as u64;
    std::time::Duration::from_millis((5_000 + 60 * chars).min(30_000))
}

/// The page's status message (what an action did: loaded, imported, exported, copied, or
/// why it failed) in a bar fixed to the bottom of the window, so that it is seen wherever
/// the action was, a phone's long page included; it hides itself after
/// [`status_duration`] or when dismissed. The `role="status"` region stays in the page
/// (transparent when empty) so that screen readers announce each message.
#[component]
fn StatusToast(status: RwSignal<String>) -> impl IntoView {
    // each message restarts the timer; an older message's timer leaves a newer one alone
    let shown = StoredValue::new(0u64);
    Effect::new(move |_| {
        let text = status.get();
        if text.is_empty() {
            return;
        }
        let generation = shown.get_value() + 1;
        shown.set_value(generation);
        set_timeout(
            move || {
                if shown.get_value() == generation {
                    status.set(String::new());
                }
            },
            status_duration(&text),
        );
    });
    let empty = move || status.with(String::is_empty);
    view! {
        <div class="toast" class:shown=move || !empty()>
            <span id="status" role="status">{move || status.get()}</span>
            <Show when=move || !empty()>
                <button class="toast-close" aria-label="Dismiss the message"
                    on:click=move |_| status.set(String::new())>"×"</button>
            </Show>
        </div>
    }
}

/// The errors for one field path, as display text.
fn field_errors(errors: &[FieldError], path: &str) -> Option<String> {
    let msgs: Vec<String> = errors
        .iter()
        .filter(|e| e.field == path)
        .map(|e| {
            if e.value.is_empty() {
                e.message.clone()
            } else {
                format!("{} — {}", e.value, e.message)
            }
        })
        .collect();
    (!msgs.is_empty()).then(|| msgs.join("; "))
}

/// Paths that have a field of their own on the page.
fn has_field(path: &str) -> bool {
    path == "model.preset"
        || path == "hardware.gpu"
        || path == "hardware.gpu_memory_gb"
        || path == "hardware.cpu_memory_gb"
        || fields::field(path).is_some()
}

/// The text of an input bound to the document at `path`. What the user types is kept as
/// typed (so that "1e" or "q_proj," can be finished); whenever the document's value changes
/// to one the text does not stand for (an import, a reset, a link, a preset, mode or engine
/// switch, a "use this" button), the text becomes the document's.
fn bound_text(
    doc: RwSignal<Value>,
    path: &'static str,
    text_of: fn(Option<&Value>) -> String,
    value_of: impl Fn(&str) -> Option<Value> + 'static,
) -> RwSignal<String> {
    let current = Memo::new(move |_| doc.with(|d| doc::get(d, path).cloned()));
    let text = RwSignal::new(text_of(current.get_untracked().as_ref()));
    Effect::new(move |_| {
        let v = current.get();
        if text.with_untracked(|t| value_of(t)) != v {
            text.set(text_of(v.as_ref()));
        }
    });
    text
}

#[component]
fn Field(
    spec: &'static Field,
    doc: RwSignal<Value>,
    effective: Memo<Value>,
    ctx: Memo<Context>,
    errors: Memo<Vec<FieldError>>,
) -> impl IntoView {
    let path = spec.path;
    let id = dom_id(path);
    let err_id = format!("{id}-error");
    let help_id = format!("{id}-help");
    let error = Memo::new(move |_| errors.with(|e| field_errors(e, path)));
    let visible = move || ctx.with(|c| spec.applies(c));
    // the value computed with: the document's, else calc-core's default for it
    let computed = move || {
        doc.with(|d| doc::get(d, path).filter(|v| !v.is_null()).cloned())
            .or_else(|| effective.with(|e| doc::get(e, path).filter(|v| !v.is_null()).cloned()))
    };
    // where the document leaves a text field empty, the placeholder shows the default used
    let placeholder = move |text_of: fn(Option<&Value>) -> String| {
        move || effective.with(|e| text_of(doc::get(e, path)))
    };
    let described = format!("{help_id} {err_id}");
    let control = match spec.kind {
        Kind::Count | Kind::Number => {
            let text = bound_text(doc, path, doc::text_of, move |t| {
                doc::value_of(t, spec.optional)
            });
            view! {
                <input id=id.clone() type="text" inputmode="decimal" autocomplete="off"
                    prop:value=move || text.get() placeholder=placeholder(doc::text_of)
                    aria-invalid=move || if error.with(|e| e.is_some()) { "true" } else { "false" }
                    aria-describedby=described.clone()
                    on:input=move |ev| {
                        let t = event_target_value(&ev);
                        let v = doc::value_of(&t, spec.optional);
                        text.set(t);
                        doc.update(|d| doc::set(d, path, v));
                    } />
            }
            .into_any()
        }
        Kind::Targets => {
            let text = bound_text(doc, path, doc::targets_text, |t| {
                Some(doc::targets_value(t))
            });
            view! {
                <input id=id.clone() type="text" autocomplete="off"
                    prop:value=move || text.get() placeholder=placeholder(doc::targets_text)
                    aria-invalid=move || if error.with(|e| e.is_some()) { "true" } else { "false" }
                    aria-describedby=described.clone()
                    on:input=move |ev| {
                        let t = event_target_value(&ev);
                        let v = doc::targets_value(&t);
                        text.set(t);
                        doc.update(|d| doc::set(d, path, Some(v)));
                    } />
            }
            .into_any()
        }
        Kind::Check => {
            let checked = move || {
                computed()
                    .or_else(|| fields::default_at(path, ctx.with(|c| c.engine.kind())))
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false)
            };
            view! {
                <input id=id.clone() type="checkbox" prop:checked=checked aria-describedby=described.clone()
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        doc.update(|d| doc::set(d, path, Some(json!(on))));
                    } />
            }
            .into_any()
        }
        Kind::Choice(choices) => {
            let options: Vec<(String, String)> = choices
                .list()
                .into_iter()
                .map(|c| (c.value.to_string(), c.label.to_string()))
                .collect();
            let current = move || {
                computed()
                    .or_else(|| choices.unwritten_default())
                    .map_or_else(|| "null".to_string(), |v| v.to_string())
            };
            view! {
                <select id=id.clone() aria-describedby=described.clone() prop:value=current
                    aria-invalid=move || if error.with(|e| e.is_some()) { "true" } else { "false" }
                    on:change=move |ev| {
                        let raw = event_target_value(&ev);
                        let v: Value = serde_json::from_str(&raw).unwrap_or(Value::String(raw));
                        doc.update(|d| {
                            if path == "engine.type" {
                                // a new engine starts from its own defaults
                                doc::set(d, "engine", Some(json!({ "type": v })));
                            } else if v.is_null() {
                                doc::set(d, path, None);
                            } else {
                                doc::set(d, path, Some(v));
                            }
                        });
                    }>
                    {options
                        .into_iter()
                        .map(|(value, label)| view! { <option value=value>{label}</option> })
                        .collect_view()}
                </select>
            }
            .into_any()
        }
    };
    view! {
        <div class="field" class:invalid=move || error.with(|e| e.is_some()) style:display=move || if visible() { "" } else { "none" }>
            <label for=id.clone()>
                {spec.label}
                {(!spec.unit.is_empty()).then(|| view! { <span class="unit">{format!(" ({})", spec.unit)}</span> })}
            </label>
            {control}
            <small id=help_id class="help">{spec.help}</small>
            <p id=err_id class="field-error" class:hidden=move || error.with(|e| e.is_none())>
                {move || error.get().unwrap_or_default()}
            </p>
        </div>
    }
}

#[component]
fn ModelPicker(
    doc: RwSignal<Value>,
    last_good: Memo<Option<Estimate>>,
    errors: Memo<Vec<FieldError>>,
) -> impl IntoView {
    // the preset shown follows the document ("" = a Hugging Face config or custom fields)
    let current = move || {
        doc.with(|d| {
            doc::get(d, "model.preset")
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        })
    };
    let error = Memo::new(move |_| {
        errors.with(|e| {
            let msgs: Vec<String> = e
                .iter()
                .filter(|x| x.field == "model" || x.field.starts_with("model."))
                .map(|x| x.to_string())
                .collect();
            (!msgs.is_empty()).then(|| msgs.join("; "))
        })
    });
    view! {
        <fieldset class="group">
            <legend>"Model"</legend>
            <div class="field">
                <label for="model-preset">"Model preset"</label>
                <select id="model-preset" aria-describedby="model-preset-help model-preset-error" prop:value=current
                    on:change=move |ev| {
                        let id = event_target_value(&ev);
                        if !id.is_empty() {
                            doc.update(|d| doc::set(d, "model", Some(json!({ "preset": id }))));
                        }
                    }>
                    <option value="">"(Hugging Face config or custom fields)"</option>
                    {presets::model_presets()
                        .iter()
                        .map(|p| view! { <option value=p.id.clone()>{format!("{} ({})", p.name, short_count(&p.published_params))}</option> })
                        .collect_view()}
                </select>
                <small id="model-preset-help" class="help">"Architectures from the models' Hugging Face config.json files."</small>
                <p id="model-preset-error" class="field-error" class:hidden=move || error.with(|e| e.is_none())>{move || error.get().unwrap_or_default()}</p>
            </div>
            <p id="model-info" class="model-info">
                {move || last_good.with(|e| e.as_ref().map(|e| format!("{}: {}", e.model.name, hf_import::summary(&e.model))).unwrap_or_default())}
            </p>
            <hf_import::HfImport doc=doc />
        </fieldset>
    }
}

/// "7B (model card / Llama 2 paper)" -> "7B".
fn short_count(published: &str) -> String {
    published
        .split([' ', ';'])
        .next()
        .unwrap_or(published)
        .to_string()
}

#[component]
fn GpuPicker(
    doc: RwSignal<Value>,
    last_good: Memo<Option<Estimate>>,
    errors: Memo<Vec<FieldError>>,
) -> impl IntoView {
    // the GPU computed with: the document's preset; none with a custom size; else the GPU
    // calc-core chose (its default when the document names none)
    let current = move || {
        doc.with(|d| {
            match (
                doc::get(d, "hardware.gpu").and_then(|v| v.as_str()),
                doc::get(d, "hardware.gpu_memory_gb").filter(|v| !v.is_null()),
            ) {
                (Some(id), _) => id.to_string(),
                (None, Some(_)) => String::new(),
                (None, None) => last_good.with(|e| {
                    e.as_ref()
                        .map(|e| e.gpu.id.clone())
                        .filter(|id| id != "custom")
                        .unwrap_or_default()
                }),
            }
        })
    };
    // the node's CPU memory computed with (the GPU preset's typical node when left empty)
    let cpu_placeholder = Signal::derive(move || {
        last_good.with(|e| {
            e.as_ref()
                .map(|e| calc_core::units::fmt_gib_input(e.gpu.node_cpu_memory_bytes))
                .unwrap_or_default()
        })
    });
    let gpu_error = Memo::new(move |_| errors.with(|e| field_errors(e, "hardware.gpu")));
    view! {
        <fieldset class="group">
            <legend>"Hardware"</legend>
            <div class="field">
                <label for="hardware-gpu">"GPU"</label>
                <select id="hardware-gpu" aria-describedby="hardware-gpu-error" prop:value=current
                    on:change=move |ev| {
                        let id = event_target_value(&ev);
                        doc.update(|d| doc::set(d, "hardware.gpu", if id.is_empty() { None } else { Some(json!(id)) }));
                    }>
                    {presets::gpu_presets()
                        .iter()
                        .map(|g| view! { <option value=g.id.clone()>{format!("{} ({})", g.name, fmt_gib(g.capacity_bytes()))}</option> })
                        .collect_view()}
                    <option value="">"Custom size"</option>
                </select>
                <p id="hardware-gpu-error" class="field-error" class:hidden=move || gpu_error.with(|e| e.is_none())>{move || gpu_error.get().unwrap_or_default()}</p>
            </div>
            <MemoryField doc=doc errors=errors path="hardware.gpu_memory_gb" label="GPU memory"
                unit=" (GB, or e.g. 80GiB)" placeholder="preset size".to_string()
                help="Overrides the preset's capacity. A number is GB (10^9 bytes)." />
            <MemoryField doc=doc errors=errors path="hardware.cpu_memory_gb" label="CPU memory per node"
                unit=" (GB, or e.g. 2TiB)" placeholder=cpu_placeholder
                help="Offloaded and paged states must fit in it. Empty: the GPU's typical node (e.g. DGX H100: 2 TB). A number is GB (10^9 bytes)." />
        </fieldset>
    }
}

/// A memory size of the hardware section (GB, or a string with a unit), bound to the
/// document at `path`, with its help line and field error.
#[component]
fn MemoryField(
    doc: RwSignal<Value>,
    errors: Memo<Vec<FieldError>>,
    path: &'static str,
    label: &'static str,
    unit: &'static str,
    help: &'static str,
    #[prop(into)] placeholder: Signal<String>,
) -> impl IntoView {
    let id = dom_id(path);
    let text = bound_text(doc, path, doc::text_of, |t| doc::value_of(t, true));
    let error = Memo::new(move |_| errors.with(|e| field_errors(e, path)));
    view! {
        <div class="field" class:invalid=move || error.with(|e| e.is_some())>
            <label for=id.clone()>{label} <span class="unit">{unit}</span></label>
            <input id=id.clone() type="text" inputmode="decimal" prop:value=move || text.get() placeholder=placeholder
                aria-invalid=move || if error.with(|e| e.is_some()) { "true" } else { "false" }
                aria-describedby=format!("{id}-help {id}-error")
                on:input=move |ev| {
                    let t = event_target_value(&ev);
                    let v = doc::value_of(&t, true);
                    text.set(t);
                    doc.update(|d| doc::set(d, path, v));
                } />
            <small id=format!("{id}-help") class="help">{help}</small>
            <p id=format!("{id}-error") class="field-error" class:hidden=move || error.with(|e| e.is_none())>{move || error.get().unwrap_or_default()}</p>
        </div>
    }
}

#[component]
fn Verdict(last_good: Memo<Option<Estimate>>, stale: Memo<bool>) -> impl IntoView {
    view! {
        <div id="verdict" class="verdict" class:fits=move || last_good.with(|e| e.as_ref().is_some_and(|e| e.fits))
            class:nofit=move || last_good.with(|e| e.as_ref().is_some_and(|e| !e.fits))>
            {move || last_good.with(|e| match e {
                None => "Enter a valid configuration.".to_string(),
                Some(e) => verdict_text(e).0,
            })}
            <span class="stale-note" class:hidden=move || !stale.get()>" (last valid result: fix the highlighted fields)"</span>
        </div>
    }
}

/// The verdict of an estimate, in full (the results' headline) and short (the phone's
/// summary bar): one text for both, from the estimate's own `fits`.
fn verdict_text(e: &Estimate) -> (String, String) {
    let per_gpu = format!(
        "{} of {} per GPU",
        fmt_gib(e.total_bytes),
        fmt_gib(e.gpu_memory_bytes)
    );
    match &e.serving {
        Some(sv) => {
            let word = if sv.fits { "Serves" } else { "Does not fit" };
            (
                format!("{word}: {}", sv.message),
                format!(
                    "{word}: {per_gpu}, {} requests of {} tokens",
                    sv.max_concurrency.floor() as u64,
                    sv.max_model_len
                ),
            )
        }
        None if e.fits => (
            format!(
                "Fits: {per_gpu} ({:.0} %), {} free",
                100.0 * e.utilization,
                fmt_gib(e.headroom_bytes as u64)
            ),
            format!("Fits: {per_gpu}, {} free", fmt_gib(e.headroom_bytes as u64)),
        ),
        None if !e.cpu_fits() && e.headroom_bytes >= 0 => (
            format!(
                "Does not fit in CPU memory: the offloaded states need {} per node and the node has {} (the GPU holds its part: {} of {}, {} free)",
                fmt_gib(e.cpu_memory_bytes),
                fmt_gib(e.gpu.node_cpu_memory_bytes),
                fmt_gib(e.total_bytes),
                fmt_gib(e.gpu_memory_bytes),
                fmt_gib(e.headroom_bytes as u64)
            ),
            format!(
                "Does not fit in CPU memory: {} per node of {}",
                fmt_gib(e.cpu_memory_bytes),
                fmt_gib(e.gpu.node_cpu_memory_bytes)
            ),
        ),
        None => (
            format!(
                "Does not fit: needs {} per GPU, {} more than the {} available",
                fmt_gib(e.total_bytes),
                fmt_gib(e.headroom_bytes.unsigned_abs()),
                fmt_gib(e.gpu_memory_bytes)
            ),
            format!(
                "Does not fit: {per_gpu}, {} over",
                fmt_gib(e.headroom_bytes.unsigned_abs())
            ),
        ),
    }
}

/// The summary bar: on a phone (one column, the results under the form) it sticks to the top
/// of the screen while the form scrolls under it, so the verdict and its numbers are always in
/// view; a tap goes to the results. Hidden on wide screens, where the results column itself
/// stays in view (style.css).
#[component]
fn Summary(last_good: Memo<Option<Estimate>>, stale: Memo<bool>) -> impl IntoView {
    view! {
        <a id="summary" class="summary" href="#results"
            class:fits=move || last_good.with(|e| e.as_ref().is_some_and(|e| e.fits))
            class:nofit=move || last_good.with(|e| e.as_ref().is_some_and(|e| !e.fits))
            class:stale=move || stale.get()>
            <span id="summary-verdict">{move || last_good.with(|e| match e {
                None => "Enter a valid configuration.".to_string(),
                Some(e) => verdict_text(e).1,
            })}</span>
            <span class="summary-more">{move || if stale.get() { " (last valid result) ↓" } else { " ↓" }}</span>
        </a>
    }
}

/// CPU (and NVMe) memory, whenever something is offloaded or paged: per node and per GPU,
/// against the node's CPU memory, with calc-core's formula and source.
#[component]
fn CpuMemory(last_good: Memo<Option<Estimate>>) -> impl IntoView {
    let shown = move || {
        last_good.with(|e| {
            e.as_ref()
                .is_some_and(|e| e.cpu_memory_bytes > 0 || e.nvme_bytes > 0)
        })
    };
    let detail = move |name: &'static str| {
        last_good.with(|e| {
            e.as_ref()
                .and_then(|e| e.details.iter().find(|d| d.name == name).cloned())
        })
    };
    view! {
        <section id="cpu-memory" class="cpu-card" class:hidden=move || !shown()>
            <h3>"CPU memory"</h3>
            {move || last_good.with(|e| e.as_ref().filter(|e| e.cpu_memory_bytes > 0).map(|e| {
                let fits = e.cpu_fits();
                view! {
                    <p id="cpu-memory-verdict" class:nofit=!fits>
                        <strong>{format!("{} per node", fmt_gib(e.cpu_memory_bytes))}</strong>
                        {format!(
                            " ({} per GPU, {} GPUs on the node) of the node's {}: {}",
                            fmt_gib(e.cpu_memory_per_gpu_bytes()),
                            e.layout.gpus_on_node(),
                            fmt_gib(e.gpu.node_cpu_memory_bytes),
                            if fits { "fits" } else { "does not fit" }
                        )}
                    </p>
                }
            }))}
            {move || detail("cpu_memory").map(|d| view! {
                <p class="formula"><code>{d.formula}</code></p>
                <small class="help">{d.source}</small>
            })}
            {move || last_good.with(|e| e.as_ref().filter(|e| e.nvme_bytes > 0).map(|e| view! {
                <p id="nvme-verdict"><strong>{format!("NVMe: {} per node", fmt_gib(e.nvme_bytes))}</strong></p>
            }))}
            {move || detail("nvme").map(|d| view! {
                <p class="formula"><code>{d.formula}</code></p>
                <small class="help">{d.source}</small>
            })}
        </section>
    }
}

#[component]
fn GeneralErrors(errors: Memo<Vec<FieldError>>) -> impl IntoView {
    let others = Memo::new(move |_| {
        errors.with(|e| {
            e.iter()
                .filter(|x| !has_field(&x.field) && !x.field.starts_with("model"))
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
        })
    });
    view! {
        <ul id="general-errors" class="general-errors" class:hidden=move || others.with(|o| o.is_empty())>
            {move || others.get().into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}
        </ul>
    }
}

#[component]
fn Breakdown(last_good: Memo<Option<Estimate>>) -> impl IntoView {
    view! {
        <table id="breakdown" class="breakdown">
            <caption>{move || last_good.with(|e| e.as_ref().map(|e| format!(
                "Most loaded GPU ({}), peak during the {} phase",
                e.most_loaded, e.peak_phase.as_str().replace('_', " ")
            )).unwrap_or_default())}</caption>
            <thead><tr><th scope="col">"Component"</th><th scope="col" class="num">"GiB"</th><th scope="col" class="num">"% of GPU"</th></tr></thead>
            <tbody>
                {move || last_good.with(|e| {
                    let Some(e) = e else { return Vec::new() };
                    let pct = |b: u64| format!("{:.1}", 100.0 * b as f64 / e.gpu_memory_bytes.max(1) as f64);
                    let gib = |b: u64| format!("{:.2}", b as f64 / calc_core::units::GIB as f64);
                    let mut rows = Vec::new();
                    // each row opens its formula, with the numbers substituted, and its source
                    let explain = |name: &str, label: String| {
                        match e.details.iter().find(|d| d.name == name) {
                            Some(d) => view! {
                                <details class="explain">
                                    <summary>{label}</summary>
                                    <p class="formula">{d.formula.clone()}</p>
                                    <p class="source">"Source: "{d.source.clone()}</p>
                                </details>
                            }.into_any(),
                            None => view! { <span>{label}</span> }.into_any(),
                        }
                    };
                    for name in COMPONENTS {
                        let b = e.components[*name];
                        if b > 0 {
                            let color = chart::css_color(name);
                            rows.push(view! {
                                <tr data-component=*name>
                                    <td><span class="swatch" style=format!("background:{color}")></span>{explain(name, name.replace('_', " "))}</td>
                                    <td class="num">{gib(b)}</td><td class="num">{pct(b)}</td>
                                </tr>
                            }.into_any());
                        }
                    }
                    rows.push(view! { <tr class="sum"><td>"Peak allocated"</td><td class="num" id="peak-gib">{gib(e.peak_allocated_bytes)}</td><td class="num">{pct(e.peak_allocated_bytes)}</td></tr> }.into_any());
                    for name in OVERHEADS {
                        let b = e.overheads[*name];
                        if b > 0 {
                            rows.push(view! { <tr class="overhead" data-component=*name><td>{explain(name, format!("+ {}", name.replace('_', " ")))}</td><td class="num">{gib(b)}</td><td class="num">{pct(b)}</td></tr> }.into_any());
                        }
                    }
                    rows.push(view! { <tr class="sum"><td>"Total"</td><td class="num" id="total-gib">{gib(e.total_bytes)}</td><td class="num">{pct(e.total_bytes)}</td></tr> }.into_any());
                    rows.push(view! { <tr><td>"GPU memory"</td><td class="num">{gib(e.gpu_memory_bytes)}</td><td class="num">"100.0"</td></tr> }.into_any());
                    rows
                })}
            </tbody>
        </table>
                <p id="first-step" class="model-info">{move || last_good.with(|e| e.as_ref().and_then(|e| e.first_step_peak_bytes.filter(|&f| f != e.peak_allocated_bytes)).map(|f| format!("First iteration: peak allocated {} (the optimizer states are created by its step; the steady state is above).", calc_core::units::fmt_gib(f))).unwrap_or_default())}</p>
                <p id="trainable" class="model-info">{move || last_good.with(|e| e.as_ref().filter(|e| e.mode == calc_core::Mode::Training && e.trainable_params != e.params.total).map(|e| format!("Trainable (LoRA adapters): {} parameters", calc_core::units::fmt_int(e.trainable_params))).unwrap_or_default())}</p>
        <ul class="warnings">
            {move || last_good.with(|e| e.as_ref().map(|e| e.warnings.iter().map(|w| view! { <li>{w.clone()}</li> }).collect_view()))}
        </ul>
    }
}

/// Export the plan as another tool's file: the formats that apply to the mode and engine
/// ([`calc_core::formats::Format::applies`]), written by calc-core in the formats worker
/// ([`formats::export`]); a format that cannot express the plan says which key.
#[component]
fn ExportTool(doc: RwSignal<Value>, ctx: Memo<Context>, status: RwSignal<String>) -> impl IntoView {
    use calc_core::formats::Format;
    let chosen = RwSignal::new(Format::Deepspeed);
    let offered = Memo::new(move |_| {
        ctx.with(|c| {
            Format::ALL
                .into_iter()
                .filter(|f| f.applies(c))
                .collect::<Vec<_>>()
        })
    });
    // the chosen format, or the first offered when the chosen one does not apply
    let current = Memo::new(move |_| {
        let c = chosen.get();
        offered.with(|o| {
            if o.contains(&c) {
                Some(c)
            } else {
                o.first().copied()
            }
        })
    });
    let on_export = move |_| {
        let Some(f) = current.get_untracked() else {
            return;
        };
        let d = doc.get_untracked();
        status.set(format!("Writing {}…", f.file_name()));
        wasm_bindgen_futures::spawn_local(async move {
            match formats::export(&d, f).await {
                Ok(text) => match download(f.file_name(), &text) {
                    Ok(()) => status.set(format!("Exported {} ({})", f.file_name(), f.name())),
                    Err(e) => status.set(format!("Export failed: {e}")),
                },
                Err(e) => status.set(format!("No {}: {e}", f.file_name())),
            }
        });
    };
    view! {
        <span class="export-tool" style:display=move || if current.get().is_some() { "" } else { "none" }>
            <label for="export-format">"Export as"</label>
            <select id="export-format"
                prop:value=move || current.get().map(Format::id).unwrap_or_default()
                on:change=move |ev| if let Some(f) = Format::from_id(&event_target_value(&ev)) { chosen.set(f) }>
                {move || offered.get().into_iter().map(|f| view! {
                    <option value=f.id() selected=move || current.get() == Some(f)>{f.name()}</option>
                }).collect_view()}
            </select>
            <button id="export-tool" on:click=on_export>{move || current.get().map(|f| format!("Export {}", f.file_name())).unwrap_or_default()}</button>
        </span>
    }
}

/// Saves `text` as a file through a Blob download.
fn download(name: &str, text: &str) -> Result<(), String> {
    let err = |e: JsValue| format!("{e:?}");
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(if name.ends_with(".json") {
        "application/json"
    } else {
        "text/plain"
    });
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts).map_err(err)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(err)?;
    let a: web_sys::HtmlAnchorElement = document()
        .create_element("a")
        .map_err(err)?
        .dyn_into()
        .map_err(|_| "not an anchor".to_string())?;
    a.set_href(&url);
    a.set_download(name);
    a.click();
    web_sys::Url::revoke_object_url(&url).map_err(err)?;
    Ok(())
}

/// The Training / Fine-tuning / Inference switch: sets `mode` (and, where the document has
/// none, a `training.lora` or `inference` section holding calc-core's defaults; for LoRA
/// [`calc_core::fields::starting_lora`], whose targets PEFT accepts for the model).
#[component]
fn ModeSwitch(doc: RwSignal<Value>, ctx: Memo<Context>) -> impl IntoView {
    let set_mode = move |task: Task| {
        doc.update(|d| match task {
            Task::Inference => {
                doc::set(d, "mode", Some(json!("inference")));
                if doc::get(d, "inference").is_none() {
                    let defaults = serde_json::to_value(calc_core::config::Inference::default());
                    doc::set(d, "inference", defaults.ok());
                }
            }
            Task::Training | Task::FineTuning => {
                doc::set(d, "mode", Some(json!("training")));
                let lora = (task == Task::FineTuning).then(|| {
                    doc::get(d, "training.lora").cloned().unwrap_or_else(|| {
                        // calc-core's defaults, with targets PEFT accepts for this model
                        let model = doc::get(d, "model")
                            .and_then(Value::as_object)
                            .cloned()
                            .map(calc_core::config::ModelSpec)
                            .unwrap_or_default();
                        serde_json::to_value(calc_core::fields::starting_lora(&model))
                            .unwrap_or_else(|_| json!({}))
                    })
                });
                doc::set(d, "training.lora", lora);
            }
        })
    };
    let button = move |task: Task, id: &'static str, label: &'static str| {
        view! {
            <button id=id type="button" class="mode" aria-pressed=move || if ctx.with(|c| c.task == task) { "true" } else { "false" }
                on:click=move |_| set_mode(task)>{label}</button>
        }
    };
    view! {
        <div class="mode-switch" role="group" aria-label="What to estimate">
            {button(Task::Training, "mode-training", "Training")}
            {button(Task::FineTuning, "mode-finetuning", "Fine-tuning")}
            {button(Task::Inference, "mode-inference", "Inference")}
        </div>
    }
}

/// The inverse questions answered for the current config (calc_core::solve), each over
/// the layouts the engine runs, with the layout it assumes and a button that loads it.
#[component]
fn Solvers(
    parsed: Memo<Result<Config, Vec<FieldError>>>,
    doc: RwSignal<Value>,
    status: RwSignal<String>,
) -> impl IntoView {
    use calc_core::solve::{Target, solve};
    let answers = Memo::new(move |_| {
        parsed.with(|c| {
            let Ok(c) = c else { return Vec::new() };
            let inference = c.effective_mode() == calc_core::config::Mode::Inference;
            let targets: &[(Target, &str)] = if inference {
                &[
                    (Target::MaxConcurrency, "solve-concurrency"),
                    (Target::MaxSequence, "solve-context"),
                    (Target::MinGpus, "solve-gpus"),
                ]
            } else {
                &[
                    (Target::MaxMicroBatch, "solve-batch"),
                    (Target::MaxSequence, "solve-seq"),
                    (Target::MinGpus, "solve-gpus"),
                ]
            };
            targets
                .iter()
                .map(|(t, id)| match solve(c, *t) {
                    Ok(s) => {
                        let config = s.config.and_then(|c| serde_json::to_value(c).ok());
                        (id.to_string(), s.message, config)
                    }
                    Err(e) => (
                        id.to_string(),
                        e.first().map(|e| e.message.clone()).unwrap_or_default(),
                        None,
                    ),
                })
                .collect::<Vec<_>>()
        })
    });
    view! {
        <ul id="solvers" class="solvers">
            {move || answers.get().into_iter().map(|(id, text, config)| {
                let loaded = text.clone();
                let button = config.map(|v| view! {
                    <button class="use-solution secondary" title="Load this answer and its layout into the form"
                        on:click=move |_| {
                            doc.set(v.clone());
                            status.set(format!("Loaded {loaded}"));
                        }>"Use"</button>
                });
                view! { <li id=id><span>{text}</span>" "{button}</li> }
            }).collect_view()}
        </ul>
    }
}

/// The sweep's points: memory against the micro-batch (training) or the context length
/// (inference), with the limit it must stay under, as estimated by calc_core at each point,
/// and the x axis's label. A serving runtime
/// (vLLM, SGLang) reserves its whole budget whatever the length, so there the line is what
/// one request of `max_model_len` tokens needs (calc-core's `one_sequence_bytes`) against
/// that budget: the headline's verdict is whether it fits (see [`sweep_caption`]).
fn sweep_points(c: &Config) -> (Vec<(u64, u64, u64)>, &'static str) {
    let inference = c.effective_mode() == calc_core::config::Mode::Inference;
    let serving = inference
        && c.inference
            .as_ref()
            .is_some_and(|i| i.engine != calc_core::config::InferenceEngine::Hf);
    let points: Vec<(u64, u64, u64)> = if inference {
        let base = c.inference.clone().unwrap_or_default();
        let len = if serving {
            base.max_model_len.unwrap_or(base.context_len)
        } else {
            base.context_len
        };
        let mut xs: Vec<u64> = (9..=20).map(|k| 1u64 << k).collect();
        xs.retain(|x| *x <= (len * 4).max(4096));
        xs.into_iter()
            .filter_map(|x| {
                let mut cc = c.clone();
                let inf = cc.inference.get_or_insert_with(Default::default);
                inf.context_len = x;
                inf.prompt_len = None;
                inf.max_model_len = serving.then_some(x);
                calc_core::estimate(&cc).ok().map(|e| match &e.serving {
                    Some(sv) => (x, sv.one_sequence_bytes, sv.budget_bytes),
                    None => (x, e.total_bytes, e.gpu_memory_bytes),
                })
            })
            .collect()
    } else {
        let top = (c.training.micro_batch_size * 2).clamp(8, 64);
        (1..=top)
            .filter_map(|b| {
                let mut cc = c.clone();
                cc.training.micro_batch_size = b;
                calc_core::estimate(&cc)
                    .ok()
                    .map(|e| (b, e.total_bytes, e.gpu_memory_bytes))
            })
            .collect()
    };
    let label = match (inference, serving) {
        (true, true) => "max_model_len (tokens)",
        (true, false) => "context length (tokens)",
        (false, _) => "micro-batch size",
    };
    (points, label)
}

/// What the sweep plots, said above it.
fn sweep_caption(c: &Config) -> &'static str {
    let runtime = c.inference.as_ref().map(|i| i.engine).unwrap_or_default();
    if c.effective_mode() == calc_core::config::Mode::Training {
        "Total memory per GPU against the micro-batch size; red: the GPU's capacity."
    } else if runtime == calc_core::config::InferenceEngine::Hf {
        "Total memory per GPU against the context length; red: the GPU's capacity."
    } else {
        "What one request of max_model_len tokens needs (weights, profiled activations, non-torch memory and its KV cache) against the runtime's budget (red: gpu_memory_utilization or mem_fraction_static of the GPU). The runtime reserves the whole budget at any length (the total above); a request fits while the line is under the red one."
    }
}

/// Import a config: ours (JSON; accepted documents, see `state::accept`, replace the current
/// one) or another tool's file, recognised by calc-core in the formats worker
/// ([`formats::import`]) and read over the current document, with the report of what was
/// read, ignored and kept. A rejected file leaves everything as it was and says why.
#[component]
fn Import(doc: RwSignal<Value>, status: RwSignal<String>) -> impl IntoView {
    let error = RwSignal::new(String::new());
    let text = RwSignal::new(String::new());
    let report = RwSignal::new(None::<formats::Imported>);
    let busy = RwSignal::new(false);
    let use_text = move |t: String, from: String| {
        report.set(None);
        let own = serde_json::from_str::<Value>(t.trim())
            .ok()
            .is_some_and(|v| calc_core::formats::is_own_config(&v));
        if own {
            match state::accept_text(&t) {
                Ok(v) => {
                    doc.set(v);
                    error.set(String::new());
                    status.set(format!("Imported the configuration{from}"));
                }
                Err(e) => error.set(format!(
                    "Not imported: {e}. Your configuration is unchanged."
                )),
            }
            return;
        }
        // another tool's file: read in the formats worker over the current document
        busy.set(true);
        error.set(String::new());
        let base = doc.get_untracked();
        wasm_bindgen_futures::spawn_local(async move {
            let r = formats::import(t, &base)
                .await
                .and_then(|im| state::accept(im.config.clone()).map(|v| (im, v)));
            match r {
                Ok((im, v)) => {
                    doc.set(v);
                    status.set(format!("Imported {}{from}", im.format_name));
                    report.set(Some(im));
                }
                Err(e) => error.set(format!(
                    "Not imported: {e}. Your configuration is unchanged."
                )),
            }
            busy.set(false);
        });
    };
    let on_file = move |ev: leptos::ev::Event| {
        hf_import::read_chosen_file(&ev, move |name, text| match text {
            Some(t) => use_text(t, format!(" from {name}")),
            None => error.set(format!("Could not read {name}")),
        });
    };
    let names = calc_core::formats::Format::ALL
        .map(calc_core::formats::Format::name)
        .join(", ");
    view! {
        <details id="import" class="group">
            <summary>"Import a config or a framework's file"</summary>
            <p class="hint">"A gpu-mem-calc config (JSON), or one of: " {names}
                ". Another tool's file is read over the configuration on the page: what it does not say stays as it is."</p>
            <label for="import-file">"From a file"</label>
            <input id="import-file" type="file" on:change=on_file />
            <label for="import-text">"Or paste it"</label>
            <textarea id="import-text" rows="5" spellcheck="false"
                aria-invalid=move || if error.with(|e| e.is_empty()) { "false" } else { "true" }
                aria-describedby="import-error"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <button id="import-apply" prop:disabled=move || busy.get()
                on:click=move |_| use_text(text.get_untracked(), String::new())>"Import"</button>
            <span id="import-busy" class="hint">{move || if busy.get() { "Reading the file…" } else { "" }}</span>
            <p id="import-error" class="error" role="alert">{move || error.get()}</p>
            {move || report.get().map(|im| view! { <ImportReport im=im /> })}
        </details>
    }
}

/// What an import of another tool's file did, key by key (calc-core's report).
#[component]
fn ImportReport(im: formats::Imported) -> impl IntoView {
    let read = im
        .read
        .iter()
        .map(|m| {
            view! {
                <tr><td><code>{m.from.clone()}</code></td><td><code>{m.value.clone()}</code></td>
                    <td><code>{m.to.clone()}</code></td><td><code>{m.set.to_string()}</code></td></tr>
            }
        })
        .collect_view();
    let ignored = im
        .ignored
        .iter()
        .map(|i| view! { <li><code>{i.key.clone()}</code>": "{i.reason.clone()}</li> })
        .collect_view();
    let n_ignored = im.ignored.len();
    view! {
        <div id="import-report">
            <p id="import-recognised"><strong>"Recognised: "</strong>{im.format_name.clone()}</p>
            <div class="scroll-x">
                <table class="import-read">
                    <caption>{format!("Read: {} settings", im.read.len())}</caption>
                    <thead><tr><th>"In the file"</th><th>"Value"</th><th>"Our key"</th><th>"Set to"</th></tr></thead>
                    <tbody>{read}</tbody>
                </table>
            </div>
            <details id="import-ignored">
                <summary>{format!("Not read: {n_ignored} settings")}</summary>
                <ul>{ignored}</ul>
            </details>
            <p id="import-from-base" class="hint">"Kept from the page (the file has no place for them): "
                {im.from_base.join(", ")}</p>
        </div>
    }
}
