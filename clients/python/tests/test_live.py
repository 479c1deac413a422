"""Tests of the client against a live `arbiter serve` (run-tests.sh starts the servers).

Environment:
  ARBITER_ADDR            a development-mode server (no keys): every test but the key tests.
  ARBITER_KEYED_ADDR      a server started with --api-keys-file, and
  ARBITER_TEST_KEY_FILE   a file holding a key of that server with every scope.
Without ARBITER_ADDR the tests are skipped (the unit tests need no server).
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
import unittest
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional

import grpc

import arbiter_client
from arbiter_client import ArbiterError, pb

ADDR = os.environ.get("ARBITER_ADDR")
KEYED = os.environ.get("ARBITER_KEYED_ADDR")
KEY_FILE = os.environ.get("ARBITER_TEST_KEY_FILE")
TLS_ADDR = os.environ.get("ARBITER_TLS_ADDR")
TLS_DIR = os.environ.get("ARBITER_TLS_DIR", "")
mt, common, an = pb.matches, pb.common, pb.analysis
FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@unittest.skipUnless(ADDR, "set ARBITER_ADDR to a running `arbiter serve`")
class Live(unittest.TestCase):
    def setUp(self) -> None:
        self.client = arbiter_client.connect(ADDR, client_id=uid("pytest"))
        self.client.wait_ready(10)

    def tearDown(self) -> None:
        self.client.close()

    # --- connection and rules ----------------------------------------------------------

    def test_connect_without_key(self):
        moves = self.client.legal_moves()
        self.assertEqual(len(moves), 20)
        self.assertIn("e2e4", [m.uci for m in moves])

    def test_invalid_argument_carries_field(self):
        with self.assertRaises(ArbiterError) as cm:
            self.client.legal_moves("8/8 w", variant="chess")
        e = cm.exception
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(e.field, "position.text")
        self.assertEqual(e.attempts, 1)
        with self.assertRaises(ArbiterError) as cm:
            self.client.best_move(depth=65)
        self.assertEqual(cm.exception.field, "limits.depth")
        m = self.client.create_match("chess", players=[uid("a"), uid("b")])
        with self.assertRaises(ArbiterError) as cm:
            m.move("e2e5", "white")
        self.assertEqual((cm.exception.code(), cm.exception.field),
                         (grpc.StatusCode.INVALID_ARGUMENT, "move"))
        with self.assertRaises(ArbiterError) as cm:
            m.move("e2e4", "white", expected_ply=5)
        self.assertEqual(cm.exception.reason, "STALE_PLY")

    def test_render_board_every_variant(self):
        for value in common.Variant.values():
            if value == common.VARIANT_UNSPECIFIED:
                continue
            name = arbiter_client.variant_name(value)
            with self.subTest(variant=name):
                r = self.client.render_board(variant=name)
                self.assertIn("<svg", r.svg)
                self.assertTrue(r.svg.rstrip().endswith("</svg>"))
                self.assertEqual(r.position.variant, value)
                self.assertFalse(r.check)
        r = self.client.render_board(moves=["e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7"])
        self.assertTrue(r.check)
        self.assertIn("<svg", r.svg)
        r = self.client.render_board(r.position, last_move="h5f7")
        self.assertTrue(r.check)
        with self.assertRaises(ArbiterError) as cm:
            self.client.render_board(moves=["e4"], last_move="e2e4")
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(cm.exception.field)
        with self.assertRaises(ArbiterError) as cm:
            self.client.render_board(moves=["e4", "e4"])
        self.assertEqual(cm.exception.field, "moves[1]")

    # --- matches -----------------------------------------------------------------------

    def test_create_and_play_with_seat_tokens(self):
        m = self.client.create_match("chess", players=["ann", "bob"], time_control="5+3")
        self.assertEqual(len(m.seats), 2)
        m.move("f2f3", seat="white")
        m.move("e5", seat="bob")                # by player id, in SAN
        m.move("g2g4")                          # the side to move
        r = m.move("d8h4", seat=("A", "black"))
        self.assertEqual(r.move.move.san, "Qh4#")
        self.assertTrue(m.over)
        self.assertEqual(m.result(), "0-1 checkmate")
        self.assertEqual(m.state().outcome.outcome.reason_name, "checkmate")
        self.assertIn("Qh4#", m.export())

    def test_request_id_exactly_once(self):
        rid = uid("create")
        players = [uid("a"), uid("b")]
        m = self.client.create_match("chess", players=players, request_id=rid)
        again = self.client.create_match("chess", players=players, request_id=rid)
        self.assertEqual(m.id, again.id)
        first = m.move("e2e4", "white", request_id="py-move-1")
        dup = m.move("e2e4", "white", request_id="py-move-1", expected_ply=0)
        self.assertFalse(first.duplicate)
        self.assertTrue(dup.duplicate)
        self.assertEqual(dup.move, first.move)
        self.assertEqual(m.state().boards[0].ply, 1, "applied once")
        # the same id for another request: ALREADY_EXISTS naming it, nothing changes
        with self.assertRaises(ArbiterError) as cm:
            m.move("d2d4", "white", request_id="py-move-1", expected_ply=0)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.ALREADY_EXISTS)
        self.assertEqual(cm.exception.resource_name, "py-move-1")
        # a raw stub call gets an id made by the client, the same on a repeat of the message
        raw = mt.MakeMoveRequest(match_id=m.id, side=mt.SIDE_BLACK, move="e7e5", expected_ply=1,
                                 request_id="py-raw-1")
        md = [("authorization", f"Bearer {m.token('black')}")]
        self.assertFalse(self.client.matches.MakeMove(raw, metadata=md).duplicate)
        self.assertTrue(self.client.matches.MakeMove(raw, metadata=md).duplicate)

    def test_seat_attached_from_elsewhere(self):
        m = self.client.create_match("chess", players=["cat", "dan"])
        with arbiter_client.connect(ADDR) as other:
            black = other.seat(m.id, "black", m.token("black"))
            m.move("e2e4", "white")
            black.move("c7c5")                  # the one seat it holds
            with self.assertRaises(KeyError):
                black.move("d2d4", "white")     # no token for white here
            black.offer_draw()
            self.assertEqual(list(m.state().draw_offers), [mt.SIDE_BLACK])
            m.decline_draw("white")
            with arbiter_client.connect(ADDR) as third:
                wrong = third.seat(m.id, "white", m.token("black"))
                with self.assertRaises(ArbiterError) as cm:
                    wrong.move("g1f3")
                self.assertEqual(cm.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
            black.resign()
        self.assertEqual(m.state().outcome.outcome.score.text, "1-0")

    def test_bughouse_seats(self):
        m = self.client.create_match("bughouse", players=["a1", "b1", "a2", "b2"])
        self.assertEqual(len(m.seats), 4)
        m.move("e2e4", "A:white")
        m.move("d7d5", "A:black")
        m.move("e4d5", "A:white")
        self.assertEqual(m.last_state.boards[1].black_reserve, "p")
        m.move("g1f3", "B:white")
        r = m.move("P@e4", ("B", "black"))
        self.assertEqual(r.move.move.uci, "P@e4")
        m.resign("b1")
        self.assertEqual(m.outcome.winning_team, 1)

    def test_watch_to_end(self):
        m = self.client.create_match("chess", players=["eve", "fay"])
        seen: List = []
        t = threading.Thread(target=lambda: seen.extend(m.watch()))
        t.start()
        time.sleep(0.3)
        for mv in FOOLS_MATE:
            m.move(mv)
        t.join(20)
        self.assertFalse(t.is_alive(), "the watch ends after the end event")
        self.assertEqual([e.seq for e in seen], list(range(1, m.last_state.last_seq + 1)))
        self.assertEqual(seen[-1].WhichOneof("event"), "end")

    def test_watch_resumes_after_broken_stream(self):
        m = self.client.create_match("chess", players=["gus", "hal"])
        for mv in FOOLS_MATE:
            m.move(mv)
        last = m.last_state.last_seq
        opened: List[int] = []
        real = self.client.matches

        class Breaking:
            """The real stub, whose first two WatchMatch streams break after 2 events."""

            def __init__(self) -> None:
                self.breaks = 2

            def __getattr__(self, name):
                return getattr(real, name)

            def WatchMatch(self, req, **kw):
                opened.append(req.after_seq)
                inner = real.WatchMatch(req, **kw)
                if self.breaks == 0:
                    return inner
                self.breaks -= 1

                def cut():
                    for i, e in enumerate(inner):
                        if i == 2:
                            inner.cancel()
                            raise _Unavailable()
                        yield e
                return cut()

        self.client.matches = Breaking()
        try:
            seqs = [e.seq for e in m.watch()]
        finally:
            self.client.matches = real
        self.assertEqual(seqs, list(range(1, last + 1)))
        self.assertEqual(opened, [0, 2, 4])

    def test_watch_resumes_after_cut_connection(self):
        """A real TCP connection cut under the stream (a proxy in between)."""
        host, port = ADDR.rsplit(":", 1)
        proxy = Proxy(host, int(port))
        try:
            with arbiter_client.connect(f"127.0.0.1:{proxy.port}",
                                        options=[("grpc.initial_reconnect_backoff_ms", 100),
                                                 ("grpc.min_reconnect_backoff_ms", 100)]) as c:
                m = c.create_match("chess", players=["ida", "jon"])
                it = m.watch()
                m.move("e2e4")
                first = next(it)
                proxy.cut()
                for mv in ["e7e5", "g1f3", "b8c6"]:
                    m.move(mv)                  # retried over the cut: applied once each
                m.resign("black")
                rest = list(it)
                seqs = [first.seq] + [e.seq for e in rest]
                self.assertEqual(seqs, list(range(1, m.last_state.last_seq + 1)))
                self.assertEqual(m.state().boards[0].ply, 4)
                self.assertGreaterEqual(proxy.accepted, 2)
        finally:
            proxy.close()

    # --- matchmaking -------------------------------------------------------------------

    def test_join_pool_and_play(self):
        tc = "4+2"
        a, b = uid("pa"), uid("pb")
        statuses: List = []
        with ThreadPoolExecutor(2) as pool:
            pairings = list(pool.map(
                lambda p: self.client.join_pool(p, "chess", tc, on_status=statuses.append),
                [a, b]))
        self.assertEqual(pairings[0].match.id, pairings[1].match.id)
        self.assertTrue(statuses)
        self.assertEqual(pairings[0].found.pool, f"chess/{tc}/casual")
        white = next(p for p in pairings if p.seat[1] == mt.SIDE_WHITE)
        black = next(p for p in pairings if p.seat[1] == mt.SIDE_BLACK)
        white.match.move("e2e4", "white")
        black.match.resign("black")
        self.assertEqual(white.match.state().outcome.outcome.score.text, "1-0")

    # --- analysis ----------------------------------------------------------------------

    def test_best_move(self):
        r = self.client.best_move("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 2 3",
                                  nodes=20000)
        self.assertEqual(r.best_move.san, "Qxf7#")
        updates = list(self.client.analyze(depth=3, multipv=2))
        self.assertEqual(updates[-1].WhichOneof("update"), "result")

    def test_batch_job(self):
        pgn = '[Event "fool"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n'
        rid = uid("job")
        job = self.client.submit_job(pgn=pgn, nodes=3000, request_id=rid)
        self.assertFalse(job.duplicate)
        progress: List = []
        final = job.wait(progress.append)
        self.assertEqual(final.state, an.JOB_STATE_DONE)
        self.assertEqual(final.positions_done, 5)
        self.assertEqual(len(progress), len({(p.state, p.positions_done) for p in progress}))
        again = self.client.submit_job(pgn=pgn, nodes=3000, request_id=rid)
        self.assertTrue(again.duplicate)
        self.assertEqual(again.id, job.id)
        games = job.results()
        self.assertEqual([p.move.san for p in games[0].plies], ["f3", "e5", "g4", "Qh4#"])
        games = self.client.submit_job(games=[(None, ["e4", "e5"])], depth=2).wait()
        self.assertEqual(games.state, an.JOB_STATE_DONE)


class _Unavailable(grpc.RpcError):
    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return "cut by the test"

    def trailing_metadata(self):
        return ()


class Proxy:
    """A TCP proxy to host:port whose connections the test can cut."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: List[socket.socket] = []
        self.accepted = 0
        self.closed = False
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                down, _ = self.sock.accept()
            except OSError:
                return
            up = socket.create_connection(self.upstream)
            with self.lock:
                self.conns += [down, up]
                self.accepted += 1
            threading.Thread(target=self._pump, args=(down, up), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        raise OSError
                    (b if s is a else a).sendall(data)
        except (OSError, ValueError):
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self) -> None:
        with self.lock:
            for s in self.conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.conns = []

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.sock.close()


@unittest.skipUnless(KEYED and KEY_FILE, "set ARBITER_KEYED_ADDR and ARBITER_TEST_KEY_FILE")
class Keyed(unittest.TestCase):
    def test_key_sources(self):
        with arbiter_client.connect(KEYED, api_key_file=KEY_FILE) as c:
            self.assertEqual(len(c.legal_moves()), 20)
            m = c.create_match("chess", players=["kim", "lee"])
            m.move("e2e4")
        with open(KEY_FILE) as f:
            key = f.readline().strip()
        with arbiter_client.connect(KEYED, api_key=key) as c:
            self.assertEqual(len(c.legal_moves()), 20)
        old = os.environ.get("ARBITER_API_KEY")
        os.environ["ARBITER_API_KEY"] = key
        try:
            with arbiter_client.connect(KEYED) as c:
                self.assertEqual(len(c.legal_moves()), 20)
        finally:
            if old is None:
                del os.environ["ARBITER_API_KEY"]
            else:
                os.environ["ARBITER_API_KEY"] = old

    def test_without_or_with_a_bad_key(self):
        old = os.environ.pop("ARBITER_API_KEY", None)
        try:
            with arbiter_client.connect(KEYED) as c:
                with self.assertRaises(ArbiterError) as cm:
                    c.legal_moves()
                self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
                self.assertEqual(cm.exception.attempts, 1)
            with arbiter_client.connect(KEYED, api_key="arb_000000000000_nope") as c:
                with self.assertRaises(ArbiterError) as cm:
                    c.create_match("chess", players=["x", "y"])
                self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        finally:
            if old is not None:
                os.environ["ARBITER_API_KEY"] = old


@unittest.skipUnless(TLS_ADDR and TLS_DIR, "set ARBITER_TLS_ADDR and ARBITER_TLS_DIR (mutual TLS)")
class Tls(unittest.TestCase):
    """A server with mutual TLS whose certificate names arbiter.test only."""

    def files(self, **kw):
        d = {"tls_ca_file": "ca.pem", "tls_client_cert_file": "client.pem",
             "tls_client_key_file": "client.key"}
        d.update(kw)
        return {k: (os.path.join(TLS_DIR, v) if v else None) for k, v in d.items()}

    def test_mutual_tls(self):
        with arbiter_client.connect(TLS_ADDR, tls_server_name="arbiter.test", **self.files()) as c:
            self.assertTrue(c.tls)
            self.assertEqual(len(c.legal_moves()), 20)
            m = c.create_match("chess", players=["tls-a", "tls-b"])
            for mv in FOOLS_MATE:
                m.move(mv)
            self.assertEqual([e.seq for e in m.watch()][-1], m.last_state.last_seq)

    def refused(self, **kw):
        with arbiter_client.connect(TLS_ADDR, max_attempts=1, timeout=5, **kw) as c:
            with self.assertRaises(ArbiterError) as cm:
                c.legal_moves()
            self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)

    def test_refusals(self):
        self.refused()  # plaintext to a TLS port
        self.refused(**self.files())  # the certificate does not name 127.0.0.1
        self.refused(tls_server_name="arbiter.test",  # no client certificate
                     **self.files(tls_client_cert_file=None, tls_client_key_file=None))


if __name__ == "__main__":
    unittest.main()
