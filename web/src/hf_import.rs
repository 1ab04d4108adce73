//! "Hugging Face model": a `config.json` pasted, uploaded (both offline), or fetched by model
//! id from huggingface.co directly in the browser. The config is parsed by `calc_core`; a
//! valid one becomes the model at once, an invalid one leaves the last valid model in place.

use calc_core::units::fmt_count;
use calc_core::{FieldError, ModelArch};
use leptos::prelude::*;
use serde_json::{Map, Value};
use wasm_bindgen::JsCast;

/// Reads the file chosen in a file input's `change` event, then calls `done` with the file's
/// name and its text (`None` when the browser could not read it). Nothing happens when no
/// file is chosen.
pub fn read_chosen_file(
    ev: &leptos::ev::Event,
    done: impl FnOnce(String, Option<String>) + 'static,
) {
    let input: Option<web_sys::HtmlInputElement> = ev.target().and_then(|t| t.dyn_into().ok());
    let Some(file) = input.and_then(|i| i.files()).and_then(|f| f.get(0)) else {
        return;
    };
    wasm_bindgen_futures::spawn_local(async move {
        let text = wasm_bindgen_futures::JsFuture::from(file.text())
            .await
            .ok()
            .and_then(|t| t.as_string());
        done(file.name(), text);
    });
}

/// Where model configs are fetched from.
pub const HUB: &str = "https://huggingface.co";

/// One line describing a parsed architecture.
pub fn summary(a: &ModelArch) -> String {
    let c = a.param_counts();
    let mut s = format!(
        "{}: {} layers, hidden {}, {} heads / {} KV heads, vocab {}, {} parameters",
        a.model_type,
        a.num_hidden_layers,
        a.hidden_size,
        a.num_attention_heads,
        a.num_key_value_heads,
        a.vocab_size,
        fmt_count(c.total)
    );
    if let Some(m) = &a.moe {
        s.push_str(&format!(
            ", {} experts (top-{}), {} active per token",
            m.num_experts,
            m.num_experts_per_tok,
            fmt_count(c.active_per_token)
        ));
    }
    if let Some(v) = &a.vision {
        s.push_str(&format!(
            ", vision tower {} ({} parameters)",
            v.model_type,
            fmt_count(c.vision)
        ));
    }
    s
}

/// Why a model id could not be used, for the user.
fn id_error(id: &str) -> Option<String> {
    let ok = !id.is_empty()
        && id.split('/').count() <= 2
        && id.split('/').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
        && !id.contains("..");
    (!ok).then(|| format!("{id:?} is not a model id; write it as on the Hub, e.g. Qwen/Qwen2.5-7B"))
}

fn parse_errors(errs: &[FieldError]) -> String {
    errs.iter()
        .take(3)
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Fetches `<HUB>/<id>/resolve/main/config.json`. Errors are messages for the user.
async fn fetch_config(id: &str) -> Result<String, String> {
    use crate::net::{FetchError, fetch_text};
    fetch_text(&format!("{HUB}/{id}/resolve/main/config.json"))
        .await
        .map_err(|e| match e {
            FetchError::Unreachable => "could not reach huggingface.co (offline, or blocked by the network). \
                 Download the model's config.json and paste or upload it here instead"
                .to_string(),
            FetchError::Status(s @ (401 | 403)) => format!(
                "{id} is gated or private (HTTP {s}): accept its license on huggingface.co, download config.json \
                 from the model's \"Files\" tab, and paste or upload it here"
            ),
            FetchError::Status(404) => {
                format!("{id} was not found on huggingface.co (HTTP 404): check the model id")
            }
            FetchError::Status(s) => format!("huggingface.co answered HTTP {s} for {id}"),
            FetchError::Unreadable => "could not read the response".to_string(),
        })
}

/// What a partial `config.json` left to the family's defaults (empty for a complete file):
/// the user sees which sizes were not in the file and the values used for them.
fn defaults_note(arch: &calc_core::ModelArch, defaulted: &[(String, u64)]) -> String {
    if defaulted.is_empty() {
        return String::new();
    }
    let list: Vec<String> = defaulted
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    format!(
        ". Not in the file, so the {} configuration's defaults were used (as transformers does): {}",
        arch.model_type,
        list.join(", ")
    )
}

/// The import panel. `doc` is the config document; a valid config replaces its `model`.
#[component]
pub fn HfImport(doc: RwSignal<Value>) -> impl IntoView {
    let status = RwSignal::new(String::new());
    let error = RwSignal::new(String::new());
    let model_id = RwSignal::new(String::new());
    let busy = RwSignal::new(false);

    // Parses config.json text; a valid config becomes the model (keeping the name given).
    let use_text = move |text: &str, origin: &str| {
        let parsed: Result<Value, String> =
            serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"));
        let result = parsed.and_then(|v| {
            calc_core::parse_hf_config_noting_defaults(&v)
                .map(|(a, defaulted)| (v, a, defaulted))
                .map_err(|e| parse_errors(&e))
        });
        match result {
            Ok((v, arch, defaulted)) => {
                let mut model = Map::new();
                model.insert("hf_config".into(), v);
                if !origin.is_empty() {
                    model.insert("name".into(), Value::String(origin.to_string()));
                }
                doc.update(|d| crate::doc::set(d, "model", Some(Value::Object(model))));
                error.set(String::new());
                status.set(summary(&arch) + &defaults_note(&arch, &defaulted));
            }
            Err(e) => {
                error.set(format!("{e} (the previous model is kept)"));
                status.set(String::new());
            }
        }
    };

    let on_paste = move |ev| {
        let text = event_target_value(&ev);
        if !text.trim().is_empty() {
            use_text(&text, "");
        }
    };
    let on_file = move |ev: leptos::ev::Event| {
        read_chosen_file(&ev, move |name, text| match text {
            Some(text) => use_text(&text, ""),
            None => error.set(format!("could not read {name}")),
        });
    };
    let on_fetch = move |_| {
        let id = model_id.get_untracked().trim().to_string();
        if let Some(e) = id_error(&id) {
            error.set(e);
            return;
        }
        busy.set(true);
        status.set(format!("fetching {id} ..."));
        wasm_bindgen_futures::spawn_local(async move {
            match fetch_config(&id).await {
                Ok(text) => use_text(&text, &id),
                Err(e) => {
                    error.set(format!("{e} (the previous model is kept)"));
                    status.set(String::new());
                }
            }
            busy.set(false);
        });
    };

    view! {
        <details class="hf-import" id="hf-import">
            <summary>"Hugging Face model (config.json)"</summary>
            <div class="field">
                <label for="hf-model-id">"Model id"</label>
                <div class="row">
                    <input id="hf-model-id" type="text" placeholder="e.g. Qwen/Qwen2.5-7B" autocomplete="off"
                        aria-describedby="hf-error"
                        on:input=move |ev| model_id.set(event_target_value(&ev))
                        on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Enter" { on_fetch(()) } />
                    <button id="hf-fetch" type="button" on:click=move |_| on_fetch(()) disabled=move || busy.get()>"Fetch"</button>
                </div>
                <small class="help">"Fetched from huggingface.co by your browser; gated models need the file pasted instead."</small>
            </div>
            <div class="field">
                <label for="hf-config-text">"Paste config.json"</label>
                <textarea id="hf-config-text" rows="4" spellcheck="false" placeholder="{ \"model_type\": \"llama\", ... }"
                    aria-describedby="hf-error" on:input=on_paste></textarea>
            </div>
            <div class="field">
                <label for="hf-config-file">"or upload it"</label>
                <input id="hf-config-file" type="file" accept=".json,application/json" on:change=on_file />
            </div>
            <p id="hf-status" class="model-info" class:hidden=move || status.with(|s| s.is_empty())>{move || status.get()}</p>
            <p id="hf-error" class="field-error" role="alert" class:hidden=move || error.with(|s| s.is_empty())>{move || error.get()}</p>
        </details>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids() {
        assert!(id_error("Qwen/Qwen2.5-7B").is_none());
        assert!(id_error("gpt2").is_none());
        assert!(id_error("").is_some());
        assert!(id_error("a/b/c").is_some());
        assert!(id_error("../etc").is_some());
        assert!(id_error("x y").is_some());
    }

    #[test]
    fn a_partial_config_names_the_defaults_used() {
        // LlamaConfig's defaults (transformers 5.23): hidden 4096, 32 layers, 32 heads,
        // intermediate 11008, vocab 32000, 2048 positions; only vocab_size and
        // max_position_embeddings are given here
        let v = serde_json::json!({"model_type": "llama", "vocab_size": 128256,
            "max_position_embeddings": 8192});
        let (a, d) = calc_core::parse_hf_config_noting_defaults(&v).unwrap();
        assert_eq!(a.hidden_size, 4096);
        assert_eq!(
            defaults_note(&a, &d),
            ". Not in the file, so the llama configuration's defaults were used (as transformers does): \
             hidden_size = 4096, num_hidden_layers = 32, num_attention_heads = 32, intermediate_size = 11008"
        );
        // a complete file: no note
        let full = serde_json::json!({"model_type": "llama", "vocab_size": 128256, "hidden_size": 2048,
            "num_hidden_layers": 16, "num_attention_heads": 32, "intermediate_size": 8192,
            "max_position_embeddings": 8192});
        let (a, d) = calc_core::parse_hf_config_noting_defaults(&full).unwrap();
        assert_eq!(defaults_note(&a, &d), "");
    }

    #[test]
    fn summary_names_the_family_and_count() {
        let a = calc_core::parse_hf_config(&serde_json::json!({
            "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
            "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": true
        }))
        .unwrap();
        assert_eq!(a.param_counts().total, 494_032_768);
        assert!(
            summary(&a).starts_with("qwen2: 24 layers, hidden 896, 14 heads / 2 KV heads"),
            "{}",
            summary(&a)
        );
    }
}
