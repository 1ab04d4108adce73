//! Other tools' files, through the formats worker (`web/formats-worker.js`): importing a
//! DeepSpeed, HF TrainingArguments, accelerate, torchtune, Axolotl, torchtitan, Megatron-LM,
//! vLLM or SGLang file and exporting the plan as one. The worker runs the npm package's
//! `importConfig` / `exportConfig` (`calc_core::formats::import` / `export`), so the YAML,
//! TOML and command-line parsers stay out of the page's first load: the worker and its wasm
//! are fetched the first time a file is imported or exported, then kept for the page's
//! life. Nothing is computed here; the report types are calc-core's.

use calc_core::formats::{Format, Ignored, Mapping};
use serde_json::{Value, json};
use std::cell::RefCell;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// What the worker's `importConfig` answers (calc-core's `formats::Imported`), with the
/// config left as the JSON document the page edits: the page loads it through
/// `state::accept` like any outside document, and the first-load wasm carries no second
/// deserializer of the config for it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Imported {
    /// [`Format::name`] of the recognised format.
    pub format_name: String,
    /// The imported config document.
    pub config: Value,
    /// What was read, in file order.
    pub read: Vec<Mapping>,
    /// What was not read, and why.
    pub ignored: Vec<Ignored>,
    /// Our keys kept from the page.
    pub from_base: Vec<String>,
}

/// The worker script, relative to the page (sub-path deploys).
const WORKER_URL: &str = "formats-worker.js";

/// The running worker and the calls waiting for its answer (id -> resolve, reject).
struct Client {
    worker: web_sys::Worker,
    next: u32,
    pending: Vec<(u32, js_sys::Function, js_sys::Function)>,
    _on_message: Closure<dyn FnMut(web_sys::MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::Event)>,
}

thread_local! {
    static CLIENT: RefCell<Option<Client>> = const { RefCell::new(None) };
}

/// Rejects every waiting call with `why` and drops the worker, so that the next call starts
/// a new one (after a failed load, e.g. offline before the files were cached).
fn fail_all(why: &str) {
    let client = CLIENT.with(|c| c.borrow_mut().take());
    if let Some(c) = client {
        c.worker.terminate();
        for (_, _, reject) in c.pending {
            let _ = reject.call1(&JsValue::NULL, &JsValue::from_str(why));
        }
    }
}

fn start() -> Result<Client, String> {
    let worker = web_sys::Worker::new(WORKER_URL).map_err(|e| format!("{e:?}"))?;
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(|ev: web_sys::MessageEvent| {
            let data = ev.data();
            let get =
                |k: &str| js_sys::Reflect::get(&data, &JsValue::from_str(k)).unwrap_or_default();
            let Some(id) = get("id").as_f64() else { return };
            let entry = CLIENT.with(|c| {
                c.borrow_mut().as_mut().and_then(|c| {
                    let i = c.pending.iter().position(|p| p.0 == id as u32)?;
                    Some(c.pending.swap_remove(i))
                })
            });
            if let Some((_, resolve, reject)) = entry {
                let error = get("error");
                let _ = if error.is_undefined() || error.is_null() {
                    resolve.call1(&JsValue::NULL, &get("ok"))
                } else {
                    reject.call1(&JsValue::NULL, &error)
                };
            }
        });
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(|ev: web_sys::Event| {
        ev.prevent_default();
        fail_all(
            "the import and export module could not load (it is fetched on first use; \
             reload the page while online)",
        );
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    Ok(Client {
        worker,
        next: 0,
        pending: Vec::new(),
        _on_message: on_message,
        _on_error: on_error,
    })
}

/// Calls `call` (`importConfig`, `exportConfig`) in the worker with `args` (JSON values),
/// starting the worker on first use. Errors: the call's error message (the field errors
/// joined), or why the worker could not run.
async fn call(call: &str, args: &[Value]) -> Result<JsValue, String> {
    let js_args = js_sys::Array::new();
    for a in args {
        let text = serde_json::to_string(a).unwrap_or_default();
        js_args.push(&js_sys::JSON::parse(&text).map_err(|e| format!("{e:?}"))?);
    }
    let mut start_error = None;
    let promise = js_sys::Promise::new(&mut |resolve, reject| {
        let sent = CLIENT.with(|c| {
            let mut c = c.borrow_mut();
            if c.is_none() {
                *c = Some(start()?);
            }
            let client = c.as_mut().ok_or_else(|| "no worker".to_string())?;
            let id = client.next;
            client.next += 1;
            let msg = js_sys::Object::new();
            let set = |k: &str, v: &JsValue| js_sys::Reflect::set(&msg, &JsValue::from_str(k), v);
            let _ = set("id", &JsValue::from(id));
            let _ = set("call", &JsValue::from_str(call));
            let _ = set("args", &js_args);
            client.pending.push((id, resolve, reject));
            client
                .worker
                .post_message(&msg)
                .map_err(|e| format!("{e:?}"))
        });
        if let Err(e) = sent {
            start_error = Some(e);
        }
    });
    if let Some(e) = start_error {
        return Err(e);
    }
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(|e| e.as_string().unwrap_or_else(|| format!("{e:?}")))
}

/// Imports another tool's file over `base` (the page's document): calc-core's report of
/// what was read, ignored and taken from the base. Errors: why the file was not imported.
pub async fn import(text: String, base: &Value) -> Result<Imported, String> {
    let r = call(
        "importConfig",
        &[Value::String(text), json!({ "base": base })],
    )
    .await?;
    let text = js_sys::JSON::stringify(&r)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default();
    // through a Value, whose deserializer the page already has
    serde_json::from_str::<Value>(&text)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("unreadable answer from the worker: {e}"))
}

/// The document as `format`'s file text. Errors: why the format cannot express it.
pub async fn export(doc: &Value, format: Format) -> Result<String, String> {
    let r = call(
        "exportConfig",
        &[doc.clone(), Value::String(format.id().into())],
    )
    .await?;
    r.as_string()
        .ok_or_else(|| "unreadable answer from the worker".to_string())
}
