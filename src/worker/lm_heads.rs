//! The attention view's workers on the language model's heads (feature `text-model`; the
//! `model-worker` build started as `…_loader.js?lm&heads`): served like the model workers (the
//! pool protocol, [`WorkerResponse::Setup`] while the GGUF file comes and is checked), they
//! answer the parts of the attention view whose source is `lm`, on the heads of the text the
//! request names, computed here by one exact forward and kept for the next part.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use web_sys::MessageEvent;

use super::lm::{fetch_with_progress, now};
use super::{Reply, message_bytes, serve};
use crate::lab::attention::run_attention_on;
use crate::lab::config::HeadSource;
use crate::lab::models::protocol::ModelSetup;
use crate::lab::models::smollm::{LM_URL, lm_heads};
use crate::lab::pool::{TaskResponse, WorkerRequest, WorkerResponse, decode};
use crate::numerics::llama::{LlamaModel, LmHeads};

/// The model once loaded, and the last text's heads.
#[derive(Default)]
struct LmHeadsWorker {
    model: Option<LlamaModel>,
    heads: Option<(String, Arc<LmHeads>)>,
}

impl LmHeadsWorker {
    /// The heads of `text`: the kept ones, or one exact forward's.
    fn heads_of(&mut self, text: &str) -> Result<Arc<LmHeads>, String> {
        if let Some((kept, heads)) = &self.heads
            && kept == text
        {
            return Ok(heads.clone());
        }
        let model = self
            .model
            .as_ref()
            .ok_or("the language model is not loaded yet")?;
        let heads = Arc::new(lm_heads(model, text).map_err(|e| e.to_string())?);
        self.heads = Some((text.to_string(), heads.clone()));
        Ok(heads)
    }
}

/// The worker: listens, then fetches and checks the model, saying how far it got.
pub fn start_lm_heads() {
    let Some((state, reply)) = serve(LmHeadsWorker::default(), on_message) else {
        return;
    };
    wasm_bindgen_futures::spawn_local(async move {
        let progress = |loaded, total| {
            reply.send(&WorkerResponse::Setup(ModelSetup::Progress {
                loaded,
                total,
            }));
        };
        let setup = match fetch_with_progress(LM_URL, &progress).await {
            Ok((bytes, digest, last_byte_at)) => {
                let size = bytes.len() as u64;
                match LlamaModel::load_hashed(bytes, digest) {
                    Ok(model) => {
                        let parameters = model.config.parameter_count();
                        state.borrow_mut().model = Some(model);
                        ModelSetup::Loaded {
                            bytes: size,
                            parameters,
                            load_ms: now() - last_byte_at,
                        }
                    }
                    Err(error) => ModelSetup::Failed(error.to_string()),
                }
            }
            Err(message) => ModelSetup::Failed(message),
        };
        reply.send(&WorkerResponse::Setup(setup));
    });
}

fn on_message(state: &Rc<RefCell<LmHeadsWorker>>, event: MessageEvent, reply: &Reply) {
    let response = match decode::<WorkerRequest>(&message_bytes(&event)) {
        Ok(WorkerRequest::Attention { id, request }) => {
            let output = if request.config.attention.source == HeadSource::Lm {
                let heads = state.borrow_mut().heads_of(&request.config.attention.text);
                heads.and_then(|heads| {
                    run_attention_on(&request, Some(&*heads)).map_err(|e| e.to_string())
                })
            } else {
                Err("the language model's workers compute its own heads only".to_string())
            };
            WorkerResponse::Attention { id, output }
        }
        // The pool connects the workers that hold a model; these need no peers.
        Ok(WorkerRequest::Connect { .. }) => return,
        Ok(other) => WorkerResponse::Task(TaskResponse {
            id: 0,
            output: Err(format!(
                "the language model's heads worker does not answer {}",
                other.kind()
            )),
        }),
        Err(error) => WorkerResponse::Task(TaskResponse {
            id: 0,
            output: Err(error),
        }),
    };
    reply.send(&response);
}
