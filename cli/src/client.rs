//! `arbiter client …`: a terminal client of a running server, on the `arbiter-client` crate
//! (its API keys, TLS, retries, seat tokens and resumed watches): play a game of any variant,
//! watch a match (a bughouse match's two boards side by side), join a pool, run a batch
//! analysis.

use arbiter_cli::CliError;
use arbiter_client::proto::analysis::v1::{BestMoveRequest, JobStatus, Judgement, SearchLimits};
use arbiter_client::proto::common::v1::RuleOption;
use arbiter_client::proto::common::v1::{Position, Variant as ProtoVariant};
use arbiter_client::proto::matches::v1::{
    Board, BoardClock, BoardState, ClockPhase, CreateMatchRequest, MatchState, Side,
    watch_match_response::Event,
};
use arbiter_client::proto::matchmaking::v1::JoinRequest;
use arbiter_client::{Client, ClientConfig, Error, Match, SeatId, outcome_text, resolve_api_key};
use arbiter_core::Variant;
use futures_util::StreamExt;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

/// `print!` that ignores a closed stdout (`| head`) instead of panicking.
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = write!(std::io::stdout().lock(), $($t)*);
    }};
}

/// `println!` that ignores a closed stdout.
macro_rules! sayln {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// How to reach the server: the client contract's flags, each with its environment fallback.
#[derive(clap::Args, Debug)]
pub struct ConnectionArgs {
    /// The server: host:port, http://… or https://….
    #[arg(
        long,
        env = "ARBITER_ADDR",
        default_value = "http://127.0.0.1:50051",
        global = true
    )]
    server: String,
    /// A file whose first line is the API key (else ARBITER_API_KEY holds the key itself).
    #[arg(long, global = true)]
    api_key_file: Option<PathBuf>,
    /// Speak TLS, trusting this CA certificate (PEM).
    #[arg(long, env = "ARBITER_TLS_CA_FILE", global = true)]
    tls_ca_file: Option<PathBuf>,
    /// The client certificate (PEM) for mutual TLS.
    #[arg(long, env = "ARBITER_TLS_CLIENT_CERT_FILE", global = true)]
    tls_client_cert_file: Option<PathBuf>,
    /// The client certificate's key (PEM) for mutual TLS.
    #[arg(long, env = "ARBITER_TLS_CLIENT_KEY_FILE", global = true)]
    tls_client_key_file: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the address's host).
    #[arg(long, env = "ARBITER_TLS_SERVER_NAME", global = true)]
    tls_server_name: Option<String>,
}

/// `arbiter client`.
#[derive(clap::Args, Debug)]
pub struct ClientArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(subcommand)]
    command: ClientCommand,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Color {
    White,
    Black,
}

impl From<Color> for Side {
    fn from(c: Color) -> Side {
        match c {
            Color::White => Side::White,
            Color::Black => Side::Black,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
enum BoardArg {
    A,
    B,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Opponent {
    /// The server's analysis plays the other side (its best move at --depth).
    Engine,
    /// Both sides are typed here (hot seat).
    Human,
}

#[derive(clap::Subcommand, Debug)]
enum ClientCommand {
    /// Play a game of any variant in the terminal: the board after each move, moves typed on
    /// stdin (coordinates or the variant's notation; `resign`, `draw`, `abort`, `quit`). A new
    /// match against the engine or hot seat, or a seat of an existing match with its token
    /// (--match, --token; the only way to play bughouse).
    Play {
        /// The variant of a new match (chess, chess960, crazyhouse, glinski, byzantine,
        /// byzantine-citadel; bughouse needs four seats: play one with --match and --token).
        #[arg(long, default_value = "chess", value_parser = crate::parse_variant, conflicts_with = "match")]
        variant: Variant,
        /// A rule option of a new match NAME=VALUE, repeatable (Byzantine: stalemate=wins|loses,
        /// facing_pawns=on|off).
        #[arg(long = "rule", value_name = "NAME=VALUE", conflicts_with = "match")]
        rules: Vec<String>,
        /// The side typed here.
        #[arg(long, value_enum, default_value = "white")]
        color: Color,
        /// Who plays the other side of a new match.
        #[arg(long, value_enum, default_value = "engine")]
        opponent: Opponent,
        /// The engine's depth.
        #[arg(long, default_value_t = 3)]
        depth: u32,
        /// A time control for a new match (e.g. 5+3); none by default.
        #[arg(long)]
        time_control: Option<String>,
        /// Play a seat of this existing match (with --token); the other seat moves elsewhere.
        // Ids and tokens may begin with '-' (a platform's own ids; tokens are base64url).
        #[arg(long, requires = "token", allow_hyphen_values = true)]
        r#match: Option<String>,
        /// The seat token of --match (its --color seat).
        #[arg(long, requires = "match", allow_hyphen_values = true)]
        token: Option<String>,
        /// The board of the --match seat in a bughouse match (a or b; default a).
        #[arg(long, value_enum, requires = "match")]
        board: Option<BoardArg>,
    },
    /// Follow a match live: each move with the board, the clocks, the result (a bughouse
    /// match: both boards side by side with their reserves, each move labelled A or B).
    Watch {
        /// The match id.
        #[arg(allow_hyphen_values = true)]
        match_id: String,
    },
    /// Join a matchmaking pool (variant/time control/rated or casual, e.g. chess/3+2/casual)
    /// and wait for the pairing; prints the match, the seat and its token.
    Join {
        /// The pool, `variant/time-control/rated|casual`.
        pool: String,
        /// The player joining.
        #[arg(long, allow_hyphen_values = true)]
        player: String,
    },
    /// Submit a PGN file as a batch analysis job, show its progress on stderr, print each
    /// game's review.
    AnalyzeBatch {
        /// The PGN file (one or more games).
        file: PathBuf,
        /// The search depth of each position.
        #[arg(long, default_value_t = 8)]
        depth: u32,
        /// The engine, by the server's name (its ListEngines); default: the server's default
        /// for each game's variant.
        #[arg(long, default_value = "")]
        engine: String,
    },
}

/// Runs `arbiter client …`.
pub fn run(args: ClientArgs) -> Result<String, CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io("cannot start the async runtime", e))?;
    runtime.block_on(async move {
        let client = connect(&args.connection).await?;
        match args.command {
            ClientCommand::Play {
                variant,
                rules,
                color,
                opponent,
                depth,
                time_control,
                r#match,
                token,
                board,
            } => {
                let board = match board {
                    Some(BoardArg::B) => Board::B,
                    _ => Board::A,
                };
                let game = match r#match.zip(token) {
                    Some((id, token)) => Game::Seat {
                        id,
                        token,
                        seat: SeatId::new(board, color.into()),
                    },
                    None => Game::New {
                        variant,
                        rules,
                        time_control,
                        me: color.into(),
                        opponent,
                    },
                };
                play(&client, game, depth).await
            }
            ClientCommand::Watch { match_id } => watch(&client, &match_id).await,
            ClientCommand::Join { pool, player } => join(&client, &pool, &player).await,
            ClientCommand::AnalyzeBatch {
                file,
                depth,
                engine,
            } => analyze_batch(&client, &file, depth, &engine).await,
        }
    })
}

async fn connect(args: &ConnectionArgs) -> Result<Client, CliError> {
    let mut config = ClientConfig::new(args.server.clone());
    if let Some(key) = resolve_api_key(None, args.api_key_file.as_deref())
        .map_err(|e| CliError::input("--api-key-file", e))?
    {
        config = config.api_key(key);
    }
    if let Some(ca) = &args.tls_ca_file {
        config = config.tls_ca_file(ca);
    }
    match (&args.tls_client_cert_file, &args.tls_client_key_file) {
        (Some(cert), Some(key)) => config = config.tls_client_identity(cert, key),
        (None, None) => {}
        _ => {
            return Err(CliError::input(
                "--tls-client-cert-file",
                "mutual TLS needs both --tls-client-cert-file and --tls-client-key-file",
            ));
        }
    }
    if let Some(name) = &args.tls_server_name {
        config = config.tls_server_name(name);
    }
    Client::connect(config)
        .await
        .map_err(|e| CliError::input("--server", e))
}

/// A server error as the CLI reports it: bad input (exit 2) when the server named a field.
fn failed(what: &str, e: Error) -> CliError {
    match e.field() {
        Some(field) => CliError::input(field, format!("{what}: {e}")),
        None => CliError::failed(format!("{what}: {e}")),
    }
}

fn proto_variant_name(v: i32) -> &'static str {
    match ProtoVariant::try_from(v).unwrap_or(ProtoVariant::Chess) {
        ProtoVariant::Crazyhouse => "crazyhouse",
        ProtoVariant::Bughouse => "bughouse",
        ProtoVariant::Glinski => "glinski",
        ProtoVariant::Byzantine => "byzantine",
        ProtoVariant::ByzantineCitadel => "byzantine-citadel",
        ProtoVariant::Chess960 => "chess960",
        ProtoVariant::Chess | ProtoVariant::Unspecified => "chess",
    }
}

/// The board as text (the core's renderer), or the position string when it cannot be read.
fn board_text(variant: i32, position: &str) -> String {
    let drawn = proto_variant_name(variant)
        .parse::<arbiter_core::Variant>()
        .ok()
        .and_then(|v| arbiter_core::AnyPosition::from_text(v, position).ok())
        .map(|p| p.render_text());
    drawn.unwrap_or_else(|| format!("{position}\n"))
}

fn clock_ms(ms: u64) -> String {
    let s = ms / 1000;
    format!("{}:{:02}.{}", s / 60, s % 60, (ms % 1000) / 100)
}

/// The board's clocks in one line (the running side's time as of the state's instant).
fn clocks_line(board: &BoardState, server_time_ms: u64) -> Option<String> {
    let c = board.clock.as_ref()?;
    if c.phase == ClockPhase::Unspecified as i32 {
        return None;
    }
    let running = c.running;
    let spent = if c.phase == ClockPhase::Running as i32 {
        server_time_ms.saturating_sub(c.running_since_ms)
    } else {
        0
    };
    let (mut white, mut black) = (c.white_ms, c.black_ms);
    if running == Side::White as i32 {
        white = white.saturating_sub(spent);
    } else if running == Side::Black as i32 {
        black = black.saturating_sub(spent);
    }
    let mark = |side: Side| if running == side as i32 { " *" } else { "" };
    Some(format!(
        "white {}{}  black {}{}",
        clock_ms(white),
        mark(Side::White),
        clock_ms(black),
        mark(Side::Black)
    ))
}

fn side_name(side: i32) -> &'static str {
    if side == Side::Black as i32 {
        "black"
    } else {
        "white"
    }
}

/// Clears a terminal before a redraw (nothing when the output is a pipe or a file).
fn clear() {
    let mut out = std::io::stdout();
    if out.is_terminal() {
        let _ = out.write_all(b"\x1b[2J\x1b[H");
    }
}

fn board_letter(board: i32) -> &'static str {
    if board == Board::B as i32 { "B" } else { "A" }
}

/// `left` and `right` (two diagrams) side by side, `left` padded to its widest line.
fn side_by_side(left: &str, right: &str) -> String {
    let width = left.lines().map(|l| l.chars().count()).max().unwrap_or(0) + 4;
    let (l, r): (Vec<&str>, Vec<&str>) = (left.lines().collect(), right.lines().collect());
    let mut out = String::new();
    for i in 0..l.len().max(r.len()) {
        let a = l.get(i).copied().unwrap_or("");
        let b = r.get(i).copied().unwrap_or("");
        let line = format!("{a:<width$}{b}");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// One board of a state as text: the diagram, the last move, the clocks, check.
fn board_block(state: &MatchState, board: &BoardState) -> String {
    let mut out = board_text(state.variant, &board.position);
    if let Some(last) = &board.last_move {
        out.push_str(&format!("last move: {}\n", last.san));
    }
    if let Some(clocks) = clocks_line(board, state.server_time_ms) {
        out.push_str(&clocks);
        out.push('\n');
    }
    if state.outcome.is_none() && board.check {
        out.push_str("check\n");
    }
    out
}

/// The match's board (a bughouse match's two boards side by side, each headed by its letter).
fn draw(state: &MatchState) {
    clear();
    let out = match &state.boards[..] {
        [] => return,
        [a, b, ..] => side_by_side(
            &format!("board A\n{}", board_block(state, a)),
            &format!("board B\n{}", board_block(state, b)),
        ),
        [board] => board_block(state, board),
    };
    say!("{out}");
    let _ = std::io::stdout().flush();
}

/// Lines of stdin, read on a thread of their own.
fn stdin_lines() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The game `arbiter client play` plays.
enum Game {
    /// A new match: `me` typed here, the other side by `opponent`.
    New {
        variant: Variant,
        rules: Vec<String>,
        time_control: Option<String>,
        me: Side,
        opponent: Opponent,
    },
    /// A seat of an existing match, with its token.
    Seat {
        id: String,
        token: String,
        seat: SeatId,
    },
}

fn proto_variant(v: Variant) -> ProtoVariant {
    match v {
        Variant::Chess => ProtoVariant::Chess,
        Variant::Crazyhouse => ProtoVariant::Crazyhouse,
        Variant::Bughouse => ProtoVariant::Bughouse,
        Variant::Glinski => ProtoVariant::Glinski,
        Variant::Byzantine => ProtoVariant::Byzantine,
        Variant::ByzantineCitadel => ProtoVariant::ByzantineCitadel,
        Variant::Chess960 => ProtoVariant::Chess960,
    }
}

fn rule_options(rules: &[String]) -> Result<Vec<RuleOption>, CliError> {
    rules
        .iter()
        .map(|r| match r.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok(RuleOption {
                name: name.to_owned(),
                value: value.to_owned(),
            }),
            _ => Err(CliError::input(
                "--rule",
                format!("{r:?} is not NAME=VALUE"),
            )),
        })
        .collect()
}

async fn play(client: &Client, game: Game, depth: u32) -> Result<String, CliError> {
    let (game, seats, engine): (Match, Vec<SeatId>, bool) = match game {
        Game::Seat { id, token, seat } => (client.attach(&id, seat, &token), vec![seat], false),
        Game::New {
            variant: Variant::Bughouse,
            ..
        } => {
            return Err(CliError::input(
                "--variant",
                "bughouse needs four seats: create the match on the platform (or join a \
                 bughouse pool with `arbiter client join`), then play a seat with \
                 `arbiter client play --match ID --token T --color C --board a|b`",
            ));
        }
        Game::New {
            variant,
            rules,
            time_control,
            me,
            opponent,
        } => {
            let game = client
                .create_match(CreateMatchRequest {
                    variant: proto_variant(variant) as i32,
                    rules: rule_options(&rules)?,
                    players: vec!["white".into(), "black".into()],
                    time_control: time_control.unwrap_or_default(),
                    ..CreateMatchRequest::default()
                })
                .await
                .map_err(|e| failed("CreateMatch", e))?;
            let typed = match opponent {
                Opponent::Human => vec![Side::White.into(), Side::Black.into()],
                Opponent::Engine => vec![me.into()],
            };
            (game, typed, opponent == Opponent::Engine)
        }
    };
    // The board played here: a bughouse seat's, else the only one.
    let played = seats.first().map_or(Board::A as i32, |s| s.board as i32);
    sayln!("match {}", game.id());
    let mut input = stdin_lines();
    let mut shown_seq = u64::MAX;
    loop {
        let state = game.state().await.map_err(|e| failed("GetMatch", e))?;
        if state.last_seq != shown_seq {
            draw(&state);
            shown_seq = state.last_seq;
        }
        if let Some(outcome) = &state.outcome {
            return Ok(format!("{}\n", outcome_text(outcome)));
        }
        let board = state
            .boards
            .iter()
            .find(|b| b.board == played || (state.boards.len() == 1))
            .cloned()
            .unwrap_or_default();
        let to_move = SeatId::new(
            Board::try_from(played).unwrap_or(Board::A),
            Side::try_from(board.side_to_move).unwrap_or(Side::White),
        );
        if seats.contains(&to_move) {
            if std::io::stdin().is_terminal() {
                say!("{}> ", side_name(to_move.side as i32));
                let _ = std::io::stdout().flush();
            }
            let Some(line) = input.recv().await else {
                return Ok("stdin closed: the game goes on\n".into());
            };
            let line = line.trim();
            let result = match line {
                "" => continue,
                "quit" | "exit" => return Ok("left the game: it goes on\n".into()),
                "resign" => game.resign(to_move).await.map(drop),
                "draw" => game.offer_draw(to_move).await.map(drop),
                "abort" => game.abort(to_move).await.map(drop),
                mv => game.play(to_move, mv).await.map(drop),
            };
            if let Err(e) = result {
                eprintln!("{line}: {e}");
            }
        } else if engine {
            let position = Position {
                variant: state.variant,
                text: board.position.clone(),
                rules: state.rules.clone(),
            };
            let best = client
                .best_move(BestMoveRequest {
                    position: Some(position),
                    limits: Some(SearchLimits {
                        depth,
                        ..SearchLimits::default()
                    }),
                    ..BestMoveRequest::default()
                })
                .await
                .map_err(|e| failed("BestMove", e))?;
            let mv = best
                .best_move
                .ok_or_else(|| CliError::failed("the engine found no move"))?;
            game.play(to_move, &mv.uci)
                .await
                .map_err(|e| failed("MakeMove", e))?;
        } else {
            // The other seat moves elsewhere: wait for the match's next event.
            let mut events = game.watch_after(state.last_seq);
            if let Some(Err(e)) = events.next().await {
                return Err(failed("WatchMatch", e));
            }
        }
    }
}

/// A bughouse board as a watcher follows it: the position of its latest move, the reserves
/// (changed by the other board's captures too) and the clocks.
#[derive(Clone, Debug, Default)]
struct Followed {
    position: String,
    /// White's and Black's reserves, FEN letters.
    reserves: [String; 2],
    clock: Option<BoardClock>,
    clock_at: u64,
}

impl Followed {
    fn at(position: &str) -> Followed {
        let mut f = Followed::default();
        f.set_position(position);
        f
    }

    /// Takes a position string, its `[…]` reserves apart.
    fn set_position(&mut self, position: &str) {
        match (position.find('['), position.find(']')) {
            (Some(open), Some(close)) if open < close => {
                let pieces = &position[open + 1..close];
                self.reserves = [
                    pieces.chars().filter(char::is_ascii_uppercase).collect(),
                    pieces.chars().filter(char::is_ascii_lowercase).collect(),
                ];
                self.position = format!("{}{}", &position[..open], &position[close + 1..]);
            }
            _ => self.position = position.to_owned(),
        }
    }

    /// The position string with the reserves as they stand now.
    fn full_position(&self) -> String {
        let at = self.position.find(' ').unwrap_or(self.position.len());
        let (placement, rest) = self.position.split_at(at);
        format!(
            "{placement}[{}{}]{rest}",
            self.reserves[0], self.reserves[1]
        )
    }

    fn text(&self, letter: &str) -> String {
        let mut out = format!("board {letter}\n");
        out.push_str(&board_text(
            ProtoVariant::Bughouse as i32,
            &self.full_position(),
        ));
        let clocks = self.clock.as_ref().and_then(|c| {
            clocks_line(
                &BoardState {
                    clock: Some(*c),
                    ..BoardState::default()
                },
                self.clock_at,
            )
        });
        if let Some(line) = clocks {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

fn board_index(board: i32) -> usize {
    usize::from(board == Board::B as i32)
}

fn move_line(ply: u32, side: i32, san: &str) -> String {
    let dots = if side == Side::Black as i32 {
        "..."
    } else {
        "."
    };
    format!("{}{dots} {san}", ply.div_ceil(2))
}

fn clock_of(c: &arbiter_client::proto::matches::v1::ClockSnapshot) -> BoardClock {
    BoardClock {
        white_ms: c.white_ms,
        black_ms: c.black_ms,
        running: c.running,
        running_since_ms: c.at_ms,
        deadline_ms: 0,
        phase: ClockPhase::Running as i32,
    }
}

async fn watch(client: &Client, match_id: &str) -> Result<String, CliError> {
    let game = client.open_match(match_id);
    let state = game.state().await.map_err(|e| failed("GetMatch", e))?;
    let mut variant = state.variant;
    if variant == 0 {
        variant = ProtoVariant::Chess as i32;
    }
    if variant == ProtoVariant::Bughouse as i32 {
        return watch_bughouse(&game, &state).await;
    }
    sayln!(
        "match {match_id}: {} {}",
        proto_variant_name(variant),
        state
            .seats
            .iter()
            .map(|s| format!("{} ({})", s.player_id, side_name(s.side)))
            .collect::<Vec<_>>()
            .join(" vs ")
    );
    let mut events = game.watch();
    let mut board = state.boards.first().cloned().unwrap_or_default();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| failed("WatchMatch", e))?;
        match event.event {
            Some(Event::Move(m)) => {
                clear();
                let mv = m.r#move.unwrap_or_default();
                sayln!("{}", move_line(m.ply, m.side, &mv.san));
                say!("{}", board_text(variant, &m.position));
                board.position = m.position;
            }
            Some(Event::Clock(c)) => {
                board.clock = Some(clock_of(&c));
                if let Some(line) = clocks_line(&board, c.at_ms) {
                    sayln!("{line}");
                }
            }
            Some(Event::DrawOffer(side)) => sayln!("{} offers a draw", side_name(side)),
            Some(Event::DrawDeclined(side)) => {
                sayln!("{}'s draw offer is declined", side_name(side));
            }
            Some(Event::End(outcome)) => {
                return Ok(format!("{}\n", outcome_text(&outcome)));
            }
            _ => {}
        }
        let _ = std::io::stdout().flush();
    }
    Ok(String::new())
}

/// How long a bughouse watcher waits for the reserve and clock events that follow a move before
/// it draws the boards.
const SETTLE: Duration = Duration::from_millis(100);

/// `watch` for bughouse: each move labelled with its board (`A 1. e4`, `B 1... d5`), then both
/// boards side by side with their reserves (a capture feeds the partner's reserve on the other
/// board) and clocks.
async fn watch_bughouse(game: &Match, state: &MatchState) -> Result<String, CliError> {
    let seats = |board: i32| {
        state
            .seats
            .iter()
            .filter(|s| board_index(s.board) == board_index(board))
            .map(|s| format!("{} ({})", s.player_id, side_name(s.side)))
            .collect::<Vec<_>>()
            .join(" vs ")
    };
    sayln!(
        "match {}: bughouse, board A: {}; board B: {}",
        game.id(),
        seats(Board::A as i32),
        seats(Board::B as i32)
    );
    // Events replay from the start: the boards begin at the match's start position.
    let starts: Vec<String> = if state.start.contains('|') {
        state
            .start
            .split('|')
            .map(|s| s.trim().to_owned())
            .collect()
    } else {
        vec![]
    };
    let start = |i: usize| {
        starts.get(i).cloned().unwrap_or_else(|| {
            arbiter_core::AnyPosition::start(Variant::Bughouse)
                .map(|p| arbiter_core::Position::to_text(&p))
                .unwrap_or_default()
        })
    };
    let mut boards = [Followed::at(&start(0)), Followed::at(&start(1))];
    let mut events = game.watch();
    // A change not drawn yet, with its move lines.
    let mut pending: Option<String> = None;
    let flush = |pending: &mut Option<String>, boards: &[Followed; 2]| {
        let Some(lines) = pending.take() else {
            return;
        };
        clear();
        say!(
            "{lines}{}",
            side_by_side(&boards[0].text("A"), &boards[1].text("B"))
        );
        let _ = std::io::stdout().flush();
    };
    let team = |side: i32| if side == Side::Black as i32 { 2 } else { 1 };
    loop {
        let next = if pending.is_none() {
            events.next().await
        } else {
            match tokio::time::timeout(SETTLE, events.next()).await {
                Ok(next) => next,
                Err(_) => {
                    flush(&mut pending, &boards);
                    continue;
                }
            }
        };
        let Some(event) = next else {
            flush(&mut pending, &boards);
            return Ok(String::new());
        };
        let event = event.map_err(|e| failed("WatchMatch", e))?;
        match event.event {
            Some(Event::Move(m)) => {
                flush(&mut pending, &boards);
                let mv = m.r#move.unwrap_or_default();
                pending = Some(format!(
                    "{} {}\n",
                    board_letter(m.board),
                    move_line(m.ply, m.side, &mv.san)
                ));
                boards[board_index(m.board)].set_position(&m.position);
            }
            Some(Event::Reserve(r)) => {
                let side = usize::from(r.side == Side::Black as i32);
                boards[board_index(r.board)].reserves[side] = r.pieces;
                pending.get_or_insert_with(String::new);
            }
            Some(Event::Clock(c)) => {
                let board = &mut boards[board_index(c.board)];
                board.clock = Some(clock_of(&c));
                board.clock_at = c.at_ms;
                // After a move, drawn with the boards; else a line of its own.
                if pending.is_none()
                    && let Some(line) = clocks_line(
                        &BoardState {
                            clock: board.clock,
                            ..BoardState::default()
                        },
                        c.at_ms,
                    )
                {
                    sayln!("board {}: {line}", board_letter(c.board));
                }
            }
            Some(Event::DrawOffer(side)) => {
                flush(&mut pending, &boards);
                sayln!("team {} offers a draw", team(side));
            }
            Some(Event::DrawDeclined(side)) => {
                flush(&mut pending, &boards);
                sayln!("team {}'s draw offer is declined", team(side));
            }
            Some(Event::End(outcome)) => {
                flush(&mut pending, &boards);
                return Ok(format!("{}\n", outcome_text(&outcome)));
            }
            _ => {}
        }
        let _ = std::io::stdout().flush();
    }
}

async fn join(client: &Client, pool: &str, player: &str) -> Result<String, CliError> {
    let parts: Vec<&str> = pool.split('/').collect();
    let [variant, time_control, kind] = parts[..] else {
        return Err(CliError::input(
            "POOL",
            format!("{pool:?} is not variant/time-control/rated|casual (e.g. chess/3+2/casual)"),
        ));
    };
    let variant = match variant {
        "chess" => ProtoVariant::Chess,
        "crazyhouse" => ProtoVariant::Crazyhouse,
        "bughouse" => ProtoVariant::Bughouse,
        "glinski" => ProtoVariant::Glinski,
        "byzantine" => ProtoVariant::Byzantine,
        "byzantine-citadel" => ProtoVariant::ByzantineCitadel,
        "chess960" => ProtoVariant::Chess960,
        other => {
            return Err(CliError::input(
                "POOL",
                format!("unknown variant {other:?}"),
            ));
        }
    };
    let rated = match kind {
        "rated" => true,
        "casual" => false,
        other => {
            return Err(CliError::input(
                "POOL",
                format!("{other:?}: the pool is rated or casual"),
            ));
        }
    };
    let request = JoinRequest {
        player_id: player.to_owned(),
        variant: variant as i32,
        time_control: time_control.to_owned(),
        rated,
        ..JoinRequest::default()
    };
    let (found, _) = client
        .join_pool(request, |q| {
            eprintln!(
                "waiting in {}: position {} of {}{}",
                q.pool,
                q.position,
                q.waiting,
                if q.estimated_wait_ms > 0 {
                    format!(", about {} s", q.estimated_wait_ms / 1000)
                } else {
                    String::new()
                }
            );
        })
        .await
        .map_err(|e| failed("Join", e))?;
    let seat = found.seat.unwrap_or_default();
    Ok(format!(
        "match {}\nseat {}{}\ntoken {}\n",
        found.match_id,
        side_name(i32::try_from(seat.side).unwrap_or(1)),
        if seat.board == 2 { " (board B)" } else { "" },
        found.token
    ))
}

/// A progress bar on stderr, drawn by hand: `[#####.....] 12/40 positions, 1/2 games`.
fn progress(status: &JobStatus) {
    const WIDTH: u64 = 30;
    let total = status.positions.max(1);
    let filled = (status.positions_done.min(total) * WIDTH / total) as usize;
    let bar = format!(
        "{}{}",
        "#".repeat(filled),
        ".".repeat(WIDTH as usize - filled)
    );
    let line = format!(
        "[{bar}] {}/{} positions, {}/{} games",
        status.positions_done, status.positions, status.games_done, status.games
    );
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let _ = write!(err, "\r{line}");
    } else {
        let _ = writeln!(err, "{line}");
    }
    let _ = err.flush();
}

async fn analyze_batch(
    client: &Client,
    file: &PathBuf,
    depth: u32,
    engine: &str,
) -> Result<String, CliError> {
    let pgn = std::fs::read_to_string(file)
        .map_err(|e| CliError::input("FILE", format!("{}: {e}", file.display())))?;
    let done = client
        .analyze_pgn_batch(&pgn, depth, engine, progress)
        .await
        .map_err(|e| failed("batch analysis", e))?;
    if std::io::stderr().is_terminal() {
        eprintln!();
    }
    let mut out = format!(
        "job {}: {} games, {} positions\n",
        done.status.job_id, done.status.games, done.status.positions
    );
    let accuracy = |a: Option<f64>| a.map_or_else(|| "-".to_owned(), |a| format!("{a:.1}"));
    for game in &done.games {
        if !game.error.is_empty() {
            out.push_str(&format!(
                "game {}: not analysed: {}\n",
                game.index + 1,
                game.error
            ));
            continue;
        }
        out.push_str(&format!(
            "game {}: {} moves{}; white accuracy {} ({} inaccuracies, {} mistakes, {} blunders); \
             black accuracy {} ({} inaccuracies, {} mistakes, {} blunders)\n",
            game.index + 1,
            game.plies.len(),
            if game.engine.is_empty() {
                String::new()
            } else {
                format!(" (engine: {})", game.engine)
            },
            accuracy(game.white_accuracy),
            game.white_inaccuracies,
            game.white_mistakes,
            game.white_blunders,
            accuracy(game.black_accuracy),
            game.black_inaccuracies,
            game.black_mistakes,
            game.black_blunders,
        ));
        for (i, ply) in game.plies.iter().enumerate() {
            let verdict = match Judgement::try_from(ply.judgement) {
                Ok(Judgement::Inaccuracy) => "inaccuracy",
                Ok(Judgement::Mistake) => "mistake",
                Ok(Judgement::Blunder) => "blunder",
                _ => continue,
            };
            let mv = ply.r#move.clone().unwrap_or_default();
            let better = ply
                .better
                .as_ref()
                .map(|b| format!(" (better {})", b.san))
                .unwrap_or_default();
            let dots = if i % 2 == 0 { "." } else { "..." };
            out.push_str(&format!(
                "  {}{dots} {}: {verdict}{better}\n",
                i / 2 + 1,
                mv.san
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        client: ClientArgs,
    }

    fn parse(args: &[&str]) -> ClientCommand {
        let argv = std::iter::once("client").chain(args.iter().copied());
        Cli::try_parse_from(argv)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .client
            .command
    }

    /// Seat tokens are base64url, so one in 64 begins with '-'; a platform's match ids and
    /// player ids may too. Each is taken as the value it follows, not as an option.
    #[test]
    fn values_beginning_with_a_hyphen_are_values() {
        let play = parse(&[
            "play", "--match", "-m1", "--token", "-mAbC_9", "--color", "black",
        ]);
        let ClientCommand::Play {
            r#match,
            token,
            color,
            ..
        } = play
        else {
            panic!("{play:?}")
        };
        assert_eq!(r#match.as_deref(), Some("-m1"));
        assert_eq!(token.as_deref(), Some("-mAbC_9"));
        assert_eq!(color, Color::Black);

        let ClientCommand::Watch { match_id } = parse(&["watch", "-x-"]) else {
            panic!()
        };
        assert_eq!(match_id, "-x-");
        let ClientCommand::Join { pool, player } =
            parse(&["join", "chess/3+2/casual", "--player", "-ann"])
        else {
            panic!()
        };
        assert_eq!(
            (pool.as_str(), player.as_str()),
            ("chess/3+2/casual", "-ann")
        );
    }
}
