"""The client: :func:`connect`, :class:`Client`, and the per-match, per-job and pairing
handles (:class:`Match`, :class:`Job`, :class:`Pairing`)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import (
    Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union, cast,
)

import grpc

from . import pb
from ._channel import make_channel, resolve_api_key
from ._errors import ArbiterError
from ._retry import Backoff, RetryInterceptor, RetryPolicy
from ._watch import resumable
from ._channel import _Metadata

common, rules, mt, mm, an = pb.common, pb.rules, pb.matches, pb.matchmaking, pb.analysis

#: A seat: ``"white"`` / ``"black"`` (board A), ``"A:white"``, ``"B:black"``, a ``(board,
#: side)`` pair (``("B", "black")``, ``(pb.matches.BOARD_B, pb.matches.SIDE_BLACK)``), a side
#: enum value, or the player id the match was created with. None: the only seat this client
#: holds a token for in the match, or (for a move) the side to move on a single board.
SeatLike = Union[str, int, Tuple[Union[str, int], Union[str, int]], None]
#: A position: a ``pb.common.Position``, a position string (FEN, ...) of ``variant``, or None
#: for the variant's start.
PositionLike = Union["common.Position", str, None]
#: A seat as the client keeps it: ``(board, side)``, the board always set (BOARD_A for a
#: single-board game).
Seat = Tuple["mt.Board", "mt.Side"]
#: Rule options: ``{"stalemate": "loses"}`` or ``[("stalemate", "loses")]``.
RulesLike = Union[Mapping[str, str], Sequence[Tuple[str, str]], None]

_SIDES: Dict[str, "mt.Side"] = {"white": mt.SIDE_WHITE, "w": mt.SIDE_WHITE, "black": mt.SIDE_BLACK, "b": mt.SIDE_BLACK}
_BOARDS: Dict[str, "mt.Board"] = {"a": mt.BOARD_A, "b": mt.BOARD_B}


def variant_value(name: Union[str, int]) -> "common.Variant":
    """``"chess"``, ``"byzantine-citadel"``, ``"VARIANT_GLINSKI"`` or an enum value -> the
    ``pb.common.Variant`` value."""
    if isinstance(name, int):
        return cast("common.Variant", name)
    key = name.strip().upper().replace("-", "_")
    if not key.startswith("VARIANT_"):
        key = "VARIANT_" + key
    try:
        return cast("common.Variant", common.Variant.Value(key))
    except ValueError:
        raise ValueError(f"unknown variant {name!r}") from None


def variant_name(value: int) -> str:
    """``pb.common.VARIANT_BYZANTINE_CITADEL`` -> ``"byzantine-citadel"``."""
    return common.Variant.Name(value)[len("VARIANT_"):].lower().replace("_", "-")


def make_position(pos: PositionLike = None, variant_: Union[str, int] = "chess",
                  rules_: RulesLike = None) -> "common.Position":
    """A ``pb.common.Position`` from a position string (or the start, for None)."""
    if isinstance(pos, common.Position):
        return pos
    return common.Position(variant=variant_value(variant_), text=pos or "", rules=_rule_options(rules_))


def _rule_options(r: RulesLike) -> List["common.RuleOption"]:
    if not r:
        return []
    items = r.items() if isinstance(r, Mapping) else r
    return [common.RuleOption(name=k, value=v) for k, v in items]


def _auth(token: str) -> List[Tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


def _parse_seat(seat: SeatLike) -> Tuple[Optional["mt.Board"], "mt.Side"]:
    """(board, side), board None where the seat does not say; KeyError on anything else."""
    if isinstance(seat, tuple):
        b, s = seat
        board = _BOARDS[b.lower()] if isinstance(b, str) else b
        side = _SIDES[s.lower()] if isinstance(s, str) else s
        return cast("mt.Board", board), cast("mt.Side", side)
    if isinstance(seat, int):
        return None, cast("mt.Side", seat)
    if isinstance(seat, str):
        text = seat.strip().lower()
        if text in _SIDES:
            return None, _SIDES[text]
        for sep in (":", "/", " ", "-"):
            if sep in text:
                b, _, s = text.partition(sep)
                if b in _BOARDS and s in _SIDES:
                    return _BOARDS[b], _SIDES[s]
    raise KeyError(seat)


@dataclass(frozen=True)
class Pairing:
    """What :meth:`Client.join_pool` found: the match (with this player's token kept), the
    player's seat ``(board, side)``, and the server's ``MatchFound``."""

    match: "Match"
    seat: Seat
    found: "mm.MatchFound"


class Match:
    """A hosted match: its id, the seat tokens this client holds for it, and its latest
    known state. Made by :meth:`Client.create_match`, :meth:`Client.seat`,
    :meth:`Client.match` or :meth:`Client.join_pool`.

    Seated calls (:meth:`move`, :meth:`resign`, :meth:`offer_draw`, ...) name a seat and the
    client sends that seat's token; each gets a fresh request id (or the caller's) that is
    reused on every retry, so a move is applied exactly once however many attempts it takes.
    """

    def __init__(self, client: "Client", match_id: str,
                 state: Optional["mt.MatchState"] = None) -> None:
        self.client = client
        self.id = match_id
        self._state = state

    def __repr__(self) -> str:
        return f"Match({self.id!r})"

    # --- state -------------------------------------------------------------------------

    @property
    def last_state(self) -> Optional["mt.MatchState"]:
        """The latest state this object has seen (from creation, a move, :meth:`state`), or
        None; no call is made."""
        return self._state

    def _note(self, state: "mt.MatchState") -> "mt.MatchState":
        if self._state is None or state.last_seq >= self._state.last_seq:
            self._state = state
        return state

    def state(self, *, timeout: Optional[float] = None) -> "mt.MatchState":
        """Reads the match (GetMatch): boards, clocks, outcome, draw offers."""
        r = self.client.matches.GetMatch(mt.GetMatchRequest(match_id=self.id), timeout=timeout)
        return self._note(r.state)

    def _known_state(self) -> "mt.MatchState":
        return self._state if self._state is not None else self.state()

    @property
    def over(self) -> bool:
        """Whether the latest known state has an outcome."""
        return self._state is not None and self._state.HasField("outcome")

    @property
    def outcome(self) -> Optional["mt.MatchOutcome"]:
        """The outcome of the latest known state, or None while the match goes on."""
        return self._state.outcome if self.over else None  # type: ignore[union-attr]

    def result(self) -> str:
        """``"1-0 checkmate"``, ``"1/2-1/2 stalemate"``, ``"aborted"`` (no score), or
        ``"*"`` while the match goes on (latest known state)."""
        o = self.outcome
        if o is None:
            return "*"
        text = o.outcome.score.text if o.outcome.HasField("score") else ""
        return f"{text} {o.outcome.reason_name}".strip()

    def board(self, board: Union[str, int] = "A") -> "mt.BoardState":
        """A board of the latest known state (read once if none is known)."""
        b = _BOARDS[board.lower()] if isinstance(board, str) else cast("mt.Board", board)
        for s in self._known_state().boards:
            if s.board == b or (b == mt.BOARD_A and s.board == mt.BOARD_UNSPECIFIED):
                return s
        raise KeyError(f"match {self.id} has no board {board}")

    # --- seats -------------------------------------------------------------------------

    @property
    def seats(self) -> Dict[Seat, str]:
        """The seats this client holds tokens for in this match: ``{(board, side): token}``."""
        return self.client._tokens_of(self.id)

    def _players(self) -> Dict[str, Seat]:
        st = self._state
        if st is None:
            return {}
        return {s.player_id: (s.board or mt.BOARD_A, s.side) for s in st.seats}

    def resolve_seat(self, seat: SeatLike = None, *, for_move: bool = False) -> Seat:
        """``(board, side)`` of a seat given as :data:`SeatLike`."""
        if seat is None:
            mine = list(self.seats)
            if len(mine) == 1:
                return mine[0]
            if for_move:
                st = self._known_state()
                if len(st.boards) == 1:
                    return mt.BOARD_A, st.boards[0].side_to_move
            raise ValueError(f"match {self.id}: say which seat (this client holds {len(mine)})")
        try:
            board, side = _parse_seat(seat)
        except KeyError:
            players = self._players()
            if not players:
                self.state()
                players = self._players()
            if isinstance(seat, str) and seat in players:
                return players[seat]
            raise ValueError(f"match {self.id}: no seat {seat!r}") from None
        if board is None or board == mt.BOARD_UNSPECIFIED:
            board = mt.BOARD_A
        return board, side

    def token(self, seat: SeatLike = None) -> str:
        """The token of a seat (KeyError when this client holds none for it)."""
        b, s = self.resolve_seat(seat)
        try:
            return self.seats[(b, s)]
        except KeyError:
            raise KeyError(f"match {self.id}: no token for seat {mt.Board.Name(b)} "
                           f"{mt.Side.Name(s)}") from None

    def _seated(self, seat: SeatLike,
                for_move: bool = False) -> Tuple["mt.Board", "mt.Side", List[Tuple[str, str]]]:
        b, s = self.resolve_seat(seat, for_move=for_move)
        return b, s, _auth(self.token((b, s)))

    # --- seated calls ------------------------------------------------------------------

    def move(self, move: str, seat: SeatLike = None, *, expected_ply: Optional[int] = None,
             request_id: Optional[str] = None, lag_ms: int = 0,
             locale: "common.Locale" = common.LOCALE_UNSPECIFIED,
             timeout: Optional[float] = None) -> "mt.MakeMoveResponse":
        """Plays ``move`` (UCI or the variant's SAN) for ``seat`` (default: the side to move,
        or the one seat held). ``expected_ply`` defaults to the board's ply in the latest
        known state (read once if none is known); a stale one is FAILED_PRECONDITION
        ``STALE_PLY``, not retried. The request id (a new UUID v4 unless given) is the same on
        every attempt: a retry of an applied move answers ``duplicate=True``."""
        b, s, md = self._seated(seat, for_move=True)
        if expected_ply is None:
            expected_ply = self.board(b).ply
        r = self.client.matches.MakeMove(
            mt.MakeMoveRequest(match_id=self.id, board=b, side=s, move=move,
                               expected_ply=expected_ply, request_id=request_id or "",
                               lag_ms=lag_ms, locale=locale),
            metadata=md, timeout=timeout)
        self._note(r.state)
        return r

    def resign(self, seat: SeatLike = None, *, request_id: Optional[str] = None) -> "mt.ResignResponse":
        """Resigns for the seat's side (in bughouse, its team)."""
        b, s, md = self._seated(seat)
        r = self.client.matches.Resign(mt.ResignRequest(
            match_id=self.id, board=b, side=s, request_id=request_id or ""), metadata=md)
        self._note(r.state)
        return r

    def offer_draw(self, seat: SeatLike = None, *, request_id: Optional[str] = None) -> "mt.OfferDrawResponse":
        """Offers a draw (or accepts the other side's standing offer)."""
        b, s, md = self._seated(seat)
        r = self.client.matches.OfferDraw(mt.OfferDrawRequest(
            match_id=self.id, board=b, side=s, request_id=request_id or ""), metadata=md)
        self._note(r.state)
        return r

    def decline_draw(self, seat: SeatLike = None, *, request_id: Optional[str] = None) -> "mt.DeclineDrawResponse":
        """Declines the other side's standing draw offer."""
        b, s, md = self._seated(seat)
        r = self.client.matches.DeclineDraw(mt.DeclineDrawRequest(
            match_id=self.id, board=b, side=s, request_id=request_id or ""), metadata=md)
        self._note(r.state)
        return r

    def claim_draw(self, claim: Union[str, int], seat: SeatLike = None, *,
                   request_id: Optional[str] = None) -> "mt.ClaimDrawResponse":
        """Claims a draw: ``"threefold"`` / ``"fifty"`` or a ``pb.common.DrawClaim``."""
        if isinstance(claim, str):
            claim = {"threefold": common.DRAW_CLAIM_THREEFOLD_REPETITION,
                     "fifty": common.DRAW_CLAIM_FIFTY_MOVE_RULE}.get(
                claim.lower(), None) or common.DrawClaim.Value(claim)
        claim_value = cast("common.DrawClaim", claim)
        b, s, md = self._seated(seat)
        r = self.client.matches.ClaimDraw(mt.ClaimDrawRequest(
            match_id=self.id, board=b, side=s, claim=claim_value, request_id=request_id or ""),
            metadata=md)
        self._note(r.state)
        return r

    def abort(self, seat: SeatLike = None, *, request_id: Optional[str] = None) -> "mt.AbortMatchResponse":
        """Calls the match off before both sides have moved (no result)."""
        b, s, md = self._seated(seat)
        r = self.client.matches.AbortMatch(mt.AbortMatchRequest(
            match_id=self.id, board=b, side=s, request_id=request_id or ""), metadata=md)
        self._note(r.state)
        return r

    def propose_takeback(self, seat: SeatLike = None, *,
                         request_id: Optional[str] = None) -> "mt.ProposeTakebackResponse":
        """Proposes to take back the seat's latest move (matches created with takebacks)."""
        b, s, md = self._seated(seat)
        r = self.client.matches.ProposeTakeback(mt.ProposeTakebackRequest(
            match_id=self.id, board=b, side=s, request_id=request_id or ""), metadata=md)
        self._note(r.state)
        return r

    def answer_takeback(self, accept: bool, seat: SeatLike = None, *,
                        request_id: Optional[str] = None) -> "mt.AnswerTakebackResponse":
        """Accepts or declines the other side's takeback proposal."""
        b, s, md = self._seated(seat)
        r = self.client.matches.AnswerTakeback(mt.AnswerTakebackRequest(
            match_id=self.id, board=b, side=s, accept=accept, request_id=request_id or ""),
            metadata=md)
        self._note(r.state)
        return r

    def chat(self, text: str, seat: SeatLike = None, *, team: bool = False,
             request_id: Optional[str] = None) -> "mt.PostChatResponse":
        """Posts a chat message to the players' channel (``team=True``: the bughouse team's)."""
        b, s, md = self._seated(seat)
        return self.client.matches.PostChat(mt.PostChatRequest(
            match_id=self.id, board=b, side=s, text=text, request_id=request_id or "",
            channel=mt.CHAT_CHANNEL_TEAM if team else mt.CHAT_CHANNEL_PLAYERS), metadata=md)

    # --- streams and reads -------------------------------------------------------------

    def watch(self, after_seq: int = 0) -> Iterator["mt.WatchMatchResponse"]:
        """The match's events after ``after_seq``, each once and in order, up to and
        including the ``end`` event (then the iterator stops). A broken stream is opened
        again with ``after_seq`` = the last ``seq`` yielded, after the retry backoff; events
        already yielded are dropped."""
        stub = self.client.matches

        def open_stream(after: int) -> Iterable["mt.WatchMatchResponse"]:
            return stub.WatchMatch(mt.WatchMatchRequest(match_id=self.id, after_seq=after))

        return resumable(open_stream, after=after_seq, seq=lambda e: e.seq,
                         terminal=lambda e: e.WhichOneof("event") == "end",
                         policy=self.client.retry_policy, sleep=self.client._sleep)

    def watch_chat(self, seat: SeatLike = None, after_id: int = 0) -> Iterator["mt.WatchChatResponse"]:
        """The seat's chat channels from ``after_id``, resumed after a break like
        :meth:`watch`; endless (stop iterating to leave)."""
        b, s, md = self._seated(seat)
        stub = self.client.matches

        def open_stream(after: int) -> Iterable["mt.WatchChatResponse"]:
            return stub.WatchChat(mt.WatchChatRequest(match_id=self.id, board=b, side=s,
                                                      after_id=after), metadata=md)

        return resumable(open_stream, after=after_id, seq=lambda e: e.id,
                         policy=self.client.retry_policy, sleep=self.client._sleep)

    def export(self) -> str:
        """The match as PGN (BPGN for bughouse), as it stands."""
        return self.client.matches.ExportMatch(mt.ExportMatchRequest(match_id=self.id)).pgn

    def legal_moves(self, board: Union[str, int] = "A") -> List["common.Move"]:
        """The legal moves of a board's position in the latest known state (rules service)."""
        st = self._known_state()
        pos = common.Position(variant=st.variant, text=self.board(board).position,
                              rules=st.rules)
        return list(self.client.rules.ListLegalMoves(
            rules.ListLegalMovesRequest(position=pos)).moves)


class Job:
    """A batch analysis job (:meth:`Client.submit_job`)."""

    def __init__(self, client: "Client", status: "an.JobStatus", duplicate: bool = False) -> None:
        self.client = client
        self.id = status.job_id
        self.status = status
        #: True when the submission was a retry of one the server had (same request id).
        self.duplicate = duplicate

    def __repr__(self) -> str:
        return f"Job({self.id!r}, {an.JobState.Name(self.status.state)})"

    @property
    def done(self) -> bool:
        """Whether the last known status has ended (DONE or CANCELLED)."""
        return self.status.state in (an.JOB_STATE_DONE, an.JOB_STATE_CANCELLED)

    def refresh(self) -> "an.JobStatus":
        """Reads the job's status (GetJob)."""
        self.status = self.client.analysis.GetJob(an.GetJobRequest(job_id=self.id)).status
        return self.status

    def watch(self) -> Iterator["an.JobStatus"]:
        """The job's status now and after each game done, until it ends; resumed after a
        break (every message is the whole status: a repeat of the last one is dropped)."""
        stub = self.client.analysis

        def open_stream(_: int) -> Iterable["an.WatchJobResponse"]:
            return stub.WatchJob(an.WatchJobRequest(job_id=self.id))

        for w in resumable(
            open_stream,
            key=lambda w: (w.status.state, w.status.games_done, w.status.positions_done),
            terminal=lambda w: w.status.state in (an.JOB_STATE_DONE, an.JOB_STATE_CANCELLED),
            policy=self.client.retry_policy, sleep=self.client._sleep,
        ):
            self.status = w.status
            yield w.status

    def wait(self, on_progress: Optional[Callable[["an.JobStatus"], None]] = None) -> "an.JobStatus":
        """Follows :meth:`watch` to the end; returns the final status."""
        for st in self.watch():
            if on_progress is not None:
                on_progress(st)
        return self.status

    def results(self) -> List["an.GameResult"]:
        """Every finished game's review, page by page (GetJobResults)."""
        out: List[an.GameResult] = []
        while True:
            r = self.client.analysis.GetJobResults(
                an.GetJobResultsRequest(job_id=self.id, offset=len(out)))
            self.status = r.status
            if not r.games:
                return out
            out += list(r.games)
            if len(out) >= r.status.games:
                return out

    def cancel(self) -> "an.JobStatus":
        """Cancels the job (finished games' results stay readable)."""
        self.status = self.client.analysis.CancelJob(an.CancelJobRequest(job_id=self.id)).status
        return self.status


class Client:
    """A connection to an Arbiter server (use :func:`connect`).

    The raw stubs ``rules``, ``matches``, ``clock``, ``matchmaking`` and ``analysis`` send
    the API key (``x-api-key``) on every call, and retry idempotent unary calls (filling in
    a request id where the request has that field and it is empty); a failed unary call
    raises :class:`ArbiterError` (a ``grpc.RpcError``). The helpers below build on them.
    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self, channel: grpc.Channel, *, target: str = "", tls: bool = False,
                 api_key: Optional[str] = None, client_id: Optional[str] = None,
                 retry_policy: RetryPolicy = RetryPolicy(),
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.target = target
        self.tls = tls
        self.retry_policy = retry_policy
        self._sleep = sleep
        self._raw_channel = channel
        md = []
        if api_key:
            md.append(("x-api-key", api_key))
        if client_id:
            md.append(("x-client-id", client_id))
        self.channel = grpc.intercept_channel(
            channel, RetryInterceptor(retry_policy, sleep=sleep), _Metadata(md))
        self.rules = pb.rules_grpc.RulesServiceStub(self.channel)
        self.matches = pb.matches_grpc.MatchServiceStub(self.channel)
        self.clock = pb.clock_grpc.ClockServiceStub(self.channel)
        self.matchmaking = pb.matchmaking_grpc.MatchmakingServiceStub(self.channel)
        self.analysis = pb.analysis_grpc.AnalysisServiceStub(self.channel)
        self._tokens: Dict[str, Dict[Seat, str]] = {}
        self._lock = threading.Lock()

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Closes the channel."""
        self._raw_channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Waits until the channel is connected (raises ``grpc.FutureTimeoutError``)."""
        grpc.channel_ready_future(self._raw_channel).result(timeout=timeout)

    # --- seat tokens -------------------------------------------------------------------

    def _tokens_of(self, match_id: str) -> Dict[Seat, str]:
        with self._lock:
            return dict(self._tokens.get(match_id, {}))

    def _keep(self, match_id: str, board: int, side: int, token: str) -> None:
        seat = (cast("mt.Board", board or mt.BOARD_A), cast("mt.Side", side))
        with self._lock:
            self._tokens.setdefault(match_id, {})[seat] = token

    # --- matches -----------------------------------------------------------------------

    def create_match(self, variant: Union[str, int] = "chess", players: Sequence[str] = (),
                     time_control: str = "", *, start: str = "", rules: RulesLike = None,
                     takebacks: bool = False, match_id: str = "",
                     request_id: Optional[str] = None,
                     timeout: Optional[float] = None) -> Match:
        """Creates a match (a platform call) and keeps its seat tokens.

        ``players``: ``[white, black]``, or for bughouse ``[white A, black A, white B,
        black B]``. ``time_control``: ``"5+3"``, ``"3 days"``, ... (empty: no clocks).
        The request id (a UUID v4 unless given) makes the creation safe to retry: a retry
        answers the same match and tokens."""
        req = mt.CreateMatchRequest(
            request_id=request_id or "", match_id=match_id, variant=variant_value(variant),
            start=start, rules=_rule_options(rules), players=list(players),
            time_control=time_control, takebacks=takebacks)
        r = self.matches.CreateMatch(req, timeout=timeout)
        for c in r.seats:
            self._keep(r.state.match_id, c.seat.board, c.seat.side, c.token)
        return Match(self, r.state.match_id, r.state)

    def seat(self, match_id: str, seat: SeatLike, token: str) -> Match:
        """Attaches to an existing match with a seat token received from elsewhere (the
        platform, matchmaking); the returned :class:`Match` acts for that seat."""
        m = Match(self, match_id)
        try:
            board, side = _parse_seat(seat)
        except KeyError:
            board, side = m.resolve_seat(seat)  # a player id: read from the match
        self._keep(match_id, board or mt.BOARD_A, side, token)
        return m

    def match(self, match_id: str) -> Match:
        """A match by id (as a spectator, or with the tokens this client holds)."""
        return Match(self, match_id)

    # --- matchmaking -------------------------------------------------------------------

    def join_pool(self, player_id: str, variant: Union[str, int] = "chess",
                  time_control: str = "5+3", *, rated: bool = False,
                  rating_range: Optional[Tuple[int, int]] = None,
                  blocked: Sequence[str] = (), partner_id: str = "",
                  acknowledge: bool = True,
                  on_status: Optional[Callable[["mm.QueueStatus"], None]] = None) -> Pairing:
        """Joins a matchmaking pool and waits for the pairing (a platform call).

        Holds the Join stream open until ``MatchFound``; if the stream breaks
        (``UNAVAILABLE``, or it ends without a match) or the server answers ``MATCHING``
        (the player's match is being created), it joins again after the retry backoff:
        joining again takes the place over, or hands back a MatchFound not acknowledged.
        ``on_status`` is called with each QueueStatus. The seat token is kept; with
        ``acknowledge`` the MatchFound is acknowledged."""
        req = mm.JoinRequest(player_id=player_id, variant=variant_value(variant),
                             time_control=time_control, rated=rated, blocked=list(blocked),
                             partner_id=partner_id)
        if rating_range is not None:
            req.range.min, req.range.max = rating_range
        backoff = Backoff(self.retry_policy)
        while True:
            stream = self.matchmaking.Join(req)
            try:
                for event in stream:
                    if event.WhichOneof("event") == "status":
                        backoff.reset()
                        if on_status is not None:
                            on_status(event.status)
                        continue
                    found = event.match_found
                    self._keep(found.match_id, found.seat.board, found.seat.side, found.token)
                    seat = (cast("mt.Board", found.seat.board or mt.BOARD_A),
                            cast("mt.Side", found.seat.side))
                    if acknowledge:
                        self.matchmaking.Acknowledge(mm.AcknowledgeRequest(
                            player_id=player_id, match_id=found.match_id))
                    return Pairing(Match(self, found.match_id), seat, found)
                err = ArbiterError(grpc.StatusCode.UNAVAILABLE,
                                   "the join stream ended without a match")
            except grpc.RpcError as e:
                err = ArbiterError.from_rpc_error(e, attempts=backoff.attempts)
                matching = (err.code() == grpc.StatusCode.FAILED_PRECONDITION
                            and err.reason == "MATCHING")
                if err.code() != grpc.StatusCode.UNAVAILABLE and not matching:
                    raise err from None
            finally:
                stream.cancel()
            delay = backoff.next_delay()
            if delay is None:
                raise err
            self._sleep(delay)

    # --- analysis ----------------------------------------------------------------------

    def best_move(self, position: PositionLike = None, *, variant: Union[str, int] = "chess",
                  moves: Sequence[str] = (), depth: int = 0, nodes: int = 0,
                  movetime_ms: int = 0, timeout: Optional[float] = None) -> "an.AnalysisResult":
        """The engine's best move (BestMove) in ``position`` after ``moves``."""
        req = an.BestMoveRequest(
            position=make_position(position, variant), moves=list(moves),
            limits=an.SearchLimits(depth=depth, nodes=nodes, movetime_ms=movetime_ms))
        return self.analysis.BestMove(req, timeout=timeout).result

    def analyze(self, position: PositionLike = None, *, variant: Union[str, int] = "chess",
                moves: Sequence[str] = (), depth: int = 0, nodes: int = 0,
                movetime_ms: int = 0, multipv: int = 0) -> Iterator["an.AnalyzeResponse"]:
        """Live analysis (Analyze): ``info`` updates, then one ``result``. Not resumed (a
        search is not resumable); errors come out as :class:`ArbiterError`."""
        req = an.AnalyzeRequest(
            position=make_position(position, variant), moves=list(moves),
            multipv=multipv,
            limits=an.SearchLimits(depth=depth, nodes=nodes, movetime_ms=movetime_ms))
        stream = self.analysis.Analyze(req)
        try:
            yield from stream
        except grpc.RpcError as e:
            raise ArbiterError.from_rpc_error(e) from None
        finally:
            stream.cancel()

    def submit_job(self, *, pgn: Optional[str] = None, bpgn: Optional[str] = None,
                   games: Optional[Sequence[Tuple[PositionLike, Sequence[str]]]] = None,
                   variant: Union[str, int] = "chess", depth: int = 0, nodes: int = 0,
                   request_id: Optional[str] = None) -> Job:
        """Submits a batch analysis job: ``pgn`` text, ``bpgn`` text, or ``games`` as
        ``(start, moves)`` pairs (start: a position or None for ``variant``'s start), each
        position searched to ``depth`` or ``nodes`` (exactly one). The request id (a UUID v4
        unless given) makes it safe to retry: a retry answers the same job."""
        req = an.SubmitJobRequest(request_id=request_id or "",
                                  per_ply=an.PlyLimit(depth=depth, nodes=nodes))
        given = [x is not None for x in (pgn, bpgn, games)]
        if sum(given) != 1:
            raise ValueError("give exactly one of pgn, bpgn, games")
        if pgn is not None:
            req.pgn = pgn
        elif bpgn is not None:
            req.bpgn = bpgn
        else:
            for start, mv in games or ():
                req.move_lists.games.add(start=make_position(start, variant),
                                         moves=list(mv))
        r = self.analysis.SubmitJob(req)
        return Job(self, r.status, r.duplicate)

    def job(self, job_id: str) -> Job:
        """A job by id (read now)."""
        return Job(self, self.analysis.GetJob(an.GetJobRequest(job_id=job_id)).status)

    # --- rules -------------------------------------------------------------------------

    def legal_moves(self, position: PositionLike = None, *,
                    variant: Union[str, int] = "chess") -> List["common.Move"]:
        """Every legal move of a position, sorted by UCI (ListLegalMoves)."""
        return list(self.rules.ListLegalMoves(rules.ListLegalMovesRequest(
            position=make_position(position, variant))).moves)

    def validate_move(self, move: str, position: PositionLike = None, *,
                      variant: Union[str, int] = "chess") -> "rules.ValidateMoveResponse":
        """Whether ``move`` is legal in ``position`` (ValidateMove): ``legal`` or ``illegal``."""
        return self.rules.ValidateMove(rules.ValidateMoveRequest(
            position=make_position(position, variant), move=move))

    def game_status(self, moves: Sequence[str], start: PositionLike = None, *,
                    variant: Union[str, int] = "chess") -> "rules.GetGameStatusResponse":
        """The status of a game from ``start`` after ``moves`` (GetGameStatus)."""
        return self.rules.GetGameStatus(rules.GetGameStatusRequest(
            start=make_position(start, variant), moves=list(moves)))

    def render_board(self, position: PositionLike = None, *, variant: Union[str, int] = "chess",
                     moves: Sequence[str] = (), last_move: str = "",
                     notation: "common.MoveNotation" = common.MOVE_NOTATION_UNSPECIFIED,
                     locale: "common.Locale" = common.LOCALE_UNSPECIFIED,
                     rules_: RulesLike = None) -> "rules.RenderBoardResponse":
        """Draws a position as SVG (RenderBoard): ``.svg`` (a standalone document),
        ``.position`` (the position drawn), ``.check``. With ``moves`` the position after
        them is drawn and the last one tinted; ``last_move`` tints a move without them."""
        return self.rules.RenderBoard(rules.RenderBoardRequest(
            position=make_position(position, variant, rules_), moves=list(moves),
            last_move=last_move, notation=notation, locale=locale))


def connect(
    addr: Optional[str] = None,
    *,
    api_key: Optional[str] = None,
    api_key_file: Optional[str] = None,
    tls_ca_file: Optional[str] = None,
    tls_client_cert_file: Optional[str] = None,
    tls_client_key_file: Optional[str] = None,
    tls_server_name: Optional[str] = None,
    timeout: float = 10.0,
    overall_timeout: Optional[float] = 30.0,
    max_attempts: int = 6,
    client_id: Optional[str] = None,
    options: Sequence[Tuple[str, Any]] = (),
) -> Client:
    """Connects to an Arbiter server (the channel connects lazily, on the first call).

    Args:
        addr: ``host:port`` or an ``http://`` / ``https://`` URL; default ``ARBITER_ADDR``,
            then ``127.0.0.1:50051``.
        api_key: the API key, sent as ``x-api-key`` on every call; else the first line of
            ``api_key_file``; else the environment variable ``ARBITER_API_KEY``; else none
            (development mode).
        tls_ca_file: PEM CA certificates: TLS (also for an ``https://`` address, which
            without a CA file uses the system roots). Without either: plaintext.
        tls_client_cert_file, tls_client_key_file: mutual TLS (both or neither).
        tls_server_name: the name the server's certificate must carry, when it is not the
            address's host.
        timeout: the per-attempt deadline of unary calls in seconds (a call's own
            ``timeout=`` replaces it).
        overall_timeout: no retry starts after this many seconds from the first attempt.
        max_attempts: attempts in all of one idempotent call.
        client_id: ``x-client-id`` metadata (names the caller of batch jobs and the live
            analysis queue in development mode; ignored by a server with keys).
        options: extra grpc channel options.
    """
    key = resolve_api_key(api_key, api_key_file)
    channel, target, tls = make_channel(
        addr, tls_ca_file=tls_ca_file, tls_client_cert_file=tls_client_cert_file,
        tls_client_key_file=tls_client_key_file, tls_server_name=tls_server_name,
        options=options)
    policy = RetryPolicy(max_attempts=max_attempts, overall_timeout=overall_timeout,
                         attempt_timeout=timeout)
    return Client(channel, target=target, tls=tls, api_key=key, client_id=client_id,
                  retry_policy=policy)
