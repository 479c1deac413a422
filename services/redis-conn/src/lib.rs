//! # arbiter-redis-conn
//!
//! How Arbiter's services with state reach Redis (the match, clock, matchmaking and analysis
//! services and the batch workers): the URL, ACL user, password and TLS files, read the same way
//! by every service ([`RedisArgs`], [`RedisTlsArgs`], flags and environment, resolved in `main`
//! into a [`RedisConfig`]) and kept out of logs ([`redact_url`]), and a connection made in the background and retried until Redis
//! answers ([`connect_in_background`], [`wait_connected`]), so that a service starts, and
//! reports `NOT_SERVING`, before Redis is up. A URL of the form
//! `redis+cluster://host:port,host:port` (or `rediss+cluster://` with TLS) names the seed nodes
//! of a Redis Cluster instead ([`StoreClient`]; [`slots`] for how stores lay keys out on one).
//! [`script`]: named arguments for Lua scripts; [`packed`]: the packed-list encoding every store
//! uses.
#![warn(missing_docs)]

pub mod metered;
pub mod packed;
pub mod script;
pub mod sharded;
pub mod slots;

pub use metered::Connection;
pub use sharded::{Announcements, Heard};

use arbiter_kit::retry::{Backoff, RetryPolicy};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::sync::Arc;
use std::time::Duration;

/// `url` with the password of its user information replaced by `***` (for logs).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or(user_info, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}{}", &rest[authority_end..])
        }
        None => url.to_owned(),
    }
}

/// TLS to Redis (a `rediss://` URL): the certificate authority that signed the server's
/// certificate (without one, the system's roots) and, for Redis's `tls-auth-clients`, a client
/// certificate and key. All PEM, read once at start: a rotated CA or client certificate is
/// picked up by a restart (a rolling one; see docs/security.md).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct RedisTls {
    /// The CA certificates (PEM) that Redis's certificate must chain to.
    pub ca_pem: Option<Vec<u8>>,
    /// A client certificate chain and its private key (PEM), for mutual TLS.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for RedisTls {
    /// Never shows the private key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTls")
            .field("ca", &self.ca_pem.as_ref().map(|_| "PEM"))
            .field("client_certificate", &self.client.is_some())
            .finish()
    }
}

/// How to reach Redis.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://host:port/db` or `rediss://host:port/db` (TLS), maybe with a user (and password)
    /// in it; or a cluster's seed nodes, `redis+cluster://host:port,host:port` (`rediss+cluster`
    /// for TLS; no database number: a cluster has database 0 only).
    pub url: String,
    /// An ACL user name that replaces the URL's.
    pub user: Option<String>,
    /// A password that replaces the URL's (read from a file or the environment).
    pub password: Option<String>,
    /// TLS settings beyond the URL's scheme (a CA, a client certificate); they need `rediss://`.
    pub tls: RedisTls,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redact_url(&self.url))
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("tls", &self.tls)
            .finish()
    }
}

impl From<&str> for RedisConfig {
    /// A URL alone: its own user and password, no CA beyond the system's.
    fn from(url: &str) -> RedisConfig {
        RedisConfig::plain(url)
    }
}

impl From<&String> for RedisConfig {
    fn from(url: &String) -> RedisConfig {
        RedisConfig::plain(url)
    }
}

impl From<&RedisConfig> for RedisConfig {
    fn from(config: &RedisConfig) -> RedisConfig {
        config.clone()
    }
}

impl RedisConfig {
    /// A URL alone (its own user and password; for `rediss://`, the system's roots).
    pub fn plain(url: &str) -> RedisConfig {
        RedisConfig {
            url: url.to_owned(),
            user: None,
            password: None,
            tls: RedisTls::default(),
        }
    }

    /// Whether the URL asks for TLS (`rediss://` or `rediss+cluster://`).
    pub fn is_tls(&self) -> bool {
        self.url.starts_with("rediss://") || self.url.starts_with("rediss+cluster://")
    }

    /// Whether the URL names a cluster's seed nodes (`redis+cluster://`, `rediss+cluster://`).
    pub fn is_cluster(&self) -> bool {
        self.url.starts_with("redis+cluster://") || self.url.starts_with("rediss+cluster://")
    }

    /// The plain URL of each node the configuration names: the URL itself, or each seed node of
    /// a cluster URL with the cluster URL's user information.
    fn node_urls(&self) -> Result<Vec<String>, String> {
        if !self.is_cluster() {
            return Ok(vec![self.url.clone()]);
        }
        let bad = |why: &str| format!("bad Redis Cluster URL {}: {why}", redact_url(&self.url));
        let (scheme, rest) = self
            .url
            .split_once("+cluster://")
            .ok_or_else(|| bad("no scheme"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if !matches!(path, "" | "/" | "/0") {
            return Err(bad("a cluster has database 0 only"));
        }
        let (user_info, hosts) = match authority.rsplit_once('@') {
            Some((u, h)) => (format!("{u}@"), h),
            None => (String::new(), authority),
        };
        let nodes: Vec<String> = hosts
            .split(',')
            .map(|host| {
                if host.is_empty() {
                    Err(bad("an empty node"))
                } else {
                    Ok(format!("{scheme}://{user_info}{host}"))
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(nodes)
    }

    /// The connection settings of one node's URL, with this configuration's user and password.
    fn node_info(&self, url: &str) -> Result<redis::ConnectionInfo, String> {
        use redis::IntoConnectionInfo;
        let mut info = url
            .into_connection_info()
            .map_err(|e| format!("bad Redis URL {}: {e}", redact_url(&self.url)))?;
        if let Some(user) = &self.user {
            info.redis.username = Some(user.clone());
        }
        if let Some(password) = &self.password {
            info.redis.password = Some(password.clone());
        }
        Ok(info)
    }

    /// The TLS files as the client takes them; an error if they are given without TLS.
    fn certificates(&self) -> Result<Option<redis::TlsCertificates>, String> {
        let wants_tls = self.tls.ca_pem.is_some() || self.tls.client.is_some();
        if !self.is_tls() {
            if wants_tls {
                return Err(format!(
                    "a Redis CA or client certificate needs a rediss:// URL, not {}",
                    redact_url(&self.url)
                ));
            }
            return Ok(None);
        }
        Ok(Some(redis::TlsCertificates {
            client_tls: self
                .tls
                .client
                .as_ref()
                .map(|(cert, key)| redis::ClientTlsConfig {
                    client_cert: cert.clone(),
                    client_key: key.clone(),
                }),
            root_cert: self.tls.ca_pem.clone(),
        }))
    }

    /// A client of one node.
    fn node_client(
        &self,
        url: &str,
        certificates: Option<&redis::TlsCertificates>,
    ) -> Result<redis::Client, String> {
        let info = self.node_info(url)?;
        match certificates {
            None => redis::Client::open(info).map_err(|e| e.to_string()),
            Some(c) => redis::Client::build_with_tls(info, c.clone())
                .map_err(|e| format!("Redis TLS settings: {e}")),
        }
    }

    /// The client for this configuration (no connection yet): one server's, or a cluster's.
    /// TLS uses the process's rustls crypto provider, the one the gRPC servers and clients use
    /// (`arbiter_kit::tls::install_crypto_provider`).
    pub fn client(&self) -> Result<StoreClient, String> {
        let certificates = self.certificates()?;
        let urls = self.node_urls()?;
        let nodes: Vec<redis::Client> = urls
            .iter()
            .map(|url| self.node_client(url, certificates.as_ref()))
            .collect::<Result<_, _>>()?;
        if !self.is_cluster() {
            return Ok(StoreClient {
                cluster: None,
                nodes: nodes.into(),
            });
        }
        let infos: Vec<redis::ConnectionInfo> = urls
            .iter()
            .map(|url| self.node_info(url))
            .collect::<Result<_, _>>()?;
        let mut builder = redis::cluster::ClusterClientBuilder::new(infos)
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(Duration::from_secs(2))
            // A failover takes the cluster's node timeout and an election: keep retrying (with
            // backoff, up to 1 s apart) for several seconds before a call fails.
            .retries(CLUSTER_RETRIES)
            .max_retry_wait(1_000)
            .min_retry_wait(50);
        if let Some(c) = certificates {
            builder = builder.certs(c);
        }
        let cluster = builder
            .build()
            .map_err(|e| format!("Redis Cluster settings: {e}"))?;
        Ok(StoreClient {
            cluster: Some(cluster),
            nodes: nodes.into(),
        })
    }
}

/// How many times a cluster request is tried again (redirections, a failover under way, a lost
/// connection) before it fails. Every store's changes are scripts guarded by what they expect
/// to find, so a change tried again after its reply was lost is refused by its guard, never
/// applied twice.
pub const CLUSTER_RETRIES: u32 = 10;

/// The client of a store's Redis: one server, or a cluster (with a client for each seed node,
/// for subscriptions). Building it connects nothing.
#[derive(Clone)]
pub struct StoreClient {
    cluster: Option<redis::cluster::ClusterClient>,
    nodes: Arc<[redis::Client]>,
}

impl std::fmt::Debug for StoreClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreClient")
            .field("cluster", &self.cluster.is_some())
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

impl StoreClient {
    /// Whether this is a cluster's client.
    pub fn is_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    /// The one server's client (`None` for a cluster): for what only one server offers.
    pub fn single(&self) -> Option<&redis::Client> {
        match self.cluster {
            None => self.nodes.first(),
            Some(_) => None,
        }
    }

    /// A connection measured as `what` (see [`connect_in_background`] for the settings).
    pub async fn connect(&self, what: &'static str) -> redis::RedisResult<Connection> {
        match &self.cluster {
            Some(cluster) => Ok(Connection::cluster(
                cluster.clone(),
                cluster.get_async_connection().await?,
                what,
            )),
            None => {
                let manager = ConnectionManagerConfig::new()
                    .set_connection_timeout(Duration::from_secs(2))
                    .set_response_timeout(Duration::from_secs(2))
                    .set_number_of_retries(2)
                    .set_max_delay(500);
                let c = ConnectionManager::new_with_config(self.nodes[0].clone(), manager).await?;
                Ok(Connection::new(c, what))
            }
        }
    }

    /// Where this store's subscriptions are made: the server, or the cluster's seed nodes in
    /// turn (a message published with `PUBLISH` on any node of a cluster reaches every node's
    /// subscribers), or on a cluster's shard channels each primary
    /// ([`Subscriber::follow_sharded`]).
    pub fn subscriber(&self) -> Subscriber {
        Subscriber {
            nodes: Arc::clone(&self.nodes),
            next: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        }
    }
}

/// Makes pub/sub connections, trying each node of a cluster in turn from the last that
/// answered, so that a subscription outlives the node it was made on; and follows channels
/// ([`Subscriber::follow`]) or a cluster's shard channels, each on the primary that owns it
/// ([`Subscriber::follow_sharded`]).
#[derive(Clone)]
pub struct Subscriber {
    nodes: Arc<[redis::Client]>,
    next: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

impl Subscriber {
    /// A subscriber on one server.
    pub fn single(client: redis::Client) -> Subscriber {
        Subscriber {
            nodes: vec![client].into(),
            next: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        }
    }

    /// A pub/sub connection to the first node that answers (within 2 s each); the last node's
    /// error if none does.
    pub async fn pubsub(&self) -> redis::RedisResult<redis::aio::PubSub> {
        use std::sync::atomic::Ordering;
        let start = self.next.load(Ordering::Relaxed);
        let mut last = None;
        for i in 0..self.nodes.len() {
            let at = (start + i) % self.nodes.len();
            // A node that drops packets must not hold the move to the next one for the
            // system's TCP timeout.
            let attempt =
                tokio::time::timeout(Duration::from_secs(2), self.nodes[at].get_async_pubsub());
            match attempt.await {
                Ok(Ok(p)) => {
                    self.next.store(at, Ordering::Relaxed);
                    return Ok(p);
                }
                Ok(Err(e)) => last = Some(e),
                Err(_) => {
                    last = Some(redis::RedisError::from(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no answer within 2 s",
                    )));
                }
            }
        }
        Err(last.expect("a subscriber has at least one node"))
    }

    /// Follows `announcements` until `shutdown` turns true: [`Subscriber::follow`] of its one
    /// channel, or [`Subscriber::follow_sharded`] of its shard channels.
    pub async fn follow_announcements<F>(
        &self,
        announcements: &Announcements,
        what: &str,
        on_heard: F,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) where
        F: FnMut(Heard),
    {
        match announcements {
            Announcements::Channel(c) => self.follow(c, what, on_heard, shutdown).await,
            Announcements::Sharded(cs) => {
                self.follow_sharded(cs, what, on_heard, shutdown).await;
            }
        }
    }

    /// Follows `channel` until `shutdown` turns true, handing `on_heard` [`Heard::Subscribed`]
    /// once subscribed, then every message. A subscription that cannot be made, or is lost (a
    /// restart, a failed node), is made again on the next node that answers, after the
    /// reconnection backoff ([`RetryPolicy::RECONNECT`], reset by every subscription made), and
    /// `Subscribed` comes again: messages published in between are not heard, so followers
    /// treat a message as a hint to look, never as the only news. `what` names the follower in
    /// the logs.
    pub async fn follow<F>(
        &self,
        channel: &str,
        what: &str,
        on_heard: F,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) where
        F: FnMut(Heard),
    {
        use tokio_stream::StreamExt;
        let subscribe = || async {
            let mut pubsub = self.pubsub().await?;
            pubsub.subscribe(channel).await?;
            let messages = pubsub.into_on_message().map(|m| {
                (
                    m.get_channel_name().to_owned(),
                    m.get_payload_bytes().to_vec(),
                )
            });
            Ok::<Messages, redis::RedisError>(Box::pin(messages))
        };
        follow_messages(
            &format!("{what} ({channel})"),
            subscribe,
            on_heard,
            shutdown,
        )
        .await;
    }

    /// Follows the shard channels `channels` of a cluster ([`sharded`]) as
    /// [`Subscriber::follow`] follows one channel: subscribes to each (`SSUBSCRIBE`, one channel
    /// a command) on the primary that owns its slot. When a slot moves, a primary fails over
    /// or a connection drops, every subscription is made again from a fresh slot map, and
    /// [`Heard::Subscribed`] comes again. A primary that cannot be reached does not hold up the
    /// others: their channels are followed meanwhile, and the round is made again after
    /// [`sharded::PARTIAL_RETRY`]. Each connection is pinged every [`sharded::PING_EVERY`], so
    /// that a host gone silent (no close, no `sunsubscribe`) ends the round too.
    pub async fn follow_sharded<F>(
        &self,
        channels: &[String],
        what: &str,
        on_heard: F,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) where
        F: FnMut(Heard),
    {
        use sharded::Push;
        use tokio_stream::StreamExt;
        let what = format!("{what} ({} shard channels)", channels.len());
        let subscribe = || async {
            let (tx, pushes) = tokio::sync::mpsc::unbounded_channel();
            let (connections, missing) = self.subscribe_sharded(channels, tx.clone()).await?;
            if let Some(e) = &missing {
                tracing::warn!(error = %e, "{what}: a primary cannot be reached; following the others, \
                     trying it again in {:?}", sharded::PARTIAL_RETRY);
            }
            tokio::spawn(sharded::watchdog(connections, tx, missing.is_some()));
            let messages = tokio_stream::wrappers::UnboundedReceiverStream::new(pushes)
                .map(|p| sharded::classify(&p.kind, p.data))
                // A shard's subscriptions ended: the stream ends, and all are made again.
                .take_while(|p| !matches!(p, Push::Lost))
                .filter_map(|p| match p {
                    Push::Message(channel, payload) => Some((channel, payload)),
                    Push::Lost | Push::Other => None,
                });
            Ok::<Messages, redis::RedisError>(Box::pin(messages))
        };
        follow_messages(&what, subscribe, on_heard, shutdown).await;
    }

    /// One RESP3 connection per primary owning some of `channels`, each subscribed to its
    /// channels, every push sent to `pushes`; and the error of a primary that could not be
    /// subscribed, if any (an error when none could).
    async fn subscribe_sharded(
        &self,
        channels: &[String],
        pushes: tokio::sync::mpsc::UnboundedSender<redis::PushInfo>,
    ) -> redis::RedisResult<(
        Vec<redis::aio::MultiplexedConnection>,
        Option<redis::RedisError>,
    )> {
        let map = sharded::slot_map(&self.nodes).await?;
        let by_primary = map.by_primary(channels).ok_or_else(|| {
            redis::RedisError::from((
                redis::ErrorKind::ClusterDown,
                "a channel's slot has no primary in the slot map",
            ))
        })?;
        let seed = self.nodes[0].get_connection_info();
        let mut connections = Vec::with_capacity(by_primary.len());
        let mut missing = None;
        for ((host, port), chans) in by_primary {
            let subscribed = async {
                let client = redis::Client::open(sharded::node_info(seed, &host, port))?;
                let config = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(sharded::NODE_TIMEOUT)
                    .set_response_timeout(sharded::NODE_TIMEOUT)
                    .set_push_sender(pushes.clone());
                let mut c = client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                for channel in chans {
                    // One channel a command: a cluster refuses channels of several slots in
                    // one.
                    redis::cmd("SSUBSCRIBE")
                        .arg(channel)
                        .exec_async(&mut c)
                        .await?;
                }
                Ok::<_, redis::RedisError>(c)
            };
            match subscribed.await {
                Ok(c) => connections.push(c),
                Err(e) => missing = Some(e),
            }
        }
        match (connections.is_empty(), missing) {
            (true, Some(e)) => Err(e),
            (_, missing) => Ok((connections, missing)),
        }
    }
}

/// The messages of a subscription, as channel and payload; ends when the subscription is lost.
type Messages = std::pin::Pin<Box<dyn tokio_stream::Stream<Item = (String, Vec<u8>)> + Send>>;

/// The loop of [`Subscriber::follow`] and [`Subscriber::follow_sharded`]: `subscribe`, hand
/// `on_heard` [`Heard::Subscribed`] and the messages until the subscription is lost, and
/// subscribe again after the reconnection backoff, until `shutdown` turns true.
async fn follow_messages<S, Fut, F>(
    what: &str,
    mut subscribe: S,
    mut on_heard: F,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) where
    S: FnMut() -> Fut,
    Fut: std::future::Future<Output = redis::RedisResult<Messages>>,
    F: FnMut(Heard),
{
    use tokio_stream::StreamExt;
    let mut backoff = Backoff::new(RetryPolicy::RECONNECT);
    loop {
        let subscribed = tokio::select! {
            r = subscribe() => r,
            _ = shutdown.wait_for(|d| *d) => return,
        };
        match subscribed {
            Ok(mut messages) => {
                backoff.reset();
                on_heard(Heard::Subscribed);
                loop {
                    tokio::select! {
                        m = messages.next() => match m {
                            Some((channel, payload)) => on_heard(Heard::Message { channel, payload }),
                            None => break,
                        },
                        _ = shutdown.wait_for(|d| *d) => return,
                    }
                }
                tracing::warn!(
                    "{what}: the subscription ended (a restart, a failover, a moved slot); subscribing again"
                );
            }
            Err(e) => {
                tracing::warn!(error = %e, "{what}: cannot subscribe yet; retrying");
            }
        }
        let down = async {
            let _ = shutdown.wait_for(|d| *d).await;
        };
        if !backoff.wait_or(down).await {
            return;
        }
    }
}

/// Where a service that runs alone keeps its state (`--redis-url`, `--redis-password-file`,
/// and the TLS and ACL flags of [`RedisTlsArgs`]).
#[derive(clap::Args, Clone)]
pub struct RedisArgs {
    /// Keep state in Redis at this URL (`redis://host:6379/0`, or `rediss://host:6380/0` for
    /// TLS); without it, state is kept in this process.
    #[arg(long, env = "ARBITER_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// A file holding the Redis password.
    #[arg(long, env = "ARBITER_REDIS_PASSWORD_FILE")]
    pub redis_password_file: Option<std::path::PathBuf>,
    /// The ACL user and TLS files.
    #[command(flatten)]
    pub tls: RedisTlsArgs,
}

impl std::fmt::Debug for RedisArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisArgs")
            .field("redis_url", &self.redis_url.as_deref().map(redact_url))
            .field("redis_password_file", &self.redis_password_file)
            .field("tls", &self.tls)
            .finish()
    }
}

/// The Redis ACL user and TLS files, shared by every service's Redis flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RedisTlsArgs {
    /// The Redis ACL user to log in as (replaces a user in the URL); docs/security.md lists the
    /// minimal ACL of each service.
    #[arg(long, env = "ARBITER_REDIS_USER")]
    pub redis_user: Option<String>,
    /// A PEM file of the CA that signed Redis's certificate (with a rediss:// URL; without it,
    /// the system's roots).
    #[arg(long, env = "ARBITER_REDIS_CA_FILE")]
    pub redis_ca_file: Option<std::path::PathBuf>,
    /// A PEM client certificate for Redis (its `tls-auth-clients yes`); needs --redis-key-file.
    #[arg(long, env = "ARBITER_REDIS_CERT_FILE", requires = "redis_key_file")]
    pub redis_cert_file: Option<std::path::PathBuf>,
    /// The PEM private key of --redis-cert-file.
    #[arg(long, env = "ARBITER_REDIS_KEY_FILE", requires = "redis_cert_file")]
    pub redis_key_file: Option<std::path::PathBuf>,
}

fn read_file(path: &std::path::Path, flag: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("--{flag} {}: {e}", path.display()))
}

impl RedisTlsArgs {
    /// `config` with this user and these TLS files (read now). Refuses TLS files with a
    /// `redis://` URL, which would silently ignore them.
    pub fn apply(&self, mut config: RedisConfig) -> Result<RedisConfig, String> {
        if let Some(user) = &self.redis_user {
            config.user = Some(user.clone());
        }
        if let Some(path) = &self.redis_ca_file {
            config.tls.ca_pem = Some(read_file(path, "redis-ca-file")?);
        }
        if let (Some(cert), Some(key)) = (&self.redis_cert_file, &self.redis_key_file) {
            config.tls.client = Some((
                read_file(cert, "redis-cert-file")?,
                read_file(key, "redis-key-file")?,
            ));
        }
        // Building the client checks the URL and the PEM now, in `main`, not at first use.
        config.client()?;
        Ok(config)
    }
}

impl RedisArgs {
    /// The Redis configuration, reading the password and TLS files.
    pub fn load(&self) -> Result<Option<RedisConfig>, String> {
        let Some(url) = &self.redis_url else {
            return Ok(None);
        };
        let password = match &self.redis_password_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("--redis-password-file {}: {e}", path.display()))?
                    .trim()
                    .to_owned(),
            ),
            None => None,
        };
        let config = RedisConfig {
            password,
            ..RedisConfig::plain(url)
        };
        self.tls.apply(config).map(Some)
    }
}

/// A Redis connection that a background task establishes (retrying with backoff up to 5 s):
/// empty until it has connected, then a [`ConnectionManager`] that reconnects by itself, or a
/// cluster connection that follows the cluster's topology (its round trips measured under
/// `what`: [`Connection`]), with 2 s connection and response timeouts. `scripts` are loaded up
/// front (on every node of a cluster), so that no change pays a `NOSCRIPT` round trip (and a
/// lost reply is the change's own); after a Redis restart or a failover the client loads them
/// again on `NOSCRIPT`. `what` names the store in the logs. Needs a Tokio runtime.
pub fn connect_in_background(
    client: StoreClient,
    what: &'static str,
    scripts: Vec<redis::Script>,
) -> Arc<std::sync::OnceLock<Connection>> {
    let conn = Arc::new(std::sync::OnceLock::new());
    let slot = Arc::clone(&conn);
    tokio::spawn(async move {
        let mut backoff = Backoff::new(RetryPolicy::RECONNECT);
        loop {
            match client.connect(what).await {
                Ok(mut c) => {
                    for s in &scripts {
                        if let Err(e) = s.prepare_invoke().load_async(&mut c).await {
                            tracing::warn!(error = %e, "{what}: cannot load a script yet");
                        }
                    }
                    let _ = slot.set(c);
                    tracing::info!("{what} connected to Redis");
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "{what}: cannot connect to Redis yet; retrying");
                    backoff.wait().await;
                }
            }
        }
    });
    conn
}

/// Waits until a connection from [`connect_in_background`] is there, for up to `within` (tests
/// and tools); false if it is not.
pub async fn wait_connected(conn: &std::sync::OnceLock<Connection>, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while conn.get().is_none() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(user: Option<&str>, files: [Option<std::path::PathBuf>; 3]) -> RedisTlsArgs {
        let [ca, cert, key] = files;
        RedisTlsArgs {
            redis_user: user.map(str::to_owned),
            redis_ca_file: ca,
            redis_cert_file: cert,
            redis_key_file: key,
        }
    }

    #[test]
    fn tls_files_need_a_rediss_url() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").unwrap();
        let e = args(None, [Some(ca.clone()), None, None])
            .apply(RedisConfig::plain("redis://127.0.0.1:6379"))
            .unwrap_err();
        assert!(e.contains("rediss://"), "{e}");
        // A file that is not there is named with its flag.
        let e = args(None, [Some(dir.path().join("nope.pem")), None, None])
            .apply(RedisConfig::plain("rediss://127.0.0.1:6380"))
            .unwrap_err();
        assert!(
            e.contains("--redis-ca-file") && e.contains("nope.pem"),
            "{e}"
        );
    }

    #[test]
    fn a_plain_url_and_a_tls_url_without_files_build_clients() {
        assert!(
            RedisConfig::plain("redis://127.0.0.1:6379")
                .client()
                .is_ok()
        );
        assert!(
            RedisConfig::plain("rediss://127.0.0.1:6380")
                .client()
                .is_ok()
        );
        assert!(RedisConfig::plain("http://127.0.0.1").client().is_err());
    }

    #[test]
    fn the_user_flag_replaces_the_urls_user() {
        let c = args(Some("arbiter-clock"), [None, None, None])
            .apply(RedisConfig::plain("redis://someone:pw@127.0.0.1:6379"))
            .unwrap();
        let info = c
            .client()
            .unwrap()
            .single()
            .unwrap()
            .get_connection_info()
            .clone();
        assert_eq!(info.redis.username.as_deref(), Some("arbiter-clock"));
        assert_eq!(info.redis.password.as_deref(), Some("pw"));
    }

    #[test]
    fn a_cluster_url_names_its_seed_nodes_with_one_user() {
        let c = RedisConfig::plain("redis+cluster://u:pw@10.0.0.1:7000,10.0.0.2:7001/");
        assert!(c.is_cluster() && !c.is_tls());
        assert_eq!(
            c.node_urls().unwrap(),
            ["redis://u:pw@10.0.0.1:7000", "redis://u:pw@10.0.0.2:7001"]
        );
        let client = c.client().unwrap();
        assert!(client.is_cluster() && client.single().is_none());
        let tls = RedisConfig::plain("rediss+cluster://h1:7000,h2:7000");
        assert!(tls.is_cluster() && tls.is_tls());
        assert_eq!(
            tls.node_urls().unwrap(),
            ["rediss://h1:7000", "rediss://h2:7000"]
        );
        assert!(tls.client().unwrap().is_cluster());
        // One node is enough to find the rest; a database other than 0, an empty node or a
        // TLS file without TLS are refused, with the password kept out of the message.
        assert_eq!(
            RedisConfig::plain("redis+cluster://h:1")
                .node_urls()
                .unwrap(),
            ["redis://h:1"]
        );
        let e = RedisConfig::plain("redis+cluster://u:secret@h:1,h:2/3")
            .client()
            .unwrap_err();
        assert!(e.contains("database 0") && !e.contains("secret"), "{e}");
        let e = RedisConfig::plain("redis+cluster://h:1,,h:2")
            .client()
            .unwrap_err();
        assert!(e.contains("empty node"), "{e}");
        let e = RedisConfig {
            tls: RedisTls {
                ca_pem: Some(b"x".to_vec()),
                client: None,
            },
            ..RedisConfig::plain("redis+cluster://h:1")
        }
        .client()
        .unwrap_err();
        assert!(e.contains("rediss://"), "{e}");
        // The flags' user and password apply to every node.
        let c = RedisConfig {
            user: Some("arbiter-matches".into()),
            password: Some("pw2".into()),
            ..RedisConfig::plain("redis+cluster://h1:7000,h2:7001")
        };
        let info = c.node_info(&c.node_urls().unwrap()[1]).unwrap();
        assert_eq!(info.redis.username.as_deref(), Some("arbiter-matches"));
        assert_eq!(info.redis.password.as_deref(), Some("pw2"));
    }

    #[test]
    fn secrets_never_show_in_debug() {
        let c = RedisConfig {
            password: Some("hunter3".into()),
            tls: RedisTls {
                ca_pem: Some(b"ca".to_vec()),
                client: Some((b"cert".to_vec(), b"PRIVATE-KEY-BYTES".to_vec())),
            },
            ..RedisConfig::plain("rediss://u:hunter2@h:6380")
        };
        let shown = format!("{c:?}");
        for secret in ["hunter2", "hunter3", "PRIVATE-KEY-BYTES"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
