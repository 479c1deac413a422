//! `arbiter`: the command-line front of Arbiter. Argument parsing only; the work is in the
//! library half of this crate and in `arbiter-core`.

use arbiter_cli::{CliError, load_position};
use arbiter_core::{Chess, Crazyhouse, Glinski, Locale, TextStyle, Variant};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::{Read, Write};
use std::process::ExitCode;

/// mimalloc: the gRPC paths allocate many small, short-lived buffers (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(feature = "bench")]
mod bench;
mod client;
mod worker;

#[derive(Parser, Debug)]
#[command(
    name = "arbiter",
    version,
    about = "Arbiter: chess rules, analysis and game services"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
enum LocaleArg {
    /// K Q R B N
    English,
    /// R D T A C (re, donna, torre, alfiere, cavallo)
    Italian,
}

impl From<LocaleArg> for Locale {
    fn from(l: LocaleArg) -> Locale {
        match l {
            LocaleArg::English => Locale::English,
            LocaleArg::Italian => Locale::Italian,
        }
    }
}

#[derive(clap::Args, Debug)]
struct PositionArgs {
    /// Variant name (chess, crazyhouse, bughouse, glinski, byzantine, byzantine-citadel,
    /// chess960).
    #[arg(long, default_value = "chess", value_parser = parse_variant)]
    variant: Variant,
    /// The position string (FEN for chess; X-FEN, Shredder-FEN or a start position's number
    /// 0-959 for chess960; the hexchess string for Glinski); the variant's start position when
    /// absent (chess960: 518, the classical arrangement).
    #[arg(long)]
    position: Option<String>,
    /// Read the position as python-chess does: castling rights that do not fit the board and
    /// impossible en passant squares are dropped, each correction reported on stderr.
    #[arg(long)]
    lenient: bool,
    /// A rule option NAME=VALUE, repeatable (Byzantine: stalemate=wins|loses,
    /// facing_pawns=on|off).
    #[arg(long = "rule", value_name = "NAME=VALUE")]
    rules: Vec<String>,
}

impl PositionArgs {
    fn load(&self) -> Result<arbiter_core::AnyPosition, CliError> {
        if !self.lenient {
            return load_position(self.variant, self.position.as_deref(), &self.rules);
        }
        let (pos, corrections) = arbiter_cli::load_position_lenient(
            self.variant,
            self.position.as_deref().unwrap_or_default(),
            &self.rules,
        )?;
        for c in corrections {
            eprintln!("note: --position {}: {c}", c.field());
        }
        Ok(pos)
    }
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    s.parse::<Variant>().map_err(|e| e.to_string())
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Count the leaf nodes of the legal move tree (the last line is the total alone).
    Perft {
        #[command(flatten)]
        pos: PositionArgs,
        /// Depth in plies.
        #[arg(long)]
        depth: u32,
        /// Print each first move with its count before the total.
        #[arg(long)]
        divide: bool,
    },
    /// List every legal move, one per line, in UCI notation.
    Moves {
        #[command(flatten)]
        pos: PositionArgs,
    },
    /// Play moves (UCI or SAN) and print the resulting position string.
    Play {
        #[command(flatten)]
        pos: PositionArgs,
        /// SAN piece letters of the moves.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
        /// The moves, in order.
        moves: Vec<String>,
    },
    /// Print `ongoing` or the result and reason, plus any claimable draw, after optional moves.
    Status {
        #[command(flatten)]
        pos: PositionArgs,
        /// SAN piece letters of the moves.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
        /// Moves to play first (their history counts for repetition).
        moves: Vec<String>,
    },
    /// Search a position with the engine: `info` lines as it deepens, then `bestmove MOVE`
    /// (coordinate notation, as `moves` prints; `(none)` without a legal move). With
    /// `--engine NAME=PATH[,KEY=VALUE]...` the search runs on that external UCI engine
    /// (Stockfish; Fairy-Stockfish for crazyhouse and bughouse) instead of the built-in one,
    /// with the same output.
    #[command(group(clap::ArgGroup::new("limit").required(true).args(["depth", "movetime", "nodes"])))]
    Analyze {
        #[command(flatten)]
        pos: PositionArgs,
        /// Search to this depth in plies (1 to 100).
        #[arg(long)]
        depth: Option<u32>,
        /// Search for this many milliseconds.
        #[arg(long)]
        movetime: Option<u64>,
        /// Search this many nodes (the result is reproducible).
        #[arg(long)]
        nodes: Option<u64>,
        /// Lines to report (1 to 64).
        #[arg(long, default_value_t = 1)]
        multipv: usize,
        /// Transposition table size in MiB (1 to 65536).
        #[arg(long, default_value_t = 64)]
        hash: usize,
        /// Evaluation terms to switch off, comma-separated, for measuring what each is worth
        /// in self-play (Glinski and Byzantine): mobility, centre, pawns, king, bare, citadel.
        #[arg(long, value_name = "TERMS", default_value = "")]
        eval_off: String,
        /// Standard chess's evaluation: `built-in` (the default: the network built into the
        /// engine), `none` (the hand-written evaluation), or a network file from `arbiter nnue
        /// train`, which must be for the position's variant.
        #[arg(long, value_name = "FILE|none|built-in")]
        net: Option<String>,
        /// Run the search on an external UCI engine: NAME=PATH[,KEY=VALUE]... with the keys
        /// processes, threads, hash (MiB; --hash otherwise), timeout (seconds of silence before
        /// the process is deemed hung and restarted), variants (e.g. chess+crazyhouse), and any
        /// other KEY=VALUE set as a UCI option (e.g. "Skill Level=10"). Example:
        /// --engine stockfish=/usr/games/stockfish,threads=2. Not for Glinski or Byzantine.
        #[arg(long, value_name = "SPEC")]
        engine: Option<String>,
        /// Moves played from the position first (UCI or SAN); the positions they pass through
        /// count for repetitions in the search.
        moves: Vec<String>,
    },
    /// Review every game of a PGN file locally (no server): each main-line position analysed,
    /// the games written back with `[%eval]` comments and NAGs for inaccuracies, mistakes and
    /// blunders; each game's accuracies on stderr.
    #[command(name = "analyze-pgn", group(clap::ArgGroup::new("limit").args(["depth", "nodes"])))]
    AnalyzePgn {
        /// The PGN file (`-` for standard input; at most 64 MiB).
        file: std::path::PathBuf,
        /// Search each position to this depth (1 to 100).
        #[arg(long)]
        depth: Option<u32>,
        /// Search each position this many nodes (1000 to 100000000; the default, 200000,
        /// when no limit is given). The result is reproducible.
        #[arg(long)]
        nodes: Option<u64>,
        /// Positions analysed at once, one thread each (1 to 64).
        #[arg(long, default_value_t = 1)]
        workers: usize,
        /// Transposition table of each search, MiB (1 to 1024).
        #[arg(long, default_value_t = 16)]
        hash: usize,
        /// Write the annotated PGN here instead of to standard output.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// A match between two players (two `arbiter` builds or settings, or `greedy`) on random
    /// openings played with colours swapped: a line per game, then the score and Elo ± 95 %.
    Selfplay {
        /// Variant name (not bughouse).
        #[arg(long, default_value = "chess", value_parser = parse_variant)]
        variant: Variant,
        /// A rule option NAME=VALUE, repeatable.
        #[arg(long = "rule", value_name = "NAME=VALUE")]
        rules: Vec<String>,
        /// Player A: the path of an `arbiter` binary, `greedy` or `random`.
        #[arg(long)]
        a: String,
        /// Player A's `analyze` arguments, e.g. "--nodes 50000 --hash 16".
        #[arg(long, default_value = "", allow_hyphen_values = true)]
        a_args: String,
        /// Player B: the path of an `arbiter` binary, `greedy` or `random`.
        #[arg(long)]
        b: String,
        /// Player B's `analyze` arguments.
        #[arg(long, default_value = "", allow_hyphen_values = true)]
        b_args: String,
        /// Openings, each played twice (1 to 100000).
        #[arg(long, default_value_t = 50)]
        pairs: usize,
        /// Random plies of each opening.
        #[arg(long, default_value_t = 6)]
        opening_plies: u32,
        /// Seed of the openings.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Plies after which a game is scored a draw (at most 10000: each engine move is given
        /// the whole game on its command line).
        #[arg(long, default_value_t = 300)]
        max_plies: u32,
        /// Games played at once (1 to 64).
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// A sequential test ELO0,ELO1 (e.g. 0,10; alpha = beta = 0.05): stop as soon as it
        /// accepts H0 (A − B = ELO0) or H1 (A − B = ELO1); --pairs is then the most played.
        #[arg(long, value_name = "ELO0,ELO1")]
        sprt: Option<String>,
        /// Play each `arbiter` build through `PATH uci`, one process per player and game
        /// thread for all its games (`ucinewgame` before each), so that it keeps its table and
        /// histories from move to move as in a real game; its arguments may be --nodes,
        /// --depth, --movetime, --hash and --net. Standard chess and crazyhouse only.
        #[arg(long)]
        uci: bool,
        /// A game clock BASE+INC in seconds (e.g. 10+0.1), with --uci: each engine is told
        /// both players' times (`go wtime … btime … winc … binc …`, besides any limits in its
        /// arguments) and loses when its time runs out.
        #[arg(long, value_name = "BASE+INC")]
        tc: Option<String>,
    },
    /// The standard chess, crazyhouse and Glinski weights' data and fitting (Texel's method):
    /// generate labelled positions by self-play, then tune the weights on them.
    Texel {
        #[command(subcommand)]
        step: TexelStep,
    },
    /// The evaluation network of standard chess: train one on positions from `arbiter texel
    /// generate` (which records each position's search score), for `analyze --net`.
    Nnue {
        #[command(subcommand)]
        step: NnueStep,
    },
    /// Speak UCI on stdin/stdout (standard chess, Chess960 through `UCI_Chess960`, crazyhouse
    /// through `UCI_Variant`), for chess GUIs and python-chess.
    Uci,
    /// Print the board as a text diagram, or as SVG with --svg (pieces as figures).
    Show {
        #[command(flatten)]
        pos: PositionArgs,
        /// Print an SVG picture instead of text (the last move highlighted).
        #[arg(long)]
        svg: bool,
        /// Write the pieces of the text diagram as Unicode chess symbols (White ♔♕♖♗♘♙, Black
        /// ♚♛♜♝♞♟; Byzantine elephant ♗/♝, counselor ♕/♛) instead of letters. Text only: refused
        /// together with --svg.
        #[arg(long, conflicts_with = "svg")]
        symbols: bool,
        /// SAN piece letters of the moves.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
        /// Moves to play first (UCI or SAN).
        moves: Vec<String>,
    },
    /// Run every Arbiter service in this process on one port (embedded default: in-process
    /// storage, no Redis): the rules and match services, with health and reflection.
    Serve {
        #[command(flatten)]
        server: Box<arbiter_server::ServerArgs>,
    },
    /// API keys for the servers' keys file (`--api-keys-file`; docs/security.md).
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Run batch-analysis workers: on the job queue in Redis (trusted machines: any number of
    /// these processes share the jobs that analysis services accept; SIGTERM hands running
    /// games back to the queue), or with --server as a remote worker over gRPC, whose key needs
    /// the analysis:worker scope (`arbiter worker --server URL --api-key-file F`).
    Worker {
        #[command(flatten)]
        worker: arbiter_analysis::WorkerArgs,
        #[command(flatten)]
        remote: worker::RemoteArgs,
    },
    /// Estimate this machine's clock offset from a server's time authority (NTP-style `Sync`
    /// exchanges; the best 3 of the last 8 by round trip).
    ClockSync {
        /// The server, e.g. http://127.0.0.1:50051.
        addr: String,
        /// Exchanges to make.
        #[arg(long, default_value_t = 8)]
        samples: usize,
    },
    /// A client of a running server: play a game, watch a match, join a pool, run a batch
    /// analysis (docs/cli.md, "arbiter client").
    Client(client::ClientArgs),
    /// Load generators for the services (built with the `bench` feature).
    #[cfg(feature = "bench")]
    Bench {
        #[command(subcommand)]
        target: arbiter_bench::command::BenchTarget,
    },
    /// Read PGN on stdin, validate every move, print normalised PGN.
    Pgn {
        /// Piece letters of the input SAN.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
        /// Piece letters of the output SAN (defaults to the input locale).
        #[arg(long, value_enum)]
        output_locale: Option<LocaleArg>,
    },
    /// Read bughouse BPGN on stdin, play every game on both boards, print normalised BPGN
    Bpgn {
        /// Piece letters of the SAN, in and out.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
    },
}

#[derive(Subcommand, Debug)]
enum TexelStep {
    /// Self-play games at a fixed node count from seeded random openings; writes each quiet
    /// position with its game's result ("POSITION | white's points"). The file depends only on
    /// the flags and the build, not on --threads.
    Generate {
        /// The variant: chess, crazyhouse or glinski.
        #[arg(long, value_enum, default_value = "chess")]
        variant: TexelVariant,
        /// Games to play (1 to 1000000).
        #[arg(long, default_value_t = 1000)]
        games: usize,
        /// Nodes searched per move (100 to 10000000).
        #[arg(long, default_value_t = 3000)]
        nodes: u64,
        /// Seed of the openings.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Random plies of each opening (0 to 40; not recorded).
        #[arg(long, default_value_t = 8)]
        opening_plies: u32,
        /// Plies after which a game is scored a draw (1 to 2000).
        #[arg(long, default_value_t = 400)]
        max_plies: u32,
        /// Games played at once (1 to 64).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Transposition table of each thread, MiB (1 to 1024).
        #[arg(long, default_value_t = 8)]
        hash: usize,
        /// The games' evaluation: `built-in` (the default: the network built into the
        /// engine), `none` (the hand-written evaluation), or a network file from `arbiter nnue
        /// train`.
        #[arg(long, value_name = "FILE|none|built-in")]
        net: Option<String>,
        /// The file to write.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Fits the scaling K to the current weights, then tunes every weight by Texel's local
    /// search on a file from `generate`; prints the tuned weights as Rust source.
    Tune {
        /// The variant of the positions (and of the weights tuned): chess, crazyhouse or
        /// glinski.
        #[arg(long, value_enum, default_value = "chess")]
        variant: TexelVariant,
        /// The labelled positions.
        #[arg(long)]
        data: std::path::PathBuf,
        /// Use at most this many positions (the file's first).
        #[arg(long, default_value_t = 10_000_000)]
        limit: usize,
        /// The most passes over all weights (1 to 1000).
        #[arg(long, default_value_t = 40)]
        passes: usize,
        /// The first step, halved when a pass changes nothing (1 to 256).
        #[arg(long, default_value_t = 8)]
        step: i32,
        /// Threads for the error sums (1 to 64).
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
}

/// The steps of `arbiter nnue`.
#[derive(Subcommand, Debug)]
enum NnueStep {
    /// Trains a network on standard chess positions labelled `POSITION | RESULT | SCORE`
    /// (`arbiter texel generate`) and writes it. The result depends on the flags and the data
    /// only, not on --threads.
    Train {
        /// The labelled positions.
        #[arg(long)]
        data: std::path::PathBuf,
        /// The network file to write.
        #[arg(long)]
        out: std::path::PathBuf,
        /// Use at most this many positions (the file's first; 2048 to 100000000). Each takes
        /// about 70 bytes of memory while training (20,000,000: about 1.4 GB).
        #[arg(long, default_value_t = 20_000_000)]
        limit: usize,
        /// The hidden layer's width (8 to 1024; default 128). With --init, the network's own
        /// width, and a different --hidden is refused.
        #[arg(long)]
        hidden: Option<usize>,
        /// Continue training from this network (trained earlier, perhaps on other data)
        /// instead of random weights.
        #[arg(long)]
        init: Option<std::path::PathBuf>,
        /// Passes over the data (1 to 1000).
        #[arg(long, default_value_t = 12)]
        epochs: usize,
        /// The epoch (counted from 0; 0 to --epochs) from which the step size is a tenth
        /// (default: two thirds of --epochs, rounded up).
        #[arg(long)]
        drop_at: Option<usize>,
        /// Positions per step (16 to 1000000).
        #[arg(long, default_value_t = 16_384)]
        batch: usize,
        /// Adam's step size (0 to 1).
        #[arg(long, default_value_t = 0.001)]
        learning_rate: f32,
        /// The weight of the search's score in each target, the rest being the game's result
        /// (0 to 1).
        #[arg(long, default_value_t = 0.75)]
        lambda: f64,
        /// Texel's K, the scale from centipawns to an expected score (0.1 to 10; the fitted
        /// value for the hand-written evaluation is about 1.01).
        #[arg(long, default_value_t = 1.01)]
        k: f64,
        /// Every this-many-th block of 1,024 consecutive positions (mostly whole games) is
        /// held out for the validation loss (2 to 1000).
        #[arg(long, default_value_t = 20)]
        validation_every: usize,
        /// Seed of the initial weights and the order of the positions.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Threads (1 to 16).
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
}

/// The variants whose evaluation weights `arbiter texel` tunes.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum TexelVariant {
    Chess,
    Crazyhouse,
    Glinski,
}

fn in_range<T: PartialOrd + Copy + std::fmt::Display>(
    flag: &str,
    value: T,
    low: T,
    high: T,
) -> Result<T, CliError> {
    // Written so that NaN is out of range too.
    if !(low..=high).contains(&value) {
        return Err(CliError::input(
            flag,
            format!("{value} is out of range ({low} to {high})"),
        ));
    }
    Ok(value)
}

fn analyze_pgn(
    file: std::path::PathBuf,
    depth: Option<u32>,
    nodes: Option<u64>,
    workers: usize,
    hash: usize,
    out: Option<std::path::PathBuf>,
) -> Result<String, CliError> {
    use arbiter_cli::review::{MAX_INPUT, ReviewConfig, ReviewProgress, review};
    use std::io::IsTerminal;
    let cfg = ReviewConfig {
        depth: depth.map(|d| in_range("--depth", d, 1, 100)).transpose()?,
        nodes: match (depth, nodes) {
            (None, None) => Some(200_000),
            (_, n) => n
                .map(|n| in_range("--nodes", n, 1000, 100_000_000))
                .transpose()?,
        },
        workers: in_range("--workers", workers, 1, 64)?,
        hash_mib: in_range("--hash", hash, 1, 1024)?,
    };
    let mut bytes = Vec::new();
    let name = file.display().to_string();
    let read = if name == "-" {
        std::io::stdin()
            .take(MAX_INPUT as u64 + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(&file)
            .and_then(|f| f.take(MAX_INPUT as u64 + 1).read_to_end(&mut bytes))
    };
    read.map_err(|e| CliError::input(format!("FILE: {name}"), e))?;
    if bytes.len() > MAX_INPUT {
        return Err(CliError::input(
            "FILE",
            format!("{name} is larger than {} MiB", MAX_INPUT >> 20),
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| CliError::input("FILE", format!("{name} is not UTF-8")))?;
    // A bar redrawn in place on a terminal; otherwise a line every 5 %.
    let terminal = std::io::stderr().is_terminal();
    let mut shown = 0;
    let mut show = |p: &ReviewProgress| {
        let eta = p.eta_s().map_or("-".to_owned(), |s| {
            format!("{}:{:02}", s as u64 / 60, s as u64 % 60)
        });
        let line = format!(
            "{}/{} positions, {:.1}/s, {eta} left",
            p.done,
            p.total,
            p.rate()
        );
        if terminal {
            let filled = p.done * 30 / p.total;
            eprint!(
                "\r[{}{}] {line}  ",
                "#".repeat(filled),
                ".".repeat(30 - filled)
            );
            if p.done == p.total {
                eprintln!();
            }
        } else if p.done * 20 / p.total > shown || p.done == p.total {
            shown = p.done * 20 / p.total;
            eprintln!("analyze-pgn: {line}");
        }
    };
    // The games are written as they are reviewed, their summaries said as they are written.
    let mut summary = |s: &arbiter_cli::review::GameSummary| eprintln!("{s}");
    match out {
        None => {
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            review(&text, &cfg, &mut stdout, &mut summary, &mut show)?;
        }
        Some(path) => {
            let name = format!("--out: {}", path.display());
            let file = std::fs::File::create(&path).map_err(|e| CliError::input(&name, e))?;
            let mut file = std::io::BufWriter::new(file);
            if let Err(e) = review(&text, &cfg, &mut file, &mut summary, &mut show) {
                // Nothing (a refused file) or part of the games: not a review to keep.
                drop(file);
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        }
    }
    Ok(String::new())
}

fn nnue(step: NnueStep) -> Result<String, CliError> {
    let NnueStep::Train {
        data,
        out,
        limit,
        hidden,
        init,
        epochs,
        drop_at,
        batch,
        learning_rate,
        lambda,
        k,
        validation_every,
        seed,
        threads,
    } = step;
    let epochs = in_range("--epochs", epochs, 1, 1000)?;
    let cfg = arbiter_engine::nnue::train::TrainConfig {
        hidden: in_range("--hidden", hidden.unwrap_or(128), 8, 1024)?,
        epochs,
        batch: in_range("--batch", batch, 16, 1_000_000)?,
        learning_rate: in_range("--learning-rate", learning_rate, f32::MIN_POSITIVE, 1.0)?,
        drop_at: match drop_at {
            Some(d) => in_range("--drop-at", d, 0, epochs)?,
            None => (epochs * 2).div_ceil(3),
        },
        k: in_range("--k", k, 0.1, 10.0)?,
        seed,
        threads: in_range("--threads", threads, 1, 16)?,
    };
    let data_cfg = arbiter_cli::nnue::DataConfig {
        limit: in_range("--limit", limit, 2048, 100_000_000)?,
        lambda: in_range("--lambda", lambda, 0.0, 1.0)?,
        validation_every: in_range("--validation-every", validation_every, 2, 1000)?,
    };
    let init = match init {
        Some(path) => {
            let net = arbiter_cli::nnue::load_network(
                &path,
                arbiter_core::Variant::Chess.name(),
                "--init",
            )?;
            if let Some(hidden) = hidden
                && hidden != net.hidden()
            {
                return Err(CliError::input(
                    "--hidden",
                    format!(
                        "{hidden}, but the --init network has {} hidden units",
                        net.hidden()
                    ),
                ));
            }
            Some(net)
        }
        None => None,
    };
    let file = std::fs::File::open(&data)
        .map_err(|e| CliError::io(format!("--data: {}", data.display()), e))?;
    let summary = arbiter_cli::nnue::train_chess(
        std::io::BufReader::new(file),
        &data_cfg,
        &cfg,
        init.as_ref(),
        &mut |line| eprintln!("{line}"),
    )?;
    std::fs::write(&out, summary.network.to_bytes())
        .map_err(|e| CliError::io(format!("--out: {}", out.display()), e))?;
    let last = summary.epochs.last().map_or(0.0, |e| e.validation_loss);
    Ok(format!(
        "network {:016x} ({} hidden) trained on {} positions, validation loss {last:.6}, written to {}\n",
        summary.network.checksum(),
        summary.network.hidden(),
        summary.train,
        out.display()
    ))
}

fn texel(step: TexelStep) -> Result<String, CliError> {
    use arbiter_cli::texel::GenConfig;
    use arbiter_engine::tune::TuneConfig;
    match step {
        TexelStep::Generate {
            variant,
            games,
            nodes,
            seed,
            opening_plies,
            max_plies,
            threads,
            hash,
            net,
            out,
        } => {
            let name = match variant {
                TexelVariant::Chess => arbiter_core::Variant::Chess.name(),
                TexelVariant::Crazyhouse => arbiter_core::Variant::Crazyhouse.name(),
                TexelVariant::Glinski => arbiter_core::Variant::Glinski.name(),
            };
            let evaluation = match net {
                Some(value) => arbiter_cli::nnue::evaluation(&value, name, "--net")?,
                None => arbiter_engine::nnue::Evaluation::BuiltIn,
            };
            let cfg = GenConfig {
                games: in_range("--games", games, 1, 1_000_000)?,
                nodes: in_range("--nodes", nodes, 100, 10_000_000)?,
                seed,
                opening_plies: in_range("--opening-plies", opening_plies, 0, 40)?,
                max_plies: in_range("--max-plies", max_plies, 1, 2000)?,
                threads: in_range("--threads", threads, 1, 64)?,
                hash_mib: in_range("--hash", hash, 1, 1024)?,
                evaluation,
            };
            match variant {
                TexelVariant::Chess => texel_generate::<Chess>(&cfg, &out),
                TexelVariant::Crazyhouse => texel_generate::<Crazyhouse>(&cfg, &out),
                TexelVariant::Glinski => texel_generate::<Glinski>(&cfg, &out),
            }
        }
        TexelStep::Tune {
            variant,
            data,
            limit,
            passes,
            step,
            threads,
        } => {
            let cfg = TuneConfig {
                max_passes: in_range("--passes", passes, 1, 1000)?,
                start_step: in_range("--step", step, 1, 256)?,
                threads: in_range("--threads", threads, 1, 64)?,
            };
            match variant {
                TexelVariant::Chess => texel_tune::<Chess>(&cfg, &data, limit),
                TexelVariant::Crazyhouse => texel_tune::<Crazyhouse>(&cfg, &data, limit),
                TexelVariant::Glinski => texel_tune::<Glinski>(&cfg, &data, limit),
            }
        }
    }
}

fn texel_generate<P: arbiter_engine::tune::Tunable>(
    cfg: &arbiter_cli::texel::GenConfig,
    out: &std::path::Path,
) -> Result<String, CliError> {
    let file = std::fs::File::create(out)
        .map_err(|e| CliError::input(format!("--out: {}", out.display()), e))?;
    let mut file = std::io::BufWriter::new(file);
    let summary =
        arbiter_cli::texel::generate::<P>(cfg, &mut |line| writeln!(file, "{line}"), &|line| {
            eprintln!("{line}")
        })?;
    file.flush()
        .map_err(|e| CliError::io(format!("--out: {}", out.display()), e))?;
    let [w, d, b] = summary.results;
    Ok(format!(
        "{} games (white won {w}, drawn {d}, black won {b}), {} positions written to {}\n",
        summary.games,
        summary.positions,
        out.display()
    ))
}

fn texel_tune<P: arbiter_engine::tune::Tunable>(
    cfg: &arbiter_engine::tune::TuneConfig,
    data: &std::path::Path,
    limit: usize,
) -> Result<String, CliError> {
    let file = std::fs::File::open(data)
        .map_err(|e| CliError::input(format!("--data: {}", data.display()), e))?;
    let samples = arbiter_cli::texel::read_samples::<P>(std::io::BufReader::new(file), limit)?;
    if samples.is_empty() {
        return Err(CliError::input(
            "--data",
            format!("{} holds no positions", data.display()),
        ));
    }
    let report = arbiter_engine::tune::tune::<P>(&samples, &P::current(), cfg, &mut |line| {
        eprintln!("{line}")
    });
    Ok(format!(
        "K {:.4}, error {:.6} -> {:.6} after {} passes over {} positions\n{}\n",
        report.k,
        report.error_before,
        report.error_after,
        report.passes,
        samples.len(),
        P::rust_literal(&report.weights)
    ))
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io("cannot start the async runtime", e))
}

fn serve(server: arbiter_server::ServerArgs) -> Result<String, CliError> {
    arbiter_kit::tls::install_crypto_provider();
    runtime()?.block_on(async {
        let traces = arbiter_kit::init_tracing(&server.serve.log, "arbiter")
            .map_err(|e| CliError::input("", e))?;
        // Inside the runtime: the keys file is watched for changes from here on.
        let config = server.load().map_err(|e| CliError::input("", e))?;
        config.access.warn_if_exposed(server.serve.listen);
        let listener = tokio::net::TcpListener::bind(server.serve.listen)
            .await
            .map_err(|e| CliError::io(format!("--listen {}", server.serve.listen), e))?;
        arbiter_server::serve(listener, config, arbiter_kit::shutdown_signal())
            .await
            .map_err(|e| CliError::failed(format!("server failed: {e}")))?;
        traces.shutdown().await;
        Ok::<_, CliError>(())
    })?;
    Ok(String::new())
}

/// `arbiter keys new`: a new key and its keys-file entry.
#[derive(clap::Subcommand, Debug)]
enum KeysCommand {
    /// Make a new API key: the key (give it to the client: it is stored nowhere, only its
    /// SHA-256) and its `[[key]]` entry for the keys file. With --key-file the key goes to that
    /// new file (owner-only) and standard output holds the entry alone, ready to append to the
    /// keys file.
    New(NewKeyArgs),
}

#[derive(clap::Args, Debug)]
struct NewKeyArgs {
    /// The client the key belongs to (it owns what it creates; several keys may share one
    /// client, e.g. while a key is rotated): letters, digits and - _ . : @.
    #[arg(long)]
    client: String,
    /// A scope the key grants (repeatable; `all` for every scope): rules, matches:create,
    /// matches:read, matches:admin, clock:write, clock:read, matchmaking:queue,
    /// matchmaking:ratings, matchmaking:admin, analysis:live, analysis:batch, analysis:worker.
    #[arg(long = "scope", required = true)]
    scopes: Vec<String>,
    /// A rate limit for each method, in calls per second (burst: twice that).
    #[arg(long)]
    per_second: Option<u32>,
    /// The client's live-analysis engine time per minute, in seconds.
    #[arg(long)]
    engine_seconds_per_minute: Option<u32>,
    /// Write the key to this new file (mode 0600; an existing file is not overwritten).
    #[arg(long)]
    key_file: Option<std::path::PathBuf>,
}

fn new_key(args: &NewKeyArgs) -> Result<String, CliError> {
    use arbiter_kit::access::Scope;
    let mut scopes: Vec<String> = Vec::new();
    for name in &args.scopes {
        let named: Vec<String> = if name == "all" {
            Scope::names().into_iter().map(str::to_owned).collect()
        } else if Scope::parse(name).is_some() {
            vec![name.clone()]
        } else {
            return Err(CliError::input(
                "--scope",
                format!(
                    "unknown scope {name:?}; the scopes are {} (or all)",
                    Scope::names().join(", ")
                ),
            ));
        };
        for n in named {
            if !scopes.contains(&n) {
                scopes.push(n);
            }
        }
    }
    let made = arbiter_kit::keys::new_key(
        &args.client,
        &scopes,
        args.per_second,
        args.engine_seconds_per_minute,
    )
    .map_err(|e| CliError::input("--client", e))?;
    match &args.key_file {
        Some(path) => {
            write_secret(path, &made.key)
                .map_err(|e| CliError::io(format!("--key-file {}", path.display()), e))?;
            Ok(made.entry)
        }
        None => Ok(format!(
            "# The key (give it to the client; it is shown once and stored nowhere):\n# {}\n\n\
             # Its entry for the keys file:\n{}",
            made.key, made.entry
        )),
    }
}

/// Writes `secret` to a new file only its owner may read.
fn write_secret(path: &std::path::Path, secret: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    writeln!(file, "{secret}")
}

fn run_worker(args: &arbiter_analysis::WorkerArgs) -> Result<String, CliError> {
    arbiter_kit::tls::install_crypto_provider();
    let (redis, config) = args.load().map_err(|e| CliError::input("", e))?;
    runtime()?.block_on(async {
        let traces = arbiter_kit::init_tracing(&args.log, "arbiter-worker")
            .map_err(|e| CliError::input("", e))?;
        let metrics = match args.metrics.metrics_listen {
            Some(addr) => Some(
                arbiter_kit::metrics::start_on(addr)
                    .await
                    .map_err(|e| CliError::input("", e))?,
            ),
            None => None,
        };
        let health = match args.health_listen {
            Some(addr) => Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| CliError::io(format!("--health-listen {addr}"), e))?,
            ),
            None => None,
        };
        let time: std::sync::Arc<dyn arbiter_engine::TimeSource> =
            std::sync::Arc::new(arbiter_engine::SystemTime::new());
        let engines = arbiter_analysis::engines::EngineRegistry::start(&args.engines.config())
            .map_err(|e| CliError::input("--engine", e))?;
        arbiter_analysis::run_worker_process(
            &redis,
            config,
            time,
            std::sync::Arc::clone(&engines),
            health,
            arbiter_kit::shutdown_signal(),
        )
        .await
        .map_err(CliError::failed)?;
        engines.shut_down();
        if let Some(metrics) = metrics {
            metrics.stop().await;
        }
        traces.shutdown().await;
        Ok::<_, CliError>(())
    })?;
    Ok(String::new())
}

fn clock_sync(addr: &str, samples: usize) -> Result<String, CliError> {
    use arbiter_clock::sync::{Estimator, exchange};
    use arbiter_proto::clock::v1::clock_service_client::ClockServiceClient;
    use std::fmt::Write as _;
    use std::time::Duration;
    let samples = samples.clamp(1, 1000);
    runtime()?.block_on(async {
        let mut client = ClockServiceClient::connect(addr.to_owned())
            .await
            .map_err(|e| CliError::failed(format!("{addr}: {e}")))?;
        let local = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0))
        };
        let mut est = Estimator::new();
        let mut out = String::new();
        for i in 0..samples {
            let s = exchange(&mut client, local, Duration::ZERO, Duration::ZERO)
                .await
                .map_err(|e| CliError::failed(format!("Sync: {}", e.message())))?;
            let _ = writeln!(
                out,
                "sample {}: offset {} ms, round trip {} ms",
                i + 1,
                s.offset_ms(),
                s.round_trip_ms()
            );
            est.add(s);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let e = est
            .estimate()
            .ok_or_else(|| CliError::failed("no sample"))?;
        let _ = write!(
            out,
            "offset {} ms (server = local + offset), round trip {} ms, from the best {} of {}",
            e.offset_ms,
            e.round_trip_ms,
            arbiter_clock::sync::BEST.min(e.samples),
            e.samples
        );
        Ok::<_, CliError>(out)
    })
}

fn run(cli: Cli) -> Result<String, CliError> {
    Ok(match cli.command {
        Command::Perft { pos, depth, divide } => {
            let p = pos.load()?;
            arbiter_cli::perft(&p, depth, divide)
        }
        Command::Moves { pos } => arbiter_cli::moves(&pos.load()?),
        Command::Selfplay {
            variant,
            rules,
            a,
            a_args,
            b,
            b_args,
            pairs,
            opening_plies,
            seed,
            max_plies,
            concurrency,
            sprt,
            uci,
            tc,
        } => {
            use arbiter_cli::selfplay::{
                MatchConfig, Player, Sprt, parse_time_control, play_match,
            };
            let clock = tc
                .as_deref()
                .map(parse_time_control)
                .transpose()
                .map_err(|e| CliError::input("", e))?;
            let sprt = sprt
                .as_deref()
                .map(Sprt::parse)
                .transpose()
                .map_err(|e| CliError::input("", e))?;
            let pairs = in_range("--pairs", pairs, 1, 100_000)?;
            let concurrency = in_range("--concurrency", concurrency, 1, 64)?;
            let cfg = MatchConfig {
                variant,
                rules,
                pairs,
                opening_plies: opening_plies.min(1000),
                seed,
                // Every engine move is a process given the game's moves as arguments: 10,000
                // plies keep that far below the kernel's argument limit.
                max_plies: max_plies.clamp(1, 10_000),
                concurrency,
                sprt,
                uci,
                clock,
            };
            let report = play_match(
                &cfg,
                &Player::parse(&a, &a_args),
                &Player::parse(&b, &b_args),
                &|line| println!("{line}"),
            )?;
            format!("{report}\n")
        }
        Command::Texel { step } => texel(step)?,
        Command::Nnue { step } => nnue(step)?,
        Command::Uci => {
            let out: arbiter_cli::uci::Output =
                std::sync::Arc::new(std::sync::Mutex::new(std::io::stdout()));
            arbiter_cli::uci::run(std::io::stdin().lock(), out)
                .map_err(|e| CliError::io("reading stdin", e))?;
            String::new()
        }
        Command::Analyze {
            pos,
            depth,
            movetime,
            nodes,
            multipv,
            hash,
            eval_off,
            net,
            engine,
            moves,
        } => {
            let p = pos.load()?;
            if let Some(spec) = engine {
                if net.is_some() {
                    return Err(CliError::input(
                        "--net",
                        "sets the built-in engine's evaluation: not with --engine",
                    ));
                }
                if !eval_off.is_empty() {
                    return Err(CliError::input(
                        "--eval-off",
                        "switches off terms of the built-in engine's evaluation: not with --engine",
                    ));
                }
                let request = arbiter_cli::AnalyzeRequest {
                    depth,
                    movetime_ms: movetime,
                    nodes,
                    multipv,
                    hash_mib: hash,
                };
                let mut stdout = std::io::stdout();
                return arbiter_cli::analyze_with_engine(&p, &moves, &request, &spec, &mut stdout);
            }
            let terms = eval_off
                .split(',')
                .filter(|t| !t.is_empty())
                .map(|t| {
                    arbiter_engine::eval::Term::parse(t).ok_or_else(|| {
                        CliError::input(
                            "--eval-off",
                            format!(
                            "unknown term '{t}' (terms: mobility, centre, pawns, king, bare, citadel)"
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            arbiter_engine::eval::disable_terms(&terms);
            let request = arbiter_cli::AnalyzeRequest {
                depth,
                movetime_ms: movetime,
                nodes,
                multipv,
                hash_mib: hash,
            };
            let evaluation = match net {
                Some(value) => arbiter_cli::nnue::evaluation(
                    &value,
                    arbiter_core::Position::variant(&p).name(),
                    "--net",
                )?,
                None => arbiter_engine::nnue::Evaluation::BuiltIn,
            };
            let mut stdout = std::io::stdout();
            arbiter_cli::analyze(&p, &moves, &request, evaluation, &mut stdout)?
        }
        Command::AnalyzePgn {
            file,
            depth,
            nodes,
            workers,
            hash,
            out,
        } => analyze_pgn(file, depth, nodes, workers, hash, out)?,
        Command::Play { pos, locale, moves } => {
            let p = pos.load()?;
            arbiter_cli::play(p, &moves, locale.into())?
        }
        Command::Status { pos, locale, moves } => {
            let p = pos.load()?;
            arbiter_cli::status(p, &moves, locale.into())?
        }
        Command::Show {
            pos,
            svg,
            symbols,
            locale,
            moves,
        } => {
            let style = if symbols {
                TextStyle::Symbols
            } else {
                TextStyle::Letters
            };
            arbiter_cli::show(pos.load()?, &moves, locale.into(), svg, style)?
        }
        Command::Serve { server } => serve(*server)?,
        Command::Worker { remote, worker } if remote.server.is_some() => {
            worker::run(&remote, &worker.engines)?
        }
        Command::Worker { worker, .. } => run_worker(&worker)?,
        Command::Keys {
            command: KeysCommand::New(args),
        } => new_key(&args)?,
        #[cfg(feature = "bench")]
        Command::Bench { target } => {
            arbiter_bench::command::run(target, &bench::Embedder).map_err(CliError::failed)?
        }
        Command::ClockSync { addr, samples } => clock_sync(&addr, samples)?,
        Command::Client(args) => client::run(args)?,
        Command::Bpgn { locale } => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|e| CliError::io("reading stdin", e))?;
            arbiter_cli::bpgn(&input, locale.into())?
        }
        Command::Pgn {
            locale,
            output_locale,
        } => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|e| CliError::io("reading stdin", e))?;
            arbiter_cli::pgn(
                &input,
                locale.into(),
                output_locale.unwrap_or(locale).into(),
            )?
        }
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error worth reporting.
            let _ = stdout.write_all(out.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("arbiter: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
