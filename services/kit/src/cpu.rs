//! CPU-heavy requests (perft, PGN import, and later engine analysis) run here, never on the
//! async workers: a semaphore bounds how many run at once, a bounded number may wait for a turn
//! (more are refused with `RESOURCE_EXHAUSTED`), and each runs on the blocking pool with a stop
//! flag that is raised the moment its request goes away — the client cancelled, or the request's
//! deadline passed (the serving stack then drops the request's future). The work checks the flag
//! and returns early, so a cancelled request stops costing CPU at once.

use crate::error::ApiError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::sync::Semaphore;

/// The bounded pool of CPU-heavy work of one process.
#[derive(Clone, Debug)]
pub struct CpuPool {
    permits: Arc<Semaphore>,
    waiting: Arc<AtomicUsize>,
    max_waiting: usize,
}

/// Raises the flag when dropped: when the request's future (or response stream) that holds
/// it ends, however it ends. Services that run their own CPU work hold one per request too.
#[derive(Debug)]
pub struct RaiseOnDrop(pub Arc<AtomicBool>);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Counts a waiter while it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl CpuPool {
    /// At most `max_jobs` jobs at once (at least one), and at most `max_waiting` requests waiting
    /// for a turn.
    pub fn new(max_jobs: usize, max_waiting: usize) -> CpuPool {
        CpuPool {
            permits: Arc::new(Semaphore::new(max_jobs.max(1))),
            waiting: Arc::new(AtomicUsize::new(0)),
            max_waiting,
        }
    }

    /// Runs `job` on the blocking pool once a turn is free, and returns its result. The job gets
    /// the stop flag, raised when the caller's future is dropped (cancelled, or past its
    /// deadline); it should return early when the flag is up. Refused with
    /// `RESOURCE_EXHAUSTED` when every turn is taken and the queue is full.
    pub async fn run<T, F>(&self, job: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&AtomicBool) -> T + Send + 'static,
    {
        let permit = match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max_waiting {
                    self.waiting.fetch_sub(1, Ordering::Relaxed);
                    return Err(ApiError::exhausted(
                        "",
                        "the server is busy with other heavy requests; retry later",
                    ));
                }
                let _waiting = Waiting(&self.waiting);
                Arc::clone(&self.permits)
                    .acquire_owned()
                    .await
                    .map_err(|_| ApiError::Unavailable("the server is shutting down".into()))?
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let _raise = RaiseOnDrop(Arc::clone(&stop));
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job(&stop)
        });
        task.await
            .map_err(|e| ApiError::Unavailable(format!("the job failed: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_dropped_request_raises_the_stop_flag() {
        let pool = CpuPool::new(1, 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let request = {
            let pool = pool.clone();
            tokio::spawn(async move {
                pool.run(move |stop| {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    tx.send(()).unwrap();
                })
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        request.abort();
        let stopped = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(5)));
        assert!(stopped.await.unwrap().is_ok(), "the job saw the flag");
        // The turn is free again.
        assert_eq!(pool.run(|_| 7).await.unwrap(), 7);
    }

    #[tokio::test]
    async fn a_full_queue_is_refused() {
        let pool = CpuPool::new(1, 1);
        let gate = Arc::new(AtomicBool::new(false));
        let running = {
            let (pool, gate) = (pool.clone(), Arc::clone(&gate));
            tokio::spawn(async move {
                pool.run(move |_| {
                    while !gate.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                })
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let queued = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.run(|_| 1).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let refused = pool.run(|_| 2).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        gate.store(true, Ordering::Relaxed);
        running.await.unwrap().unwrap();
        assert_eq!(queued.await.unwrap().unwrap(), 1);
    }
}
