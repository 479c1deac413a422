"""Unit tests of the client's contract logic, without an Arbiter server: retries and request
ids against an in-process grpc server that fails on purpose, watch resumption against a fake
stream that breaks mid-way, error details, addresses and API keys.

Run: python -m unittest discover -s clients/python/tests -v
"""

from __future__ import annotations

import os
import random
import tempfile
import threading
import time
import unittest
from concurrent import futures
from typing import List

import grpc

import arbiter_client
from arbiter_client import ArbiterError, Backoff, RetryPolicy, pb, resumable
from arbiter_client._channel import parse_addr, resolve_api_key
from arbiter_client._errors import _T

mt, common, rules = pb.matches, pb.common, pb.rules
FAST = RetryPolicy(base=0.01, cap=0.05, max_attempts=6, overall_timeout=5.0, attempt_timeout=2.0)


def status_details(*details) -> bytes:
    """A serialized google.rpc.Status with the given (type name, message) details."""
    st = _T["Status"](code=3, message="x")
    for name, msg in details:
        st.details.add(type_url=f"type.googleapis.com/google.rpc.{name}",
                       value=msg.SerializeToString())
    return st.SerializeToString()


def bad_request(field: str) -> bytes:
    br = _T["BadRequest"]()
    br.field_violations.add(field=field, description="bad")
    return status_details(("BadRequest", br))


def fail(context, code, message, details: bytes = b""):
    if details:
        context.set_trailing_metadata([("grpc-status-details-bin", details)])
    context.abort(code, message)


class FakeMatches(pb.matches_grpc.MatchServiceServicer):
    """A MatchService whose answers the tests script."""

    def __init__(self) -> None:
        self.calls: List[tuple] = []
        self.fail_moves = 0          # UNAVAILABLE for the first n MakeMove attempts
        self.move_error = None       # (code, message, details) for every MakeMove
        self.slow_first_get = 0.0    # GetMatch's first attempt sleeps this long
        self.watch_plan: List[List] = []  # per WatchMatch call: seqs, then "break"/"end"/"close"
        self.applied: set = set()

    def MakeMove(self, request, context):
        self.calls.append(("MakeMove", request.request_id, dict(context.invocation_metadata())))
        if self.move_error:
            fail(context, *self.move_error)
        if self.fail_moves > 0:
            self.fail_moves -= 1
            fail(context, grpc.StatusCode.UNAVAILABLE, "store down")
        dup = request.request_id in self.applied
        self.applied.add(request.request_id)
        return mt.MakeMoveResponse(duplicate=dup, state=mt.MatchState(match_id=request.match_id))

    def GetMatch(self, request, context):
        self.calls.append(("GetMatch", "", dict(context.invocation_metadata())))
        if self.slow_first_get and len([c for c in self.calls if c[0] == "GetMatch"]) == 1:
            time.sleep(self.slow_first_get)
        return mt.GetMatchResponse(state=mt.MatchState(match_id=request.match_id))

    def Resign(self, request, context):
        self.calls.append(("Resign", request.request_id, {}))
        fail(context, grpc.StatusCode.UNAVAILABLE, "down")

    def PauseClocks(self, request, context):
        self.calls.append(("PauseClocks", request.request_id, {}))
        n = len([c for c in self.calls if c[0] == "PauseClocks"])
        if n == 1:
            ri = _T["RetryInfo"]()
            ri.retry_delay.nanos = 200_000_000
            fail(context, grpc.StatusCode.RESOURCE_EXHAUSTED, "rate limited",
                 status_details(("RetryInfo", ri)))
        return mt.PauseClocksResponse()

    def AddTime(self, request, context):
        self.calls.append(("AddTime", request.request_id, {}))
        fail(context, grpc.StatusCode.RESOURCE_EXHAUSTED, "ms: too much", bad_request("ms"))

    def WatchMatch(self, request, context):
        self.calls.append(("WatchMatch", request.after_seq, {}))
        plan = self.watch_plan.pop(0)
        for step in plan:
            if step == "break":
                fail(context, grpc.StatusCode.UNAVAILABLE, "shutting down")
            if step == "close":
                return
            if step == "end":
                yield mt.WatchMatchResponse(seq=request.after_seq + 100, end=mt.MatchOutcome())
                return
            yield mt.WatchMatchResponse(seq=step, draw_offer=mt.SIDE_WHITE)


class FakeMatchmaking(pb.matchmaking_grpc.MatchmakingServiceServicer):
    def __init__(self) -> None:
        self.leaves = 0

    def Leave(self, request, context):
        self.leaves += 1
        fail(context, grpc.StatusCode.UNAVAILABLE, "down")


class InProcess(unittest.TestCase):
    """A grpc server in this process with the fake services, and a client to it."""

    def setUp(self) -> None:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.matches = FakeMatches()
        self.mm = FakeMatchmaking()
        pb.matches_grpc.add_MatchServiceServicer_to_server(self.matches, self.server)
        pb.matchmaking_grpc.add_MatchmakingServiceServicer_to_server(self.mm, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.sleeps: List[float] = []

        def sleep(d: float) -> None:
            self.sleeps.append(d)
            time.sleep(d)

        self.client = arbiter_client.Client(
            grpc.insecure_channel(f"127.0.0.1:{port}"), api_key="arb_test_key",
            retry_policy=FAST, sleep=sleep)

    def tearDown(self) -> None:
        self.client.close()
        self.server.stop(None)

    def test_request_id_reused_on_every_attempt(self):
        self.matches.fail_moves = 2
        m = self.client.seat("m1", "white", "tok")
        r = m.move("e2e4", expected_ply=0)
        ids = [c[1] for c in self.matches.calls if c[0] == "MakeMove"]
        self.assertEqual(len(ids), 3)
        self.assertEqual(len(set(ids)), 1, "the same request id on every attempt")
        self.assertRegex(ids[0], r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        self.assertFalse(r.duplicate)
        self.assertEqual(len(self.sleeps), 2)
        md = self.matches.calls[0][2]
        self.assertEqual(md.get("authorization"), "Bearer tok")
        self.assertEqual(md.get("x-api-key"), "arb_test_key")

    def test_callers_request_id_kept(self):
        m = self.client.seat("m1", ("A", "black"), "tok")
        m.move("e7e5", expected_ply=1, request_id="mine-1")
        again = m.move("e7e5", expected_ply=1, request_id="mine-1")
        self.assertTrue(again.duplicate)
        self.assertEqual([c[1] for c in self.matches.calls], ["mine-1", "mine-1"])

    def test_raw_stub_gets_request_id_and_retries(self):
        self.matches.fail_moves = 1
        req = mt.MakeMoveRequest(match_id="m1", side=mt.SIDE_WHITE, move="e4")
        self.client.matches.MakeMove(req)
        self.assertEqual(req.request_id, "", "the caller's message is not changed")
        ids = [c[1] for c in self.matches.calls]
        self.assertEqual(len(ids), 2)
        self.assertTrue(ids[0] and ids[0] == ids[1])

    def test_invalid_argument_not_retried_and_names_field(self):
        self.matches.move_error = (grpc.StatusCode.INVALID_ARGUMENT, "move: illegal", bad_request("move"))
        m = self.client.seat("m1", "white", "tok")
        with self.assertRaises(ArbiterError) as cm:
            m.move("e2e5", expected_ply=0)
        e = cm.exception
        self.assertIsInstance(e, grpc.RpcError)
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(e.field, "move")
        self.assertEqual(len(self.matches.calls), 1)

    def test_failed_precondition_reason(self):
        ei = _T["ErrorInfo"](reason="STALE_PLY", domain="arbiter.matches.v1")
        self.matches.move_error = (grpc.StatusCode.FAILED_PRECONDITION, "stale",
                                   status_details(("ErrorInfo", ei)))
        with self.assertRaises(ArbiterError) as cm:
            self.client.seat("m1", "white", "tok").move("e4", expected_ply=3)
        self.assertEqual((cm.exception.reason, cm.exception.domain), ("STALE_PLY", "arbiter.matches.v1"))
        self.assertEqual(len(self.matches.calls), 1)

    def test_gives_up_after_six_attempts(self):
        m = self.client.seat("m1", "white", "tok")
        with self.assertRaises(ArbiterError) as cm:
            m.resign()
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
        ids = [c[1] for c in self.matches.calls if c[0] == "Resign"]
        self.assertEqual(len(ids), 6)
        self.assertEqual(len(set(ids)), 1)

    def test_per_attempt_deadline_is_retried(self):
        self.matches.slow_first_get = 0.6
        st = self.client.matches.GetMatch(mt.GetMatchRequest(match_id="m9"), timeout=0.2)
        self.assertEqual(st.state.match_id, "m9")
        self.assertEqual(len([c for c in self.matches.calls if c[0] == "GetMatch"]), 2)

    def test_rate_limit_waits_retry_info(self):
        self.client.matches.PauseClocks(mt.PauseClocksRequest(match_id="m1"))
        calls = [c for c in self.matches.calls if c[0] == "PauseClocks"]
        self.assertEqual(len(calls), 2)
        self.assertEqual(calls[0][1], calls[1][1])
        self.assertGreaterEqual(self.sleeps[0], 0.2)

    def test_resource_exhausted_on_a_field_not_retried(self):
        with self.assertRaises(ArbiterError) as cm:
            self.client.matches.AddTime(mt.AddTimeRequest(match_id="m1", ms=1))
        self.assertEqual(cm.exception.field, "ms")
        self.assertEqual(len(self.matches.calls), 1)

    def test_not_idempotent_not_retried(self):
        with self.assertRaises(ArbiterError):
            self.client.matchmaking.Leave(pb.matchmaking.LeaveRequest(player_id="p"))
        self.assertEqual(self.mm.leaves, 1)

    def test_with_call_and_future(self):
        resp, call = self.client.matches.GetMatch.with_call(mt.GetMatchRequest(match_id="m2"))
        self.assertEqual(resp.state.match_id, "m2")
        self.assertEqual(call.code(), grpc.StatusCode.OK)
        fut = self.client.matches.GetMatch.future(mt.GetMatchRequest(match_id="m3"))
        self.assertEqual(fut.result().state.match_id, "m3")
        self.matches.move_error = (grpc.StatusCode.NOT_FOUND, "no match", b"")
        fut = self.client.matches.MakeMove.future(mt.MakeMoveRequest(match_id="m4"))
        self.assertIsInstance(fut.exception(), ArbiterError)
        with self.assertRaises(ArbiterError):
            fut.result()

    def test_live_watch_resumes_over_grpc(self):
        # 1, 2, then the stream breaks; reopened after 2 the server repeats 2 and goes on,
        # ends without the end event; reopened after 3 it sends the end.
        self.matches.watch_plan = [[1, 2, "break"], [2, 3, "close"], ["end"]]
        seqs = [(e.seq, e.WhichOneof("event")) for e in self.client.match("m1").watch()]
        self.assertEqual(seqs, [(1, "draw_offer"), (2, "draw_offer"), (3, "draw_offer"), (103, "end")])
        self.assertEqual([c[1] for c in self.matches.calls if c[0] == "WatchMatch"], [0, 2, 3])


class FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self):
        return self._code

    def details(self):
        return "fake"

    def trailing_metadata(self):
        return ()


class Resumable(unittest.TestCase):
    """The resume logic on a fake stub."""

    def run_watch(self, script, after=0):
        opened = []

        def open_stream(after_seq):
            opened.append(after_seq)
            steps = script.pop(0)

            def gen():
                for s in steps:
                    if isinstance(s, grpc.StatusCode):
                        raise FakeRpcError(s)
                    yield s
            return gen()

        events = list(resumable(open_stream, after=after, seq=lambda s: s, terminal=lambda s: s == 99,
                                policy=FAST, sleep=lambda d: None))
        return events, opened

    def test_unavailable_mid_stream(self):
        events, opened = self.run_watch([[1, 2, grpc.StatusCode.UNAVAILABLE], [1, 2, 3, 99]])
        self.assertEqual(events, [1, 2, 3, 99])
        self.assertEqual(opened, [0, 2])

    def test_never_yields_a_seq_twice(self):
        events, opened = self.run_watch(
            [[5, 6, grpc.StatusCode.UNAVAILABLE], [], [4, 6, 7, grpc.StatusCode.UNAVAILABLE], [7, 99]], after=4)
        self.assertEqual(events, [5, 6, 7, 99])
        self.assertEqual(opened, [4, 6, 6, 7])

    def test_other_errors_raise(self):
        with self.assertRaises(ArbiterError) as cm:
            self.run_watch([[1, grpc.StatusCode.NOT_FOUND]])
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)

    def test_gives_up_without_progress(self):
        with self.assertRaises(ArbiterError) as cm:
            self.run_watch([[grpc.StatusCode.UNAVAILABLE]] * 6)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)

    def test_key_dedup(self):
        opened = []
        script = [["a", "b", grpc.StatusCode.UNAVAILABLE], ["b", "c"]]

        def open_stream(_):
            opened.append(_)
            steps = script.pop(0)

            def gen():
                for s in steps:
                    if isinstance(s, grpc.StatusCode):
                        raise FakeRpcError(s)
                    yield s
            return gen()
        out = list(resumable(open_stream, key=lambda s: s, terminal=lambda s: s == "c",
                             policy=FAST, sleep=lambda d: None))
        self.assertEqual(out, ["a", "b", "c"])


class BackoffTest(unittest.TestCase):
    def test_schedule(self):
        p = RetryPolicy()
        self.assertEqual([p.bound(n) for n in range(6)], [0.1, 0.2, 0.4, 0.8, 1.6, 2.0])
        b = Backoff(p, rng=random.Random(1))
        delays = [b.next_delay() for _ in range(6)]
        self.assertIsNone(delays[-1], "6 attempts in all: 5 retries")
        for n, d in enumerate(delays[:-1]):
            self.assertTrue(0 <= d <= p.bound(n))

    def test_overall_deadline(self):
        now = [0.0]
        b = Backoff(RetryPolicy(overall_timeout=1.0, base=0.5, cap=0.5), rng=random.Random(2),
                    clock=lambda: now[0])
        now[0] = 0.99
        self.assertIsNone(b.next_delay(at_least=0.2))


class Config(unittest.TestCase):
    def test_addresses(self):
        self.assertEqual(parse_addr("https://arbiter.example"), ("arbiter.example:443", True))
        self.assertEqual(parse_addr("http://10.0.0.1:50100"), ("10.0.0.1:50100", False))
        self.assertEqual(parse_addr("localhost"), ("localhost:50051", False))
        old = os.environ.pop("ARBITER_ADDR", None)
        try:
            self.assertEqual(parse_addr(None), ("127.0.0.1:50051", False))
            os.environ["ARBITER_ADDR"] = "example:1"
            self.assertEqual(parse_addr(None), ("example:1", False))
        finally:
            os.environ.pop("ARBITER_ADDR", None)
            if old is not None:
                os.environ["ARBITER_ADDR"] = old

    def test_api_key_sources(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("arb_file_key  \nsecond line\n")
        old = os.environ.get("ARBITER_API_KEY")
        os.environ["ARBITER_API_KEY"] = "arb_env_key"
        try:
            self.assertEqual(resolve_api_key("arb_param", f.name), "arb_param")
            self.assertEqual(resolve_api_key(None, f.name), "arb_file_key")
            self.assertEqual(resolve_api_key(None, None), "arb_env_key")
            del os.environ["ARBITER_API_KEY"]
            self.assertIsNone(resolve_api_key(None, None))
        finally:
            os.unlink(f.name)
            if old is not None:
                os.environ["ARBITER_API_KEY"] = old

    def test_tls_settings_checked(self):
        with self.assertRaises(ValueError):
            arbiter_client.connect("127.0.0.1:1", tls_client_cert_file="c.pem")
        with self.assertRaises(ValueError):
            arbiter_client.connect("127.0.0.1:1", tls_server_name="x")
        c = arbiter_client.connect("https://127.0.0.1:1")
        self.assertTrue(c.tls)
        c.close()

    def test_generated_modules_import_as_package(self):
        import importlib
        m = importlib.import_module("arbiter_client._gen.arbiter.rules.v1.rules_pb2")
        self.assertTrue(hasattr(m, "RenderBoardRequest"))
        self.assertEqual(arbiter_client.variant_value("glinski"), common.VARIANT_GLINSKI)


if __name__ == "__main__":
    unittest.main()
