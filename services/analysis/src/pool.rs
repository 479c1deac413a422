//! The search pool: a fixed set of engine threads of the service's own (searches never run on
//! the async workers), fed from a bounded queue in which clients take turns.
//!
//! - Each client (named by the caller: the `x-client-id` metadata, else the peer's address) has
//!   its own FIFO; a free thread takes the next job from the client after the one it served
//!   last, so a client with a hundred requests waiting delays another's single request by at
//!   most one search per thread.
//! - The queue is bounded twice: in all ([`PoolConfig::max_queue`]) and per client
//!   ([`PoolConfig::max_queue_per_client`]). A job over either bound is refused at once with
//!   `RESOURCE_EXHAUSTED`; the caller never waits for room.
//! - Every job carries its request's stop flag. A job whose request went away while it waited
//!   is dropped unrun (and stops counting against the bounds at once: the submitter purges
//!   such jobs before refusing anyone). A running one sees the flag through the engine.
//! - [`SearchPool::shut_down`] raises the flag of every running job (each returns its result
//!   so far at once) and answers every waiting one `UNAVAILABLE`; the threads then exit.

use crate::config::PoolConfig;
use crate::error::AnalysisError;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// What a job is given when its turn comes, or instead of one.
#[derive(Debug)]
pub enum Turn<'a> {
    /// Run now; return early when the flag is up.
    Run(&'a AtomicBool),
    /// The job will never run (the pool shut down): answer the request with this error.
    Refused(AnalysisError),
}

/// A job: called once, with its turn.
pub type Job = Box<dyn FnOnce(Turn<'_>) + Send + 'static>;

struct Queued {
    stop: Arc<AtomicBool>,
    job: Job,
    /// When it was queued (for `arbiter_analysis_queue_wait_seconds`).
    at: std::time::Instant,
}

#[derive(Default)]
struct State {
    /// Waiting jobs per client; only clients with waiting jobs have an entry.
    queues: HashMap<String, VecDeque<Queued>>,
    /// Clients with waiting jobs, in serving order.
    order: VecDeque<String>,
    /// Waiting jobs, all clients together.
    waiting: usize,
    /// The stop flags of running jobs.
    running: Vec<Arc<AtomicBool>>,
    /// Set once: no job is taken or accepted any more.
    closed: bool,
}

impl State {
    /// Drops the jobs whose request went away.
    fn purge(&mut self) {
        let mut dropped = 0;
        for queue in self.queues.values_mut() {
            let before = queue.len();
            queue.retain(|q| !q.stop.load(Ordering::Relaxed));
            dropped += before - queue.len();
        }
        self.queues.retain(|_, q| !q.is_empty());
        let queues = &self.queues;
        self.order.retain(|c| queues.contains_key(c));
        self.waiting -= dropped;
    }

    /// The next job in round-robin order.
    fn next(&mut self) -> Option<Queued> {
        while let Some(client) = self.order.pop_front() {
            let Some(queue) = self.queues.get_mut(&client) else {
                continue;
            };
            let job = queue.pop_front();
            if queue.is_empty() {
                self.queues.remove(&client);
            } else {
                self.order.push_back(client);
            }
            if let Some(job) = job {
                self.waiting -= 1;
                if job.stop.load(Ordering::Relaxed) {
                    continue;
                }
                return Some(job);
            }
        }
        None
    }
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
    config: PoolConfig,
}

impl Shared {
    /// Sets the pool's gauges from `s` (under the lock, so that the last value set is the
    /// state's).
    fn gauges(&self, s: &State) {
        crate::metrics::pool_load(self.config.threads.max(1), s.running.len(), s.waiting);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A job never runs under the lock, so a poisoned lock can only come from a bug in this
        // module's bookkeeping; the state is still consistent enough to go on.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The service's engine threads and their fair, bounded queue. Cloning shares the pool.
#[derive(Clone)]
pub struct SearchPool {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SearchPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.shared.lock();
        f.debug_struct("SearchPool")
            .field("config", &self.shared.config)
            .field("waiting", &s.waiting)
            .field("running", &s.running.len())
            .finish()
    }
}

/// Where the pool stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Load {
    /// Jobs running.
    pub running: usize,
    /// Jobs waiting.
    pub waiting: usize,
}

impl SearchPool {
    /// Starts `config.threads` engine threads (at least one).
    pub fn start(config: PoolConfig) -> std::io::Result<SearchPool> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            ready: Condvar::new(),
            config,
        });
        shared.gauges(&shared.lock());
        crate::metrics::declare_pool();
        for i in 0..shared.config.threads.max(1) {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("analysis-{i}"))
                .spawn(move || work(&shared))?;
        }
        Ok(SearchPool { shared })
    }

    /// Queues `job` for `client`. It runs on an engine thread when its turn comes, unless
    /// `stop` is raised first (the request went away), in which case it is dropped unrun.
    /// Refused at once with `RESOURCE_EXHAUSTED` when the queue, or this client's share of it,
    /// is full, and with `UNAVAILABLE` once the pool is shut down.
    pub fn submit(
        &self,
        client: &str,
        stop: Arc<AtomicBool>,
        job: Job,
    ) -> Result<(), AnalysisError> {
        let config = &self.shared.config;
        let mut s = self.shared.lock();
        if s.closed {
            return Err(shutting_down());
        }
        let idle = config.threads.max(1).saturating_sub(s.running.len());
        let full = |s: &State| {
            let mine = s.queues.get(client).map_or(0, VecDeque::len);
            if s.waiting >= config.max_queue + idle {
                Some("the analysis queue is full; retry later")
            } else if mine >= config.max_queue_per_client + idle {
                Some("this client has its maximum of analyses waiting; retry later")
            } else {
                None
            }
        };
        if full(&s).is_some() {
            s.purge();
        }
        if let Some(why) = full(&s) {
            crate::metrics::queue_refused();
            return Err(AnalysisError::exhausted("", why));
        }
        let queue = s.queues.entry(client.to_owned()).or_default();
        if queue.is_empty() {
            s.order.push_back(client.to_owned());
        }
        s.queues
            .get_mut(client)
            .expect("just inserted")
            .push_back(Queued {
                stop,
                job,
                at: std::time::Instant::now(),
            });
        s.waiting += 1;
        self.shared.gauges(&s);
        drop(s);
        self.shared.ready.notify_one();
        Ok(())
    }

    /// Jobs running and waiting now.
    pub fn load(&self) -> Load {
        let s = self.shared.lock();
        Load {
            running: s.running.len(),
            waiting: s.waiting,
        }
    }

    /// Stops the pool: running jobs are told to stop (they finish with what they have),
    /// waiting ones are refused with `UNAVAILABLE`, new ones too. The threads exit once idle.
    pub fn shut_down(&self) {
        let refused: Vec<Queued> = {
            let mut s = self.shared.lock();
            s.closed = true;
            for stop in &s.running {
                stop.store(true, Ordering::Relaxed);
            }
            s.order.clear();
            s.waiting = 0;
            s.queues.drain().flat_map(|(_, q)| q).collect()
        };
        self.shared.ready.notify_all();
        for q in refused {
            (q.job)(Turn::Refused(shutting_down()));
        }
    }
}

fn shutting_down() -> AnalysisError {
    AnalysisError::Unavailable("the server is shutting down".into())
}

/// An engine thread: takes jobs in turn until the pool shuts down.
fn work(shared: &Shared) {
    loop {
        let job = {
            let mut s = shared.lock();
            loop {
                if s.closed {
                    return;
                }
                if let Some(job) = s.next() {
                    s.running.push(Arc::clone(&job.stop));
                    shared.gauges(&s);
                    crate::metrics::queue_wait(job.at.elapsed());
                    break job;
                }
                s = shared.ready.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        };
        let Queued { stop, job, .. } = job;
        // A panicking job must not take the thread (and its share of the pool) with it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(Turn::Run(&stop))));
        let mut s = shared.lock();
        if let Some(i) = s.running.iter().position(|r| Arc::ptr_eq(r, &stop)) {
            s.running.swap_remove(i);
        }
        shared.gauges(&s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn pool(threads: usize, max_queue: usize, per_client: usize) -> SearchPool {
        SearchPool::start(PoolConfig {
            threads,
            max_queue,
            max_queue_per_client: per_client,
        })
        .unwrap()
    }

    /// A job that reports `tag` when it starts, then waits for `gate` (or its stop flag).
    fn blocker(
        tag: &'static str,
        started: mpsc::Sender<&'static str>,
        gate: Arc<AtomicBool>,
    ) -> Job {
        Box::new(move |turn| {
            if let Turn::Run(stop) = turn {
                started.send(tag).unwrap();
                while !gate.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    }

    fn wait_until(mut f: impl FnMut() -> bool) {
        for _ in 0..5000 {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("condition never held");
    }

    #[test]
    fn clients_take_turns() {
        let pool = pool(1, 16, 16);
        let (tx, rx) = mpsc::channel();
        let gate = Arc::new(AtomicBool::new(false));
        let flag = || Arc::new(AtomicBool::new(false));
        pool.submit(
            "busy",
            flag(),
            blocker("first", tx.clone(), Arc::clone(&gate)),
        )
        .unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), "first");
        // While the thread is busy: three jobs of one client, then one of another.
        let order = Arc::new(Mutex::new(Vec::new()));
        let record = |tag: &'static str| -> Job {
            let order = Arc::clone(&order);
            Box::new(move |turn| {
                if matches!(turn, Turn::Run(_)) {
                    order.lock().unwrap().push(tag);
                }
            })
        };
        for tag in ["a1", "a2", "a3"] {
            pool.submit("a", flag(), record(tag)).unwrap();
        }
        pool.submit("b", flag(), record("b1")).unwrap();
        gate.store(true, Ordering::Relaxed);
        wait_until(|| order.lock().unwrap().len() == 4);
        assert_eq!(*order.lock().unwrap(), ["a1", "b1", "a2", "a3"]);
    }

    #[test]
    fn the_queue_is_bounded_in_all_and_per_client() {
        let pool = pool(1, 3, 2);
        let (tx, rx) = mpsc::channel();
        let gate = Arc::new(AtomicBool::new(false));
        let flag = || Arc::new(AtomicBool::new(false));
        let noop = || -> Job { Box::new(|_| {}) };
        pool.submit("a", flag(), blocker("run", tx, Arc::clone(&gate)))
            .unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        pool.submit("a", flag(), noop()).unwrap();
        pool.submit("a", flag(), noop()).unwrap();
        let e = pool.submit("a", flag(), noop()).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(e.to_string().contains("this client"), "{e}");
        pool.submit("b", flag(), noop()).unwrap();
        let e = pool.submit("c", flag(), noop()).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(e.to_string().contains("queue is full"), "{e}");
        assert_eq!(
            pool.load(),
            Load {
                running: 1,
                waiting: 3
            }
        );
        gate.store(true, Ordering::Relaxed);
        wait_until(|| {
            pool.load()
                == Load {
                    running: 0,
                    waiting: 0,
                }
        });
    }

    #[test]
    fn a_job_whose_request_went_away_never_runs_and_frees_its_place() {
        let pool = pool(1, 1, 1);
        let (tx, rx) = mpsc::channel();
        let gate = Arc::new(AtomicBool::new(false));
        pool.submit(
            "a",
            Arc::new(AtomicBool::new(false)),
            blocker("run", tx.clone(), Arc::clone(&gate)),
        )
        .unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let gone = Arc::new(AtomicBool::new(false));
        pool.submit(
            "b",
            Arc::clone(&gone),
            blocker("gone", tx.clone(), Arc::clone(&gate)),
        )
        .unwrap();
        gone.store(true, Ordering::Relaxed);
        // The queue was full, but the waiting job's request went away: there is room again.
        pool.submit(
            "c",
            Arc::new(AtomicBool::new(false)),
            blocker("kept", tx, Arc::clone(&gate)),
        )
        .unwrap();
        gate.store(true, Ordering::Relaxed);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), "kept");
        wait_until(|| {
            pool.load()
                == Load {
                    running: 0,
                    waiting: 0,
                }
        });
        assert!(rx.try_recv().is_err(), "the abandoned job did not run");
    }

    #[test]
    fn shutting_down_stops_the_running_and_refuses_the_waiting() {
        let pool = pool(1, 4, 4);
        let (tx, rx) = mpsc::channel();
        let never = Arc::new(AtomicBool::new(false));
        pool.submit(
            "a",
            Arc::new(AtomicBool::new(false)),
            blocker("run", tx, Arc::clone(&never)),
        )
        .unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let (refused_tx, refused_rx) = mpsc::channel();
        pool.submit(
            "b",
            Arc::new(AtomicBool::new(false)),
            Box::new(move |turn| {
                if let Turn::Refused(e) = turn {
                    refused_tx.send(e.code()).unwrap();
                }
            }),
        )
        .unwrap();
        pool.shut_down();
        assert_eq!(
            refused_rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            tonic::Code::Unavailable
        );
        // The running job saw its stop flag (the gate never opens).
        wait_until(|| pool.load().running == 0);
        let e = pool
            .submit("c", Arc::new(AtomicBool::new(false)), Box::new(|_| {}))
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unavailable);
    }

    #[test]
    fn thousands_of_client_names_cannot_grow_the_queue() {
        let pool = pool(1, 16, 2);
        let (tx, rx) = mpsc::channel();
        let gate = Arc::new(AtomicBool::new(false));
        pool.submit(
            "busy",
            Arc::new(AtomicBool::new(false)),
            blocker("run", tx, Arc::clone(&gate)),
        )
        .unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let mut accepted = 0;
        for i in 0..5000 {
            let name = format!("client-{i}");
            if pool
                .submit(&name, Arc::new(AtomicBool::new(false)), Box::new(|_| {}))
                .is_ok()
            {
                accepted += 1;
            }
        }
        assert_eq!(accepted, 16);
        gate.store(true, Ordering::Relaxed);
        wait_until(|| {
            pool.load()
                == Load {
                    running: 0,
                    waiting: 0,
                }
        });
        // Every per-client queue is gone with its last job.
        let s = pool.shared.lock();
        assert!(s.queues.is_empty() && s.order.is_empty());
    }

    #[test]
    fn a_panicking_job_keeps_its_thread() {
        let pool = pool(1, 4, 4);
        pool.submit(
            "a",
            Arc::new(AtomicBool::new(false)),
            Box::new(|_| panic!("a bug in a job")),
        )
        .unwrap();
        let (tx, rx) = mpsc::channel();
        pool.submit(
            "a",
            Arc::new(AtomicBool::new(false)),
            Box::new(move |turn| {
                if matches!(turn, Turn::Run(_)) {
                    tx.send(()).unwrap();
                }
            }),
        )
        .unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
    }
}
