//! Sharded pub/sub on a Redis Cluster: `SPUBLISH` to a shard channel reaches only the nodes of
//! the shard that owns the channel's slot, where `PUBLISH` crosses the cluster bus to every
//! node. A store that announces a change per move names one shard channel per slot group (in
//! the group's slot, so a script can `SPUBLISH` beside its keys), and its followers subscribe
//! to each channel on the primary that owns it ([`crate::Subscriber::follow_sharded`]).
//!
//! The subscriptions follow the cluster: a slot that moves to another primary, or a primary
//! that fails over, ends the shard's subscriptions (Redis sends `sunsubscribe`; a dead node
//! drops the connection), and the follower then reads the slot map again and subscribes anew,
//! telling its caller that messages may have been missed in between.

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
/// RESP3 (the protocol whose pushes carry shard messages).
pub(crate) fn node_info(seed: &ConnectionInfo, host: &str, port: u16) -> ConnectionInfo {
    let mut info = seed.clone();
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
pub(crate) const NODE_TIMEOUT: Duration = Duration::from_secs(2);

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
