//! The scheduler's native tests: jobs run to the end through a workspace as the workers would,
//! supersede, in-flight limits, reuse, worker loss, cancel, pause and a failed task.

use super::*;
use crate::lab::pool::side::{Channel, Reach, SideSend, Ticket};
use crate::lab::test_support::small;

use crate::lab::kernel::tasks::Workspace;
use crate::lab::pool::{decode, encode, handle_request};

/// Runs every dispatched message in `workspace` (as the workers would) and feeds the
/// answers back, until nothing is left; returns every event.
fn drain(scheduler: &mut Scheduler, workspace: &mut Workspace) -> Vec<SchedulerEvent> {
    let mut events = Vec::new();
    loop {
        let messages = scheduler.dispatch();
        if messages.is_empty() {
            return events;
        }
        for message in messages {
            events.extend(answer(scheduler, workspace, &message));
        }
    }
}

fn answer(
    scheduler: &mut Scheduler,
    workspace: &mut Workspace,
    message: &Dispatch,
) -> Vec<SchedulerEvent> {
    let bytes = handle_request(workspace, &encode(&message.request).unwrap());
    match decode(&bytes).unwrap() {
        crate::lab::pool::WorkerResponse::Task(response) => {
            scheduler.answer(message.slot, response, 10.0)
        }
        other => panic!("{other:?}"),
    }
}

fn finished(events: &[SchedulerEvent], generation: u64) -> bool {
    events
        .iter()
        .any(|e| matches!(e, SchedulerEvent::Finished { generation: g, .. } if *g == generation))
}

fn ready(workers: usize) -> Scheduler {
    let mut scheduler = Scheduler::new(workers);
    for slot in 0..workers {
        scheduler.worker_ready(slot);
    }
    scheduler
}

#[test]
fn a_job_runs_to_the_end_with_every_part_announced_once_and_monotone_progress() {
    let mut scheduler = ready(2);
    let mut workspace = Workspace::new();
    let mut events = scheduler.submit(1, &small("32"), 0.0);
    events.extend(drain(&mut scheduler, &mut workspace));
    assert!(finished(&events, 1));
    let count = |f: fn(&SchedulerEvent) -> bool| events.iter().filter(|e| f(e)).count();
    assert_eq!(count(|e| matches!(e, SchedulerEvent::Scatter { .. })), 1);
    assert_eq!(count(|e| matches!(e, SchedulerEvent::Summaries { .. })), 1);
    assert_eq!(count(|e| matches!(e, SchedulerEvent::Curves { .. })), 1);
    let fractions: Vec<f64> = events
        .iter()
        .filter_map(|e| match e {
            SchedulerEvent::Progress { fraction, .. } => Some(*fraction),
            _ => None,
        })
        .collect();
    assert!(fractions.windows(2).all(|w| w[0] <= w[1]), "{fractions:?}");
    assert!((fractions.last().copied().unwrap_or(0.0) - 1.0).abs() < 1e-12);
    // The announced scatter is the one run_experiment computes.
    let expected = crate::lab::kernel::experiment::run_experiment(&small("32")).unwrap();
    let scatter = events.iter().find_map(|e| match e {
        SchedulerEvent::Scatter { scatter, .. } => Some(scatter.clone()),
        _ => None,
    });
    assert_eq!(scatter.as_deref(), Some(&expected.scatter));
}

#[test]
fn in_flight_is_limited_per_worker_and_only_ready_workers_get_tasks() {
    let mut scheduler = Scheduler::new(2);
    scheduler.submit(1, &small("32"), 0.0);
    assert!(scheduler.dispatch().is_empty(), "no worker is ready yet");
    scheduler.worker_ready(1);
    let sent = scheduler.dispatch();
    assert_eq!(sent.len(), IN_FLIGHT_PER_WORKER);
    assert!(sent.iter().all(|d| d.slot == Some(1)));
    assert!(scheduler.dispatch().is_empty(), "worker 1 is full");
}

#[test]
fn a_new_job_supersedes_the_queue_and_awaits_tasks_already_sent() {
    let mut scheduler = ready(1);
    let mut workspace = Workspace::new();
    scheduler.submit(1, &small("32"), 0.0);
    let in_flight = scheduler.dispatch();
    assert!(scheduler.has_queued());
    // The user moves on before any answer: the old queue is gone.
    let events = scheduler.submit(2, &small("48"), 1.0);
    assert!(events.is_empty());
    // Answers for the old job still land (the store keeps them) but announce nothing.
    for message in &in_flight {
        let events = answer(&mut scheduler, &mut workspace, message);
        assert!(
            events.iter().all(|e| match e {
                SchedulerEvent::Progress { generation, .. } => *generation == 2,
                _ => true,
            }),
            "{events:?}"
        );
    }
    let events = drain(&mut scheduler, &mut workspace);
    assert!(finished(&events, 2));
    assert!(!finished(&events, 1));
}

#[test]
fn going_back_reuses_every_stored_output() {
    let mut scheduler = ready(2);
    let mut workspace = Workspace::new();
    scheduler.submit(1, &small("32"), 0.0);
    drain(&mut scheduler, &mut workspace);
    scheduler.submit(2, &small("48"), 0.0);
    drain(&mut scheduler, &mut workspace);
    // Back to m = 32: everything is stored, the job finishes without a message.
    let events = scheduler.submit(3, &small("32"), 5.0);
    assert!(finished(&events, 3), "{events:?}");
    assert!(scheduler.dispatch().is_empty());
}

#[test]
fn a_lost_worker_hands_its_tasks_to_the_others_and_the_last_one_to_the_caller() {
    let mut scheduler = ready(2);
    let mut workspace = Workspace::new();
    scheduler.submit(1, &small("32"), 0.0);
    let first = scheduler.dispatch();
    assert!(first.iter().any(|d| d.slot == Some(0)));
    scheduler.worker_lost(0);
    // Worker 1 finishes everything, including worker 0's tasks.
    let mut events = Vec::new();
    for message in first.iter().filter(|d| d.slot == Some(1)) {
        events.extend(answer(&mut scheduler, &mut workspace, message));
    }
    events.extend(drain(&mut scheduler, &mut workspace));
    assert!(finished(&events, 1));
    // Both lost: the next job goes to the caller, one task at a time.
    scheduler.worker_lost(1);
    scheduler.submit(2, &small("64"), 0.0);
    let next = scheduler.dispatch();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].slot, None);
    assert_eq!(scheduler.workers(), 0);
    let mut events = answer(&mut scheduler, &mut workspace, &next[0]);
    events.extend(drain(&mut scheduler, &mut workspace));
    assert!(finished(&events, 2));
}

#[test]
fn cancel_forgets_the_job_and_the_messages_but_keeps_the_store() {
    let mut scheduler = ready(2);
    let mut workspace = Workspace::new();
    scheduler.submit(1, &small("32"), 0.0);
    drain(&mut scheduler, &mut workspace);
    scheduler.submit(2, &small("48"), 0.0);
    let sent = scheduler.dispatch();
    let ticket = scheduler.ticket(Channel::Probe);
    let probe = scheduler.queue_side(ticket, Reach::One);
    assert_eq!(scheduler.dispatch_side().send.len(), 1);
    let lost = scheduler.cancel(2);
    assert_eq!(lost, vec![probe]);
    assert!(!scheduler.has_queued());
    assert!(scheduler.dispatch().is_empty(), "no job after cancel");
    // A late answer from a terminated worker changes nothing.
    assert!(answer(&mut scheduler, &mut workspace, &sent[0]).is_empty());
    // The first job's outputs are still stored.
    assert!(finished(&scheduler.submit(3, &small("32"), 0.0), 3));
}

#[test]
fn pausing_keeps_the_workers_and_stores_what_was_in_flight() {
    let mut scheduler = ready(1);
    let mut workspace = Workspace::new();
    scheduler.submit(1, &small("32"), 0.0);
    let sent = scheduler.dispatch();
    scheduler.pause();
    assert!(scheduler.dispatch().is_empty());
    for message in &sent {
        assert!(answer(&mut scheduler, &mut workspace, message).is_empty());
    }
    assert_eq!(scheduler.workers(), 1);
    // What was in flight is stored: resuming the same configuration sends fewer tasks.
    scheduler.submit(2, &small("32"), 0.0);
    let mut total = 0;
    loop {
        let next = scheduler.dispatch();
        if next.is_empty() {
            break;
        }
        total += next.len();
        for message in &next {
            answer(&mut scheduler, &mut workspace, message);
        }
    }
    let full = crate::lab::kernel::tasks::plan(&small("32")).len();
    assert_eq!(total + sent.len(), full);
}

#[test]
fn a_failed_task_fails_its_job_once() {
    let mut scheduler = ready(1);
    scheduler.submit(7, &small("32"), 0.0);
    let sent = scheduler.dispatch();
    let events = scheduler.answer(
        sent[0].slot,
        TaskResponse {
            id: sent[0].id,
            output: Err("boom".into()),
        },
        1.0,
    );
    assert_eq!(
        events,
        vec![SchedulerEvent::Failed {
            generation: 7,
            message: "boom".into()
        }]
    );
    assert!(!scheduler.has_queued());
}

/// Queues one request and dispatches; returns what was sent.
fn send_one(scheduler: &mut Scheduler, ticket: Ticket, reach: Reach) -> (u64, Vec<SideSend>) {
    let request = scheduler.queue_side(ticket, reach);
    (request, scheduler.dispatch_side().send)
}

#[test]
fn the_newest_ticket_of_a_channel_wins_and_waits_for_the_older_requests_in_flight() {
    let mut scheduler = ready(2);
    let first = scheduler.ticket(Channel::DataView);
    let (_, a) = send_one(&mut scheduler, first, Reach::One);
    // The least busy worker takes the next one (a side request counts in flight).
    let (_, b) = send_one(&mut scheduler, first, Reach::One);
    assert_eq!((a.len(), b.len()), (1, 1));
    assert_ne!(a[0].slot, b[0].slot);
    // A newer ticket supersedes the first: it waits while the first's requests are out, and
    // another channel is not held up.
    let second = scheduler.ticket(Channel::DataView);
    assert!(!scheduler.is_current(first) && scheduler.is_current(second));
    let (waiting, sent) = send_one(&mut scheduler, second, Reach::One);
    assert!(sent.is_empty() && scheduler.has_queued_side());
    // A third ticket of the channel drops the second, unsent.
    let third = scheduler.ticket(Channel::DataView);
    scheduler.queue_side(third, Reach::One);
    let dispatch = scheduler.dispatch_side();
    assert!(dispatch.send.is_empty());
    assert_eq!(dispatch.dropped, vec![waiting]);
    let other = scheduler.ticket(Channel::Probe);
    let (_, sent) = send_one(&mut scheduler, other, Reach::One);
    assert_eq!(sent.len(), 1, "another channel goes at once");
    // The first's answers are not delivered; once both are in, the third may go.
    let answer = scheduler.side_request_answered(a[0].id).unwrap();
    assert_eq!((answer.ticket, answer.current), (first, false));
    assert!(scheduler.dispatch_side().send.is_empty());
    assert!(!scheduler.side_request_answered(b[0].id).unwrap().current);
    let sent = scheduler.dispatch_side().send;
    assert_eq!(sent.len(), 1);
    let answer = scheduler.side_request_answered(sent[0].id).unwrap();
    assert!(answer.current && answer.ticket == third && answer.last);
    // An answer nobody awaits (twice, or unknown) is nothing.
    assert_eq!(scheduler.side_request_answered(sent[0].id), None);
    assert_eq!(scheduler.side_request_answered(999), None);
}

#[test]
fn side_requests_count_in_flight_so_the_job_leaves_room_for_them() {
    let mut scheduler = ready(1);
    let ticket = scheduler.ticket(Channel::Export);
    for _ in 0..IN_FLIGHT_PER_WORKER {
        scheduler.queue_side(ticket, Reach::One);
    }
    let sent = scheduler.dispatch_side().send;
    let ids: Vec<u64> = sent.iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), IN_FLIGHT_PER_WORKER, "no limit by default");
    scheduler.submit(1, &small("32"), 0.0);
    assert!(
        scheduler.dispatch().is_empty(),
        "the worker is full of side requests"
    );
    scheduler.side_request_answered(ids[0]);
    assert_eq!(scheduler.dispatch().len(), 1);
    // A lost worker's side requests are reported, in order, and forgotten.
    let handles: Vec<u64> = sent[1..].iter().map(|s| s.request).collect();
    assert_eq!(scheduler.worker_lost(0), handles);
    assert_eq!(scheduler.side_request_answered(ids[1]), None);
}

#[test]
fn a_capped_pool_serves_the_queue_by_priority_one_request_per_worker() {
    let mut scheduler = ready(2);
    scheduler.set_side_limit(Some(1));
    let swap = scheduler.ticket(Channel::Swap);
    let jobs: Vec<u64> = (0..5)
        .map(|_| scheduler.queue_side(swap, Reach::One))
        .collect();
    let first = scheduler.dispatch_side().send;
    assert_eq!(
        first.iter().map(|s| s.request).collect::<Vec<_>>(),
        jobs[..2]
    );
    // The text typed meanwhile goes before the swap's remaining jobs, on the first free worker.
    let text = scheduler.ticket(Channel::Text);
    let (typed, sent) = send_one(&mut scheduler, text, Reach::Free);
    assert!(sent.is_empty(), "both workers are busy");
    scheduler.side_request_answered(first[1].id);
    let sent = scheduler.dispatch_side().send;
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (
            sent[0].request,
            sent[0].part.index,
            sent[0].part.slots.clone()
        ),
        (typed, 0, vec![first[1].slot.unwrap()])
    );
    assert_eq!(
        sent[0].part.request, typed,
        "the parts carry their request's handle"
    );
    // Both free: a text is split over both, each part knowing its peers.
    scheduler.side_request_answered(first[0].id);
    scheduler.side_request_answered(sent[0].id);
    let text = scheduler.ticket(Channel::Text);
    let (typed, parts) = send_one(&mut scheduler, text, Reach::Free);
    assert_eq!(parts.len(), 2);
    assert!(
        parts
            .iter()
            .all(|p| p.request == typed && p.part.slots == vec![0, 1])
    );
    assert_eq!(
        parts.iter().map(|p| p.part.index).collect::<Vec<_>>(),
        vec![0, 1]
    );
    let answer = scheduler.side_request_answered(parts[1].id).unwrap();
    assert!(!answer.last && answer.part == 1);
    let answer = scheduler.side_request_answered(parts[0].id).unwrap();
    assert!(answer.last && answer.part == 0 && answer.current);
    // The swap's jobs then go on, in their order.
    let sent = scheduler.dispatch_side().send;
    assert_eq!(
        sent.iter().map(|s| s.request).collect::<Vec<_>>(),
        jobs[2..4]
    );
}

#[test]
fn on_the_model_workers_the_swap_goes_after_the_heads_main_part_and_before_its_others() {
    use crate::lab::attention::AttentionPart;
    let mut scheduler = ready(1);
    scheduler.set_side_limit(Some(1));
    // The text's parts arrive first, then the swap plan; one worker, so the queue decides.
    let mut queued = Vec::new();
    for part in AttentionPart::ALL {
        let ticket = scheduler.ticket(Channel::Attention(part));
        queued.push((
            format!("{part:?}"),
            scheduler.queue_side(ticket, Reach::One),
        ));
    }
    let swap = scheduler.ticket(Channel::Swap);
    for job in 0..2 {
        queued.push((
            format!("swap {job}"),
            scheduler.queue_side(swap, Reach::One),
        ));
    }
    let mut order = Vec::new();
    loop {
        let sent = scheduler.dispatch_side().send;
        let Some(send) = sent.first() else { break };
        assert_eq!(sent.len(), 1, "one at a time on a capped worker");
        order.push(
            queued
                .iter()
                .find(|(_, h)| *h == send.request)
                .unwrap()
                .0
                .clone(),
        );
        scheduler.side_request_answered(send.id);
    }
    assert_eq!(
        order,
        [
            "Main",
            "Lengths",
            "swap 0",
            "swap 1",
            "BiasVariance",
            "Temperature",
            "Budget",
            "HeadsTable",
            "KernelVsAttention"
        ]
    );
}

#[test]
fn a_request_for_every_worker_waits_for_all_and_holds_the_queue_behind_it() {
    let mut scheduler = ready(2);
    scheduler.set_side_limit(Some(1));
    let swap = scheduler.ticket(Channel::Swap);
    let busy = scheduler.queue_side(swap, Reach::One);
    let training = scheduler.queue_side(swap, Reach::All);
    let after = scheduler.queue_side(swap, Reach::One);
    let sent = scheduler.dispatch_side().send;
    assert_eq!(
        sent.len(),
        1,
        "the training waits for the busy worker, and the job after it too"
    );
    assert_eq!(sent[0].request, busy);
    scheduler.side_request_answered(sent[0].id);
    let sent = scheduler.dispatch_side().send;
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|s| s.request == training));
    // A lost worker takes the whole request with it: the other part is forgotten too.
    assert_eq!(scheduler.worker_lost(1), vec![training]);
    assert_eq!(scheduler.side_request_answered(sent[0].id), None);
    // The job behind it now runs on the worker left.
    let sent = scheduler.dispatch_side().send;
    assert_eq!(
        (sent.len(), sent[0].request, sent[0].slot),
        (1, after, Some(0))
    );
}

#[test]
fn requests_made_before_any_worker_is_ready_wait_and_survive_a_restart() {
    let mut scheduler = Scheduler::new(2);
    let probe = scheduler.ticket(Channel::Probe);
    let request = scheduler.queue_side(probe, Reach::One);
    assert!(scheduler.dispatch_side().send.is_empty());
    scheduler.cancel(2);
    scheduler.worker_ready(1);
    let sent = scheduler.dispatch_side().send;
    assert_eq!(
        (sent.len(), sent[0].request, sent[0].slot),
        (1, request, Some(1))
    );
    // Without any worker, the caller runs each request itself.
    let mut local = Scheduler::new(0);
    let ticket = local.ticket(Channel::Text);
    let request = local.queue_side(ticket, Reach::Free);
    let sent = local.dispatch_side().send;
    assert_eq!((sent[0].request, sent[0].slot), (request, None));
}

/// The export that never finished (Firefox ESR, CI): a worker lost with export tasks in flight
/// failed them while the other worker's answers kept coming. Now each of the lost worker's
/// whole requests goes to the worker left, once, before what was queued since; a second loss
/// fails it, as does a loss with no worker left.
#[test]
fn a_lost_worker_s_side_requests_go_to_the_worker_left_once() {
    let mut scheduler = ready(2);
    let panel = scheduler.ticket(Channel::DataView);
    let (panel_request, panel_sent) = send_one(&mut scheduler, panel, Reach::One);
    let export = scheduler.ticket(Channel::Export);
    let handles: Vec<u64> = (0..6)
        .map(|_| scheduler.queue_side(export, Reach::One))
        .collect();
    let sent = scheduler.dispatch_side().send;
    assert_eq!(sent.len(), 6, "no side limit: every task goes at once");
    let on = |slot: usize, sends: &[SideSend]| -> Vec<SideSend> {
        sends
            .iter()
            .filter(|s| s.slot == Some(slot))
            .cloned()
            .collect()
    };
    let (first_0, first_1) = (on(0, &sent), on(1, &sent));
    assert!(!first_0.is_empty() && !first_1.is_empty());
    // Worker 0 answers one task, then dies with the rest (and perhaps the data panel).
    assert!(
        scheduler
            .side_request_answered(first_0[0].id)
            .unwrap()
            .current
    );
    let queued_since = scheduler.queue_side(export, Reach::One);
    assert_eq!(scheduler.worker_lost(0), Vec::<u64>::new(), "nothing lost");
    // Its answer to a lost id, if it ever came, is nothing.
    if first_0.len() > 1 {
        assert_eq!(scheduler.side_request_answered(first_0[1].id), None);
    }
    let resent = scheduler.dispatch_side().send;
    let mut expected: Vec<u64> = first_0[1..].iter().map(|s| s.request).collect();
    if panel_sent[0].slot == Some(0) {
        expected.insert(0, panel_request);
    }
    expected.push(queued_since);
    assert_eq!(
        resent.iter().map(|s| s.request).collect::<Vec<_>>(),
        expected,
        "the lost requests first, in order, then the one queued since"
    );
    assert!(resent.iter().all(|s| s.slot == Some(1)));
    // Every export task is answered exactly once, current.
    let mut answered = vec![first_0[0].request];
    for send in first_1.iter().chain(&resent) {
        let answer = scheduler.side_request_answered(send.id).unwrap();
        assert!(answer.current && answer.last);
        answered.push(send.request);
    }
    let mut every: Vec<u64> = handles.clone();
    every.extend([queued_since, panel_request]);
    every.sort_unstable();
    answered.sort_unstable();
    answered.dedup();
    assert_eq!(answered, every);

    // Sent again once: a second loss fails it; with no worker left, nothing is sent again.
    let mut scheduler = ready(3);
    let export = scheduler.ticket(Channel::Export);
    let handle = scheduler.queue_side(export, Reach::One);
    let first = scheduler.dispatch_side().send;
    let slot = first[0].slot.unwrap();
    assert!(scheduler.worker_lost(slot).is_empty());
    let second = scheduler.dispatch_side().send;
    assert_eq!(second.len(), 1);
    assert_eq!(scheduler.worker_lost(second[0].slot.unwrap()), vec![handle]);
    assert!(scheduler.dispatch_side().send.is_empty());
    let mut alone = ready(1);
    let export = alone.ticket(Channel::Export);
    let handle = alone.queue_side(export, Reach::One);
    alone.dispatch_side();
    assert_eq!(alone.worker_lost(0), vec![handle]);
    // A superseded ticket's request is not sent again.
    let mut scheduler = ready(2);
    let old = scheduler.ticket(Channel::Export);
    let handle = scheduler.queue_side(old, Reach::One);
    let sent = scheduler.dispatch_side().send;
    scheduler.ticket(Channel::Export);
    assert_eq!(scheduler.worker_lost(sent[0].slot.unwrap()), vec![handle]);
}
