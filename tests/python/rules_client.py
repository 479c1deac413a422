"""Calls every RPC of arbiter.rules.v1.RulesService, and a bughouse match through
arbiter.rules.v1.BughouseService, through a client generated from proto/ by
grpcio-tools: the third-party view of the API. Usage: rules_client.py HOST:PORT (with the
generated modules on sys.path). Exits non-zero on the first failed check."""

import sys

import grpc

from arbiter.common.v1 import common_pb2 as common
from arbiter.rules.v1 import rules_pb2 as rules
from arbiter.rules.v1 import rules_pb2_grpc as rules_grpc
from arbiter.rules.v1 import bughouse_pb2 as bug
from arbiter.rules.v1 import bughouse_pb2_grpc as bug_grpc

START = common.Position(variant=common.VARIANT_CHESS)
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    checks += 1


def main(addr):
    channel = grpc.insecure_channel(addr)
    grpc.channel_ready_future(channel).result(timeout=10)
    stub = rules_grpc.RulesServiceStub(channel)

    r = stub.ValidateMove(rules.ValidateMoveRequest(position=START, move="e4"))
    check(r.WhichOneof("result") == "legal" and r.legal.move.uci == "e2e4", "ValidateMove legal")
    r = stub.ValidateMove(rules.ValidateMoveRequest(position=START, move="e7e5"))
    check(r.illegal.reason == rules.ILLEGAL_REASON_WRONG_SIDE, "ValidateMove illegal reason")

    reqs = [rules.ValidateMoveRequest(position=START, move=m, request_id=str(i))
            for i, m in enumerate(["e4", "Nf3", "Ke2"])]
    answers = list(stub.ValidateMoveStream(iter(reqs)))
    check([a.request_id for a in answers] == ["0", "1", "2"], "ValidateMoveStream order")
    check(answers[2].WhichOneof("result") == "illegal", "ValidateMoveStream verdicts")

    r = stub.ListLegalMoves(rules.ListLegalMovesRequest(position=START))
    check(len(r.moves) == 20, "ListLegalMoves")

    r = stub.ApplyMoves(rules.ApplyMovesRequest(start=START, moves=["e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7"]))
    check(r.status.outcome.reason == common.END_REASON_CHECKMATE, "ApplyMoves mate")
    check(r.status.outcome.score.text == "1-0", "ApplyMoves score")

    r = stub.GetGameStatus(rules.GetGameStatusRequest(start=START, moves="Nf3 Nf6 Ng1 Ng8 Nf3 Nf6 Ng1 Ng8".split()))
    check(list(r.status.claimable_draws) == [common.DRAW_CLAIM_THREEFOLD_REPETITION], "GetGameStatus claims")

    r = stub.ConvertMove(rules.ConvertMoveRequest(position=START, move="g1f3", output_locale=common.LOCALE_ITALIAN))
    check(r.move.san == "Cf3", "ConvertMove")

    r = stub.ImportPgn(rules.ImportPgnRequest(pgn="1. e4 e5 2. Nf3 *\n\n1. d4 d5 *\n"))
    check(len(r.games) == 2 and r.games[0].moves[2].uci == "g1f3", "ImportPgn")

    r = stub.ExportPgn(rules.ExportPgnRequest(start=START, moves=["f3", "e5", "g4", "Qh4"]))
    check("2. g4 Qh4# 0-1" in r.pgn, "ExportPgn")

    r = stub.Perft(rules.PerftRequest(position=START, depth=3))
    check(r.nodes == 8902, "Perft")

    stub.Ping(rules.PingRequest())
    check(len(list(stub.PingStream(iter([rules.PingRequest()] * 3)))) == 3, "PingStream")

    try:
        stub.ValidateMove(rules.ValidateMoveRequest(position=common.Position(variant=common.VARIANT_CHESS, text="8/8 w"), move="e4"))
        check(False, "bad FEN must fail")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "bad FEN code")
        check(e.details().startswith("position.text"), "bad FEN names the field")

    try:
        stub.Perft(rules.PerftRequest(position=START, depth=8, node_budget=1000))
        check(False, "perft over budget must fail")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, "perft budget code")

    bughouse(channel)
    print(f"python client: {checks} checks passed")


def bughouse(channel):
    """A short match: a capture on board A feeds the partner on B, who drops it; a stale ply is
    refused; a resignation ends the match and a watcher sees every event up to the end."""
    b = bug_grpc.BughouseServiceStub(channel)
    players = bug.Players(white_a="ann", black_a="bob", white_b="cid", black_b="dee")
    mid = b.CreateMatch(bug.CreateMatchRequest(players=players, time_control="180+0")).state.match_id
    check(mid != "", "CreateMatch id")

    def move(player, board, text, ply):
        return b.MakeMove(bug.MakeMoveRequest(
            match_id=mid, player_id=player, board=board, move=text, expected_ply=ply))

    move("ann", bug.BOARD_A, "e4", 0)
    move("bob", bug.BOARD_A, "d5", 1)
    r = move("ann", bug.BOARD_A, "exd5", 2)
    check(r.state.board_b.black_reserve == "p", "capture feeds the partner")
    move("cid", bug.BOARD_B, "Nf3", 0)
    r = move("dee", bug.BOARD_B, "P@e4", 1)
    check(r.move.move.uci == "P@e4" and r.state.board_b.black_reserve == "", "drop")
    try:
        move("bob", bug.BOARD_A, "e5", 1)
        check(False, "a stale ply must fail")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.FAILED_PRECONDITION, "stale ply code")
    end = b.Resign(bug.ResignRequest(match_id=mid, player_id="bob")).state
    check(end.outcome.winning_team == 1 and end.outcome.reason_name == "resignation", "Resign")
    events = list(b.WatchMatch(bug.WatchMatchRequest(match_id=mid, after_seq=0)))
    check(len(events) == end.last_seq and events[-1].WhichOneof("event") == "end", "WatchMatch")


if __name__ == "__main__":
    main(sys.argv[1])
