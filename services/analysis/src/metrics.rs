//! The analysis service's and the batch workers' domain metrics (every name and meaning:
//! docs/operations.md). Label values are fixed names.

use std::time::Duration;

/// A search ended: `kind` is `live` or `batch`; `nodes` it visited.
pub(crate) fn searched(kind: &'static str, nodes: u64) {
    metrics::counter!("arbiter_analysis_searches_total", "kind" => kind).increment(1);
    metrics::counter!("arbiter_analysis_nodes_total", "kind" => kind).increment(nodes);
}

/// A new batch job was queued (not a retry answered with the stored one).
pub(crate) fn job_submitted(games: usize) {
    metrics::counter!("arbiter_analysis_jobs_total", "state" => "submitted").increment(1);
    metrics::counter!("arbiter_analysis_games_total", "outcome" => "queued")
        .increment(games as u64);
}

/// A game of a batch job left a worker: `analysed` (its result recorded), `failed` (left
/// pending, to be claimed again), `dead_letter` (given up on) or `dropped` (its job was
/// cancelled or expired).
pub(crate) fn game(outcome: &'static str) {
    metrics::counter!("arbiter_analysis_games_total", "outcome" => outcome).increment(1);
}

/// Lists a worker process's counters at 0 from its start (when metrics are on by then).
pub(crate) fn declare_worker() {
    metrics::counter!("arbiter_analysis_claims_total").increment(0);
    for outcome in ["analysed", "failed", "dead_letter", "dropped"] {
        metrics::counter!("arbiter_analysis_games_total", "outcome" => outcome).increment(0);
    }
}

/// A worker claimed an item another consumer had left pending past the claim timeout.
pub(crate) fn claimed() {
    metrics::counter!("arbiter_analysis_claims_total").increment(1);
}

/// The engine pool's gauges, set under its lock.
pub(crate) fn pool_load(threads: usize, running: usize, waiting: usize) {
    #[allow(clippy::cast_precision_loss)]
    {
        metrics::gauge!("arbiter_analysis_threads").set(threads as f64);
        metrics::gauge!("arbiter_analysis_threads_busy").set(running as f64);
        metrics::gauge!("arbiter_analysis_queue_length").set(waiting as f64);
    }
}

/// Lists the pool's counters at 0 from the start (when metrics are on by then), so that a rate
/// over them exists before the first refusal.
pub(crate) fn declare_pool() {
    metrics::counter!("arbiter_analysis_queue_refused_total").increment(0);
}

/// A job waited `waited` in the engine pool's queue before a thread took it.
pub(crate) fn queue_wait(waited: Duration) {
    metrics::histogram!("arbiter_analysis_queue_wait_seconds").record(waited.as_secs_f64());
}

/// The engine pool refused a job (its queue, or the client's share, was full).
pub(crate) fn queue_refused() {
    metrics::counter!("arbiter_analysis_queue_refused_total").increment(1);
}

/// The work stream as the worker group sees it, sampled.
pub(crate) fn stream(backlog: Option<usize>, pending: usize, dead_letters: usize, jobs: usize) {
    #[allow(clippy::cast_precision_loss)]
    {
        if let Some(backlog) = backlog {
            metrics::gauge!("arbiter_analysis_stream_backlog").set(backlog as f64);
        }
        metrics::gauge!("arbiter_analysis_stream_pending").set(pending as f64);
        metrics::gauge!("arbiter_analysis_dead_letters").set(dead_letters as f64);
        metrics::gauge!("arbiter_analysis_jobs_stored").set(jobs as f64);
    }
}

/// External engine processes restarted so far (after a crash or a hang), per engine: the
/// pools count them, and this copies their totals.
pub(crate) fn engine_restarts(engine: &str, total: u64) {
    metrics::counter!("arbiter_analysis_engine_restarts_total", "engine" => engine.to_owned())
        .absolute(total);
}

/// A remote worker was granted a lease on a game (`AcquireWork`).
pub(crate) fn lease_granted() {
    metrics::counter!("arbiter_analysis_work_leases_total", "outcome" => "granted").increment(1);
}

/// Remote workers' leases ended without a result and their games went back to the queue:
/// `expired` (past their time) or `returned` (their worker's key was refused).
pub(crate) fn leases_ended(outcome: &'static str, n: u64) {
    metrics::counter!("arbiter_analysis_work_leases_total", "outcome" => outcome).increment(n);
}

/// A remote worker's submission: `accepted` (its result recorded), `duplicate` (a retry, or a
/// game recorded already), `rejected` (it failed the check) or `stale` (its lease was not
/// held any more).
pub(crate) fn work_submitted(outcome: &'static str) {
    metrics::counter!("arbiter_analysis_work_submissions_total", "outcome" => outcome).increment(1);
}

/// A remote worker's key was refused for work (its results failed the check).
pub(crate) fn work_refused() {
    metrics::counter!("arbiter_analysis_work_refusals_total").increment(1);
}
