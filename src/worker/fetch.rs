//! A model file fetched in the worker chunk by chunk (so the page's thread never holds or
//! copies it), each chunk handed on as it arrives (the encoder's loader reads it, the language
//! model's worker hashes and keeps it), with progress about every megabyte: the one download
//! loop of both models' workers.

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::DedicatedWorkerGlobalScope;

/// What a streamed file gave: its bytes' count and when its last byte came (the worker's clock,
/// ms: the fetch's resource timing when the browser had it before the loop took the last chunk,
/// so that a reader slower than the download counts its own backlog).
pub(super) struct Streamed {
    pub loaded: u64,
    pub last_byte_at: f64,
}

/// Fetches `url` (the `file`, as a sentence names it: "the model file"), handing each chunk to
/// `on_chunk` and telling `progress` (bytes so far, of the total when the server says) every
/// megabyte and at the end. A file that is not served or whose download breaks off is a
/// sentence that says how to get it.
pub(super) async fn stream_file(
    url: &str,
    file: &str,
    on_chunk: &mut dyn FnMut(&js_sys::Uint8Array),
    progress: &dyn Fn(u64, Option<u64>),
) -> Result<Streamed, String> {
    let scope: DedicatedWorkerGlobalScope = js_sys::global()
        .dyn_into()
        .map_err(|_| "not in a worker".to_string())?;
    let absent = || {
        format!(
            "{file} {url} is not served: run scripts/fetch-model.sh (or ./scripts/serve.sh, \
             which runs it) and reload"
        )
    };
    let response: web_sys::Response = JsFuture::from(scope.fetch_with_str(url))
        .await
        .map_err(|_| absent())?
        .dyn_into()
        .map_err(|_| absent())?;
    if !response.ok() {
        return Err(format!("{} (HTTP status {})", absent(), response.status()));
    }
    let total = response
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.parse::<u64>().ok());
    let body = response.body().ok_or_else(absent)?;
    let reader: web_sys::ReadableStreamDefaultReader = body
        .get_reader()
        .dyn_into()
        .map_err(|_| format!("cannot read {file}"))?;
    let clock = || scope.performance().map_or(0.0, |p| p.now());
    let (mut loaded, mut reported) = (0u64, 0u64);
    let mut last_chunk_at = clock();
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|_| format!("{file}'s download broke off"))?;
        let done = js_sys::Reflect::get(&chunk, &"done".into())
            .map(|d| d.is_truthy())
            .unwrap_or(true);
        if done {
            break;
        }
        if let Ok(value) = js_sys::Reflect::get(&chunk, &"value".into()) {
            let array = js_sys::Uint8Array::new(&value);
            last_chunk_at = clock();
            loaded += u64::from(array.length());
            on_chunk(&array);
        }
        if loaded - reported >= 1 << 20 {
            reported = loaded;
            progress(loaded, total);
        }
    }
    progress(loaded, total);
    let network_end = scope
        .performance()
        .and_then(|p| {
            p.get_entries_by_name(&response.url())
                .pop()
                .dyn_into::<js_sys::Object>()
                .ok()
        })
        .and_then(|entry| js_sys::Reflect::get(&entry, &"responseEnd".into()).ok())
        .and_then(|end| end.as_f64())
        .filter(|&end| end > 0.0);
    Ok(Streamed {
        loaded,
        last_byte_at: network_end.map_or(last_chunk_at, |end| end.min(last_chunk_at)),
    })
}
