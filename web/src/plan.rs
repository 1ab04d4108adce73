//! "Which layout should I use?": the plan search (`calc_core::plan`) for the form's model,
//! GPU, sequence length, GPUs per node and training options, ranked by step time, sortable;
//! "use this plan" loads a plan's document into the form, and the form's own layout is
//! placed among the plans. Nothing here computes memory or time: it shows what `calc_core`
//! returns.

use calc_core::fields::Choices;
use calc_core::plan::{Plan, PlanRequest, PlanResult};
use calc_core::units::{GIB, parse_count};
use calc_core::{Config, Estimate, FieldError};
use leptos::prelude::*;
use serde_json::Value;

/// The columns a user can sort by.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Column {
    Rank,
    Memory,
    Headroom,
    Step,
    Tokens,
    Mfu,
}

impl Column {
    /// The order a first click sorts in: the best first.
    fn best_first_descending(self) -> bool {
        matches!(self, Column::Headroom | Column::Tokens | Column::Mfu)
    }
    fn key(self, p: &Plan) -> f64 {
        match self {
            Column::Rank => p.rank as f64,
            Column::Memory => p.total_bytes as f64,
            Column::Headroom => p.headroom_bytes as f64,
            Column::Step => p.step.seconds,
            Column::Tokens => p.step.tokens_per_second_per_gpu,
            Column::Mfu => p.step.mfu,
        }
    }
}

/// What the panel's own inputs ask, as typed; kept in the link and the saved state as a JSON
/// object of these keys (a key left out takes its default).
#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
struct Asked {
    gpus: String,
    max_gpus: String,
    batch_tokens: String,
    headroom_pct: String,
    offload: bool,
    /// `engine.type` values allowed, as their JSON values (calc_core's engine choices).
    engines: Vec<Value>,
    /// Recomputation options allowed, as their JSON values (calc_core's choices).
    recompute: Vec<Value>,
}

impl Default for Asked {
    /// Every engine and recomputation option calc_core lists, 5 % headroom, no offload.
    fn default() -> Asked {
        Asked {
            gpus: String::new(),
            max_gpus: String::new(),
            batch_tokens: String::new(),
            headroom_pct: "5".into(),
            offload: false,
            engines: Choices::Engine
                .list()
                .into_iter()
                .map(|c| c.value)
                .collect(),
            recompute: Choices::Recompute
                .list()
                .into_iter()
                .map(|c| c.value)
                .collect(),
        }
    }
}

impl Asked {
    /// The inputs kept in a link or the saved state; anything unreadable gives the defaults
    /// (the search then names no input of the link, and the form is not affected).
    fn of(inputs: &Option<Value>) -> Asked {
        inputs
            .as_ref()
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }
    /// What is kept: `None` for the defaults (a link then carries no inputs).
    fn to_inputs(&self) -> Option<Value> {
        (*self != Asked::default())
            .then(|| serde_json::to_value(self).ok())
            .flatten()
    }
}

/// The request for `config` with the panel's inputs; `batch` is the form's global batch in
/// sequences (micro-batch x accumulation x data-parallel size), used when no token count is
/// typed. Errors name the panel's input.
fn request(config: &Config, asked: &Asked, batch: u64) -> Result<PlanRequest, String> {
    let count = |s: &str, name: &str| -> Result<Option<u64>, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        parse_count(s).map(Some).map_err(|e| format!("{name}: {e}"))
    };
    let headroom = asked.headroom_pct.trim();
    let min_headroom = if headroom.is_empty() {
        PlanRequest::default().min_headroom
    } else {
        // calc_core validates the fraction (`min_headroom`)
        headroom
            .parse::<f64>()
            .map_err(|_| format!("headroom: {headroom:?} must be a percentage"))?
            / 100.0
    };
    let tokens = count(&asked.batch_tokens, "global batch")?;
    Ok(PlanRequest {
        config: config.clone(),
        num_gpus: count(&asked.gpus, "GPUs")?,
        max_gpus: count(&asked.max_gpus, "up to GPUs")?,
        global_batch_tokens: tokens,
        global_batch_sequences: tokens.is_none().then_some(batch.max(1)),
        allow_offload: asked.offload,
        min_headroom,
        engines: asked
            .engines
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        recompute: asked
            .recompute
            .iter()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect(),
        ..Default::default()
    })
}

/// Where the form's own layout stands: its tokens per second per GPU against the plans'
/// (the same GPUs and global batch when the inputs are left as the form has them).
fn current_rank(config: &Config, e: &Estimate, r: &PlanResult, min_headroom: f64) -> String {
    let Ok(resolved) = calc_core::resolve::resolve(config) else {
        return String::new();
    };
    let Ok(step) = calc_core::steptime::step_time_of(&resolved, Default::default()) else {
        return String::new();
    };
    let fits = e.total_bytes <= calc_core::plan::capacity_limit(e.gpu_memory_bytes, min_headroom);
    let faster = r
        .plans
        .iter()
        .filter(|p| p.step.tokens_per_second_per_gpu > step.tokens_per_second_per_gpu)
        .count();
    let place = if r.plans.is_empty() {
        "no plan to compare it with".to_string()
    } else if faster == r.plans.len() {
        format!("slower than all {} plans listed", r.plans.len())
    } else {
        format!(
            "it would rank {} of the {} listed",
            faster + 1,
            r.plans.len()
        )
    };
    format!(
        "Your layout (TP {}, PP {}, DP {}, micro-batch {} x {}): {:.2} s per step, {:.0} tokens/s per GPU; {}{}.",
        e.layout.tensor_parallel_size,
        e.layout.pipeline_parallel_size,
        e.layout.data_parallel_size,
        config.training.micro_batch_size,
        config.training.gradient_accumulation_steps,
        step.seconds,
        step.tokens_per_second_per_gpu,
        place,
        if fits {
            ""
        } else {
            ", but it does not fit with the headroom asked"
        }
    )
}

/// The plan panel. `settled`: the form's last valid config, one task after the keystroke
/// (the search runs off the keystroke's frame); `load` replaces the form's document.
#[component]
pub fn PlanPanel(
    settled: Memo<Result<Config, Vec<FieldError>>>,
    last_good: Memo<Option<Estimate>>,
    doc: RwSignal<Value>,
    status: RwSignal<String>,
    /// The panel's inputs as kept in the link and the saved state (`None`: the defaults).
    inputs: RwSignal<Option<Value>>,
) -> impl IntoView {
    // a link or saved state with inputs opens the panel with them
    let opened = RwSignal::new(inputs.with_untracked(Option::is_some));
    // the panel's inputs are `inputs` (the link's, the saved ones), read as `Asked`; an edit
    // writes them back
    let asked = Memo::new(move |_| Asked::of(&inputs.get()));
    let edit = move |f: &dyn Fn(&mut Asked)| {
        let mut a = asked.get_untracked();
        f(&mut a);
        inputs.set(a.to_inputs());
    };
    // the panel's inputs reach the search one task after the keystroke, as the form's do
    let asked_settled = RwSignal::new(asked.get_untracked());
    Effect::new(move |_| {
        let a = asked.get();
        set_timeout(move || asked_settled.set(a), std::time::Duration::ZERO);
    });
    let result = Memo::new(move |_| -> Option<Result<(PlanResult, f64), String>> {
        if !opened.get() {
            return None;
        }
        let config = settled.get().ok()?;
        if config.effective_mode() != calc_core::Mode::Training {
            return Some(Err(
                "The plan search is for training; switch the task to training.".into(),
            ));
        }
        let batch = last_good.with(|e| {
            e.as_ref().map_or(1, |e| {
                config.training.micro_batch_size
                    * config.training.gradient_accumulation_steps
                    * e.layout.data_parallel_size
            })
        });
        let req = match request(&config, &asked_settled.get(), batch) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let min_headroom = req.min_headroom;
        let perf = window().performance();
        if let Some(p) = &perf {
            let _ = p.mark("plan-start");
        }
        let r = calc_core::plan::plan(&req).map_err(|e| {
            e.iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect::<Vec<_>>()
                .join("; ")
        });
        if let Some(p) = &perf {
            // the browser benchmark reads the search's time from these marks
            let _ = p.mark("plan-searched");
        }
        Some(r.map(|r| (r, min_headroom)))
    });
    let sort = RwSignal::new((Column::Rank, false));
    let sort_by = move |c: Column| {
        sort.update(|(col, desc)| {
            if *col == c {
                *desc = !*desc;
            } else {
                *col = c;
                *desc = c.best_first_descending();
            }
        })
    };
    let header = move |c: Column, label: &'static str| {
        let aria = move || {
            let (col, desc) = sort.get();
            if col != c {
                "none"
            } else if desc {
                "descending"
            } else {
                "ascending"
            }
        };
        view! {
            <th scope="col" class="num" aria-sort=aria>
                <button class="sort" data-column=label on:click=move |_| sort_by(c)>{label}</button>
            </th>
        }
    };
    let load = move |p: &Plan| match serde_json::to_value(&p.config) {
        Ok(v) => {
            doc.set(v);
            status.set(format!("Loaded plan {}: {}", p.rank, p.summary));
        }
        Err(e) => status.set(format!("Could not load the plan: {e}")),
    };
    let input = move |id: &'static str,
                      label: &'static str,
                      get: fn(&Asked) -> String,
                      set: fn(&mut Asked, String),
                      hint: &'static str| {
        view! {
            <div>
                <label for=id>{label}</label>
                <input id=id type="text" placeholder=hint
                    prop:value=move || asked.with(get)
                    on:input=move |ev| {
                        let v = event_target_value(&ev);
                        edit(&|a| set(a, v.clone()));
                    } />
            </div>
        }
    };
    // the options the search may choose, as core lists them, each a checkbox
    let checks = move |id: &'static str,
                       legend: &'static str,
                       choices: Choices,
                       get: fn(&Asked) -> &Vec<Value>,
                       set: fn(&mut Asked) -> &mut Vec<Value>| {
        view! {
            <fieldset id=id class="plan-choices">
                <legend>{legend}</legend>
                {choices.list().into_iter().map(|c| {
                    let key = c.value.as_str().unwrap_or_default().to_string();
                    let (v1, v2) = (c.value.clone(), c.value.clone());
                    view! {
                        <label class="check"><input type="checkbox" value=key
                            prop:checked=move || asked.with(|a| get(a).contains(&v1))
                            on:change=move |ev| {
                                let on = event_target_checked(&ev);
                                let v = v2.clone();
                                edit(&|a| {
                                    let list = set(a);
                                    list.retain(|x| *x != v);
                                    if on { list.push(v.clone()) }
                                });
                            } />" "{c.label}</label>
                    }
                }).collect_view()}
            </fieldset>
        }
    };
    view! {
        <details id="plan" class="group plan" open=opened.get_untracked() on:toggle=move |_| opened.set(true)>
            <summary>"Which layout should I use? (plan search)"</summary>
            <p class="hint">"Every TP x PP x CP x EP x DP layout, engine, recomputation and micro-batch for this model, GPU and sequence length, ranked by estimated step time per sequence; only plans that fit with the headroom are listed. A global batch in tokens is rounded per layout to whole sequences per data-parallel rank."</p>
            <div class="plan-inputs">
                {input("plan-gpus", "GPUs", |a| a.gpus.clone(), |a, v| a.gpus = v, "the form's")}
                {input("plan-max-gpus", "Up to GPUs", |a| a.max_gpus.clone(), |a, v| a.max_gpus = v, "optional")}
                {input("plan-batch", "Global batch (tokens)", |a| a.batch_tokens.clone(), |a, v| a.batch_tokens = v, "the form's, e.g. 4M")}
                {input("plan-headroom", "Headroom (%)", |a| a.headroom_pct.clone(), |a, v| a.headroom_pct = v, "5")}
                <label class="check"><input id="plan-offload" type="checkbox"
                    prop:checked=move || asked.with(|a| a.offload)
                    on:change=move |ev| { let c = event_target_checked(&ev); edit(&|a| a.offload = c); } />
                    " allow offload"</label>
            </div>
            {checks("plan-engines", "Engines", Choices::Engine, |a| &a.engines, |a| &mut a.engines)}
            {checks("plan-recompute", "Recomputation", Choices::Recompute, |a| &a.recompute, |a| &mut a.recompute)}
            {move || match result.get() {
                None => view! { <p id="plan-message"></p> }.into_any(),
                Some(Err(e)) => view! { <p id="plan-message" class="error" role="alert">{e}</p> }.into_any(),
                Some(Ok((r, min_headroom))) => {
                    let current = settled.with(|c| c.as_ref().ok().and_then(|c| last_good.with(|e| e.as_ref().map(|e| current_rank(c, e, &r, min_headroom))))).unwrap_or_default();
                    let (col, desc) = sort.get();
                    let mut plans = r.plans.clone();
                    plans.sort_by(|a, b| {
                        let o = col.key(a).total_cmp(&col.key(b));
                        if desc { o.reverse() } else { o }
                    });
                    let gib = |b: u64| format!("{:.1}", b as f64 / GIB as f64);
                    view! {
                        <p id="plan-message">{format!("{} ({} candidates, {} timed, {} memory estimates).", r.message, r.candidates, r.timed, r.estimates)}</p>
                        <p id="plan-current">{current}</p>
                        <div class="plan-scroll">
                        <table id="plan-table" class="breakdown plans">
                            <thead><tr>
                                {header(Column::Rank, "#")}
                                <th scope="col">"Plan"</th>
                                {header(Column::Memory, "GiB/GPU")}
                                {header(Column::Headroom, "Headroom")}
                                {header(Column::Step, "Step (s)")}
                                {header(Column::Tokens, "Tokens/s/GPU")}
                                {header(Column::Mfu, "MFU")}
                                <th scope="col">"Limited by"</th>
                                <th scope="col"></th>
                            </tr></thead>
                            <tbody>
                                {plans.into_iter().map(|p| {
                                    let headroom = if p.headroom_bytes >= 0 { gib(p.headroom_bytes as u64) } else { format!("-{}", gib(p.headroom_bytes.unsigned_abs())) };
                                    let row = p.clone();
                                    view! {
                                        <tr data-rank=p.rank>
                                            <td class="num">{p.rank}</td>
                                            <td class="plan-summary">{p.summary.clone()}</td>
                                            <td class="num">{gib(p.total_bytes)}</td>
                                            <td class="num">{headroom}</td>
                                            <td class="num">{format!("{:.2}", p.step.seconds)}</td>
                                            <td class="num">{format!("{:.0}", p.step.tokens_per_second_per_gpu)}</td>
                                            <td class="num">{format!("{:.1} %", 100.0 * p.step.mfu)}</td>
                                            <td>{p.step.limiter.replace('_', " ")}</td>
                                            <td><button class="use-plan" on:click=move |_| load(&row)>"Use this plan"</button></td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                        </div>
                    }.into_any()
                }
            }}
        </details>
    }
}
