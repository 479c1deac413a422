"""Writes a PGN of seeded random games of standard chess, for measuring `arbiter analyze-pgn`.

    python3 tools/review/random_games.py --games 6000 --seed 1 > games.pgn

Each game is random legal moves (python-chess) from the start, 1 to 138 plies long (about 70 on
average) or until it ends; the same seed writes the same file.
"""

import argparse
import random
import sys

import chess
import chess.pgn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = sys.stdout
    for n in range(args.games):
        board = chess.Board()
        game = chess.pgn.Game()
        game.headers["Event"] = f"random {n + 1}"
        node = game
        for _ in range(rng.randint(1, 138)):
            moves = list(board.legal_moves)
            if not moves:
                break
            move = rng.choice(moves)
            node = node.add_variation(move)
            board.push(move)
            if board.is_game_over(claim_draw=False):
                break
        game.headers["Result"] = board.result(claim_draw=False)
        print(game, file=out, end="\n\n")


if __name__ == "__main__":
    main()
