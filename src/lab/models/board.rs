//! The layout of a model worker's shared board: where a text's parts
//! split over the model workers ([`crate::lab::models::split`]) post their per-layer shares when the
//! page is cross-origin isolated, so that a share reaches the others in microseconds instead of
//! a trip through each worker's event loop (a `MessagePort` message waits until the receiver
//! yields, about a millisecond each way, seven times per text).
//!
//! Each model worker owns one board (a `SharedArrayBuffer`) that it writes and every other model
//! worker reads; it sends it to each peer once, over their `MessagePort`, when they connect. A
//! board holds two message buffers, used in turn by step (`step % 2`): a part writes step
//! `s + 2` only after it has every other part's step `s + 1`, which each sent only after reading
//! step `s`, so no reader is still on the buffer it overwrites. A buffer's stamp
//! ([`BoardLayout::stamp`]: the request and the step) is written last, so a reader that sees the
//! stamp it waits for sees the whole message. This module is the arithmetic of it (offsets,
//! stamps, sizes, which texts are worth splitting), without a browser; `worker::peers` holds the
//! memory and the atomics.

use crate::lab::config::{HEAD_DIM, HEAD_LAYERS, HEADS_PER_LAYER, MODEL_MAX_TOKENS};

/// The fewest tokens worth splitting over workers whose shares travel over message ports:
/// below it, one worker runs the whole text (a forward of a few dozen tokens takes less than
/// seven trips through the workers' event loops cost). Over shared boards the bar is lower
/// ([`worth_splitting`]).
pub const SPLIT_MIN_TOKENS: usize = 64;

/// The fewest tokens worth splitting over workers that share boards: a share's trip costs
/// microseconds, so only a text whose halves are shorter than the start-up of the parts is
/// left whole.
pub const SHARED_SPLIT_MIN_TOKENS: usize = 16;

/// Whether a text of `tokens` is worth splitting over the workers: from
/// [`SHARED_SPLIT_MIN_TOKENS`] when the parts share boards, from [`SPLIT_MIN_TOKENS`] when its
/// shares travel over message ports.
pub fn worth_splitting(tokens: usize, shared: bool) -> bool {
    tokens
        >= if shared {
            SHARED_SPLIT_MIN_TOKENS
        } else {
            SPLIT_MIN_TOKENS
        }
}

/// Int32 slots before the buffers: two stamps, two lengths, and the count of peers that hold
/// the board (its owner uses the board once every peer it is connected to has it).
const HEADER_INTS: usize = 8;
const STAMPS: usize = 0;
const LENGTHS: usize = 2;
/// The header's Int32 slot counting the peers that received the board.
pub const HOLDERS: u32 = 4;

/// Where things are in a board of a given capacity (bytes per message buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoardLayout {
    /// Bytes one message may take.
    pub capacity: usize,
}

impl Default for BoardLayout {
    /// A board for the largest message of a text of [`MODEL_MAX_TOKENS`] split in two.
    fn default() -> Self {
        Self {
            capacity: largest_message_bytes(MODEL_MAX_TOKENS, 2),
        }
    }
}

impl BoardLayout {
    /// The board's size in bytes: the header, then the two buffers.
    pub fn bytes(&self) -> usize {
        self.buffer_offset(0) + 2 * self.capacity
    }

    /// The byte offset of buffer `0` or `1` (step parity).
    pub fn buffer_offset(&self, buffer: usize) -> usize {
        HEADER_INTS * 4 + buffer * self.capacity
    }

    /// The Int32 slot of the stamp of the buffer `step` uses.
    pub fn stamp_slot(step: u32) -> u32 {
        (STAMPS + (step % 2) as usize) as u32
    }

    /// The Int32 slot of the message length of the buffer `step` uses.
    pub fn length_slot(step: u32) -> u32 {
        (LENGTHS + (step % 2) as usize) as u32
    }

    /// The buffer (`0` or `1`) that `step` uses.
    pub fn buffer(step: u32) -> usize {
        (step % 2) as usize
    }

    /// The stamp of `step` of the split request `request`: never 0 (a fresh board's), and
    /// distinct for the steps of one request and for consecutive requests (the request's low
    /// 26 bits, then the step's 5).
    pub fn stamp(request: u64, step: u32) -> i32 {
        let low = (request & 0x03FF_FFFF) as i32;
        (low << 5) | ((step % 31) as i32 + 1)
    }

    /// Whether a message of `bytes` fits a buffer.
    pub fn fits(&self, bytes: usize) -> bool {
        bytes <= self.capacity
    }
}

/// An upper bound on the bytes of the largest message a part sends when a text of `tokens`
/// is split in `parts`: its output (its rows' hidden states and every layer's queries, `f32`,
/// the column sums in `f64`) or, after the text's answer, its states (per layer its rows'
/// attention outputs and hidden states), with postcard's framing: what the board's buffers
/// must hold.
pub fn largest_message_bytes(tokens: usize, parts: usize) -> usize {
    let hidden = HEADS_PER_LAYER * HEAD_DIM;
    let rows = tokens.div_ceil(parts.max(1));
    // Each float run carries a length prefix; the column sums are up to 9 bytes each.
    let output = rows * hidden * (1 + HEAD_LAYERS) * 4 + hidden * 9 + (HEAD_LAYERS + 4) * 10;
    let states = rows * hidden * 2 * HEAD_LAYERS * 4 + (2 * HEAD_LAYERS + 4) * 10;
    output.max(states) + 64
}

/// Whether a text of `tokens` split in `parts` can go over boards of `layout` (every part
/// computes the same answer from the same numbers, so all take the same path).
pub fn board_holds(layout: &BoardLayout, tokens: usize, parts: usize) -> bool {
    parts >= 2 && layout.fits(largest_message_bytes(tokens, parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_differ_by_step_and_request_and_are_never_zero() {
        let mut seen = std::collections::HashSet::new();
        for request in [0u64, 1, 2, 77, (1 << 26) - 1] {
            for step in 0..=HEAD_LAYERS as u32 {
                let stamp = BoardLayout::stamp(request, step);
                assert_ne!(stamp, 0);
                assert!(seen.insert(stamp), "request {request} step {step}");
            }
        }
    }

    #[test]
    fn consecutive_steps_use_the_two_buffers_in_turn() {
        let layout = BoardLayout { capacity: 100 };
        assert_eq!(layout.buffer_offset(BoardLayout::buffer(0)), 32);
        assert_eq!(layout.buffer_offset(BoardLayout::buffer(1)), 132);
        assert_eq!(layout.buffer_offset(BoardLayout::buffer(2)), 32);
        assert_eq!(layout.bytes(), 232);
        assert_ne!(BoardLayout::stamp_slot(3), BoardLayout::stamp_slot(4));
        assert_ne!(BoardLayout::length_slot(3), BoardLayout::length_slot(4));
        assert!(BoardLayout::stamp_slot(7) < HOLDERS && BoardLayout::length_slot(7) < HOLDERS);
    }

    /// The default board takes the longest text split in two and more, not a text left whole.
    #[test]
    fn the_default_board_holds_every_split_text() {
        let layout = BoardLayout::default();
        for parts in 2..=8 {
            assert!(board_holds(&layout, MODEL_MAX_TOKENS, parts), "{parts}");
        }
        assert!(!board_holds(&layout, MODEL_MAX_TOKENS, 1));
        assert!(!board_holds(&layout, MODEL_MAX_TOKENS + 64, 2));
        // 256 rows × 384 × 12 floats (per layer the attention outputs and the hidden states):
        // about 4.72 MB per buffer.
        assert!((4_718_000..4_720_000).contains(&layout.capacity));
    }

    #[test]
    fn shared_boards_split_shorter_texts() {
        assert!(worth_splitting(32, true) && !worth_splitting(32, false));
        assert!(worth_splitting(64, false));
        assert!(!worth_splitting(SHARED_SPLIT_MIN_TOKENS - 1, true));
    }
}
