//! The real model on the reader's text (all-MiniLM-L6-v2, an encoder): the file as it streams
//! in ([`loader`]), the text's tokens, embedding and heads ([`text_model`]), its forward split
//! over the model workers ([`split`], [`board`]), approximate attention swapped into it
//! ([`swap`], [`swap_plan`], [`learned_map`]; the answers that do not depend on the text
//! shipped with the lab, [`shipped`]) and what the page and the model workers say
//! ([`protocol`]); what replaces softmax in one head of either model ([`head_swap`]). The causal
//! language model (SmolLM2-135M) has its folder, [`smollm`].

pub mod board;
#[cfg(feature = "text-model")]
pub mod head_swap;
#[cfg(feature = "text-model")]
pub mod learned_map;
#[cfg(feature = "text-model")]
pub mod loader;
pub mod protocol;
#[cfg(feature = "text-model")]
pub mod shipped;
pub mod smollm;
#[cfg(feature = "text-model")]
pub mod split;
#[cfg(feature = "text-model")]
pub mod swap;
pub mod swap_plan;
#[cfg(feature = "text-model")]
pub mod text_model;
