//! Sharded pub/sub on a Redis Cluster: `SPUBLISH` to a shard channel reaches only the nodes of
//! the shard that owns the channel's slot, where `PUBLISH` crosses the cluster bus to every
//! node. A store that announces a change per move names one shard channel per slot group (in
//! the group's slot, so a script can `SPUBLISH` beside its keys), and its followers subscribe
//! to each channel on the primary that owns it ([`crate::Subscriber::follow_sharded`]).
//!
//! The subscriptions follow the cluster: a slot that moves to another primary, or a primary
//! that fails over, ends the shard's subscriptions (Redis sends `sunsubscribe`; a dead process
//! drops the connection), and the follower then reads the slot map again and subscribes anew,
//! telling its caller that messages may have been missed in between. A host that vanishes
//! without closing its connections is found by a PING every few seconds.

use crate::slots::slot;
use redis::{ConnectionAddr, ConnectionInfo, ProtocolVersion, PushKind, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// What a follower of channels hears ([`crate::Subscriber::follow`],
/// [`crate::Subscriber::follow_sharded`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Heard {
    /// Every channel is subscribed (the first time, or again after a move, a failover or a
    /// lost connection): whatever was published before may have been missed.
    Subscribed,
    /// A message published on `channel`.
    Message {
        /// The channel.
        channel: String,
        /// What was published.
        payload: Vec<u8>,
    },
}

/// Where a store announces its changes: one channel on one Redis (`PUBLISH`), or on a cluster
/// one shard channel per slot group, `<channel>:{<group tag>}`, in the group's slot, so that
/// the scripts that change the group's records `SPUBLISH` there and a message reaches only the
/// nodes of that group's shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Announcements {
    /// One channel.
    Channel(String),
    /// Shard channels, one per slot group.
    Sharded(Vec<String>),
}

impl Announcements {
    /// `channel` on one Redis; with `groups` (a cluster), `<channel>:{<tag>}` for each group's
    /// tag.
    pub fn new(channel: &str, groups: Option<&crate::slots::SlotGroups>) -> Announcements {
        match groups {
            None => Announcements::Channel(channel.to_owned()),
            Some(g) => {
                Announcements::Sharded(g.tags().map(|t| format!("{channel}:{{{t}}}")).collect())
            }
        }
    }

    /// The Lua that defines `ANNOUNCE(id)` for a store's scripts: `PUBLISH` of `id` on the
    /// channel, or, `grouped`, `SPUBLISH` on the shard channel of the group whose tag is the
    /// hash tag of the script's first key (the script's slot).
    pub fn lua(channel: &str, grouped: bool) -> String {
        let quoted = channel.replace('\\', "\\\\").replace('\'', "\\'");
        if grouped {
            format!(
                "local function ANNOUNCE(id)\n  redis.call('SPUBLISH', '{quoted}:{{' .. \
                 string.match(KEYS[1], '{{([^}}]*)}}') .. '}}', id)\nend\n"
            )
        } else {
            format!("local function ANNOUNCE(id)\n  redis.call('PUBLISH', '{quoted}', id)\nend\n")
        }
    }
}

/// The primary serving each slot, from `CLUSTER SLOTS`: ranges of slots and the first node
/// listed for each (the primary), as `(host, port)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SlotMap {
    ranges: Vec<(u16, u16, String, u16)>,
}

impl SlotMap {
    /// The map in a `CLUSTER SLOTS` reply; `None` when the reply has another shape.
    pub(crate) fn parse(reply: &Value) -> Option<SlotMap> {
        let Value::Array(ranges) = reply else {
            return None;
        };
        let mut out = Vec::with_capacity(ranges.len());
        for range in ranges {
            let Value::Array(fields) = range else {
                return None;
            };
            let number = |v: &Value| match v {
                Value::Int(n) => u16::try_from(*n).ok(),
                _ => None,
            };
            let (start, end) = (number(fields.first()?)?, number(fields.get(1)?)?);
            let Value::Array(primary) = fields.get(2)? else {
                return None;
            };
            let host = match primary.first()? {
                Value::BulkString(b) => String::from_utf8(b.clone()).ok()?,
                Value::SimpleString(s) => s.clone(),
                _ => return None,
            };
            let port = number(primary.get(1)?)?;
            out.push((start, end, host, port));
        }
        Some(SlotMap { ranges: out })
    }

    /// The primary of `slot`, if the map has one.
    pub(crate) fn primary(&self, slot: u16) -> Option<(&str, u16)> {
        self.ranges
            .iter()
            .find(|(start, end, _, _)| (*start..=*end).contains(&slot))
            .map(|(_, _, host, port)| (host.as_str(), *port))
    }

    /// `channels` grouped by the primary that owns each one's slot; `None` when a slot has no
    /// primary in the map (the cluster is changing).
    pub(crate) fn by_primary<'c>(
        &self,
        channels: &'c [String],
    ) -> Option<BTreeMap<(String, u16), Vec<&'c str>>> {
        let mut out: BTreeMap<(String, u16), Vec<&str>> = BTreeMap::new();
        for c in channels {
            let (host, port) = self.primary(slot(c.as_bytes()))?;
            out.entry((host.to_owned(), port))
                .or_default()
                .push(c.as_str());
        }
        Some(out)
    }
}

/// `seed`'s connection settings (user, password, TLS) for the node at `host:port`, speaking
/// RESP3 (the protocol whose pushes carry shard messages). A host `CLUSTER SLOTS` leaves
/// unknown (empty, or `?`: a node that announces no endpoint of the preferred type) is the
/// seed's.
pub(crate) fn node_info(seed: &ConnectionInfo, host: &str, port: u16) -> ConnectionInfo {
    let mut info = seed.clone();
    let seed_host = match &seed.addr {
        ConnectionAddr::Tcp(h, _) | ConnectionAddr::TcpTls { host: h, .. } => h.as_str(),
        ConnectionAddr::Unix(_) => "",
    };
    let host = if host.is_empty() || host == "?" {
        seed_host
    } else {
        host
    };
    info.addr = match &seed.addr {
        ConnectionAddr::TcpTls {
            insecure,
            tls_params,
            ..
        } => ConnectionAddr::TcpTls {
            host: host.to_owned(),
            port,
            insecure: *insecure,
            tls_params: tls_params.clone(),
        },
        _ => ConnectionAddr::Tcp(host.to_owned(), port),
    };
    info.redis.protocol = ProtocolVersion::RESP3;
    info
}

/// How long a node has to connect or answer one command.
pub const NODE_TIMEOUT: Duration = Duration::from_secs(2);

/// How often each subscribed primary is pinged: a host that vanished without closing its
/// connections (power lost, a partition) is noticed within this and [`NODE_TIMEOUT`].
pub const PING_EVERY: Duration = Duration::from_secs(5);

/// When a primary could not be subscribed (down, failing over), how soon the whole round is made
/// again; the other primaries' channels are followed meanwhile.
pub const PARTIAL_RETRY: Duration = Duration::from_secs(2);

/// Watches a round's `connections`: ends the round (a disconnection on `pushes`) once one of
/// them fails a PING, or after [`PARTIAL_RETRY`] when the round is `partial`; stops when the
/// round has ended otherwise (its receiver gone).
pub(crate) async fn watchdog(
    mut connections: Vec<redis::aio::MultiplexedConnection>,
    pushes: tokio::sync::mpsc::UnboundedSender<redis::PushInfo>,
    partial: bool,
) {
    let lost = || redis::PushInfo {
        kind: PushKind::Disconnection,
        data: Vec::new(),
    };
    loop {
        let wait = if partial { PARTIAL_RETRY } else { PING_EVERY };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = pushes.closed() => return,
        }
        if partial {
            let _ = pushes.send(lost());
            return;
        }
        for c in &mut connections {
            let pong: redis::RedisResult<()> = redis::cmd("PING").exec_async(c).await;
            if pong.is_err() {
                let _ = pushes.send(lost());
                return;
            }
        }
    }
}

/// Reads the slot map from the first of `seeds` that answers.
pub(crate) async fn slot_map(seeds: &[redis::Client]) -> redis::RedisResult<SlotMap> {
    let mut last = None;
    for seed in seeds {
        let attempt = async {
            let config = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(NODE_TIMEOUT)
                .set_response_timeout(NODE_TIMEOUT);
            let mut c = seed
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            let reply: Value = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query_async(&mut c)
                .await?;
            SlotMap::parse(&reply).ok_or_else(|| {
                redis::RedisError::from((
                    redis::ErrorKind::TypeError,
                    "an unexpected CLUSTER SLOTS reply",
                ))
            })
        };
        match attempt.await {
            Ok(map) => return Ok(map),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        redis::RedisError::from((redis::ErrorKind::ClientError, "no seed node"))
    }))
}

/// What a push means to a follower: a message, the end of a subscription (the follower
/// subscribes again), or nothing (the confirmations of its own subscriptions).
pub(crate) enum Push {
    Message(String, Vec<u8>),
    Lost,
    Other,
}

pub(crate) fn classify(kind: &PushKind, data: Vec<Value>) -> Push {
    match kind {
        PushKind::SMessage => {
            let mut data = data.into_iter();
            let (Some(Value::BulkString(channel)), Some(Value::BulkString(payload))) =
                (data.next(), data.next())
            else {
                return Push::Other;
            };
            match String::from_utf8(channel) {
                Ok(channel) => Push::Message(channel, payload),
                Err(_) => Push::Other,
            }
        }
        PushKind::SUnsubscribe | PushKind::Disconnection => Push::Lost,
        _ => Push::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn a_slot_map_names_each_slots_primary() {
        let reply = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(8191),
                Value::Array(vec![bulk("10.0.0.1"), Value::Int(7001), bulk("id1")]),
                Value::Array(vec![bulk("10.0.0.4"), Value::Int(7004), bulk("id4")]),
            ]),
            Value::Array(vec![
                Value::Int(8192),
                Value::Int(16383),
                Value::Array(vec![bulk("10.0.0.2"), Value::Int(7002), bulk("id2")]),
            ]),
        ]);
        let map = SlotMap::parse(&reply).expect("a slot map");
        assert_eq!(map.primary(0), Some(("10.0.0.1", 7001)));
        assert_eq!(map.primary(8191), Some(("10.0.0.1", 7001)));
        assert_eq!(map.primary(8192), Some(("10.0.0.2", 7002)));
        let channels: Vec<String> = ["{a}", "{b}", "{c}", "{d}"]
            .iter()
            .map(|c| format!("ch:{c}"))
            .collect();
        let grouped = map.by_primary(&channels).expect("every slot served");
        let total: usize = grouped.values().map(Vec::len).sum();
        assert_eq!(total, 4);
        for ((host, port), chans) in &grouped {
            for c in chans {
                assert_eq!(
                    map.primary(slot(c.as_bytes())),
                    Some((host.as_str(), *port))
                );
            }
        }
        let partial = SlotMap::parse(&Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(10),
            Value::Array(vec![bulk("h"), Value::Int(1)]),
        ])]))
        .expect("a slot map");
        assert_eq!(partial.by_primary(&channels), None, "unserved slots");
        assert_eq!(SlotMap::parse(&Value::Int(3)), None);
        assert_eq!(
            SlotMap::parse(&Value::Array(vec![Value::Array(vec![Value::Int(0)])])),
            None
        );
    }

    #[test]
    fn a_node_keeps_the_seeds_credentials_and_an_unknown_host_is_the_seeds() {
        let seed: ConnectionInfo = "redis://user:secret@10.0.0.9:7000/0".parse().unwrap();
        let node = node_info(&seed, "10.0.0.2", 7002);
        assert_eq!(node.addr, ConnectionAddr::Tcp("10.0.0.2".into(), 7002));
        assert_eq!(node.redis.username.as_deref(), Some("user"));
        assert_eq!(node.redis.password.as_deref(), Some("secret"));
        assert_eq!(node.redis.protocol, ProtocolVersion::RESP3);
        for unknown in ["", "?"] {
            let node = node_info(&seed, unknown, 7003);
            assert_eq!(node.addr, ConnectionAddr::Tcp("10.0.0.9".into(), 7003));
        }
    }

    /// A `redis-server` of this machine on a free port (Debian's package; `.ci/run` installs
    /// it where missing), killed when dropped.
    struct Server(std::process::Child, u16);

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn server() -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server (Debian: apt-get install redis-server)");
        Server(child, port)
    }

    async fn resp3(
        port: u16,
        pushes: &tokio::sync::mpsc::UnboundedSender<redis::PushInfo>,
    ) -> redis::aio::MultiplexedConnection {
        let seed: ConnectionInfo = format!("redis://127.0.0.1:{port}").parse().unwrap();
        let client = redis::Client::open(node_info(&seed, "127.0.0.1", port)).unwrap();
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(NODE_TIMEOUT)
            .set_response_timeout(NODE_TIMEOUT)
            .set_push_sender(pushes.clone());
        for _ in 0..100 {
            if let Ok(c) = client
                .get_multiplexed_async_connection_with_config(&config)
                .await
            {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server at {port} does not answer");
    }

    /// A server that goes silent (SIGSTOP: the connection stays open, nothing answers) ends the
    /// round within a ping and its timeout; a partial round ends after `PARTIAL_RETRY`; a
    /// healthy one goes on, and the watchdog stops once the round's receiver is gone.
    #[tokio::test]
    async fn the_watchdog_ends_a_round_whose_server_went_silent() {
        let s = server();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let c = resp3(s.1, &tx).await;
        let dog = tokio::spawn(watchdog(vec![c], tx, false));
        // Healthy: two pings pass with nothing sent.
        let quiet =
            tokio::time::timeout(PING_EVERY * 2 + Duration::from_millis(500), rx.recv()).await;
        assert!(quiet.is_err(), "a healthy round goes on: {quiet:?}");
        let stopped = std::process::Command::new("kill")
            .args(["-STOP", &s.0.id().to_string()])
            .status()
            .unwrap();
        assert!(stopped.success());
        let lost = tokio::time::timeout(PING_EVERY + NODE_TIMEOUT * 3, rx.recv())
            .await
            .expect("the silence is noticed")
            .expect("a push");
        assert_eq!(lost.kind, PushKind::Disconnection);
        dog.await.unwrap();

        let s = server();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let c = resp3(s.1, &tx).await;
        let started = tokio::time::Instant::now();
        let dog = tokio::spawn(watchdog(vec![c], tx, true));
        let lost = rx.recv().await.expect("a push");
        assert_eq!(lost.kind, PushKind::Disconnection);
        assert!(started.elapsed() >= PARTIAL_RETRY);
        dog.await.unwrap();

        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let c = resp3(s.1, &tx).await;
        let dog = tokio::spawn(watchdog(vec![c], tx, false));
        drop(rx);
        tokio::time::timeout(Duration::from_secs(5), dog)
            .await
            .expect("the watchdog stops with its round")
            .unwrap();
    }

    #[test]
    fn pushes_are_messages_ends_or_nothing() {
        let m = classify(&PushKind::SMessage, vec![bulk("ch"), bulk("hello")]);
        assert!(matches!(m, Push::Message(c, p) if c == "ch" && p == b"hello"));
        assert!(matches!(
            classify(&PushKind::SUnsubscribe, vec![bulk("ch"), Value::Int(0)]),
            Push::Lost
        ));
        assert!(matches!(
            classify(&PushKind::Disconnection, vec![]),
            Push::Lost
        ));
        assert!(matches!(
            classify(&PushKind::SSubscribe, vec![bulk("ch"), Value::Int(1)]),
            Push::Other
        ));
        assert!(matches!(
            classify(&PushKind::SMessage, vec![bulk("ch")]),
            Push::Other
        ));
    }
}
