//! The real model on the reader's text (all-MiniLM-L6-v2, an encoder): the file as it streams
//! in ([`loader`]), the text's tokens, embedding and heads ([`text_model`]), its forward split
//! over the model workers ([`split`], [`board`]), approximate attention swapped into it
//! ([`swap`], [`swap_plan`], [`learned_map`]) and what the page and the model workers say
//! ([`protocol`]). A second model gets a folder of its own beside these files.

pub mod board;
#[cfg(feature = "text-model")]
pub mod learned_map;
#[cfg(feature = "text-model")]
pub mod loader;
pub mod protocol;
#[cfg(feature = "text-model")]
pub mod split;
#[cfg(feature = "text-model")]
pub mod swap;
pub mod swap_plan;
#[cfg(feature = "text-model")]
pub mod text_model;
