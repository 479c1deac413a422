"""Calls every RPC of arbiter.rules.v1.RulesService, plays hosted games through
arbiter.matches.v1.MatchService (a chess game to mate, a Glinski stalemate, a bughouse match,
seat tokens refused and accepted, a game lost on time, its PGN export read by python-chess, chat
and an abort), and syncs with and presses a standalone
clock of arbiter.clock.v1.ClockService, and matches two players through
arbiter.matchmaking.v1.MatchmakingService (join streams, the match found, play with its tokens,
ratings after the end), and analyses positions through arbiter.analysis.v1.AnalysisService
(a MultiPV stream, best moves, a bad limit, a batch job submitted, watched and read), through a client generated from proto/ by grpcio-tools: the
third-party view of the API. Usage: client.py HOST:PORT (with the generated modules on
sys.path). Exits non-zero on the first failed check.

The channel retries calls that fail with UNAVAILABLE (a server restarting behind a proxy, a
connection lost), as a client of a deployment with several replicas should: see RETRY_POLICY."""

import io
import json
import sys

import chess.pgn

import grpc

from arbiter.common.v1 import common_pb2 as common
from arbiter.rules.v1 import rules_pb2 as rules
from arbiter.rules.v1 import rules_pb2_grpc as rules_grpc
from arbiter.matches.v1 import matches_pb2 as mt
from arbiter.matches.v1 import matches_pb2_grpc as mt_grpc
from arbiter.clock.v1 import clock_pb2 as ck
from arbiter.clock.v1 import clock_pb2_grpc as ck_grpc
from arbiter.matchmaking.v1 import matchmaking_pb2 as mm
from arbiter.matchmaking.v1 import matchmaking_pb2_grpc as mm_grpc
from arbiter.analysis.v1 import analysis_pb2 as an
from arbiter.analysis.v1 import analysis_pb2_grpc as an_grpc
from concurrent.futures import ThreadPoolExecutor
import time

START = common.Position(variant=common.VARIANT_CHESS)
checks = 0

# Retry a call that failed with UNAVAILABLE, up to 5 attempts in all, with exponential backoff:
# grpc waits a random time up to 0.1 s, 0.2 s, 0.4 s, ... (at most 2 s) before each retry, so
# clients do not come back all at once. Retrying is safe only for idempotent calls. Every Arbiter
# call is one, as long as each state change carries its request id (CreateMatch, PauseClocks,
# ResumeClocks, AddTime, SubmitJob; moves are also recognised by seat, move and ply, a clock's
# creation by its id): a retry is answered with what the first attempt did, and never applied
# twice. A CreateMatch with neither request_id nor match_id is the exception: give every creation
# a request_id. grpc retries only until the server starts answering (a stream that broke after its
# first message is the caller's to watch again, with after_seq).
RETRY_POLICY = {
    "methodConfig": [{
        "name": [{"service": f"arbiter.{s}.v1.{n}Service"} for s, n in [
            ("rules", "Rules"), ("matches", "Match"), ("clock", "Clock"),
            ("matchmaking", "Matchmaking"), ("analysis", "Analysis")]],
        "retryPolicy": {
            "maxAttempts": 5,
            "initialBackoff": "0.1s",
            "maxBackoff": "2s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"],
        },
    }]
}


def connect(addr):
    """A channel to `addr` that retries idempotent calls on UNAVAILABLE (see RETRY_POLICY)."""
    return grpc.insecure_channel(addr, options=[
        ("grpc.enable_retries", 1),
        ("grpc.service_config", json.dumps(RETRY_POLICY)),
    ])


def check(cond, what):
    global checks
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    checks += 1


def main(addr):
    channel = connect(addr)
    grpc.channel_ready_future(channel).result(timeout=10)
    stub = rules_grpc.RulesServiceStub(channel)

    r = stub.ValidateMove(rules.ValidateMoveRequest(position=START, move="e4"))
    check(r.WhichOneof("result") == "legal" and r.legal.move.uci == "e2e4", "ValidateMove legal")
    r = stub.ValidateMove(rules.ValidateMoveRequest(position=START, move="e7e5"))
    check(r.illegal.reason == rules.ILLEGAL_REASON_WRONG_SIDE, "ValidateMove illegal reason")

    reqs = [rules.ValidateMoveStreamRequest(
                request=rules.ValidateMoveRequest(position=START, move=m, request_id=str(i)))
            for i, m in enumerate(["e4", "Nf3", "Ke2"])]
    answers = [a.response for a in stub.ValidateMoveStream(iter(reqs))]
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

    pasted = common.Position(variant=common.VARIANT_CHESS, text="4k3/8/8/8/8/8/8/1R2K3 w KQ e6 0 1")
    r = stub.ReadPosition(rules.ReadPositionRequest(position=pasted, lenient=True))
    check(r.position.text == "4k3/8/8/8/8/8/8/1R2K3 w - - 0 1", "ReadPosition lenient")
    check([c.field for c in r.corrections] == ["castling", "castling", "en_passant"], "ReadPosition corrections")
    r = stub.ReadPosition(rules.ReadPositionRequest(position=common.Position(variant=common.VARIANT_CHESS960, text="518")))
    check(r.chess960_start == 518 and r.shredder_fen.endswith("w HAha - 0 1"), "ReadPosition chess960")

    stub.Ping(rules.PingRequest())
    check(len(list(stub.PingStream(iter([rules.PingStreamRequest()] * 3)))) == 3, "PingStream")

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

    matches(channel)
    clocks(channel)
    matchmaking(channel)
    analysis(channel)
    print(f"python client: {checks} checks passed")


def analysis(channel):
    a = an_grpc.AnalysisServiceStub(channel)
    updates = list(a.Analyze(an.AnalyzeRequest(
        position=START, multipv=2, limits=an.SearchLimits(depth=4)),
        metadata=[("x-client-id", "python-check")]))
    infos = [u.info for u in updates if u.WhichOneof("update") == "info"]
    check(updates[-1].WhichOneof("update") == "result"
          and all(u.WhichOneof("update") == "info" for u in updates[:-1]), "Analyze: infos, then the result")
    check([i.multipv for i in infos[-2:]] == [1, 2] and infos[-1].depth == 4, "Analyze: MultiPV blocks")
    result = updates[-1].result
    check(result.depth == 4 and len(result.lines) == 2 and result.best_move.san != "", "Analyze result")
    check(result.stop_reason == an.STOP_REASON_LIMIT, "Analyze stop reason")
    check(result.bound == an.SCORE_BOUND_EXACT and all(l.bound == an.SCORE_BOUND_EXACT for l in result.lines),
          "Analyze: a finished search's scores are exact (SCORE_BOUND_EXACT, not the unset value)")

    mate = common.Position(variant=common.VARIANT_CHESS,
                           text="r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 2 3")
    r = a.BestMove(an.BestMoveRequest(position=mate, limits=an.SearchLimits(nodes=20000))).result
    check(r.best_move.san == "Qxf7#" and r.score.mate == 1 and r.nodes <= 20000, "BestMove mate in one")
    hexa = a.BestMove(an.BestMoveRequest(position=common.Position(variant=common.VARIANT_GLINSKI),
                                         limits=an.SearchLimits(depth=2))).result
    check(hexa.best_move.uci != "" and hexa.depth == 2, "BestMove Glinski")
    pgn = '[Event "fool"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n'
    job = a.SubmitJob(an.SubmitJobRequest(request_id="python-job-1", pgn=pgn,
                                          per_ply=an.PlyLimit(nodes=3000)))
    check(not job.duplicate, "SubmitJob: a new job")
    job = job.status
    check(job.games == 1 and job.positions == 5, "SubmitJob")
    statuses = [w.status for w in a.WatchJob(an.WatchJobRequest(job_id=job.job_id), timeout=60)]
    check(statuses[-1].state == an.JOB_STATE_DONE and statuses[-1].positions_done == 5, "WatchJob to the end")
    again = a.SubmitJob(an.SubmitJobRequest(request_id="python-job-1", pgn=pgn,
                                            per_ply=an.PlyLimit(nodes=3000)))
    check(again.duplicate and again.status.job_id == job.job_id, "SubmitJob idempotent by request_id")
    results = a.GetJobResults(an.GetJobResultsRequest(job_id=job.job_id))
    game = results.games[0]
    check([p.move.san for p in game.plies] == ["f3", "e5", "g4", "Qh4#"], "GetJobResults moves")
    check(all(p.judgement != an.JUDGEMENT_UNSPECIFIED for p in game.plies),
          "GetJobResults: every move of a chess game is judged")
    check(game.plies[2].judgement == an.JUDGEMENT_BLUNDER and game.white_blunders == 1
          and game.HasField("white_accuracy"), "GetJobResults verdicts and accuracy")
    try:
        a.BestMove(an.BestMoveRequest(position=START, limits=an.SearchLimits(depth=65)))
        check(False, "BestMove depth 65 refused")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and "limits.depth" in e.details(),
              "BestMove bad limit: INVALID_ARGUMENT on limits.depth")


def clocks(channel):
    """A game lost on time with no move sent (hosted), Sync, and a standalone clock pressed,
    retried, and flagged with no press."""
    m = mt_grpc.MatchServiceStub(channel)
    A, W, K = mt.BOARD_A, mt.SIDE_WHITE, mt.SIDE_BLACK
    created = m.CreateMatch(mt.CreateMatchRequest(
        variant=common.VARIANT_CHESS, players=["ann", "bob"], time_control="2s+0",
        request_id="py-clock-1"))
    game, tokens = created.state.match_id, seat_tokens(created)
    check(created.state.speed == "bullet", "speed category")
    for side, text, ply in [(W, "e4", 0), (K, "e5", 1)]:
        r = m.MakeMove(mt.MakeMoveRequest(match_id=game, side=side, move=text, expected_ply=ply,
                                          lag_ms=20), metadata=auth(tokens[(A, side)]))
    clock = r.state.boards[0].clock
    check(clock.phase == mt.CLOCK_PHASE_RUNNING and clock.running == W, "clock runs")
    events = list(m.WatchMatch(mt.WatchMatchRequest(match_id=game, after_seq=0)))
    end = events[-1].end.outcome
    check(end.reason == common.END_REASON_TIMEOUT and end.score.text == "0-1",
          "lost on time with no move sent")

    c = ck_grpc.ClockServiceStub(channel)
    t1 = int(time.time() * 1000)
    s = c.Sync(ck.SyncRequest(client_send_ms=t1))
    t4 = int(time.time() * 1000)
    check(s.client_send_ms == t1 and abs(s.server_receive_ms - (t1 + t4) // 2) < 1000, "Sync")
    st = c.CreateClock(ck.CreateClockRequest(clock_id="py", time_control="2s+0")).state
    check(st.boards[0].running == ck.SIDE_WHITE, "standalone clock runs")
    c.Press(ck.PressRequest(clock_id="py", side=ck.SIDE_WHITE, ply=0))
    again = c.Press(ck.PressRequest(clock_id="py", side=ck.SIDE_WHITE, ply=0))
    check(again.duplicate, "a retried press is a duplicate")
    events = list(c.WatchClock(ck.WatchClockRequest(clock_id="py")))
    check(events[-1].flag.side == ck.SIDE_BLACK, "standalone flag with no press")


def matchmaking(channel):
    """Two players join a rated chess pool on their streams, are matched, play with the seat
    tokens they were handed, and are rated from the match's end; a bad join names its field."""
    stub = mm_grpc.MatchmakingServiceStub(channel)
    try:
        next(stub.Join(mm.JoinRequest(player_id="py", variant=common.VARIANT_CHESS,
                                      time_control="later")))
        check(False, "a bad time control is refused")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and "time_control" in e.details(),
              "Join names the bad field")

    def wait_for_match(player):
        statuses = 0
        for event in stub.Join(mm.JoinRequest(player_id=player, variant=common.VARIANT_CHESS,
                                              time_control="5+3", rated=True)):
            if event.WhichOneof("event") == "status":
                statuses += 1
            else:
                return statuses, event.match_found
        raise SystemExit(f"FAILED: {player}'s stream ended without a match")

    with ThreadPoolExecutor(2) as pool:
        found = list(pool.map(wait_for_match, ["py-ann", "py-bob"]))
    check(all(s >= 1 for s, _ in found), "queue status before the match")
    found = [f for _, f in found]
    check(found[0].match_id == found[1].match_id and found[0].pool == "chess/5+3/rated",
          "MatchFound: one match in the pool")
    white = next(f for f in found if f.seat.side == mt.SIDE_WHITE)
    black = next(f for f in found if f.seat.side == mt.SIDE_BLACK)
    m = mt_grpc.MatchServiceStub(channel)
    r = m.MakeMove(mt.MakeMoveRequest(match_id=white.match_id, side=mt.SIDE_WHITE, move="e4"),
                   metadata=auth(white.token))
    check(r.state.boards[0].clock.white_ms > 0, "the matched game has clocks")
    for f in found:
        check(stub.Acknowledge(mm.AcknowledgeRequest(player_id=f.seat.player_id,
                                                     match_id=f.match_id)).acknowledged,
              "Acknowledge")
    m.Resign(mt.ResignRequest(match_id=black.match_id, side=mt.SIDE_BLACK, request_id="py-r"),
             metadata=auth(black.token))
    for _ in range(100):
        ratings = stub.GetRatings(mm.GetRatingsRequest(player_id=white.seat.player_id)).ratings
        if ratings:
            break
        time.sleep(0.1)
    check(len(ratings) == 1 and ratings[0].games == 1 and ratings[0].elo == 1520
          and ratings[0].glicko_rating > 1500, "ratings from the match's outcome")


def seat_tokens(created):
    """{(board, side): token} from a CreateMatch answer."""
    return {(c.seat.board, c.seat.side): c.token for c in created.seats}


def auth(token):
    return [("authorization", f"Bearer {token}")]


def matches(channel):
    """Hosted games: a chess game to mate with seat tokens, a Glinski stalemate scored 3/4-1/4,
    and a bughouse match where a capture feeds the partner; a stale ply and a wrong token are
    refused; a watcher sees every event up to the end."""
    m = mt_grpc.MatchServiceStub(channel)
    A, B, W, K = mt.BOARD_A, mt.BOARD_B, mt.SIDE_WHITE, mt.SIDE_BLACK

    created = m.CreateMatch(mt.CreateMatchRequest(
        variant=common.VARIANT_CHESS, players=["ann", "bob"], time_control="180+2",
        request_id="py-chess-1"))
    again = m.CreateMatch(mt.CreateMatchRequest(
        variant=common.VARIANT_CHESS, players=["ann", "bob"], time_control="180+2",
        request_id="py-chess-1"))
    check(created.created and not again.created, "CreateMatch retried")
    check(created.seats == again.seats, "CreateMatch retry gives the same tokens")
    mid, tokens = created.state.match_id, seat_tokens(created)

    def move(side, text, ply, board=A, token=None, match=None, request_id=""):
        return m.MakeMove(mt.MakeMoveRequest(match_id=match or mid, board=board, side=side,
                                             move=text, expected_ply=ply, request_id=request_id),
                          metadata=auth(token or tokens[(board, side)]))

    try:
        m.MakeMove(mt.MakeMoveRequest(match_id=mid, side=W, move="e4"))
        check(False, "a move without a token must fail")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.UNAUTHENTICATED, "no token")
    try:
        move(W, "e4", 0, token=tokens[(A, K)])
        check(False, "the opponent's token must fail")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.PERMISSION_DENIED, "wrong token")
    first = move(W, "f3", 0, request_id="py-w-1")
    move(K, "e5", 1)
    again = move(W, "f3", 0, request_id="py-w-1")
    check(again.duplicate and again.move == first.move, "a retry by request id is a duplicate")
    move(W, "g4", 2)
    try:
        move(K, "Qh4", 1)
        check(False, "a stale ply must fail")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.FAILED_PRECONDITION, "stale ply code")
    end = move(K, "Qh4#", 3).state
    check(end.outcome.outcome.score.text == "0-1"
          and end.outcome.outcome.reason_name == "checkmate", "chess mate")
    events = list(m.WatchMatch(mt.WatchMatchRequest(match_id=mid, after_seq=0)))
    check(len(events) == end.last_seq and events[-1].WhichOneof("event") == "end", "WatchMatch")
    # The game exported as PGN and read by python-chess: its moves, its clocks, its tags.
    exported = m.ExportMatch(mt.ExportMatchRequest(match_id=mid))
    game = chess.pgn.read_game(io.StringIO(exported.pgn))
    check([n.san() for n in game.mainline()] == ["f3", "e5", "g4", "Qh4#"],
          "ExportMatch moves (python-chess)")
    check(all(n.clock() is not None and n.clock() > 10_000 for n in game.mainline()),
          "ExportMatch [%clk] (python-chess)")
    check(game.headers["Result"] == "0-1" and game.headers["Termination"] == "normal"
          and game.headers["White"] == "ann", "ExportMatch tags")

    # Chat between the seats, then an abort before both sides have moved.
    created = m.CreateMatch(mt.CreateMatchRequest(
        variant=common.VARIANT_CHESS, players=["eve", "fay"], request_id="py-chat-1"))
    chat_id, ctokens = created.state.match_id, seat_tokens(created)
    posted = m.PostChat(mt.PostChatRequest(match_id=chat_id, side=W, text="good luck!",
                                           request_id="py-chat-m1"),
                        metadata=auth(ctokens[(A, W)]))
    check(posted.message.id == 1 and posted.message.author == "eve", "PostChat")
    stream = m.WatchChat(mt.WatchChatRequest(match_id=chat_id, side=K, after_id=0),
                         metadata=auth(ctokens[(A, K)]))
    check(next(stream).message.text == "good luck!", "WatchChat")
    stream.cancel()
    aborted = m.AbortMatch(mt.AbortMatchRequest(match_id=chat_id, side=K),
                           metadata=auth(ctokens[(A, K)])).state
    check(aborted.outcome.outcome.reason_name == "aborted"
          and not aborted.outcome.outcome.HasField("score"), "AbortMatch")

    created = m.CreateMatch(mt.CreateMatchRequest(
        variant=common.VARIANT_GLINSKI, players=["ann", "bob"],
        start="k/3/5/2K4/9/11/11/11/11/11/10N w - 0 1", request_id="py-glinski-1"))
    hexm, htokens = created.state.match_id, seat_tokens(created)
    end = move(W, "Ke8-f9", 0, token=htokens[(A, W)], match=hexm).state
    score = end.outcome.outcome.score
    check((score.white_quarters, score.black_quarters) == (3, 1), "Glinski stalemate 3/4-1/4")

    created = m.CreateMatch(mt.CreateMatchRequest(
        variant=common.VARIANT_BUGHOUSE, players=["ann", "bob", "cid", "dee"],
        request_id="py-bughouse-1"))
    bug, btokens = created.state.match_id, seat_tokens(created)

    def bmove(board, side, text, ply):
        return move(side, text, ply, board=board, token=btokens[(board, side)], match=bug)

    bmove(A, W, "e4", 0)
    bmove(A, K, "d5", 1)
    r = bmove(A, W, "exd5", 2)
    check(r.state.boards[1].black_reserve == "p", "capture feeds the partner")
    bmove(B, W, "Nf3", 0)
    r = bmove(B, K, "P@e4", 1)
    check(r.move.move.uci == "P@e4" and r.state.boards[1].black_reserve == "", "drop")
    end = m.Resign(mt.ResignRequest(match_id=bug, board=A, side=K, request_id="py-bug-r"),
                   metadata=auth(btokens[(A, K)])).state
    check(end.outcome.winning_team == 1 and end.outcome.outcome.reason_name == "resignation",
          "Resign")
    events = list(m.WatchMatch(mt.WatchMatchRequest(match_id=bug, after_seq=0)))
    check(len(events) == end.last_seq and events[-1].WhichOneof("event") == "end",
          "WatchMatch bughouse")


if __name__ == "__main__":
    main(sys.argv[1])
