//! `arbiter-e2e`: the system test on the compose topology (see the library's documentation).
//!
//! ```text
//! arbiter-e2e [--root DIR] [--job-nodes N]
//! ```
//! `--root` is the repository (default: the current directory); `--job-nodes` the node limit of
//! each position of the batch job. Exit status 0 when every check held.

use arbiter_e2e::day::{DayConfig, run};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    arbiter_kit::tls::install_crypto_provider();
    let mut cfg = DayConfig::new(PathBuf::from("."));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value) {
            ("--root", Some(v)) => cfg.root = PathBuf::from(v),
            ("--job-nodes", Some(v)) if v.parse::<u64>().is_ok_and(|n| n > 0) => {
                cfg.job_nodes = v.parse().unwrap_or(cfg.job_nodes);
            }
            (other, _) => {
                eprintln!("usage: arbiter-e2e [--root DIR] [--job-nodes N] (not {other:?})");
                return ExitCode::from(2);
            }
        }
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("e2e: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cfg)) {
        Ok(summary) => {
            println!("e2e: PASSED: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("e2e: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
