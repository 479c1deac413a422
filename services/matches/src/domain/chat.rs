//! Chat: the players' channel (all four players in bughouse), each bughouse team's own channel,
//! and the spectators' channel, where the platform posts for its spectators. The platform may
//! delete any message.
//!
//! Bounded in every way a client controls: a message is 1 to [`MAX_CHAT_BYTES`] bytes of text
//! without control characters; a seat posts at most [`CHAT_BURST`] messages in any
//! [`CHAT_WINDOW_MS`] and [`MAX_CHAT_PER_SEAT`] in a match; a match holds at most
//! [`MAX_CHAT_ENTRIES`] entries. Each limit is checked by the store in the same atomic step
//! that appends the message, so concurrent posts cannot pass it.

use super::Matches;
use super::checks::check_request_id;
use super::{SeatRef, corrupt};
use crate::error::MatchError;
use crate::record::{
    ChatChannel, ChatEntry, ChatMessage, Record, RequestId, RequestKind, board_letter, side_letter,
};
use crate::store::{
    CHAT_BURST, CHAT_WINDOW_MS, ChatPost, ChatResult, MAX_CHAT_ENTRIES, MAX_CHAT_PER_SEAT,
    MatchStore,
};
use arbiter_core::bughouse::{Seat, Team};

/// The longest chat message, in bytes.
pub const MAX_CHAT_BYTES: usize = 500;
/// The longest author name the platform gives a spectators' message, in bytes.
pub const MAX_AUTHOR_BYTES: usize = 64;
/// Chat entries read per store call while looking for a reader's next ones.
const CHAT_PAGE: usize = 256;

/// The channel a seat posts to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SeatChannel {
    /// Every player of the match.
    Players,
    /// The seat's bughouse team.
    Team,
}

/// Who reads a match's chat: the channels they see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatReader {
    channels: Vec<ChatChannel>,
}

impl ChatReader {
    /// A spectator: the spectators' channel.
    pub fn spectator() -> ChatReader {
        ChatReader {
            channels: vec![ChatChannel::Spectators],
        }
    }

    /// Whether the reader sees `entry`.
    pub fn sees(&self, entry: &ChatEntry) -> bool {
        self.channels.contains(&entry.channel())
    }
}

/// The text of a message: 1 to [`MAX_CHAT_BYTES`] bytes, not blank, no control characters.
fn check_text(field: &'static str, text: &str, max: usize) -> Result<(), MatchError> {
    if text.trim().is_empty() || text.len() > max || text.chars().any(char::is_control) {
        return Err(MatchError::invalid(
            field,
            format!("1 to {max} bytes of text, not blank, without control characters"),
        ));
    }
    Ok(())
}

/// The team channel of `seat`.
fn team_channel(seat: Seat) -> ChatChannel {
    match seat.team() {
        Team::One => ChatChannel::Team(1),
        Team::Two => ChatChannel::Team(2),
    }
}

/// The player sitting at `seat` of `record`.
fn player(record: &Record, seat: Seat) -> String {
    let i = if record.is_bughouse() {
        seat.board.index() * 2 + seat.color.index()
    } else {
        seat.color.index()
    };
    record.players.get(i).cloned().unwrap_or_default()
}

/// A store's answer to a post or a deletion, as the caller's result: the message, and whether
/// the request was a retry.
fn chat_answer(
    result: ChatResult,
    id: &str,
    request_id: Option<&str>,
) -> Result<(ChatMessage, bool), MatchError> {
    let exhausted = |description: String| MatchError::Exhausted {
        field: "text",
        description,
    };
    match result {
        ChatResult::Done(m) => Ok((m, false)),
        ChatResult::Duplicate(m) => Ok((m, true)),
        ChatResult::Reused => Err(MatchError::RequestIdReused(
            request_id.unwrap_or_default().to_owned(),
        )),
        ChatResult::TooFast(ms) => Err(exhausted(format!(
            "at most {CHAT_BURST} messages in {} s: retry in {ms} ms",
            CHAT_WINDOW_MS / 1000
        ))),
        ChatResult::ScopeFull => Err(exhausted(format!(
            "a seat posts at most {MAX_CHAT_PER_SEAT} messages in a match"
        ))),
        ChatResult::Full => Err(exhausted(format!(
            "this match's chat holds its maximum of {MAX_CHAT_ENTRIES} entries"
        ))),
        ChatResult::NoMessage => Err(MatchError::invalid(
            "message_id",
            "no chat message with that number in this match",
        )),
        ChatResult::Stale => Err(MatchError::PermissionDenied(
            "the match was created again since; the token is not valid any more".into(),
        )),
        ChatResult::Missing => Err(MatchError::NotFound(id.to_owned())),
    }
}

impl<S: MatchStore> Matches<S> {
    /// Posts a seat's message to the players' channel or (bughouse) its team's channel; also
    /// after the match has ended, while it is kept.
    pub async fn post_chat(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        channel: SeatChannel,
        text: &str,
        request_id: Option<&str>,
    ) -> Result<(ChatMessage, bool), MatchError> {
        check_text("text", text, MAX_CHAT_BYTES)?;
        check_request_id(request_id)?;
        let (record, seat, _) = self.authorized(id, seat_ref, token).await?;
        let channel = match channel {
            SeatChannel::Players => ChatChannel::Players,
            SeatChannel::Team if record.is_bughouse() => team_channel(seat),
            SeatChannel::Team => {
                return Err(MatchError::invalid(
                    "channel",
                    "a team channel is for bughouse partners; this game has two players",
                ));
            }
        };
        let request = request_id.map(|r| {
            let rid = RequestId::seat(
                seat.board,
                seat.color,
                r,
                RequestKind::Chat,
                &[channel.name(), text],
            );
            (rid.field, rid.fingerprint)
        });
        let post = ChatPost {
            nonce: record.nonce.clone(),
            message: ChatMessage {
                id: 0,
                channel,
                scope: format!("{}/{}", board_letter(seat.board), side_letter(seat.color)),
                author: player(&record, seat),
                at: 0,
                deleted: false,
                text: text.to_owned(),
            },
            limited: true,
            request,
        };
        let answer = chat_answer(self.store.post_chat(id, &post).await?, id, request_id)?;
        if !answer.1 {
            self.watchers.wake(id);
        }
        Ok(answer)
    }

    /// Posts the platform's message to the spectators' channel, under `author` (the name its
    /// spectators see).
    pub async fn post_spectator_chat(
        &self,
        id: &str,
        author: &str,
        text: &str,
        request_id: Option<&str>,
    ) -> Result<(ChatMessage, bool), MatchError> {
        check_text("text", text, MAX_CHAT_BYTES)?;
        check_text("author", author, MAX_AUTHOR_BYTES)?;
        check_request_id(request_id)?;
        let record = self.get(id).await?;
        let request = request_id.map(|r| {
            let rid = RequestId::platform(r, RequestKind::SpectatorChat, &[author, text]);
            (rid.field, rid.fingerprint)
        });
        let post = ChatPost {
            nonce: record.nonce.clone(),
            message: ChatMessage {
                id: 0,
                channel: ChatChannel::Spectators,
                scope: "platform".into(),
                author: author.to_owned(),
                at: 0,
                deleted: false,
                text: text.to_owned(),
            },
            limited: false,
            request,
        };
        let answer = chat_answer(self.store.post_chat(id, &post).await?, id, request_id)?;
        if !answer.1 {
            self.watchers.wake(id);
        }
        Ok(answer)
    }

    /// Deletes chat message `message` of any channel (a platform call): its text is removed
    /// and its readers are told. Deleting it again answers the deleted message.
    pub async fn delete_chat(&self, id: &str, message: u64) -> Result<ChatMessage, MatchError> {
        super::check_match_id(id)?;
        if message == 0 || message > MAX_CHAT_ENTRIES * 2 {
            return Err(MatchError::invalid(
                "message_id",
                "no chat message with that number in this match",
            ));
        }
        let (m, _) = chat_answer(self.store.delete_chat(id, message).await?, id, None)?;
        self.watchers.wake(id);
        Ok(m)
    }

    /// The reader of a seat's chat channels (the players' channel, and in bughouse its team's),
    /// once its token is checked.
    pub async fn chat_reader(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
    ) -> Result<ChatReader, MatchError> {
        let (record, seat, _) = self.authorized(id, seat_ref, token).await?;
        let mut channels = vec![ChatChannel::Players];
        if record.is_bughouse() {
            channels.push(team_channel(seat));
        }
        Ok(ChatReader { channels })
    }

    /// The chat entries `reader` sees after number `after`, at most `max`: the store's entries
    /// are read page by page past those of other channels (at most [`MAX_CHAT_ENTRIES`] twice
    /// over, the most a match holds).
    pub async fn chat_for(
        &self,
        id: &str,
        reader: &ChatReader,
        mut after: u64,
        max: usize,
    ) -> Result<Vec<(u64, ChatEntry)>, MatchError> {
        super::check_match_id(id)?;
        let mut seen = Vec::new();
        loop {
            let page = self.store.chat(id, after, CHAT_PAGE).await?;
            let full = page.len() == CHAT_PAGE;
            for (n, line) in page {
                after = n;
                let entry = ChatEntry::decode(n, &line).map_err(corrupt)?;
                if reader.sees(&entry) {
                    seen.push((n, entry));
                    if seen.len() == max {
                        return Ok(seen);
                    }
                }
            }
            if !seen.is_empty() || !full {
                return Ok(seen);
            }
        }
    }
}
