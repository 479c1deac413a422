//! A match's chat as stored: one packed line per entry in the match's chat list, numbered from 1
//! by its place in the list.
//!
//! A message is `M, channel, scope, author, at, deleted (0/1), text`; the deletion of message
//! `id` appends `D, id, channel` (so that watchers past the message learn of it) and blanks the
//! message's text in place.

use super::{Corrupt, corrupt, pack, parse_num, unpack};

/// Who reads a chat channel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ChatChannel {
    /// The players of the match (all four in bughouse).
    Players,
    /// A bughouse team: 1 (White on A with Black on B) or 2.
    Team(u8),
    /// Spectators: posted by the platform, readable by anyone who may watch the match.
    Spectators,
}

impl ChatChannel {
    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            ChatChannel::Players => "players",
            ChatChannel::Team(1) => "team1",
            ChatChannel::Team(_) => "team2",
            ChatChannel::Spectators => "spectators",
        }
    }

    /// The channel with this stored name.
    pub fn from_name(name: &str) -> Result<ChatChannel, Corrupt> {
        Ok(match name {
            "players" => ChatChannel::Players,
            "team1" => ChatChannel::Team(1),
            "team2" => ChatChannel::Team(2),
            "spectators" => ChatChannel::Spectators,
            _ => return Err(corrupt("unknown chat channel")),
        })
    }
}

/// A chat message as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatMessage {
    /// Its number in the match's chat (from 1).
    pub id: u64,
    /// The channel.
    pub channel: ChatChannel,
    /// The scope that posted it: a seat (`A/w`) or `platform`.
    pub scope: String,
    /// The author: the seat's player id, or the name the platform gave.
    pub author: String,
    /// When the store accepted it (Unix ms, the store's time base).
    pub at: u64,
    /// Deleted by the platform (the text is then empty).
    pub deleted: bool,
    /// The text.
    pub text: String,
}

/// An entry of a match's chat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatEntry {
    /// A message.
    Message(ChatMessage),
    /// Message `id` of `channel` was deleted.
    Deleted {
        /// The deleted message's number.
        id: u64,
        /// Its channel.
        channel: ChatChannel,
    },
}

impl ChatEntry {
    /// The channel the entry belongs to.
    pub fn channel(&self) -> ChatChannel {
        match self {
            ChatEntry::Message(m) => m.channel,
            ChatEntry::Deleted { channel, .. } => *channel,
        }
    }

    /// The stored line (a message's `id` is its place in the list, not stored).
    pub fn encode(&self) -> String {
        match self {
            ChatEntry::Message(m) => pack(&[
                "M",
                m.channel.name(),
                &m.scope,
                &m.author,
                &m.at.to_string(),
                if m.deleted { "1" } else { "0" },
                &m.text,
            ]),
            ChatEntry::Deleted { id, channel } => pack(&["D", &id.to_string(), channel.name()]),
        }
    }

    /// Reads stored line number `id`.
    pub fn decode(id: u64, line: &str) -> Result<ChatEntry, Corrupt> {
        let parts = unpack(line)?;
        Ok(match parts.as_slice() {
            ["M", channel, scope, author, at, deleted, text] => ChatEntry::Message(ChatMessage {
                id,
                channel: ChatChannel::from_name(channel)?,
                scope: (*scope).to_owned(),
                author: (*author).to_owned(),
                at: parse_num(at, "chat time")?,
                deleted: *deleted == "1",
                text: (*text).to_owned(),
            }),
            ["D", deleted, channel] => ChatEntry::Deleted {
                id: parse_num(deleted, "chat id")?,
                channel: ChatChannel::from_name(channel)?,
            },
            _ => return Err(corrupt("unknown chat entry")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let m = ChatEntry::Message(ChatMessage {
            id: 7,
            channel: ChatChannel::Team(2),
            scope: "B/w".into(),
            author: "cid".into(),
            at: 1_700_000_000_000,
            deleted: false,
            text: "sit! | {ok} 日本".into(),
        });
        assert_eq!(ChatEntry::decode(7, &m.encode()).unwrap(), m);
        let d = ChatEntry::Deleted {
            id: 3,
            channel: ChatChannel::Spectators,
        };
        assert_eq!(ChatEntry::decode(9, &d.encode()).unwrap(), d);
        assert!(ChatEntry::decode(1, "garbage").is_err());
    }
}
