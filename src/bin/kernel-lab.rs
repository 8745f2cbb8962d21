//! `kernel-lab`: the command line of the softmax kernel lab (see `kernel-lab --help` and the
//! README's "Command line"). All the work is in [`softmax_kernel_lab::cli`]; this only passes
//! the arguments in and the text or the one-line error out.
//!
//! Exit status: 0 on success, 2 on a rejected argument, 1 if standard output cannot be written.

use std::process::ExitCode;

#[cfg(estimator_prose)]
use softmax_kernel_lab::cli;

#[cfg(estimator_prose)]
fn main() -> ExitCode {
    use std::io::Write;

    // `args_os` and a lossy conversion: an argument that is not UTF-8 becomes an ordinary
    // parse error naming it, instead of the panic of `std::env::args`.
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    match cli::run(&args) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    // `eprintln!` would panic if stderr is closed too; ignore that failure.
                    let _ = writeln!(std::io::stderr(), "error: output: {error}");
                    ExitCode::from(1)
                }
            }
        }
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// A build without the estimators' prose (the workers' WebAssembly build, which `cargo test`
/// compiles this binary in too: `build.rs`'s `estimator_prose`) has no command line.
#[cfg(not(estimator_prose))]
fn main() -> ExitCode {
    ExitCode::from(2)
}
