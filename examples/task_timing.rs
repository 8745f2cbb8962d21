//! Times the default page's computation on one native thread (a development aid; the
//! benchmark of record is `make bench`, in the browser).
use std::time::Instant;

use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::lab::kernel::tasks::{Piece, Workspace, plan};

fn main() {
    let config = ExperimentConfig::default();
    for round in 0..3 {
        let mut workspace = Workspace::new();
        let started = Instant::now();
        let mut curve_ms = 0.0;
        for task in plan(&config) {
            let t = Instant::now();
            workspace.run(&config, &task).expect("task");
            if matches!(task.piece, Piece::Curve) {
                curve_ms += t.elapsed().as_secs_f64() * 1e3;
            }
        }
        let total = started.elapsed().as_secs_f64() * 1e3;
        println!("round {round}: {total:.1} ms in all, curves {curve_ms:.1} ms");
    }
}
