//! `arbiter`: the command-line front of Arbiter. Argument parsing only; the work is in the
//! library half of this crate and in `arbiter-core`.

use arbiter_cli::{CliError, load_position};
use arbiter_core::{Locale, Variant};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::{Read, Write};
use std::process::ExitCode;

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
    /// Variant name (chess, crazyhouse, bughouse, glinski, byzantine, byzantine-citadel).
    #[arg(long, default_value = "chess", value_parser = parse_variant)]
    variant: Variant,
    /// The position string (FEN for chess); the variant's start position when absent.
    #[arg(long)]
    position: Option<String>,
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
    /// Read PGN on stdin, validate every move, print normalised PGN.
    Pgn {
        /// Piece letters of the input SAN.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
        /// Piece letters of the output SAN (defaults to the input locale).
        #[arg(long, value_enum)]
        output_locale: Option<LocaleArg>,
    },
}

fn run(cli: Cli) -> Result<String, CliError> {
    Ok(match cli.command {
        Command::Perft { pos, depth, divide } => {
            let p = load_position(pos.variant, pos.position.as_deref())?;
            arbiter_cli::perft(&p, depth, divide)
        }
        Command::Moves { pos } => {
            arbiter_cli::moves(&load_position(pos.variant, pos.position.as_deref())?)
        }
        Command::Play { pos, locale, moves } => {
            let p = load_position(pos.variant, pos.position.as_deref())?;
            arbiter_cli::play(p, &moves, locale.into())?
        }
        Command::Status { pos, locale, moves } => {
            let p = load_position(pos.variant, pos.position.as_deref())?;
            arbiter_cli::status(p, &moves, locale.into())?
        }
        Command::Pgn {
            locale,
            output_locale,
        } => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|e| CliError(format!("reading stdin: {e}")))?;
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
            ExitCode::from(2)
        }
    }
}
