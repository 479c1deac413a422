"""A match of `arbiter uci` against another UCI engine (Stockfish limited by UCI_Elo, or
Fairy-Stockfish at a Skill Level for crazyhouse), with python-chess driving both.

Usage: python match.py ARBITER OPPONENT --games N [--tc 10+0.1] [--variant chess|crazyhouse]
                       [--opponent-option NAME=VALUE ...] [--arbiter-option NAME=VALUE ...]
                       [--seed S]

Games start from random 4-ply openings, each played with colours swapped; the output is the
score with an Elo difference and its 95 % interval. `--arbiter-option EvalFile=FILE` plays
arbiter with another network than its built-in one (`EvalFile=none`: the hand-written
evaluation).
"""
import argparse
import math
import random
import time

import chess
import chess.engine
import chess.variant


def play(arbiter, opponent, board, arbiter_white, base, inc):
    clocks = {chess.WHITE: base, chess.BLACK: base}
    while not board.is_game_over(claim_draw=True):
        mover = board.turn
        engine = arbiter if (mover == chess.WHITE) == arbiter_white else opponent
        limit = chess.engine.Limit(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                                   white_inc=inc, black_inc=inc)
        start = time.monotonic()
        result = engine.play(board, limit)
        clocks[mover] -= time.monotonic() - start
        if clocks[mover] <= 0:
            # Lost on time (a draw if the opponent could not mate is ignored here).
            return 0.0 if (mover == chess.WHITE) == arbiter_white else 1.0
        clocks[mover] += inc
        board.push(result.move)
    outcome = board.outcome(claim_draw=True)
    if outcome.winner is None:
        return 0.5
    return 1.0 if (outcome.winner == chess.WHITE) == arbiter_white else 0.0


def uci_options(pairs):
    """The UCI options given as NAME=VALUE arguments."""
    return dict(o.split("=", 1) for o in pairs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("arbiter")
    p.add_argument("opponent")
    p.add_argument("--games", type=int, default=150)
    p.add_argument("--tc", default="10+0.1")
    p.add_argument("--variant", default="chess")
    p.add_argument("--opponent-option", action="append", default=[])
    p.add_argument("--arbiter-option", action="append", default=[])
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    base, inc = (float(x) for x in a.tc.split("+"))
    rng = random.Random(a.seed)
    make = chess.variant.CrazyhouseBoard if a.variant == "crazyhouse" else chess.Board
    points = []
    with chess.engine.SimpleEngine.popen_uci([a.arbiter, "uci"]) as arbiter, \
            chess.engine.SimpleEngine.popen_uci(a.opponent) as opponent:
        opponent.configure(uci_options(a.opponent_option))
        arbiter.configure(uci_options(a.arbiter_option))
        for pair in range(a.games // 2):
            opening = make()
            for _ in range(4):
                opening.push(rng.choice(list(opening.legal_moves)))
            for arbiter_white in (True, False):
                points.append(play(arbiter, opponent, opening.copy(), arbiter_white, base, inc))
                print(f"game {len(points)}: arbiter {'white' if arbiter_white else 'black'} scores "
                      f"{points[-1]}", flush=True)
    n = len(points)
    mean = sum(points) / n
    var = sum((x - mean) ** 2 for x in points) / n
    margin = 1.96 * math.sqrt(var / n)

    def elo(s):
        s = min(max(s, 1e-3), 1 - 1e-3)
        return -400 * math.log10(1 / s - 1)

    print(f"arbiter v opponent: {n} games, score {100 * mean:.1f}%, "
          f"Elo {elo(mean):+.0f} [{elo(mean - margin):+.0f}, {elo(mean + margin):+.0f}] (95%)")


if __name__ == "__main__":
    main()
