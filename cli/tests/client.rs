//! `arbiter client …` against a running `arbiter serve` child process on a free port: a game
//! played through stdin (hot seat to a mate; against the engine to a resignation; Glinski hot
//! seat in its record notation; crazyhouse against the engine; a bughouse seat of board B with
//! its token), a live `watch` printing the moves and the result (a bughouse match's two boards
//! with their reserves), `join` pairing two players, and `analyze-batch` on a small PGN with its
//! progress on stderr.

use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// An `arbiter serve` child, killed when dropped.
struct Serve {
    child: Child,
    addr: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Serve {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["serve", "--listen", &addr])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "arbiter serve did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Serve { child, addr }
}

/// `arbiter client --server ADDR ARGS…` with `stdin`, waited for (at most 60 s).
fn client(server: &Serve, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["client", "--server", &format!("http://{}", server.addr)])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = stdin.to_owned();
    let mut pipe = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    wait(child, Duration::from_secs(60))
}

fn wait(mut child: Child, limit: Duration) -> Output {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "arbiter client ran past {limit:?}: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn last_line(out: &Output) -> String {
    text(&out.stdout).lines().last().unwrap_or("").to_owned()
}

#[test]
fn play_hot_seat_to_a_mate_typed_on_stdin() {
    let server = serve();
    let out = client(
        &server,
        &["play", "--opponent", "human"],
        // An illegal move is refused with its field and typed again.
        "f3\ne5\ng4\nQh5\nQh4#\n",
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(last_line(&out), "0-1 checkmate", "{stdout}");
    assert!(stdout.starts_with("match "), "{stdout}");
    assert!(stdout.contains("last move: Qh4#"), "{stdout}");
    // The board is redrawn after each move: five drawings (start and four moves).
    assert_eq!(stdout.matches("  a b c d e f g h").count(), 5, "{stdout}");
    assert!(
        stderr.contains("Qh5") && stderr.contains("move"),
        "{stderr}"
    );
}

#[test]
fn play_against_the_engine_with_clocks_then_resign() {
    let server = serve();
    let out = client(
        &server,
        &["play", "--depth", "2", "--time-control", "5+3"],
        "e4\nresign\n",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert_eq!(last_line(&out), "0-1 resignation", "{stdout}");
    // The engine answered: a black move was shown, and the clocks with it.
    assert!(stdout.contains("white 5:0"), "{stdout}");
    assert!(stdout.matches("last move:").count() >= 2, "{stdout}");
}

#[test]
fn watch_prints_a_live_matchs_moves_and_result() {
    use arbiter_client::proto::matches::v1::Side;
    use arbiter_client::{Client, ClientConfig};
    let server = serve();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let game = runtime.block_on(async {
        let c = Client::connect(ClientConfig::new(server.addr.clone()))
            .await
            .unwrap();
        c.create_chess_match("ann", "ben").await.unwrap()
    });
    let watcher = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["client", "watch", game.id()])
        .env("ARBITER_ADDR", &server.addr)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    runtime.block_on(async {
        for (side, mv) in [
            (Side::White, "e4"),
            (Side::Black, "e5"),
            (Side::White, "Qh5"),
            (Side::Black, "Nc6"),
            (Side::White, "Bc4"),
            (Side::Black, "Nf6"),
            (Side::White, "Qxf7#"),
        ] {
            game.play(side, mv).await.unwrap();
        }
    });
    let out = wait(watcher, Duration::from_secs(30));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("ann (white) vs ben (black)"), "{stdout}");
    for line in ["1. e4", "1... e5", "3... Nf6", "4. Qxf7#"] {
        assert!(stdout.lines().any(|l| l == line), "{line}: {stdout}");
    }
    assert_eq!(last_line(&out), "1-0 checkmate", "{stdout}");
}

#[test]
fn join_pairs_two_players_of_a_pool() {
    let server = serve();
    let spawn = |player: &str| {
        Command::new(env!("CARGO_BIN_EXE_arbiter"))
            .args([
                "client",
                "--server",
                &server.addr,
                "join",
                "chess/5+0/casual",
            ])
            .args(["--player", player])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("p1"), spawn("p2"));
    let (a, b) = (
        wait(a, Duration::from_secs(40)),
        wait(b, Duration::from_secs(40)),
    );
    let (sa, sb) = (text(&a.stdout), text(&b.stdout));
    assert!(a.status.success() && b.status.success(), "{sa}\n{sb}");
    assert_eq!(
        sa.lines().next(),
        sb.lines().next(),
        "one match: {sa}\n{sb}"
    );
    assert!(sa.starts_with("match ") && sa.contains("\ntoken "), "{sa}");
    let seats: Vec<&str> = [&sa, &sb]
        .iter()
        .map(|s| s.lines().nth(1).unwrap_or(""))
        .collect();
    assert!(
        seats.contains(&"seat white") && seats.contains(&"seat black"),
        "{seats:?}"
    );
}

#[test]
fn analyze_batch_reviews_a_pgn_with_progress_on_stderr() {
    let server = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("games.pgn");
    std::fs::write(
        &file,
        "[Event \"a\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n\n\
         [Event \"b\"]\n\n1. d4 d5 2. c4 *\n",
    )
    .unwrap();
    let out = client(
        &server,
        &["analyze-batch", file.to_str().unwrap(), "--depth", "3"],
        "",
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("job "), "{stdout}");
    assert!(stdout.contains("2 games, 12 positions"), "{stdout}");
    assert!(stdout.contains("game 1: 7 moves"), "{stdout}");
    assert!(stdout.contains("game 2: 3 moves"), "{stdout}");
    assert!(
        stderr.contains("[##############################] 12/12 positions, 2/2 games"),
        "{stderr}"
    );
    // A file named on the command line that cannot be opened is bad input: exit 2.
    let missing = client(&server, &["analyze-batch", "/nonexistent/games.pgn"], "");
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing.stderr));
}

#[test]
fn two_terminals_play_their_seats_of_a_joined_match_with_their_tokens() {
    let server = serve();
    let join = |player: &str| {
        Command::new(env!("CARGO_BIN_EXE_arbiter"))
            .args([
                "client",
                "--server",
                &server.addr,
                "join",
                "chess/3+2/casual",
            ])
            .args(["--player", player])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (a, b) = (join("p1"), join("p2"));
    let found: Vec<(String, String, String)> = [a, b]
        .into_iter()
        .map(|c| {
            let out = text(&wait(c, Duration::from_secs(40)).stdout);
            let field = |n: usize| {
                out.lines()
                    .nth(n)
                    .unwrap()
                    .split(' ')
                    .nth(1)
                    .unwrap()
                    .to_owned()
            };
            (field(0), field(1), field(2))
        })
        .collect();
    let play = |(id, color, token): &(String, String, String)| {
        let moves = if color == "white" {
            "e4\nQh5\nBc4\nQxf7#\n"
        } else {
            "e5\nNc6\nNf6\n"
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
            .args(["client", "--server", &server.addr, "play", "--match", id])
            .args(["--token", token, "--color", color])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(moves.as_bytes())
            .unwrap();
        child
    };
    let players: Vec<Child> = found.iter().map(play).collect();
    for child in players {
        let out = wait(child, Duration::from_secs(60));
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
        assert_eq!(last_line(&out), "1-0 checkmate", "{stdout}");
        // A timed match: the clocks are drawn.
        assert!(stdout.contains("white 3:0"), "{stdout}");
    }
}

#[test]
fn play_glinski_hot_seat_in_its_notation_to_a_resignation() {
    let server = serve();
    let out = client(
        &server,
        &["play", "--variant", "glinski", "--opponent", "human"],
        // The record notation, a coordinate move, then White resigns.
        "f5-f6\ne7-e6\nQe1-e3\ng7g6\nresign\n",
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(last_line(&out), "0-1 resignation", "{stdout}");
    // The hexagonal diagram, drawn at the start, after each of the four moves and at the end.
    assert_eq!(
        stdout
            .matches("  a   b   c   d   e   f   g   h   i   k   l")
            .count(),
        6,
        "{stdout}"
    );
    assert!(stdout.contains("last move: Qe1-e3"), "{stdout}");
    // Bughouse cannot be played from one terminal: the refusal names the way to play a seat.
    let bughouse = client(&server, &["play", "--variant", "bughouse"], "");
    assert_eq!(
        bughouse.status.code(),
        Some(2),
        "{}",
        text(&bughouse.stdout)
    );
    assert!(
        text(&bughouse.stderr).contains("--match"),
        "{}",
        text(&bughouse.stderr)
    );
}

#[test]
fn play_crazyhouse_against_the_engine_then_resign() {
    let server = serve();
    let out = client(
        &server,
        &["play", "--variant", "crazyhouse", "--depth", "2"],
        "e4\nresign\n",
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert_eq!(last_line(&out), "0-1 resignation", "{stdout}");
    // The engine answered, and the crazyhouse diagram shows the reserves.
    assert!(stdout.matches("last move:").count() >= 2, "{stdout}");
    assert!(stdout.contains("in hand: ["), "{stdout}");
}

#[test]
fn watch_a_bughouse_match_draws_both_boards_with_their_reserves() {
    use arbiter_client::proto::common::v1::Variant;
    use arbiter_client::proto::matches::v1::{Board, CreateMatchRequest, Side};
    use arbiter_client::{Client, ClientConfig, SeatId};
    let server = serve();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let game = runtime.block_on(async {
        let c = Client::connect(ClientConfig::new(server.addr.clone()))
            .await
            .unwrap();
        c.create_match(CreateMatchRequest {
            variant: Variant::Bughouse as i32,
            players: vec!["ann".into(), "ben".into(), "cat".into(), "dan".into()],
            ..CreateMatchRequest::default()
        })
        .await
        .unwrap()
    });
    let watcher = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["client", "watch", game.id()])
        .env("ARBITER_ADDR", &server.addr)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    runtime.block_on(async {
        let (a, b) = (Board::A, Board::B);
        for (board, side, mv) in [
            (a, Side::White, "e4"),
            (b, Side::White, "d4"),
            (a, Side::Black, "d5"),
            (b, Side::Black, "Nf6"),
            // White A takes a pawn: it goes to the partner, Black on board B…
            (a, Side::White, "exd5"),
            (b, Side::White, "c4"),
            // …who drops it.
            (b, Side::Black, "P@e5"),
        ] {
            game.play(SeatId::new(board, side), mv).await.unwrap();
            std::thread::sleep(Duration::from_millis(250));
        }
        game.resign(SeatId::new(a, Side::Black)).await.unwrap();
    });
    let out = wait(watcher, Duration::from_secs(30));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("board A: ann (white) vs ben (black); board B: cat (white) vs dan (black)"),
        "{stdout}"
    );
    for line in [
        "A 1. e4",
        "B 1. d4",
        "A 1... d5",
        "B 1... Nf6",
        "A 2. exd5",
        "B 2... P@e5",
    ] {
        assert!(stdout.lines().any(|l| l == line), "{line}: {stdout}");
    }
    // Both boards after each move, side by side.
    assert!(stdout.matches("board A    ").count() >= 7, "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("board A") && l.ends_with("board B"))
    );
    // The captured pawn in Black B's hand, then dropped on e5.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("in hand: []") && l.ends_with("in hand: [p]")),
        "{stdout}"
    );
    assert!(stdout.contains("5 . . . . p . . ."), "{stdout}");
    assert_eq!(last_line(&out), "1-0 resignation", "{stdout}");
}

#[test]
fn play_a_bughouse_seat_of_board_b_with_its_token() {
    use arbiter_client::proto::common::v1::Variant;
    use arbiter_client::proto::matches::v1::{Board, CreateMatchRequest, Side};
    use arbiter_client::{Client, ClientConfig, SeatId};
    let server = serve();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let game = runtime.block_on(async {
        let c = Client::connect(ClientConfig::new(server.addr.clone()))
            .await
            .unwrap();
        c.create_match(CreateMatchRequest {
            variant: Variant::Bughouse as i32,
            players: vec!["ann".into(), "ben".into(), "cat".into(), "dan".into()],
            ..CreateMatchRequest::default()
        })
        .await
        .unwrap()
    });
    let seat = SeatId::new(Board::B, Side::White);
    let token = game.token(seat).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args([
            "client",
            "--server",
            &server.addr,
            "play",
            "--match",
            game.id(),
        ])
        .args(["--token", &token, "--color", "white", "--board", "b"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"d4\nresign\n")
        .unwrap();
    // Black on board B answers once d4 is on the board; then White B resigns for team 2.
    runtime.block_on(async {
        let started = Instant::now();
        while game.state().await.unwrap().boards[1].ply == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no d4 on board B"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        game.play(SeatId::new(Board::B, Side::Black), "Nf6")
            .await
            .unwrap();
    });
    let out = wait(child, Duration::from_secs(60));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert_eq!(last_line(&out), "1-0 resignation", "{stdout}");
    // Both boards are drawn, with board B's moves.
    assert!(stdout.contains("last move: Nf6"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("board A") && l.ends_with("board B")),
        "{stdout}"
    );
}
