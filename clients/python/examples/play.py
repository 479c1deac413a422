"""Plays a whole game of chess on an Arbiter server and prints it.

White is the engine (the analysis service's best move at depth 2); Black plays a random legal
move from the rules service (seeded, so every run is the same game). The last line printed is
the result, e.g. `1-0 checkmate`.

    ARBITER_ADDR=127.0.0.1:50051 python examples/play.py    # the key, if any: ARBITER_API_KEY
"""

import random

import arbiter_client

WHITE = arbiter_client.pb.matches.SIDE_WHITE
rng = random.Random(2026)

with arbiter_client.connect() as client:  # ARBITER_ADDR, else 127.0.0.1:50051
    game = client.create_match("chess", players=["engine", "random"], time_control="5+3")
    print(f"match {game.id}")
    while not game.over:
        board = game.board()  # the latest state the match's answers carried
        if board.side_to_move == WHITE:
            move = client.best_move(board.position, depth=2).best_move.uci
        elif board.ply >= 300:
            game.resign("black")  # a safety net: the engine mates long before this
            break
        else:
            move = rng.choice(client.legal_moves(board.position)).uci
        played = game.move(move).move  # as the side to move; retried safely by request id
        number = (played.ply + 1) // 2
        print(f"{number}{'.' if played.side == WHITE else '...'} {played.move.san}")
    print(game.result())
