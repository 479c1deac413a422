//! Resumed match watches: each event once, in order, across broken streams.

use crate::Client;
use crate::error::Error;
use crate::retry::RetryPolicy;
use arbiter_proto::matches::v1::{WatchMatchRequest, WatchMatchResponse, watch_match_response};
use futures_util::{Stream, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tonic::{Code, Status};

/// A server stream of match events, as one connection delivers them.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<WatchMatchResponse, Status>> + Send>>;

/// A resumed stream of `T` (match events, chat entries): each item once, in order, across
/// reconnections.
pub type ResumedStream<T> = Pin<Box<dyn Stream<Item = Result<T, Error>> + Send>>;

/// The resumed stream [`watch_events`] (and [`crate::Match::watch`]) yields: each event once,
/// in order; it ends after the `end` event, or with one error when the watch cannot go on.
pub type WatchStream = ResumedStream<WatchMatchResponse>;

/// Where match events come from: the server's `WatchMatch` (a [`Client`]), or anything a test
/// puts in its place.
pub trait WatchSource: Send + Sync + 'static {
    /// Opens a stream of `match_id`'s events after `after_seq`.
    fn open(
        &self,
        match_id: &str,
        after_seq: u64,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream, Status>> + Send + '_>>;
}

impl WatchSource for Client {
    fn open(
        &self,
        match_id: &str,
        after_seq: u64,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream, Status>> + Send + '_>> {
        let request = WatchMatchRequest {
            match_id: match_id.to_owned(),
            after_seq,
        };
        let mut client = self.matches();
        let deadline = self.retry_policy().attempt_timeout;
        Box::pin(opening(deadline, "WatchMatch", async move {
            client.watch_match(request).await
        }))
    }
}

/// Opens a server stream within an attempt's deadline (`what` names the call in the error when
/// it does not open in time). The open stream has no deadline: a `grpc-timeout` would bound
/// the whole stream, not its opening.
pub(crate) async fn opening<T, S>(
    deadline: Duration,
    what: &str,
    open: impl Future<Output = Result<tonic::Response<S>, Status>>,
) -> Result<ItemStream<T>, Status>
where
    S: Stream<Item = Result<T, Status>> + Send + 'static,
{
    let stream = tokio::time::timeout(deadline, open)
        .await
        .map_err(|_| {
            Status::deadline_exceeded(format!(
                "{what} did not open within {} ms",
                deadline.as_millis()
            ))
        })??
        .into_inner();
    Ok(Box::pin(stream))
}

/// The broken connections of a stream in a row (since its last message), and the last one's
/// error: reopening waits the policy's backoff, and gives up with that error after
/// `max_attempts` breaks in a row.
#[derive(Debug)]
pub(crate) struct Breaks {
    policy: RetryPolicy,
    count: u32,
    last: Option<Status>,
}

impl Breaks {
    pub(crate) fn new(policy: RetryPolicy) -> Breaks {
        Breaks {
            policy,
            count: 0,
            last: None,
        }
    }

    /// A connection broke (or did not open) with `status`.
    pub(crate) fn broke(&mut self, status: Status) {
        self.count += 1;
        self.last = Some(status);
    }

    /// A message came: the connection works.
    pub(crate) fn reset(&mut self) {
        self.count = 0;
        self.last = None;
    }

    /// Before (re)opening: waits the backoff after a break, or gives up with the last break's
    /// error after `max_attempts` of them in a row.
    pub(crate) async fn wait(&mut self) -> Result<(), Status> {
        if self.count == 0 {
            return Ok(());
        }
        if self.count >= self.policy.max_attempts {
            return Err(self
                .last
                .take()
                .unwrap_or_else(|| Status::unavailable("the stream kept breaking")));
        }
        tokio::time::sleep(self.policy.backoff(self.count - 1)).await;
        Ok(())
    }
}

/// Whether a broken stream is worth reopening: the connection failed or was reset (reported
/// as `UNAVAILABLE`, `UNKNOWN`, `INTERNAL` or `CANCELLED` by the transport), or the opening
/// timed out; never a refusal such as `NOT_FOUND` or `PERMISSION_DENIED`.
pub(crate) fn is_break(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable
            | Code::Unknown
            | Code::Internal
            | Code::Cancelled
            | Code::DeadlineExceeded
    ) || crate::retry::is_retryable(status)
}

/// Opens a server stream after a position (`after_seq`, `after_id`).
pub(crate) type Opener<T> = Box<
    dyn Fn(u64) -> Pin<Box<dyn Future<Output = Result<ItemStream<T>, Status>> + Send>>
        + Send
        + Sync,
>;

/// One connection's stream of `T`.
pub(crate) type ItemStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

struct State<T> {
    open: Opener<T>,
    /// The item's position in its stream (`seq`, `id`).
    position: fn(&T) -> u64,
    /// Whether the item is the stream's last (a match's `end`).
    last: fn(&T) -> bool,
    /// What the stream is, for its errors (`the watch of M`).
    what: String,
    after: u64,
    stream: Option<ItemStream<T>>,
    /// Broken connections since the last item yielded.
    breaks: Breaks,
    done: bool,
}

/// A resumed stream: each item once, in order of its position, reopened after `after` when
/// the connection breaks (see [`watch_events`]).
pub(crate) fn resumed<T: Send + 'static>(
    open: Opener<T>,
    position: fn(&T) -> u64,
    last: fn(&T) -> bool,
    what: String,
    after: u64,
    policy: RetryPolicy,
) -> ResumedStream<T> {
    let state = State {
        open,
        position,
        last,
        what,
        after,
        stream: None,
        breaks: Breaks::new(policy),
        done: false,
    };
    Box::pin(futures_util::stream::unfold(state, next_item))
}

/// Follows `match_id`'s events from `source` from the beginning (`after_seq` 0; see
/// [`watch_events_after`]). The stream remembers the last `seq` it yielded; when the server
/// stream breaks (a transport error, `UNAVAILABLE`, or its end without the `end` event) it
/// waits the policy's backoff and reopens with `after_seq = last`, dropping any event with
/// `seq <= last`. It gives up (yielding the last error) after `max_attempts` openings in a row
/// without an event, or at once on a refusal (`NOT_FOUND`, `PERMISSION_DENIED`, …). It ends after
/// the `end` event.
pub fn watch_events<S: WatchSource>(source: S, match_id: &str, policy: RetryPolicy) -> WatchStream {
    watch_events_after(source, match_id, 0, policy)
}

/// As [`watch_events`], from the events after `after_seq`.
pub fn watch_events_after<S: WatchSource>(
    source: S,
    match_id: &str,
    after_seq: u64,
    policy: RetryPolicy,
) -> WatchStream {
    let source = std::sync::Arc::new(source);
    let id = match_id.to_owned();
    let open: Opener<WatchMatchResponse> = Box::new(move |after| {
        let (source, id) = (std::sync::Arc::clone(&source), id.clone());
        Box::pin(async move { source.open(&id, after).await })
    });
    resumed(
        open,
        |e| e.seq,
        |e| matches!(e.event, Some(watch_match_response::Event::End(_))),
        format!("the watch of {match_id}"),
        after_seq,
        policy,
    )
}

async fn next_item<T>(mut st: State<T>) -> Option<(Result<T, Error>, State<T>)> {
    if st.done {
        return None;
    }
    loop {
        let Some(stream) = st.stream.as_mut() else {
            if let Err(last) = st.breaks.wait().await {
                st.done = true;
                return Some((Err(Error::Rpc(last)), st));
            }
            match (st.open)(st.after).await {
                Ok(s) => st.stream = Some(s),
                Err(status) if is_break(&status) => st.breaks.broke(status),
                Err(status) => {
                    st.done = true;
                    return Some((Err(Error::Rpc(status)), st));
                }
            }
            continue;
        };
        match stream.next().await {
            Some(Ok(item)) => {
                let position = (st.position)(&item);
                if position <= st.after {
                    continue; // seen already (a resumed stream repeating itself)
                }
                st.after = position;
                st.breaks.reset();
                if (st.last)(&item) {
                    st.done = true;
                    st.stream = None;
                }
                return Some((Ok(item), st));
            }
            Some(Err(status)) if is_break(&status) => {
                st.stream = None;
                st.breaks.broke(status);
            }
            Some(Err(status)) => {
                st.done = true;
                return Some((Err(Error::Rpc(status)), st));
            }
            None => {
                // Ended without its last item (a match's `end`): a server going away. Reopen.
                st.stream = None;
                let ended = format!("{} ended early, after {}", st.what, st.after);
                st.breaks.broke(Status::unavailable(ended));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_opening_that_does_not_answer_in_time_is_a_break() {
        let never = std::future::pending::<Result<tonic::Response<ItemStream<u64>>, Status>>();
        let e = opening(Duration::from_millis(10), "WatchChat", never)
            .await
            .err()
            .unwrap();
        assert_eq!(e.code(), Code::DeadlineExceeded);
        assert_eq!(e.message(), "WatchChat did not open within 10 ms");
        assert!(is_break(&e));
    }
}
