//! A Redis connection (one server or a cluster) that measures its round trips for Prometheus, per store:
//! `arbiter_redis_round_trips_total{store,kind}`, `arbiter_redis_round_trip_duration_seconds
//! {store,kind}` (kind: `command`, `script` for `EVALSHA`/`EVAL`, `pipeline`) and
//! `arbiter_redis_errors_total{store,kind}` (kind: `connection`, `timeout`, `server`). The
//! handles are resolved once per store, so a round trip costs a few atomic adds more; without a
//! metrics recorder they record nothing.

use arbiter_kit::metrics::Resolved;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// What a round trip was.
#[derive(Clone, Copy)]
enum Kind {
    Command = 0,
    Script = 1,
    Pipeline = 2,
}

const KINDS: [&str; 3] = ["command", "script", "pipeline"];
const ERRORS: [&str; 3] = ["connection", "timeout", "server"];

/// The metric handles of one store.
struct Meter {
    trips: [metrics::Counter; 3],
    durations: [metrics::Histogram; 3],
    errors: [metrics::Counter; 3],
}

impl Meter {
    fn new(store: &'static str) -> Meter {
        let errors = ERRORS.map(|kind| {
            let c =
                metrics::counter!("arbiter_redis_errors_total", "store" => store, "kind" => kind);
            // Listed at 0 from the start, so that a rate over them exists before any error.
            c.increment(0);
            c
        });
        Meter {
            trips: KINDS.map(|kind| {
                metrics::counter!("arbiter_redis_round_trips_total", "store" => store, "kind" => kind)
            }),
            durations: KINDS.map(|kind| {
                metrics::histogram!(
                    "arbiter_redis_round_trip_duration_seconds",
                    "store" => store,
                    "kind" => kind
                )
            }),
            errors,
        }
    }

    async fn measure<T>(&self, kind: Kind, trip: RedisFuture<'_, T>) -> redis::RedisResult<T> {
        let began = Instant::now();
        let result = trip.await;
        let i = kind as usize;
        self.trips[i].increment(1);
        self.durations[i].record(began.elapsed().as_secs_f64());
        if let Err(e) = &result {
            let which = if e.is_timeout() {
                1
            } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
                0
            } else {
                2
            };
            self.errors[which].increment(1);
        }
        result
    }
}

/// A store's meter, resolved once metrics are on.
struct Store {
    name: &'static str,
    meter: Resolved<Meter>,
}

/// A connection to one Redis or to a Redis Cluster.
#[derive(Clone)]
enum Inner {
    /// One server (a primary), reconnected by the manager.
    Single(ConnectionManager),
    /// A cluster: each request goes to the primary of its key's slot, following `MOVED` and
    /// `ASK` redirections and a failover's new topology.
    Cluster(Arc<Cluster>),
}

/// A cluster connection that is made again when a request times out ([`Cluster::note`]).
///
/// The cluster client reads the slot map again on a redirection or a broken connection, but a
/// request that times out is tried again on the same connection: a primary that goes silent
/// (its host lost, its connections neither answering nor closing) is asked forever, even after
/// its replica has been elected. A new connection reads the map from the seed nodes, where the
/// silent node no longer serves any slot.
struct Cluster {
    client: ClusterClient,
    current: RwLock<ClusterConnection>,
    /// A new connection is being made.
    remaking: AtomicBool,
    /// When the last one was made (no more than one every [`REMAKE_EVERY`]).
    remade: std::sync::Mutex<Option<Instant>>,
}

/// The least time between two connections made again after timeouts.
pub const REMAKE_EVERY: Duration = Duration::from_secs(5);

impl Cluster {
    fn connection(&self) -> ClusterConnection {
        self.current.read().expect("not poisoned").clone()
    }

    /// After a request's outcome: a timeout makes the connection again in the background
    /// (requests meanwhile use the old one), unless one is being made or was made within
    /// [`REMAKE_EVERY`].
    fn note<T>(self: &Arc<Self>, outcome: &redis::RedisResult<T>, store: &'static str) {
        let Err(e) = outcome else { return };
        if !e.is_timeout() {
            return;
        }
        {
            let mut remade = self.remade.lock().expect("not poisoned");
            if remade.is_some_and(|t| t.elapsed() < REMAKE_EVERY)
                || self.remaking.swap(true, Ordering::AcqRel)
            {
                return;
            }
            *remade = Some(Instant::now());
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            match me.client.get_async_connection().await {
                Ok(c) => {
                    *me.current.write().expect("not poisoned") = c;
                    tracing::warn!(
                        store,
                        "a Redis Cluster request timed out: connected again from the seed nodes' slot map"
                    );
                }
                Err(e) => tracing::warn!(
                    store,
                    error = %e,
                    "a Redis Cluster request timed out, and connecting again failed"
                ),
            }
            me.remaking.store(false, Ordering::Release);
        });
    }
}

/// A [`ConnectionManager`] or a cluster connection whose round trips are measured under its
/// store's name. Cloning shares the connection and the meter, as a `ConnectionManager`'s clone
/// does.
#[derive(Clone)]
pub struct Connection {
    inner: Inner,
    store: Arc<Store>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

impl Connection {
    /// `inner`, measured as `store` (a fixed name: it is a label value).
    pub fn new(inner: ConnectionManager, store: &'static str) -> Connection {
        Connection::with(Inner::Single(inner), store)
    }

    /// A cluster connection made by `client`, measured as `store`; made again by `client`
    /// when a request times out (see [`REMAKE_EVERY`]).
    pub fn cluster(
        client: ClusterClient,
        inner: ClusterConnection,
        store: &'static str,
    ) -> Connection {
        Connection::with(
            Inner::Cluster(Arc::new(Cluster {
                client,
                current: RwLock::new(inner),
                remaking: AtomicBool::new(false),
                remade: std::sync::Mutex::new(None),
            })),
            store,
        )
    }

    fn with(inner: Inner, store: &'static str) -> Connection {
        Connection {
            inner,
            store: Arc::new(Store {
                name: store,
                meter: Resolved::new(),
            }),
        }
    }

    /// Whether this is a connection to a cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.inner, Inner::Cluster(_))
    }
}

/// Measures `trip` with `store`'s meter, if metrics are on; a script is a span of its own when
/// traces are on.
async fn measure<T>(
    store: Arc<Store>,
    kind: Kind,
    trip: RedisFuture<'_, T>,
) -> redis::RedisResult<T> {
    use tracing::Instrument;
    let trip = async {
        match store.meter.get(|| Meter::new(store.name)) {
            Some(meter) => meter.measure(kind, trip).await,
            None => trip.await,
        }
    };
    if matches!(kind, Kind::Script) && arbiter_kit::trace::enabled() {
        let span = tracing::info_span!(
            "redis script",
            otel.name = "redis.script",
            otel.kind = "client",
            store = store.name
        );
        trip.instrument(span).await
    } else {
        trip.await
    }
}

/// Whether `cmd` runs a script.
fn is_script(cmd: &Cmd) -> bool {
    matches!(
        cmd.args_iter().next(),
        Some(redis::Arg::Simple(name)) if name.eq_ignore_ascii_case(b"EVALSHA") || name.eq_ignore_ascii_case(b"EVAL")
    )
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let kind = if is_script(cmd) {
            Kind::Script
        } else {
            Kind::Command
        };
        let trip = match &mut self.inner {
            Inner::Single(c) => c.req_packed_command(cmd),
            Inner::Cluster(cluster) => {
                let (cluster, store) = (Arc::clone(cluster), self.store.name);
                Box::pin(async move {
                    let outcome = cluster.connection().req_packed_command(cmd).await;
                    cluster.note(&outcome, store);
                    outcome
                })
            }
        };
        Box::pin(measure(Arc::clone(&self.store), kind, trip))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let trip = match &mut self.inner {
            Inner::Single(c) => c.req_packed_commands(cmd, offset, count),
            Inner::Cluster(cluster) => {
                let (cluster, store) = (Arc::clone(cluster), self.store.name);
                Box::pin(async move {
                    let outcome = cluster
                        .connection()
                        .req_packed_commands(cmd, offset, count)
                        .await;
                    cluster.note(&outcome, store);
                    outcome
                })
            }
        };
        Box::pin(measure(Arc::clone(&self.store), Kind::Pipeline, trip))
    }

    fn get_db(&self) -> i64 {
        match &self.inner {
            Inner::Single(c) => c.get_db(),
            Inner::Cluster(c) => c.connection().get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_told_from_commands() {
        assert!(is_script(redis::cmd("EVALSHA").arg("abc").arg(0)));
        assert!(is_script(redis::cmd("eval").arg("return 1").arg(0)));
        assert!(!is_script(redis::cmd("GET").arg("k")));
        assert!(!is_script(&redis::Cmd::new()));
    }
}
