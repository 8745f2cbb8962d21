//! The language model worker's share of a forward split over both of the page's workers
//! (`lab::models::smollm::split`): the exact score of a new text, then each draw of its swap,
//! each worker over half of the text's rows, their shares exchanged per layer over the
//! workers' port or, when the page is cross-origin isolated, their shared boards.

use std::cell::RefCell;
use std::rc::Rc;

use super::{LmWorker, now, send};
use crate::lab::models::board::BoardLayout;
use crate::lab::models::smollm::split::{LmPeerMessage, SplitForward, lm_share_bytes};
use crate::lab::models::smollm::{
    LmFromWorker, LmJob, LmReport, LmSwapDraw, SplitPart, TOP_TOKENS, report_of_run, swap_draw,
};
use crate::lab::pool::{PartOf, decode, encode};
use crate::numerics::llama::LlamaModel;
use crate::worker::Reply;

/// The peers' view of a split part: the page's two workers, the first answering.
fn part_of(part: SplitPart) -> PartOf {
    PartOf {
        index: part.index,
        slots: SplitPart::SLOTS.to_vec(),
        request: part.request,
    }
}

/// Computes this worker's part of draw `draw` of job `id` and answers it: part 0 with the
/// draw (or why there is none), the others that they helped (part 0 meets the same failure,
/// the same text and method or the lost shares, and says it).
pub(super) fn on_split_draw(
    state: Rc<RefCell<LmWorker>>,
    reply: Reply,
    (id, job, draw): (u64, LmJob, usize),
    part: SplitPart,
) {
    wasm_bindgen_futures::spawn_local(async move {
        let helped = LmFromWorker::Helped {
            id,
            draw: Some(draw),
        };
        let message = match split_draw(&state, &job, draw, part).await {
            Ok(Some(answer)) => LmFromWorker::SwapDrawn {
                id,
                draw,
                result: Ok(answer),
            },
            Err(error) if part.index == 0 => LmFromWorker::SwapDrawn {
                id,
                draw,
                result: Err(error),
            },
            Ok(None) | Err(_) => helped,
        };
        send(&reply, &message);
    });
}

/// Computes this worker's part of job `id`'s exact score and answers it, as
/// [`on_split_draw`] does.
pub(super) fn on_split_score(
    state: Rc<RefCell<LmWorker>>,
    reply: Reply,
    (id, job): (u64, LmJob),
    part: SplitPart,
) {
    wasm_bindgen_futures::spawn_local(async move {
        let message = match split_score(&state, &job, part).await {
            Ok(Some(report)) => LmFromWorker::Scored {
                id,
                report: Ok(Box::new(report)),
            },
            Err(error) if part.index == 0 => LmFromWorker::Scored {
                id,
                report: Err(error),
            },
            Ok(None) | Err(_) => LmFromWorker::Helped { id, draw: None },
        };
        send(&reply, &message);
    });
}

/// This worker's part of a draw split over both workers (`lab::models::smollm::split`): part
/// 0's answer is the draw, the others' `None`. A short text is drawn by part 0 alone.
async fn split_draw(
    state: &Rc<RefCell<LmWorker>>,
    job: &LmJob,
    draw: usize,
    part: SplitPart,
) -> Result<Option<LmSwapDraw>, String> {
    let part = &part_of(part);
    let model = loaded(state)?;
    let start = now();
    let count = part.slots.len();
    let split =
        SplitForward::draw(&model, job, draw, (part.index, count)).map_err(|e| e.to_string())?;
    if !split.worth_splitting() {
        if part.index > 0 {
            return Ok(None);
        }
        let worker = state.borrow();
        let alone = swap_draw(&model, job, draw, now, worker.exact.as_ref());
        return alone.map(Some).map_err(|e| e.to_string());
    }
    let Some((split, mine, others)) = run_split(state, split, part).await? else {
        return Ok(None);
    };
    let answer = split.answer(mine, others, now() - start);
    answer.map(Some).map_err(|e| e.to_string())
}

/// This worker's part of a text's exact score split over both workers: part 0 keeps the run
/// and answers the report, the others `None`. A short text is scored by part 0 alone.
async fn split_score(
    state: &Rc<RefCell<LmWorker>>,
    job: &LmJob,
    part: SplitPart,
) -> Result<Option<LmReport>, String> {
    let part = &part_of(part);
    let model = loaded(state)?;
    let start = now();
    let count = part.slots.len();
    let split = SplitForward::exact(&model, job, (part.index, count)).map_err(|e| e.to_string())?;
    let exact = if !split.worth_splitting() {
        if part.index > 0 {
            return Ok(None);
        }
        model
            .exact_run(split.ids(), TOP_TOKENS)
            .map_err(|e| e.to_string())?
    } else {
        let Some((split, mine, others)) = run_split(state, split, part).await? else {
            return Ok(None);
        };
        split.exact_run(mine, others).map_err(|e| e.to_string())?
    };
    let report = report_of_run(&model, job, &exact, (now() - start, now));
    state.borrow_mut().exact = Some(exact);
    report.map(Some).map_err(|e| e.to_string())
}

/// The model, once loaded (shared with the split forward that holds it across its exchanges).
fn loaded(state: &Rc<RefCell<LmWorker>>) -> Result<Rc<LlamaModel>, String> {
    state
        .borrow()
        .model
        .clone()
        .ok_or_else(|| "the language model is not loaded yet".to_string())
}

/// Runs `split` in lock step with the other parts: its shares go over the shared boards when
/// the page is cross-origin isolated and they fit, otherwise over the port. Part 0 gets back
/// the split with its own last message and the others'; the others `None`.
async fn run_split<'m>(
    state: &Rc<RefCell<LmWorker>>,
    mut split: SplitForward<'m>,
    part: &PartOf,
) -> Result<Option<(SplitForward<'m>, LmPeerMessage, Vec<LmPeerMessage>)>, String> {
    let count = part.slots.len();
    let tokens = split.tokens();
    // Every part reads the same text and boards' state, so all take the same path.
    let shared = state.borrow().peers.share_boards(part)
        && BoardLayout::default().fits(lm_share_bytes(split.config(), tokens, count));
    let exchange = |step: u32, message: LmPeerMessage| {
        let state = state.clone();
        let part = part.clone();
        async move {
            let bytes = encode(&message)?;
            let shares =
                state
                    .borrow()
                    .peers
                    .exchange(part.request, step, &part, &bytes, shared, &now)?;
            decoded(shares.await?)
        }
    };
    let message = split.start_message(state.borrow().exact.as_ref());
    let others = exchange(0, message).await?;
    split.begin(others, state.borrow().exact.as_ref());
    let mut step = 0;
    while split.layers_left() {
        step += 1;
        let mine = split.project();
        let others = exchange(step, mine).await?;
        split.finish_layer(others);
        if let Some(mine) = split.heads_message() {
            step += 1;
            let others = exchange(step, mine).await?;
            split.finish_heads(others);
        }
    }
    // The last step goes one way: the other parts post their rows' scores, part 0 reads
    // them and answers; the page then knows both workers free (see `TextRun`).
    let mine = split.scores_message();
    let last = step + 1;
    if part.index > 0 {
        let bytes = encode(&mine)?;
        let posted = state
            .borrow()
            .peers
            .post_share(part.request, last, part, &bytes, shared);
        return posted.map(|()| None);
    }
    let shares = state
        .borrow()
        .peers
        .read_shares(part.request, last, part, shared, &now)?;
    let others = decoded(shares.await?)?;
    Ok(Some((split, mine, others)))
}

/// The other parts' messages from their shares' bytes.
fn decoded(shares: Vec<(usize, Vec<u8>)>) -> Result<Vec<LmPeerMessage>, String> {
    shares
        .iter()
        .map(|(_, body)| decode::<LmPeerMessage>(body))
        .collect()
}
