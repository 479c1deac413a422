"""UCI conformance of `arbiter uci`, driven by python-chess's engine module.

Usage: uci.py PATH_TO_ARBITER
"""
import sys
import time

import chess
import chess.engine
import chess.variant


def main(binary: str) -> None:
    with chess.engine.SimpleEngine.popen_uci([binary, "uci"], timeout=30) as engine:
        assert engine.id["name"].startswith("Arbiter"), engine.id
        for name in ("Hash", "Threads", "MultiPV", "Move Overhead", "UCI_Variant"):
            assert name in engine.options, name
        engine.configure({"Hash": 32, "Move Overhead": 10})

        # A short game against itself on a clock, every move legal.
        board = chess.Board()
        clock = {chess.WHITE: 2.0, chess.BLACK: 2.0}
        while not board.is_game_over() and board.ply() < 40:
            limit = chess.engine.Limit(white_clock=clock[chess.WHITE], black_clock=clock[chess.BLACK],
                                       white_inc=0.05, black_inc=0.05)
            start = time.monotonic()
            result = engine.play(board, limit)
            clock[board.turn] += 0.05 - (time.monotonic() - start)
            assert clock[board.turn] > 0, "lost on time"
            assert result.move in board.legal_moves, result.move
            board.push(result.move)
        print(f"self-play on a clock: {board.ply()} plies, clocks {clock[True]:.2f}/{clock[False]:.2f} s")

        # Every kind of limit.
        for limit in (chess.engine.Limit(depth=5), chess.engine.Limit(nodes=20000),
                      chess.engine.Limit(time=0.2)):
            info = engine.analyse(chess.Board(), limit)
            assert info["depth"] >= 1 and "pv" in info and info["pv"][0] in chess.Board().legal_moves
        info = engine.analyse(chess.Board(), chess.engine.Limit(nodes=20000))
        assert info["nodes"] <= 20000, info["nodes"]

        # MultiPV: distinct first moves, best first.
        infos = engine.analyse(chess.Board(), chess.engine.Limit(depth=6), multipv=3)
        assert len(infos) == 3 and len({i["pv"][0] for i in infos}) == 3
        scores = [i["score"].relative.score(mate_score=100000) for i in infos]
        assert scores == sorted(scores, reverse=True), scores

        # A mate is reported as one.
        mate = chess.Board("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
        info = engine.analyse(mate, chess.engine.Limit(depth=4))
        assert info["score"].relative == chess.engine.Mate(1), info["score"]
        assert engine.play(mate, chess.engine.Limit(depth=4)).move == chess.Move.from_uci("d1d8")

        # No legal move: no best move.
        stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
        assert engine.play(stalemate, chess.engine.Limit(depth=3)).move is None

        # Infinite analysis ends on stop with a best move.
        with engine.analysis(chess.Board()) as analysis:
            time.sleep(0.3)
            analysis.stop()
            best = analysis.wait()
        assert best.move in chess.Board().legal_moves

        # Pondering, then the expected reply arrives (ponderhit) or another (stop).
        board = chess.Board()
        result = engine.play(board, chess.engine.Limit(time=0.2), ponder=True)
        assert result.move in board.legal_moves
        board.push(result.move)
        if result.ponder is not None:
            board.push(result.ponder)
            result = engine.play(board, chess.engine.Limit(time=0.2), ponder=True)
            assert result.move in board.legal_moves

        # Crazyhouse through UCI_Variant: drops in the game, legal throughout.
        board = chess.variant.CrazyhouseBoard()
        for _ in range(30):
            if board.is_game_over():
                break
            result = engine.play(board, chess.engine.Limit(nodes=5000))
            assert result.move in board.legal_moves, result.move
            board.push(result.move)
        print(f"crazyhouse: {board.ply()} plies, final {board.fen()}")

    # Chess960: python-chess sets UCI_Chess960 for a Chess960 board and reads castling as the
    # king taking its own rook. Games from several start positions and MultiPV lines, every move
    # legal.
    with chess.engine.SimpleEngine.popen_uci([binary, "uci"], timeout=30) as engine:
        assert "UCI_Chess960" in engine.options
        castled = 0
        for number in (0, 518, 959, 123, 777):
            board = chess.Board.from_chess960_pos(number)
            while not board.is_game_over() and board.ply() < 40:
                result = engine.play(board, chess.engine.Limit(nodes=3000))
                assert result.move in board.legal_moves, (number, board.fen(), result.move)
                castled += board.is_castling(result.move)
                board.push(result.move)
        # Principal variations from a position where both sides may castle at once (king b1,
        # rooks a1 and g1): every move of every line parses as a legal move in sequence.
        board = chess.Board("rk4r1/pppppppp/8/8/8/8/PPPPPPPP/RK4R1 w KQkq - 0 1", chess960=True)
        infos = engine.analyse(board, chess.engine.Limit(depth=5), multipv=4)
        for info in infos:
            line = board.copy()
            for move in info["pv"]:
                assert move in line.legal_moves, (line.fen(), move)
                castled += line.is_castling(move)
                line.push(move)
        print(f"chess960: 5 games of 40 plies and 4 lines, {castled} castlings, all legal")
    print("UCI conformance through python-chess: ok")


if __name__ == "__main__":
    main(sys.argv[1])
