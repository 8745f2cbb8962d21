//! The experiment cut into small independent tasks, so that Web Workers can share it, results
//! can stream back (the scatter first), a newer configuration can supersede work in flight, and
//! unchanged pieces can be reused.
//!
//! A [`Task`] is one heuristic on one piece of the experiment. Given only the configuration, a
//! [`Workspace`] recomputes it: datasets and ω come from their own seeded streams
//! ([`crate::numerics::rng`]), so the messages to a worker stay small and every worker gets the same
//! numbers. The workspace caches datasets and ω, so changing only m, the estimators or the
//! heuristic does not regenerate the data. [`TaskStore`] keeps finished outputs under a key
//! naming exactly the inputs they depend on ([`task_key`]): a new configuration runs only the
//! tasks whose inputs changed (changing one heuristic recomputes only that estimator, changing
//! m leaves the MSE-against-m curves alone), and assembles the page's results.
//!
//! The page, the worker and the command line all go through [`plan`], [`Workspace::run`] and
//! [`TaskStore`]; [`crate::lab::kernel::experiment::run_experiment`] is the same loop on one thread.
//!
//! The module's files follow the seams: [`plan`] (which tasks, their keys and work),
//! [`workspace`] (running a task), [`store`] (finished outputs and the page's results) and
//! [`task`] (what a task is and what it returns).
//! The worker messages that carry tasks are [`crate::lab::pool`]'s.

mod check;
mod plan;
mod store;
mod task;
mod workspace;

pub use crate::numerics::probe::ProbeRequest;
pub use check::{KernelCheck, check_kernel_against_f64};
pub use plan::{DatasetKey, TASK_WORK, TaskKey, generate_dataset, plan, task_key, task_work};
pub use store::TaskStore;
pub use task::{ErrorSums, Part, Piece, Task, TaskOutput};
pub use workspace::Workspace;
