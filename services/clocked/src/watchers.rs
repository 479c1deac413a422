//! The watchers of this process, by game (a match, a clock): each game being watched has one
//! notification, which every change to it (made here, or announced by another replica through
//! Redis, [`listen_for_changes`]) wakes. A
//! watcher then reads the new events by sequence number, so a wake-up that carries nothing, or
//! two that merge, lose nothing. Watchers are bounded in total and per match.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Limits on watchers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WatchLimits {
    /// Watch streams open at once in this process.
    pub total: usize,
    /// Watch streams open at once on one match.
    pub per_match: usize,
}

impl Default for WatchLimits {
    fn default() -> WatchLimits {
        WatchLimits {
            total: 10_000,
            per_match: 256,
        }
    }
}

#[derive(Debug)]
struct Watched {
    notify: Arc<Notify>,
    watchers: usize,
}

#[derive(Debug, Default)]
struct Registry {
    by_match: HashMap<String, Watched>,
    total: usize,
}

/// The watchers of this process.
#[derive(Debug)]
pub struct Watchers {
    registry: Mutex<Registry>,
    limits: WatchLimits,
    /// What the games are called in metrics (`arbiter_watch_streams_open{game}`).
    game: &'static str,
    /// Whether any watch is open: the Redis listener subscribes only while one is.
    watched: tokio::sync::watch::Sender<bool>,
}

/// One open watch: its match's notification; leaving when dropped.
#[derive(Debug)]
pub struct Watch {
    watchers: Arc<Watchers>,
    id: String,
    notify: Arc<Notify>,
}

impl Watch {
    /// The notification every change to the match wakes.
    pub fn notify(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut r = self.watchers.registry.lock().expect("not poisoned");
        r.total -= 1;
        if let Some(w) = r.by_match.get_mut(&self.id) {
            w.watchers -= 1;
            if w.watchers == 0 {
                r.by_match.remove(&self.id);
            }
        }
        if r.total == 0 {
            self.watchers.watched.send_replace(false);
        }
        self.watchers.count(r.total);
    }
}

/// Why a watch cannot open.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WatchRefused {
    /// This process has its maximum of watch streams.
    Total(usize),
    /// This match has its maximum of watch streams.
    PerMatch(usize),
}

impl WatchRefused {
    /// The refusal as a client reads it, for a game called `what` (`match`, `clock`).
    pub fn message(self, what: &str) -> String {
        match self {
            WatchRefused::Total(n) => {
                format!("this server has its maximum of {n} watch streams; retry later")
            }
            WatchRefused::PerMatch(n) => {
                format!("this {what} has its maximum of {n} watch streams")
            }
        }
    }
}

impl Watchers {
    /// No watchers yet, with `limits`, of games called `game` in metrics (`match`, `clock`).
    pub fn new(limits: WatchLimits, game: &'static str) -> Watchers {
        Watchers {
            registry: Mutex::default(),
            limits,
            game,
            watched: tokio::sync::watch::Sender::new(false),
        }
    }

    /// Opens a watch on match `id`, within the limits.
    pub fn join(self: &Arc<Self>, id: &str) -> Result<Watch, WatchRefused> {
        let mut r = self.registry.lock().expect("not poisoned");
        if r.total >= self.limits.total {
            return Err(WatchRefused::Total(self.limits.total));
        }
        let per_match = self.limits.per_match;
        let watched = r.by_match.entry(id.to_owned()).or_insert_with(|| Watched {
            notify: Arc::new(Notify::new()),
            watchers: 0,
        });
        if watched.watchers >= per_match {
            return Err(WatchRefused::PerMatch(per_match));
        }
        watched.watchers += 1;
        let notify = Arc::clone(&watched.notify);
        r.total += 1;
        if r.total == 1 {
            self.watched.send_replace(true);
        }
        self.count(r.total);
        Ok(Watch {
            watchers: Arc::clone(self),
            id: id.to_owned(),
            notify,
        })
    }

    /// Wakes the watchers of match `id`, if any.
    pub fn wake(&self, id: &str) {
        let r = self.registry.lock().expect("not poisoned");
        if let Some(w) = r.by_match.get(id) {
            w.notify.notify_waiters();
        }
    }

    /// Wakes every watcher (after a lost connection to the other replicas' announcements: each
    /// reads again what it may have missed).
    pub fn wake_all(&self) {
        let r = self.registry.lock().expect("not poisoned");
        for w in r.by_match.values() {
            w.notify.notify_waiters();
        }
    }

    /// Follows whether any watch is open in this process (true from the first until the last
    /// closes).
    pub fn watched(&self) -> tokio::sync::watch::Receiver<bool> {
        self.watched.subscribe()
    }

    /// Sets `arbiter_watch_streams_open` (called under the registry's lock, so that the
    /// gauge's last value is the count's).
    fn count(&self, total: usize) {
        #[allow(clippy::cast_precision_loss)]
        metrics::gauge!("arbiter_watch_streams_open", "game" => self.game).set(total as f64);
    }

    /// Watch streams open now.
    pub fn open(&self) -> usize {
        self.registry.lock().expect("not poisoned").total
    }
}

/// Completes once `flag` is true (at once if it already is, and if its sender is gone: the
/// server is stopping either way).
pub async fn until_down(flag: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = flag.wait_for(|down| *down).await;
}

/// How long the listener stays subscribed after the last local watcher has gone (so that a
/// watcher count flapping between 0 and 1 does not reconnect each time).
pub const UNSUBSCRIBE_AFTER: Duration = Duration::from_secs(30);

/// Listens for the changes every replica announces on `changes` (each message: the id of the
/// changed game; one channel, or on a cluster one shard channel per slot group) and wakes the
/// local watchers of each, until `shutdown` turns true. One subscription per process (on a
/// cluster, one connection per primary), held only
/// while the process has watchers (a replica nobody watches through receives nothing), dropped
/// [`UNSUBSCRIBE_AFTER`] after the last one leaves. On every (re)subscription (after a lost
/// connection; on a cluster also after a slot moved or a failover) it wakes every watcher, who
/// read again by sequence number whatever was announced before.
pub async fn listen_for_changes(
    subscriber: arbiter_redis_conn::Subscriber,
    changes: arbiter_redis_conn::Announcements,
    watchers: Arc<Watchers>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    use arbiter_redis_conn::Heard;
    let mut watched = watchers.watched();
    loop {
        tokio::select! {
            r = watched.wait_for(|w| *w) => if r.is_err() { return },
            () = until_down(&mut shutdown) => return,
        }
        // This subscription ends at shutdown, or once no watcher has been left for
        // UNSUBSCRIBE_AFTER.
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let on_heard = |heard: Heard| match heard {
            // Whatever was announced before this subscription: read again.
            Heard::Subscribed => watchers.wake_all(),
            Heard::Message { payload, .. } => {
                if let Ok(id) = std::str::from_utf8(&payload) {
                    watchers.wake(id);
                }
            }
        };
        let follow = subscriber.follow_announcements(&changes, "game changes", on_heard, stopped);
        let idle = async {
            // The last watcher may have gone while subscribing.
            loop {
                if *watched.borrow_and_update() {
                    tokio::select! {
                        r = watched.changed() => if r.is_err() { return true },
                        () = until_down(&mut shutdown) => return true,
                    }
                } else {
                    tokio::select! {
                        r = watched.changed() => if r.is_err() { return true },
                        () = tokio::time::sleep(UNSUBSCRIBE_AFTER) => return false,
                        () = until_down(&mut shutdown) => return true,
                    }
                }
            }
        };
        tokio::pin!(follow);
        // `follow` ends only when told to, so the first arm is for form's sake.
        let down = tokio::select! {
            () = &mut follow => true,
            down = idle => down,
        };
        stop.send_replace(true);
        if down {
            return;
        }
        tracing::debug!("no watchers left; unsubscribing from game changes");
        follow.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_are_counted_and_bounded() {
        let w = Arc::new(Watchers::new(
            WatchLimits {
                total: 3,
                per_match: 2,
            },
            "test",
        ));
        let a1 = w.join("a").unwrap();
        let _a2 = w.join("a").unwrap();
        assert_eq!(w.join("a").unwrap_err(), WatchRefused::PerMatch(2));
        let _b = w.join("b").unwrap();
        assert_eq!(w.join("c").unwrap_err(), WatchRefused::Total(3));
        let watched = w.watched();
        assert!(*watched.borrow());
        drop(a1);
        assert_eq!(w.open(), 2);
        let c = w.join("c").unwrap();
        assert_eq!(w.open(), 3);
        drop((c, _a2, _b));
        assert_eq!(w.open(), 0);
        assert!(!*watched.borrow(), "no watch open");
    }

    #[tokio::test]
    async fn a_change_wakes_its_match_only() {
        let w = Arc::new(Watchers::new(WatchLimits::default(), "test"));
        let a = w.join("a").unwrap();
        let b = w.join("b").unwrap();
        let woken_a = a.notify().notified();
        let woken_b = b.notify().notified();
        tokio::pin!(woken_a, woken_b);
        woken_a.as_mut().enable();
        woken_b.as_mut().enable();
        w.wake("a");
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(100), &mut woken_a)
                .await
                .is_ok()
        );
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(50), &mut woken_b)
                .await
                .is_err()
        );
        w.wake_all();
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(100), woken_b)
                .await
                .is_ok()
        );
    }
}
