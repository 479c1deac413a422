//! One engine process: started with piped input and output, its output read by a thread of its
//! own into a channel line by line (each line bounded by [`MAX_LINE`]), so that every read has
//! a deadline. Dropping a [`Process`] kills and reaps it.

use crate::MAX_LINE;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::Instant;

/// What the reader thread saw.
#[derive(Debug)]
pub(crate) enum Event {
    /// A line, without its end of line (invalid UTF-8 replaced).
    Line(String),
    /// A line longer than [`MAX_LINE`] (the reader stops there).
    TooLong,
    /// The output closed (or could not be read): the process is gone or going.
    Closed(String),
}

/// What a read with a deadline got.
#[derive(Debug)]
pub(crate) enum Received {
    /// An event.
    Event(Event),
    /// The deadline passed first.
    Timeout,
}

/// A running engine process.
#[derive(Debug)]
pub(crate) struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<Event>,
    closed: bool,
}

impl Process {
    /// Starts `path` with no arguments.
    pub(crate) fn spawn(path: &Path) -> std::io::Result<Process> {
        let mut child = Command::new(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        // A small bound: the reader waits for the searcher rather than buffering an engine
        // that floods its output.
        let (tx, events) = sync_channel(1024);
        let spawned = std::thread::Builder::new()
            .name("uci-reader".to_owned())
            .spawn(move || {
                let mut reader = BufReader::with_capacity(16 * 1024, stdout);
                loop {
                    let event = read_line(&mut reader);
                    let last = !matches!(event, Event::Line(_));
                    if tx.send(event).is_err() || last {
                        return;
                    }
                }
            });
        if let Err(e) = spawned {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        Ok(Process {
            child,
            stdin,
            events,
            closed: false,
        })
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `line` and a newline. An error means the process is gone.
    pub(crate) fn send(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        stdin.write_all(&buf)?;
        stdin.flush()
    }

    /// The next event, or `Timeout` once `deadline` passes.
    pub(crate) fn recv(&mut self, deadline: Instant) -> Received {
        if self.closed {
            return Received::Event(Event::Closed("the engine's output is closed".to_owned()));
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(wait) {
            Ok(e) => {
                if !matches!(e, Event::Line(_)) {
                    self.closed = true;
                }
                Received::Event(e)
            }
            Err(RecvTimeoutError::Timeout) => Received::Timeout,
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                Received::Event(Event::Closed("the engine's output is closed".to_owned()))
            }
        }
    }

    /// Drops the lines already read (between searches, nothing is expected).
    pub(crate) fn drain(&mut self) {
        while let Ok(e) = self.events.try_recv() {
            if !matches!(e, Event::Line(_)) {
                self.closed = true;
            }
        }
    }

    /// Kills the process and reaps it.
    pub(crate) fn kill(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// How the process ended, if it has (without waiting).
    pub(crate) fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            // Politely first (an engine may clean up), then for certain.
            let _ = self.send("quit");
        }
        self.kill();
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes.
fn read_line<R: Read>(reader: &mut BufReader<R>) -> Event {
    let mut line: Vec<u8> = Vec::new();
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Event::Closed(format!("reading its output failed: {e}")),
        };
        if buf.is_empty() {
            return if line.is_empty() {
                Event::Closed("the engine closed its output".to_owned())
            } else {
                Event::Line(text(line))
            };
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                if line.len() + i > MAX_LINE {
                    return Event::TooLong;
                }
                line.extend_from_slice(&buf[..i]);
                reader.consume(i + 1);
                return Event::Line(text(line));
            }
            None => {
                let n = buf.len();
                if line.len() + n > MAX_LINE {
                    return Event::TooLong;
                }
                line.extend_from_slice(buf);
                reader.consume(n);
            }
        }
    }
}

fn text(mut line: Vec<u8>) -> String {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded() {
        let mut data = b"uciok\r\nid name x\n".to_vec();
        data.extend(std::iter::repeat_n(b'a', MAX_LINE + 1));
        data.push(b'\n');
        let mut r = BufReader::with_capacity(100, &data[..]);
        assert!(matches!(read_line(&mut r), Event::Line(l) if l == "uciok"));
        assert!(matches!(read_line(&mut r), Event::Line(l) if l == "id name x"));
        assert!(matches!(read_line(&mut r), Event::TooLong));

        let exact = vec![b'b'; MAX_LINE];
        let mut r = BufReader::with_capacity(100, &exact[..]);
        assert!(matches!(read_line(&mut r), Event::Line(l) if l.len() == MAX_LINE));
        assert!(matches!(read_line(&mut r), Event::Closed(_)));

        let bad = b"\xff\xfeok\n";
        let mut r = BufReader::new(&bad[..]);
        assert!(matches!(read_line(&mut r), Event::Line(l) if l.ends_with("ok")));
    }
}
