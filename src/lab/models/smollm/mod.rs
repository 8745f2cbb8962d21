//! The causal language model on the reader's text (SmolLM2-135M-Instruct, a Llama decoder,
//! `numerics::llama`): how surprised it is by each token under exact attention and with the
//! lab's estimators swapped into some of its layers ([`report`], feature `text-model`), and what
//! the page and its worker say ([`protocol`]), and how the page shares a text's work between
//! its two workers ([`text_run`]), one draw over both at once ([`split`]); and how it continues the text, exactly and with linear
//! layers decoded as recurrent networks ([`generate`]).

#[cfg(feature = "text-model")]
pub mod generate;
pub mod protocol;
#[cfg(feature = "text-model")]
pub mod report;
#[cfg(feature = "text-model")]
pub mod split;
#[cfg(feature = "text-model")]
pub mod sweep;
pub mod text_run;
#[cfg(feature = "text-model")]
pub mod transfer;

#[cfg(feature = "text-model")]
pub use generate::{Generation, continue_text};
pub use protocol::{
    Continuation, ContinuationEnd, ContinuationEvent, ContinuationStart, Decoding, GeneratedToken,
    LM_FILE_BYTES, LM_FILE_FROM_PAGE, LM_FILE_MESSAGE, LM_HEADS_WORKER, LM_MAX_GENERATED,
    LM_MAX_TOKENS, LM_URL, LmFromWorker, LmJob, LmLayerBar, LmLayerReport, LmReport, LmSwapDraw,
    LmSwapReport, LmToWorker, NextToken, Share, SplitPart, TOP_TOKENS, TrainedLayer, TrainingEvent,
    TransferReport, TransferVerdict,
};
#[cfg(feature = "text-model")]
pub use report::{
    LM_HEAD_TOKENS, lm_heads, lm_report, lm_tokens, per_layer_report, report_of_run, score,
    swap_draw, swap_of,
};
#[cfg(feature = "text-model")]
pub use sweep::{LayerSweep, chart_swap};
