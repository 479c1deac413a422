"""Win at Chess: how many of the suite's positions `arbiter uci` solves in a given time each.

Usage: python wac.py ARBITER_BINARY WAC.EPD [SECONDS [NAME=VALUE ...]]   (python-chess required)

A position counts as solved when the engine's best move after SECONDS is one of the EPD's `bm`
moves (or not one of its `am` moves). Prints each failure and the total. Each NAME=VALUE is a UCI
option set before the first position (`EvalFile=none`: the hand-written evaluation).
"""
import sys

import chess
import chess.engine


def main(binary: str, epd_path: str, seconds: float, options: dict) -> None:
    solved = total = 0
    with chess.engine.SimpleEngine.popen_uci([binary, "uci"]) as engine:
        engine.configure({"Hash": 64, **options})
        for line in open(epd_path, encoding="utf-8"):
            if not line.strip():
                continue
            board, ops = chess.Board.from_epd(line)
            total += 1
            engine.protocol.send_line("ucinewgame")
            move = engine.play(board, chess.engine.Limit(time=seconds)).move
            good = move in ops.get("bm", [move]) and move not in ops.get("am", [])
            solved += good
            if not good:
                print(f"{ops.get('id', total)}: played {board.san(move)}, "
                      f"wanted {', '.join(board.san(m) for m in ops.get('bm', []))}", flush=True)
    print(f"solved {solved} of {total} at {seconds} s each")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 1.0,
         dict(option.split("=", 1) for option in sys.argv[4:]))
