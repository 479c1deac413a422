//! The watch stream of a game: its events in order from a sequence number, then each new one
//! as it is appended, until the game's last event, the client's departure, or shutdown.

use crate::watchers::{Watch, until_down};
use std::future::Future;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// How many events a watch stream reads at once.
pub const WATCH_BATCH: usize = 256;

/// What a watch stream reads: one game's event log, by sequence number (1-based).
pub trait EventLog: Send + Sync + 'static {
    /// An event as the domain decodes it.
    type Event: Send + Sync;
    /// The stream's message.
    type Message: Send + 'static;

    /// At most `max` events after `after`, with their sequence numbers.
    fn read(
        &self,
        after: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<(u64, Self::Event)>, Status>> + Send;

    /// Whether `event` is the game's last (the stream ends after sending it).
    fn is_last(&self, event: &Self::Event) -> bool;

    /// The stream's message for event `seq`.
    fn message(&self, seq: u64, event: &Self::Event) -> Self::Message;

    /// With nothing new to read: whether the game is over and its events up to `after` are all
    /// of them (the stream then ends; for a log whose last event always says so, never).
    fn finished(&self, after: u64) -> impl Future<Output = Result<bool, Status>> + Send {
        let _ = after;
        async { Ok(false) }
    }
}

/// Streams `log` from after event `after`, woken by `watch` (every change to the game, here or
/// announced by another replica), until the game's last event, the receiver's departure, or
/// `shutting_down` (then an `UNAVAILABLE` that names the sequence number to watch again from).
/// A read error ends the stream with that error.
pub fn watch_stream<L: EventLog>(
    log: L,
    watch: Watch,
    mut after: u64,
    mut shutting_down: tokio::sync::watch::Receiver<bool>,
) -> ReceiverStream<Result<L::Message, Status>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            // Register for the wake-up before reading, so no change slips between the two.
            let notified = watch.notify().notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let events = match log.read(after, WATCH_BATCH).await {
                Ok(e) => e,
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
            let mut ended = false;
            for (seq, e) in &events {
                after = *seq;
                ended |= log.is_last(e);
                if tx.send(Ok(log.message(*seq, e))).await.is_err() {
                    return;
                }
            }
            if ended {
                return;
            }
            if events.len() == WATCH_BATCH {
                continue; // more to read at once
            }
            if events.is_empty() {
                match log.finished(after).await {
                    Ok(true) => return,
                    Ok(false) => {}
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
            tokio::select! {
                () = &mut notified => {}
                () = tx.closed() => return,
                () = until_down(&mut shutting_down) => {
                    let _ = tx
                        .send(Err(Status::unavailable(format!(
                            "the server is shutting down; watch again with after_seq {after}"
                        ))))
                        .await;
                    return;
                }
            }
        }
    });
    ReceiverStream::new(rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watchers::{WatchLimits, Watchers};
    use std::sync::{Arc, Mutex};
    use tokio_stream::StreamExt;

    /// Events are numbers; 0 is the last.
    struct Log(Arc<Mutex<Vec<u32>>>);

    impl EventLog for Log {
        type Event = u32;
        type Message = (u64, u32);
        async fn read(&self, after: u64, max: usize) -> Result<Vec<(u64, u32)>, Status> {
            let all = self.0.lock().unwrap();
            Ok(all
                .iter()
                .enumerate()
                .skip(usize::try_from(after).unwrap())
                .take(max)
                .map(|(i, e)| (i as u64 + 1, *e))
                .collect())
        }
        fn is_last(&self, e: &u32) -> bool {
            *e == 0
        }
        fn message(&self, seq: u64, e: &u32) -> (u64, u32) {
            (seq, *e)
        }
    }

    #[tokio::test]
    async fn a_stream_sends_the_backlog_then_each_change_and_ends_at_the_last_event() {
        let watchers = Arc::new(Watchers::new(WatchLimits::default(), "test"));
        let events = Arc::new(Mutex::new((1..=300).collect::<Vec<u32>>()));
        let (_down, shutting_down) = tokio::sync::watch::channel(false);
        let watch = watchers.join("g").unwrap();
        let mut s = watch_stream(Log(Arc::clone(&events)), watch, 10, shutting_down);
        for seq in 11..=300 {
            assert_eq!(s.next().await.unwrap().unwrap(), (seq, seq as u32));
        }
        events.lock().unwrap().extend([301, 0]);
        watchers.wake("g");
        assert_eq!(s.next().await.unwrap().unwrap(), (301, 301));
        assert_eq!(s.next().await.unwrap().unwrap(), (302, 0));
        assert!(s.next().await.is_none(), "the last event ends the stream");
        assert_eq!(watchers.open(), 0, "the watch is left");
    }

    #[tokio::test]
    async fn shutdown_ends_a_stream_with_where_to_resume() {
        let watchers = Arc::new(Watchers::new(WatchLimits::default(), "test"));
        let (down, shutting_down) = tokio::sync::watch::channel(false);
        let watch = watchers.join("g").unwrap();
        let mut s = watch_stream(Log(Arc::new(Mutex::new(vec![7]))), watch, 0, shutting_down);
        assert_eq!(s.next().await.unwrap().unwrap(), (1, 7));
        down.send_replace(true);
        let e = s.next().await.unwrap().unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unavailable);
        assert!(e.message().contains("after_seq 1"), "{}", e.message());
        assert!(s.next().await.is_none());
    }
}
