//! `arbiter uci`: the engine behind the UCI protocol, for standard chess, Chess960
//! (`UCI_Chess960`: X-FEN or Shredder-FEN positions, castling as the king taking its own rook)
//! and crazyhouse (`UCI_Variant`), so that chess GUIs and python-chess can drive it.
//!
//! Commands: `uci`, `isready`, `setoption` (`Hash`, `Threads`, `MultiPV`, `Move Overhead`,
//! `UCI_Variant`, `UCI_Chess960`, `EvalFile`), `ucinewgame`, `position (startpos | fen FEN) [moves …]`, `go` (`wtime btime
//! winc binc movestogo depth nodes movetime mate infinite ponder`), `stop`, `ponderhit`, `quit`.
//! The search runs on its own thread; the input loop keeps reading, so `stop` and `isready`
//! are answered during a search. A search under `infinite` or `ponder` reports `bestmove` only
//! after `stop` (or `ponderhit` and the time it then allows), as the protocol requires.

use arbiter_core::crazyhouse::HouseRules;
use arbiter_core::{Chess, Crazyhouse, Notation, Position};
use arbiter_engine::analyze::pv_text;
use arbiter_engine::score::Reported;
use arbiter_engine::time::budget;
use arbiter_engine::{
    Control, Engine, EnginePosition, GameClock, Info, Limits, SearchOptions, SystemTime,
};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where the engine's lines go (shared by the input loop and the search thread).
pub type Output = Arc<Mutex<dyn Write + Send>>;

fn say(out: &Output, line: &str) {
    let mut w = out.lock().unwrap_or_else(|e| e.into_inner());
    // A closed output (the GUI went away) is not worth failing for: `quit` follows.
    let _ = writeln!(w, "{line}").and_then(|()| w.flush());
}

/// The UCI options and their bounds.
const HASH_MAX: usize = 65_536;
const MULTIPV_MAX: usize = 64;
const OVERHEAD_MAX: u64 = 5_000;

#[derive(Debug, Clone)]
enum Board {
    Chess(Chess, Vec<u64>),
    Crazyhouse(Crazyhouse, Vec<u64>),
}

#[derive(Debug)]
struct Engines {
    chess: Engine<Chess>,
    crazyhouse: Engine<Crazyhouse>,
}

/// A search in flight.
struct Running {
    stop: Arc<AtomicBool>,
    /// Set by `ponderhit`: the search then ends after the time the clock allows from now.
    ponderhit: Arc<Mutex<Option<Instant>>>,
    /// Whether it runs until stopped (`infinite`, `ponder`).
    endless: bool,
    thread: JoinHandle<()>,
}

/// The UCI session: options, the current position, the engines (whose tables persist between
/// searches of a game) and the search in flight.
pub struct Session {
    out: Output,
    hash_mib: usize,
    multipv: usize,
    overhead_ms: u64,
    crazyhouse: bool,
    /// `UCI_Chess960`: FEN read as Chess960 (X-FEN or Shredder-FEN) and castling written as the
    /// king taking its own rook.
    chess960: bool,
    board: Board,
    engines: Arc<Mutex<Engines>>,
    running: Option<Running>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("board", &self.board)
            .finish_non_exhaustive()
    }
}

fn start_board(crazyhouse: bool, chess960: bool) -> Board {
    if crazyhouse {
        Board::Crazyhouse(Crazyhouse::new(HouseRules::Crazyhouse), Vec::new())
    } else if chess960 {
        let classical = Chess::chess960_start(arbiter_core::chess::chess960::CLASSICAL);
        Board::Chess(classical.expect("in range"), Vec::new())
    } else {
        Board::Chess(Chess::new(), Vec::new())
    }
}

impl Session {
    /// A session writing to `out`.
    pub fn new(out: Output) -> Session {
        let hash_mib = 16;
        Session {
            out,
            hash_mib,
            multipv: 1,
            overhead_ms: 30,
            crazyhouse: false,
            chess960: false,
            board: start_board(false, false),
            engines: Arc::new(Mutex::new(Engines {
                chess: Engine::new(hash_mib),
                crazyhouse: Engine::new(hash_mib),
            })),
            running: None,
        }
    }

    /// Handles one input line; false after `quit`.
    pub fn handle(&mut self, line: &str) -> bool {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&command, args)) = words.split_first() else {
            return true;
        };
        match command {
            "uci" => {
                say(
                    &self.out,
                    &format!("id name Arbiter {}", env!("CARGO_PKG_VERSION")),
                );
                say(&self.out, "id author the Arbiter developers");
                say(
                    &self.out,
                    &format!("option name Hash type spin default 16 min 1 max {HASH_MAX}"),
                );
                say(
                    &self.out,
                    "option name Threads type spin default 1 min 1 max 1",
                );
                say(
                    &self.out,
                    &format!("option name MultiPV type spin default 1 min 1 max {MULTIPV_MAX}"),
                );
                say(
                    &self.out,
                    &format!(
                        "option name Move Overhead type spin default 30 min 0 max {OVERHEAD_MAX}"
                    ),
                );
                say(&self.out, "option name Ponder type check default false");
                say(
                    &self.out,
                    "option name UCI_Variant type combo default chess var chess var crazyhouse",
                );
                say(
                    &self.out,
                    "option name UCI_Chess960 type check default false",
                );
                say(
                    &self.out,
                    "option name EvalFile type string default <built-in>",
                );
                say(&self.out, "uciok");
            }
            "isready" => say(&self.out, "readyok"),
            "setoption" => self.set_option(args),
            "ucinewgame" => {
                self.finish();
                let mut e = self.engines.lock().unwrap_or_else(|e| e.into_inner());
                e.chess.clear();
                e.crazyhouse.clear();
                drop(e);
                self.board = start_board(self.crazyhouse, self.chess960);
            }
            "position" => {
                self.finish();
                if let Err(e) = self.set_position(args) {
                    say(&self.out, &format!("info string error: {e}"));
                }
            }
            "go" => {
                self.finish();
                self.go(args);
            }
            "stop" => {
                if let Some(r) = &self.running {
                    r.stop.store(true, Ordering::Relaxed);
                }
                self.finish();
            }
            "ponderhit" => {
                if let Some(r) = &self.running {
                    *r.ponderhit.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                }
            }
            "quit" => {
                if let Some(r) = &self.running {
                    r.stop.store(true, Ordering::Relaxed);
                }
                self.finish();
                return false;
            }
            _ => say(
                &self.out,
                &format!("info string unknown command: {command}"),
            ),
        }
        true
    }

    /// Waits for the search in flight, if any (after `stop`, it ends within a few ms).
    fn finish(&mut self) {
        if let Some(r) = self.running.take() {
            if !r.thread.is_finished() && !r.stop.load(Ordering::Relaxed) {
                // A new command while searching: UCI says the GUI sends `stop` first; be safe.
                r.stop.store(true, Ordering::Relaxed);
            }
            let _ = r.thread.join();
        }
    }

    fn set_option(&mut self, args: &[&str]) {
        // setoption name <id…> [value <x…>]
        let text = args.join(" ");
        let Some(rest) = text.strip_prefix("name ") else {
            say(&self.out, "info string error: setoption needs a name");
            return;
        };
        let (name, value) = match rest.split_once(" value ") {
            Some((n, v)) => (n.trim(), v.trim()),
            None => (rest.trim(), ""),
        };
        let number = |max: u64| value.parse::<u64>().ok().filter(|v| *v <= max);
        let result = match name.to_ascii_lowercase().as_str() {
            "hash" => number(HASH_MAX as u64).filter(|v| *v >= 1).map(|v| {
                self.finish();
                self.hash_mib = v as usize;
                let mut e = self.engines.lock().unwrap_or_else(|e| e.into_inner());
                e.chess.resize(self.hash_mib);
                e.crazyhouse.resize(self.hash_mib);
            }),
            "threads" => number(1).filter(|v| *v == 1).map(|_| ()),
            "multipv" => number(MULTIPV_MAX as u64)
                .filter(|v| *v >= 1)
                .map(|v| self.multipv = v as usize),
            "move overhead" => number(OVERHEAD_MAX).map(|v| self.overhead_ms = v),
            "ponder" => Some(()),
            "uci_variant" => match value {
                "chess" | "crazyhouse" => {
                    self.crazyhouse = value == "crazyhouse";
                    self.board = start_board(self.crazyhouse, self.chess960);
                    Some(())
                }
                _ => None,
            },
            "uci_chess960" => match value {
                "true" | "false" => {
                    self.chess960 = value == "true";
                    self.board = start_board(self.crazyhouse, self.chess960);
                    Some(())
                }
                _ => None,
            },
            // Standard chess's and Chess960's evaluation: the built-in network (`<built-in>`,
            // the default, or `built-in`), the hand-written one (`none`, or empty), or a
            // network file (`arbiter nnue train`). Crazyhouse keeps its own.
            "evalfile" => {
                let value = match value {
                    "<built-in>" => crate::nnue::BUILT_IN,
                    "" | "<empty>" => crate::nnue::NONE,
                    other => other,
                };
                let chess = arbiter_core::Variant::Chess.name();
                let network = match crate::nnue::evaluation(value, chess, "EvalFile") {
                    Ok(e) => e.network_for::<Chess>(chess),
                    Err(e) => {
                        say(&self.out, &format!("info string error: {e}"));
                        return;
                    }
                };
                self.finish();
                let mut e = self.engines.lock().unwrap_or_else(|e| e.into_inner());
                e.chess.set_network(network);
                Some(())
            }
            _ => {
                say(&self.out, &format!("info string unknown option: {name}"));
                return;
            }
        };
        if result.is_none() {
            say(
                &self.out,
                &format!("info string error: invalid value for {name}: '{value}'"),
            );
        }
    }

    fn set_position(&mut self, args: &[&str]) -> Result<(), String> {
        let moves_at = args
            .iter()
            .position(|a| *a == "moves")
            .unwrap_or(args.len());
        let (setup, moves) = (&args[..moves_at], args.get(moves_at + 1..).unwrap_or(&[]));
        let board = match setup.split_first() {
            Some((&"startpos", [])) => start_board(self.crazyhouse, self.chess960),
            Some((&"fen", fen)) if !fen.is_empty() => {
                let fen = fen.join(" ");
                if self.crazyhouse {
                    let zh = Crazyhouse::from_fen(&fen, HouseRules::Crazyhouse)
                        .map_err(|e| format!("fen: {e}"))?;
                    Board::Crazyhouse(zh, Vec::new())
                } else {
                    Board::Chess(
                        Chess::from_fen_as(&fen, self.chess960).map_err(|e| format!("fen: {e}"))?,
                        Vec::new(),
                    )
                }
            }
            _ => return Err("expected 'position startpos' or 'position fen FEN'".into()),
        };
        fn play<P: Position>(
            pos: &mut P,
            history: &mut Vec<u64>,
            moves: &[&str],
        ) -> Result<(), String> {
            crate::play_line(pos, history, moves, Notation::Uci)
                .map_err(|(_, e)| format!("moves: {e}"))
        }
        self.board = match board {
            Board::Chess(mut p, mut h) => {
                play(&mut p, &mut h, moves)?;
                Board::Chess(p, h)
            }
            Board::Crazyhouse(mut p, mut h) => {
                play(&mut p, &mut h, moves)?;
                Board::Crazyhouse(p, h)
            }
        };
        Ok(())
    }

    fn go(&mut self, args: &[&str]) {
        let mut limits = Limits::default();
        let mut clock = GameClock::default();
        let mut has_clock = false;
        let mut ponder = false;
        let mut i = 0;
        while i < args.len() {
            let next = args.get(i + 1).and_then(|v| v.parse::<i64>().ok());
            let ms = next.map(|v| v.max(0) as u64);
            let mut takes_value = true;
            match args[i] {
                "wtime" => (clock.time_ms[0], has_clock) = (ms.unwrap_or(0), true),
                "btime" => (clock.time_ms[1], has_clock) = (ms.unwrap_or(0), true),
                "winc" => clock.increment_ms[0] = ms.unwrap_or(0),
                "binc" => clock.increment_ms[1] = ms.unwrap_or(0),
                "movestogo" => clock.moves_to_go = ms.map(|v| v.clamp(1, 1000) as u32),
                "depth" => limits.depth = ms.map(|v| v.clamp(1, 100) as u32),
                "nodes" => limits.nodes = ms.map(|v| v.max(1)),
                "movetime" => limits.movetime_ms = ms.map(|v| v.max(1)),
                "mate" => limits.depth = ms.map(|v| (v.clamp(1, 50) * 2) as u32),
                "infinite" => (limits.infinite, takes_value) = (true, false),
                "ponder" => (ponder, takes_value) = (true, false),
                _ => takes_value = false,
            }
            i += if takes_value { 2 } else { 1 };
        }
        if has_clock {
            limits.clock = Some(clock);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let ponderhit = Arc::new(Mutex::new(None));
        let job = Job {
            out: Arc::clone(&self.out),
            engines: Arc::clone(&self.engines),
            limits,
            ponder,
            options: SearchOptions {
                multipv: self.multipv,
                move_overhead_ms: self.overhead_ms,
            },
            stop: Arc::clone(&stop),
            ponderhit: Arc::clone(&ponderhit),
        };
        let board = self.board.clone();
        let thread = std::thread::spawn(move || match board {
            Board::Chess(p, h) => job.run(&p, &h, |e| &mut e.chess),
            Board::Crazyhouse(p, h) => job.run(&p, &h, |e| &mut e.crazyhouse),
        });
        self.running = Some(Running {
            stop,
            ponderhit,
            endless: limits.infinite || ponder,
            thread,
        });
    }
}

struct Job {
    out: Output,
    engines: Arc<Mutex<Engines>>,
    limits: Limits,
    ponder: bool,
    options: SearchOptions,
    stop: Arc<AtomicBool>,
    ponderhit: Arc<Mutex<Option<Instant>>>,
}

impl Job {
    fn run<P: EnginePosition>(
        self,
        pos: &P,
        history: &[u64],
        pick: impl Fn(&mut Engines) -> &mut Engine<P>,
    ) {
        let waits = self.limits.infinite || self.ponder;
        // Pondering searches without a limit; after `ponderhit` a watcher stops it when the
        // clock's budget, counted from the ponderhit, is spent.
        let mut search_limits = self.limits;
        if self.ponder {
            search_limits.infinite = true;
        }
        let watcher = self.ponder.then(|| {
            let (stop, hit) = (Arc::clone(&self.stop), Arc::clone(&self.ponderhit));
            let timed = Limits {
                infinite: false,
                ..self.limits
            };
            let soft = budget(&timed, pos.turn(), self.options.move_overhead_ms).map(|b| b.soft_ms);
            std::thread::spawn(move || {
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let at = *hit.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(at) = at {
                        match soft {
                            Some(ms) if at.elapsed() < Duration::from_millis(ms) => {}
                            // No time limit: search on until `stop` (or the depth/node limit).
                            None if timed.depth.is_some()
                                || timed.nodes.is_some()
                                || timed.infinite => {}
                            _ => {
                                stop.store(true, Ordering::Relaxed);
                                return;
                            }
                        }
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        });
        let out = Arc::clone(&self.out);
        let mut info = |i: &Info<'_, P::Move>| {
            let line = arbiter_engine::analyze::Progress {
                depth: i.depth,
                seldepth: i.seldepth,
                multipv: i.multipv,
                score: Reported::of(i.score),
                nodes: i.nodes,
                nps: i.nps(),
                hashfull: i.hashfull,
                time_ms: i.time_ms,
                pv: pv_text(pos, i.pv),
            };
            say(&out, &line.to_string());
        };
        let result = {
            let mut engines = self.engines.lock().unwrap_or_else(|e| e.into_inner());
            let engine = pick(&mut engines);
            engine.search(
                pos,
                history,
                &search_limits,
                &self.options,
                Control {
                    stop: &self.stop,
                    time: &SystemTime::new(),
                },
                &mut info,
            )
        };
        // Under `infinite` (and while pondering) `bestmove` waits for `stop` or `ponderhit`.
        while waits
            && !self.stop.load(Ordering::Relaxed)
            && !(self.ponder
                && self
                    .ponderhit
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .is_some())
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = watcher {
            let _ = w.join();
        }
        let line = match result.best {
            None => "bestmove (none)".to_owned(),
            Some(best) => {
                let mut text = format!("bestmove {}", pos.move_to_uci(best));
                if let Some(reply) = result.ponder {
                    let mut after = pos.clone();
                    after.play_unchecked(best);
                    text.push_str(&format!(" ponder {}", after.move_to_uci(reply)));
                }
                text
            }
        };
        say(&self.out, &line);
    }
}

/// Runs a UCI session over `input` until `quit` or the end of the input. At the end of the
/// input a search with limits is let finish (so `echo "go depth 8" | arbiter uci` prints its
/// result); an `infinite` or pondering search is stopped.
pub fn run(input: impl BufRead, out: Output) -> std::io::Result<()> {
    let mut session = Session::new(out);
    for line in input.lines() {
        if !session.handle(&line?) {
            return Ok(());
        }
    }
    if let Some(r) = session.running.take() {
        if r.endless {
            r.stop.store(true, Ordering::Relaxed);
        }
        let _ = r.thread.join();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn session(script: &str) -> String {
        let sink = Sink::default();
        let out: Output = Arc::new(Mutex::new(sink.clone()));
        run(script.as_bytes(), out).unwrap();
        String::from_utf8(sink.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn handshake_and_a_depth_search() {
        let text = session("uci\nisready\nposition startpos moves e2e4 e7e5\ngo depth 4\n");
        assert!(text.contains("uciok\n") && text.contains("readyok\n"));
        assert!(text.contains("option name UCI_Variant type combo"));
        let best = text.lines().find(|l| l.starts_with("bestmove ")).unwrap();
        assert!(best.contains(" ponder "), "{best}");
        assert!(text.lines().any(|l| l.starts_with("info depth 4 ")));
    }

    #[test]
    fn no_moves_mate_and_crazyhouse_drops() {
        let text = session("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1\ngo depth 3\n");
        assert!(text.contains("bestmove (none)"), "{text}");
        let text = session("position fen 6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1\ngo mate 1\n");
        assert!(
            text.contains("score mate 1") && text.contains("bestmove d1d8"),
            "{text}"
        );
        let text = session(
            "setoption name UCI_Variant value crazyhouse\nposition fen 6k1/5ppp/8/8/8/8/5PPP/6K1[R] w - - 0 1\ngo depth 3\n",
        );
        assert!(
            text.contains("bestmove R@d8") || text.contains("bestmove R@"),
            "{text}"
        );
        assert!(text.contains("score mate 1"), "{text}");
    }

    #[test]
    fn chess960_positions_and_castling() {
        // King b1 with its rook on a1: castling long is written b1a1 (the king lands on c1, the
        // rook on d1), and the search goes on from there.
        let fen = "1r2k1r1/pppppppp/8/8/8/8/8/RK6 w A - 0 1";
        let text = session(&format!(
            "uci\nsetoption name UCI_Chess960 value true\nposition fen {fen} moves b1a1 b8a8\ngo depth 2\n"
        ));
        assert!(text.contains("option name UCI_Chess960 type check default false"));
        assert!(!text.contains("error"), "{text}");
        assert!(text.contains("bestmove "), "{text}");
        // Without UCI_Chess960 the right on a king off the e file is refused, pointing at
        // Chess960; `startpos` under UCI_Chess960 is the classical arrangement.
        let text = session(&format!("position fen {fen}\nisready\n"));
        assert!(
            text.contains("info string error") && text.contains("chess960"),
            "{text}"
        );
        let text = session(
            "setoption name UCI_Chess960 value true\nposition startpos moves e1h1\nisready\n",
        );
        assert!(text.contains("error"), "castling through pieces: {text}");
        let text = session(
            "setoption name UCI_Chess960 value true\nposition startpos moves g1f3 g8f6 g2g3 g7g6 f1g2 f8g7 e1h1 e8h8\nisready\n",
        );
        assert!(!text.contains("error"), "{text}");
    }

    #[test]
    fn bad_input_is_reported_and_ignored() {
        let text = session(
            "position fen not-a-fen\nposition startpos moves e2e5\nsetoption name Hash value 0\nsetoption name MultiPV value x\nfoo\nisready\n",
        );
        assert_eq!(text.matches("info string error").count(), 4, "{text}");
        assert!(text.contains("unknown command: foo") && text.ends_with("readyok\n"));
    }

    #[test]
    fn eval_file_chooses_the_built_in_network_a_file_or_the_hand_written_evaluation() {
        // A network that says +123 for whoever is to move: a one-ply search scores −123.
        let flat = crate::nnue::constant_network();
        let dir = std::env::temp_dir().join(format!("arbiter-uci-net-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("flat.nnue");
        std::fs::write(&path, flat.to_bytes()).unwrap();
        let path = path.display();
        // Each session ends with its search: the end of the input lets it finish.
        let depth_one = |script: String| {
            let text = session(&script);
            let line = text.lines().find(|l| l.starts_with("info depth 1 "));
            (line.unwrap_or_default().to_owned(), text)
        };
        let (with_net, text) = depth_one(format!(
            "uci\nsetoption name EvalFile value {path}\ngo depth 1\n"
        ));
        assert!(
            text.contains("option name EvalFile type string default <built-in>"),
            "{text}"
        );
        assert!(with_net.contains(" score cp -123 "), "{text}");
        // The built-in network (the default) and the hand-written evaluation score the start
        // position each its own way, whichever value names them.
        let score = |line: &str| {
            let cp = line.split(" score cp ").nth(1).unwrap_or_default();
            cp.split(' ').next().unwrap_or_default().to_owned()
        };
        let start = |value: &str| {
            let (line, text) = depth_one(format!(
                "setoption name EvalFile value {path}\nsetoption name EvalFile value {value}\n\
                 go depth 1\n"
            ));
            let cp = score(&line);
            assert!(!cp.is_empty() && cp != "-123", "{text}");
            cp
        };
        let built_in = start("<built-in>");
        assert_eq!(score(&depth_one("go depth 1\n".into()).0), built_in);
        assert_eq!(start("built-in"), built_in);
        let hand_written = start("none");
        assert_eq!(start("<empty>"), hand_written);
        assert_ne!(built_in, hand_written);
        let text = session(&format!(
            "setoption name EvalFile value {path}.missing\nisready\n"
        ));
        assert!(
            text.contains(&format!("info string error: EvalFile: {path}.missing")),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_megabyte_position_line_is_played_through() {
        // 100,000 knight moves (a 500 KB line, every position repeated thousands of times),
        // then a search from the position reached, with its whole history behind it; and a
        // long line broken by one bad move halfway is refused with one error.
        let shuffle = " g1f3 g8f6 f3g1 f6g8".repeat(25_000);
        let text = session(&format!(
            "position startpos moves{shuffle}\ngo depth 3\nposition startpos moves{shuffle} e2e5{shuffle}\nisready\n"
        ));
        assert!(text.contains("bestmove "), "{text}");
        assert_eq!(text.matches("info string error").count(), 1, "{text}");
        assert!(text.ends_with("readyok\n"));
    }

    #[test]
    fn infinite_waits_for_stop_and_multipv_lines() {
        let sink = Sink::default();
        let out: Output = Arc::new(Mutex::new(sink.clone()));
        let mut s = Session::new(out);
        s.handle("setoption name MultiPV value 3");
        s.handle("position startpos");
        s.handle("go infinite");
        std::thread::sleep(Duration::from_millis(200));
        let before = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(!before.contains("bestmove"));
        s.handle("stop");
        let after = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert_eq!(after.matches("bestmove").count(), 1);
        assert!(after.contains(" multipv 3 "));
        s.handle("quit");
    }
}
