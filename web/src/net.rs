//! GET of a text file from the browser (`fetch`), for the two places the page downloads:
//! a Hugging Face `config.json` and the reference suite. Callers word the errors.

use wasm_bindgen::JsCast;

/// Why a GET gave no text.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchError {
    /// No response: offline, blocked, or refused by CORS.
    Unreachable,
    /// An HTTP status outside 200-299.
    Status(u16),
    /// A response whose body could not be read as text.
    Unreadable,
}

/// Fetches `url` (absolute, or relative to the page) and reads the body as text.
pub async fn fetch_text(url: &str) -> Result<String, FetchError> {
    let win = web_sys::window().ok_or(FetchError::Unreachable)?;
    let resp = wasm_bindgen_futures::JsFuture::from(win.fetch_with_str(url))
        .await
        .map_err(|_| FetchError::Unreachable)?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|_| FetchError::Unreadable)?;
    if !resp.ok() {
        return Err(FetchError::Status(resp.status()));
    }
    let text = resp.text().map_err(|_| FetchError::Unreadable)?;
    wasm_bindgen_futures::JsFuture::from(text)
        .await
        .ok()
        .and_then(|t| t.as_string())
        .ok_or(FetchError::Unreadable)
}
