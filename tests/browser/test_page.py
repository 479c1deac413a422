"""The web page (clients/web) in headless Chromium, against a running `arbiter serve --web-root
clients/web`: for each variant a match is created and played through a Python client generated
from proto/, and the page, watching it over gRPC-web, must show every move (SAN, in order), a
drawn board per board (RenderBoard's SVG inline) and the final result. One move is played
through the page's own form (MakeMove with the seat token); one page lists a player's live
matches (ListMatches) and opens one from the list; one speaks application/grpc-web-text. The
page's protobuf codec is also checked against the reference one (Python's) on messages with
64-bit values, packed enums, oneofs and optional fields.

Usage: test_page.py HOST:PORT ARTIFACTS_DIR (with the generated modules on sys.path; CHROMIUM
and CHROMEDRIVER name the browser and its driver; BROWSER_CASES=chess,bughouse runs only those
cases; BROWSER_PAGE_ORIGIN=http://HOST:PORT opens the page from another static server, calling
the API with ?server= and CORS, `serve --web-allow-origin`). Screenshots: ARTIFACTS_DIR/<variant>.png,
and <variant>-failure.png when a check fails. Exits non-zero on a failure."""

import json
import os
import shutil
import sys
import time
import traceback
import urllib.error
import urllib.request
import uuid

import grpc
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from arbiter.common.v1 import common_pb2 as common
from arbiter.matches.v1 import matches_pb2 as mt
from arbiter.matches.v1 import matches_pb2_grpc as mt_grpc
from arbiter.rules.v1 import rules_pb2 as rules
from arbiter.rules.v1 import rules_pb2_grpc as rules_grpc

A, B, W, K = mt.BOARD_A, mt.BOARD_B, mt.SIDE_WHITE, mt.SIDE_BLACK
WAIT = 15  # seconds for the page to show something
RUN = uuid.uuid4().hex[:8]  # player ids and request ids unique to this run


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


class Game:
    """A match created through the API, with its seat tokens."""

    def __init__(self, t, variant, players, time_control="", start="", rules_=()):
        self.t = t
        created = t.matches.CreateMatch(mt.CreateMatchRequest(
            variant=variant, players=players, time_control=time_control, start=start,
            rules=list(rules_), request_id=f"web-{RUN}-{'-'.join(players)}"), timeout=10)
        self.state = created.state
        self.id = created.state.match_id
        self.tokens = {(c.seat.board or A, c.seat.side): c.token for c in created.seats}
        self.sans = []  # the SAN of every move played, in order

    def board(self, board):
        return next(b for b in self.state.boards if (b.board or A) == board)

    def legal(self, board):
        b = self.board(board)
        pos = common.Position(variant=self.state.variant, text=b.position, rules=self.state.rules)
        return self.t.rules.ListLegalMoves(rules.ListLegalMovesRequest(position=pos), timeout=10).moves

    def move(self, side, text, board=A, pick=None):
        """Plays `text` (UCI, checked against ListLegalMoves first), or the legal move `pick`
        chooses, for the seat (board, side); returns the SAN played."""
        legal = self.legal(board)
        if pick is not None:
            text = pick(legal).uci
        check(any(m.uci == text for m in legal),
              f"{text} is not legal on board {board} ({self.board(board).position}); legal: "
              + " ".join(m.uci for m in legal))
        r = self.t.matches.MakeMove(mt.MakeMoveRequest(
            match_id=self.id, board=board if len(self.state.boards) > 1 else 0, side=side, move=text,
            expected_ply=self.board(board).ply, request_id=str(uuid.uuid4())),
            metadata=[("authorization", f"Bearer {self.tokens[(board, side)]}")], timeout=10)
        self.state = r.state
        self.sans.append(r.move.move.san)
        return r.move.move.san

    def resign(self, side, board=A):
        r = self.t.matches.Resign(mt.ResignRequest(
            match_id=self.id, board=board if len(self.state.boards) > 1 else 0, side=side,
            request_id=str(uuid.uuid4())),
            metadata=[("authorization", f"Bearer {self.tokens[(board, side)]}")], timeout=10)
        self.state = r.state

    def refresh(self):
        self.state = self.t.matches.GetMatch(mt.GetMatchRequest(match_id=self.id), timeout=10).state


def pawn_first(moves):
    """A deterministic, natural-looking pick: the first pawn move (SAN starting with a file
    letter), else the first move."""
    for m in moves:
        if m.san[:1].islower():
            return m
    return moves[0]


class Test:
    def __init__(self, addr, artifacts):
        self.addr = addr
        self.base = f"http://{addr}"
        # BROWSER_PAGE_ORIGIN: the page served from another origin (any static server of
        # clients/web), calling the API at ?server= with CORS (`serve --web-allow-origin`).
        self.page = os.environ.get("BROWSER_PAGE_ORIGIN", "").rstrip("/") or self.base
        self.artifacts = artifacts
        channel = grpc.insecure_channel(addr)
        grpc.channel_ready_future(channel).result(timeout=20)
        self.matches = mt_grpc.MatchServiceStub(channel)
        self.rules = rules_grpc.RulesServiceStub(channel)
        self.driver = None
        self.passed = []
        self.failed = []

    # ------------------------------------------------------------ the browser

    def start_browser(self):
        options = Options()
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
                    "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check"]:
            options.add_argument(arg)
        options.binary_location = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver_path = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
        self.driver = webdriver.Chrome(service=Service(driver_path), options=options)
        self.driver.set_page_load_timeout(30)
        self.driver.set_script_timeout(30)

    def console(self):
        try:
            return self.driver.get_log("browser")
        except Exception as e:  # noqa: BLE001 - diagnostics only
            return [{"level": "?", "message": f"(no browser log: {e})"}]

    def wait(self, cond, what, timeout=WAIT):
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(lambda d: cond())
        except TimeoutException:
            raise Failed(f"timed out after {timeout} s waiting for {what}") from None

    def q(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def attr(self, css, name):
        els = self.q(css)
        return els[0].get_attribute(name) if els else None

    def page_state(self):
        return self.driver.execute_script(
            "return {status: document.querySelector('#status')?.dataset.state,"
            " statusText: document.querySelector('#status')?.textContent,"
            " error: document.querySelector('#error')?.hidden ? '' : document.querySelector('#error')?.textContent,"
            " moves: [...document.querySelectorAll('#moves li')].map(li => li.dataset.san),"
            " result: document.querySelector('#result')?.textContent};")

    def open(self, query):
        server = f"&server={self.base}" if self.page != self.base else ""
        self.driver.get(f"{self.page}/?{query}{server}")
        self.wait(lambda: self.attr("#status", "data-state") not in (None, "loading"), "the page to load")

    def no_page_error(self):
        st = self.page_state()
        check(not st["error"], f"the page shows an error: {st['error']}")

    def wait_moves(self, game):
        n = len(game.sans)

        def shown():
            st = self.page_state()
            if st["error"]:
                raise Failed(f"the page shows an error: {st['error']}")
            return len(st["moves"]) >= n

        self.wait(shown, f"{n} moves in #moves (played: {' '.join(game.sans)})")
        shown_sans = [li.get_attribute("data-san") for li in self.q("#moves li")]
        check(shown_sans == game.sans, f"#moves shows {shown_sans}, played {game.sans}")
        texts = [li.find_element(By.CSS_SELECTOR, ".san").text for li in self.q("#moves li")]
        check(texts == game.sans, f"#moves reads {texts}, played {game.sans}")

    def wait_watching(self, game):
        self.wait(lambda: self.attr("#status", "data-state") in ("live", "over", "error"), "the watch to start")
        self.no_page_error()
        for i in range(len(game.state.boards)):
            self.wait(lambda i=i: self.q(f"#board-{i} .svg-holder svg"), f"board {i}'s picture")

    def finish(self, game, score, reason):
        """Waits for the result, the final boards and the moves; saves the screenshot."""
        game.refresh()
        check(game.state.HasField("outcome"), "the match is over on the server")
        self.wait_moves(game)
        self.wait(lambda: self.q("#result") and self.q("#result")[0].is_displayed()
                  and self.attr("#result", "data-reason"), "#result")
        got_score, got_reason = self.attr("#result", "data-score"), self.attr("#result", "data-reason")
        check((got_score, got_reason) == (score, reason),
              f"#result says {got_score!r} {got_reason!r} ({self.q('#result')[0].text!r}), expected {score!r} {reason!r}")
        for i, b in enumerate(game.state.boards):
            self.wait(lambda i=i, b=b: self.attr(f"#board-{i}", "data-rendered-ply") == str(b.ply)
                      and self.attr(f"#board-{i}", "data-position") == b.position,
                      f"board {i} drawn at ply {b.ply}")
            svg = self.q(f"#board-{i} .svg-holder svg")
            check(svg and svg[0].size["width"] > 100 and svg[0].size["height"] > 100,
                  f"board {i}'s SVG is shown at a visible size")
            check(self.driver.execute_script(
                f"return document.querySelectorAll('#board-{i} svg *').length") > 20,
                f"board {i}'s SVG has content")
        self.wait(lambda: self.attr("#status", "data-state") == "over", "#status over")
        self.no_page_error()
        for c in self.q(".clock"):
            check(c.get_attribute("data-running") != "true", "no clock runs once the match is over")

    def shot(self, name):
        path = os.path.join(self.artifacts, f"{name}.png")
        self.driver.save_screenshot(path)
        return path

    # ------------------------------------------------------------ the cases

    def codec(self):
        """The page's codec against Python's protobuf: decode, re-encode, compare bytes."""
        vectors = [
            ("arbiter.matches.v1.WatchMatchResponse", mt.WatchMatchResponse(
                seq=2**60 + 3, move=mt.PlayedMove(board=B, ply=7, side=W, position="8/8 w",
                                                  move=common.Move(uci="e2e4", san="e4 ♔")))),
            ("arbiter.matches.v1.WatchMatchResponse", mt.WatchMatchResponse(seq=1, draw_offer=mt.SIDE_UNSPECIFIED)),
            ("arbiter.matches.v1.MatchState", mt.MatchState(
                match_id="m", variant=common.VARIANT_BUGHOUSE, draw_offers=[W, K], last_seq=12,
                server_time_ms=1764800000123,
                boards=[mt.BoardState(board=A, claimable_draws=[1, 2], clock=mt.BoardClock(
                    white_ms=180000, running_since_ms=1764800000000, phase=mt.CLOCK_PHASE_RUNNING))],
                outcome=mt.MatchOutcome(outcome=common.Outcome(
                    score=common.Score(text="1-0", white_quarters=4), reason_name="checkmate")))),
            ("arbiter.rules.v1.ReadPositionResponse", rules.ReadPositionResponse(chess960_start=0)),
            ("arbiter.rules.v1.PerftResponse", rules.PerftResponse(nodes=2**64 - 1)),
        ]
        data = [[name, msg.SerializeToString().hex()] for name, msg in vectors]
        self.driver.get(f"{self.page}/")  # the modules load from the page's origin
        out = self.driver.execute_async_script("""
            const [data, done] = arguments;
            (async () => {
              const { loadCodec } = await import('/protobuf.js');
              const codec = await loadCodec('/schema.json');
              const hex = (b) => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
              const unhex = (h) => new Uint8Array(h.match(/../g)?.map((x) => parseInt(x, 16)) || []);
              const res = data.map(([name, h]) => {
                const obj = codec.decode(name, unhex(h));
                return { again: hex(codec.encode(name, obj)),
                         obj: JSON.stringify(obj, (k, v) => typeof v === 'bigint' ? v.toString() + 'n' : v) };
              });
              const pos = hex(codec.encode('arbiter.common.v1.Position', { variant: 'VARIANT_GLINSKI', text: '' }));
              done({ res, pos });
            })().catch((e) => done({ error: String(e.stack || e) }));
        """, data)
        check("error" not in out, f"codec script failed: {out.get('error')}")
        for (name, h), r in zip(data, out["res"]):
            check(r["again"] == h, f"codec round trip of {name}: {r['again']} != {h}")
        objs = [json.loads(r["obj"]) for r in out["res"]]
        check(objs[0]["seq"] == f"{2**60 + 3}n" and objs[0]["event"] == "move"
              and objs[0]["move"]["move"]["san"] == "e4 ♔", "codec: uint64 as BigInt, oneof, UTF-8")
        check(objs[1]["event"] == "draw_offer" and objs[1]["draw_offer"] == 0, "codec: a oneof enum member at 0")
        check(objs[2]["draw_offers"] == [1, 2] and objs[2]["boards"][0]["clock"]["running_since_ms"] == 1764800000000
              and objs[2]["server_time_ms"] == 1764800000123, "codec: packed enums, 64-bit times as numbers")
        check(objs[3].get("chess960_start") == 0, "codec: proto3 optional present at 0")
        check(objs[4]["nodes"] == f"{2**64 - 1}n", "codec: uint64 max")
        check(out["pos"] == common.Position(variant=common.VARIANT_GLINSKI).SerializeToString().hex(),
              "codec: enum by name")

    def chess(self):
        """Fool's mate with clocks; Black's mating move through the page's own form."""
        g = Game(self, common.VARIANT_CHESS, [f"ann-{RUN}", f"bob-{RUN}"], time_control="3+2")
        self.open(f"match={g.id}")
        self.wait_watching(g)
        self.wait(lambda: (self.q('#board-0 .clock[data-side="white"]') or [None])[0] is not None
                  and self.q('#board-0 .clock[data-side="white"]')[0].text == "3:00", "White's clock at 3:00")
        for side, uci in [(W, "f2f3"), (K, "e7e5"), (W, "g2g4")]:
            g.move(side, uci)
            self.wait_moves(g)
        # Both first moves made: Black's clock runs on the page.
        self.wait(lambda: self.attr('#board-0 .clock[data-side="black"]', "data-running") == "true",
                  "Black's clock running after g4")
        before = int(self.attr('#board-0 .clock[data-side="black"]', "data-ms"))
        time.sleep(0.5)
        after = int(self.attr('#board-0 .clock[data-side="black"]', "data-ms"))
        check(after < before, f"Black's clock counts down ({before} -> {after} ms)")
        # Qh4# through the page: seat, token, move.
        self.driver.find_element(By.CSS_SELECTOR, "#play summary").click()
        select = self.driver.find_element(By.ID, "seat")
        # First as White with Black's token: the refusal is shown with its code.
        select.find_element(By.CSS_SELECTOR, f'option[value="1:{W}"]').click()
        self.driver.find_element(By.ID, "seat-token").send_keys(g.tokens[(A, K)])
        self.driver.find_element(By.ID, "move-input").send_keys("Qh4#")
        self.driver.find_element(By.ID, "play-move").click()
        self.wait(lambda: "PERMISSION_DENIED" in self.q("#play-status")[0].text,
                  "PERMISSION_DENIED shown for another seat's token")
        select.find_element(By.CSS_SELECTOR, f'option[value="1:{K}"]').click()
        self.driver.find_element(By.ID, "play-move").click()
        self.wait(lambda: "played" in self.q("#play-status")[0].text
                  or "error" in (self.q("#play-status")[0].get_attribute("class") or ""), "the page's MakeMove")
        check(self.q("#play-status")[0].text == "played Qh4#",
              f"the page's MakeMove: {self.q('#play-status')[0].text}")
        g.sans.append("Qh4#")
        self.finish(g, "0-1", "checkmate")
        check(self.q("#board-0")[0].get_attribute("data-check") == "true", "the mated king is marked (check)")
        self.chess_id, self.chess_last_seq = g.id, g.state.last_seq

    def resume(self):
        """The page's watchMatch resumes a broken stream with after_seq, each event once, in
        order: a fetch that cuts the first WatchMatch response after its first frame, on the
        chess game played above."""
        check(getattr(self, "chess_id", None), "the chess game ran first")
        self.driver.get(f"{self.page}/")
        out = self.driver.execute_async_script("""
            const [matchId, server, done] = arguments;
            (async () => {
              const { loadCodec } = await import('/protobuf.js');
              const { GrpcWebClient } = await import('/grpc-web.js');
              const codec = await loadCodec('/schema.json');
              const realFetch = window.fetch.bind(window);
              const watches = [];
              const fetchCutting = async (url, init) => {
                const resp = await realFetch(url, init);
                if (!String(url).endsWith('/WatchMatch')) return resp;
                const req = codec.decode('arbiter.matches.v1.WatchMatchRequest', new Uint8Array(init.body).subarray(5));
                watches.push(req.after_seq);
                if (watches.length > 1) return resp;
                // The first watch breaks after its first frame, as a lost connection would.
                const reader = resp.body.getReader();
                let buf = new Uint8Array(0);
                const body = new ReadableStream({
                  async pull(controller) {
                    for (;;) {
                      if (buf.length >= 5) {
                        const len = new DataView(buf.buffer).getUint32(1);
                        if (buf.length >= 5 + len) {
                          controller.enqueue(buf.slice(0, 5 + len));
                          reader.cancel();
                          controller.error(new TypeError('network error (cut by the test)'));
                          return;
                        }
                      }
                      const { value, done } = await reader.read();
                      if (done) { controller.close(); return; }
                      const b = new Uint8Array(buf.length + value.length);
                      b.set(buf); b.set(value, buf.length); buf = b;
                    }
                  },
                });
                return new Response(body, { status: resp.status, headers: resp.headers });
              };
              window.fetch = fetchCutting;
              try {
                const client = new GrpcWebClient(codec, { baseUrl: server });
                const seqs = [], kinds = [];
                for await (const ev of client.watchMatch(matchId)) { seqs.push(Number(ev.seq)); kinds.push(ev.event); }
                done({ seqs, kinds, watches: watches.map(Number) });
              } finally {
                window.fetch = realFetch;
              }
            })().catch((e) => done({ error: String(e.stack || e) }));
        """, self.chess_id, self.base)
        check("error" not in out, f"watch script failed: {out.get('error')}")
        n = self.chess_last_seq
        check(out["seqs"] == list(range(1, n + 1)), f"each event once, in order: {out['seqs']} (last_seq {n})")
        check(out["kinds"][-1] == "end", f"the watch ends with the end event: {out['kinds']}")
        check(out["watches"][:2] == [0, 1], f"watched again with after_seq = 1 after the break: {out['watches']}")

    def crazyhouse(self):
        """Opened from the page's list of a player's live matches, over grpc-web-text: captures
        fill the reserves, a drop, then Black resigns."""
        white = f"cara-{RUN}"
        g = Game(self, common.VARIANT_CRAZYHOUSE, [white, f"dan-{RUN}"])
        self.open(f"wire=text&player={white}")
        self.wait(lambda: self.q(f'#match-list li[data-match-id="{g.id}"] button'), "the match in #match-list")
        self.q(f'#match-list li[data-match-id="{g.id}"] button')[0].click()
        self.wait_watching(g)
        for side, uci in [(W, "e2e4"), (K, "d7d5"), (W, "e4d5"), (K, "d8d5"), (W, "b1c3"), (K, "d5a5"), (W, "P@d4")]:
            g.move(side, uci)
            self.wait_moves(g)
        g.resign(K)
        self.finish(g, "1-0", "resignation")
        reserves = self.q("#board-0 .reserves")[0].text
        check("black: p" in reserves.lower(), f"the reserves are shown (black holds a pawn): {reserves!r}")

    def bughouse(self):
        """Two boards: a capture on A feeds board B's reserve, a drop on B, then a resignation."""
        g = Game(self, common.VARIANT_BUGHOUSE, [f"eve-{RUN}", f"fay-{RUN}", f"gus-{RUN}", f"hal-{RUN}"])
        self.open(f"match={g.id}")
        self.wait_watching(g)
        check(len(self.q("#board-1")) == 1 and self.attr("#board-1", "data-board") == "B", "two boards shown")
        for board, side, uci in [(A, W, "e2e4"), (A, K, "d7d5"), (A, W, "e4d5"), (B, W, "g1f3"), (B, K, "P@e4")]:
            g.move(side, uci, board=board)
            self.wait_moves(g)
        boards = [li.get_attribute("data-board") for li in self.q("#moves li")]
        check(boards == ["A", "A", "A", "B", "B"], f"moves tagged with their boards: {boards}")
        g.resign(K, board=A)
        self.finish(g, "1-0", "resignation")
        check("team 1" in self.q("#result")[0].text, f"the winning team is named: {self.q('#result')[0].text!r}")

    def hexagonal_or_circular(self, variant, names, loser):
        g = Game(self, variant, names)
        self.open(f"match={g.id}")
        self.wait_watching(g)
        for side in [W, K, W, K]:
            g.move(side, None, pick=pawn_first)
            self.wait_moves(g)
        g.resign(loser)
        return g

    def glinski(self):
        g = self.hexagonal_or_circular(common.VARIANT_GLINSKI, [f"ida-{RUN}", f"jon-{RUN}"], W)
        self.finish(g, "0-1", "resignation")

    def byzantine(self):
        g = self.hexagonal_or_circular(common.VARIANT_BYZANTINE, [f"kim-{RUN}", f"lou-{RUN}"], K)
        self.finish(g, "1-0", "resignation")

    def glinski_stalemate(self):
        """Glinski's 3/4-1/4 stalemate, from a start position, in one move."""
        g = Game(self, common.VARIANT_GLINSKI, [f"max-{RUN}", f"ned-{RUN}"],
                 start="k/3/5/2K4/9/11/11/11/11/11/10N w - 0 1")
        self.open(f"match={g.id}")
        self.wait_watching(g)
        g.move(W, None, pick=lambda ms: stalemating(self, g, ms))
        self.finish(g, "3/4-1/4", "stalemate")
        check("¾" in self.q("#result")[0].text, "the score reads ¾–¼")

    # ------------------------------------------------------------ the run

    def run(self):
        # urllib speaks HTTP/1.1, as browsers do to a plaintext server.
        try:
            with urllib.request.urlopen(f"{self.page}/", timeout=10) as resp:
                status, body = resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read().decode("utf-8", "replace")
        except OSError as e:
            raise Failed(f"GET {self.page}/ failed: {e}") from None
        check(status == 200 and "<html" in body.lower() and "app.js" in body,
              f"GET {self.page}/ over HTTP/1.1 must serve clients/web/index.html (--web-root); "
              f"got HTTP {status} {body[:80]!r}")
        self.start_browser()
        cases = [("codec", self.codec), ("chess", self.chess), ("resume", self.resume), ("crazyhouse", self.crazyhouse),
                 ("bughouse", self.bughouse), ("glinski", self.glinski), ("byzantine", self.byzantine),
                 ("glinski-stalemate", self.glinski_stalemate)]
        only = os.environ.get("BROWSER_CASES")
        if only:
            cases = [c for c in cases if c[0] in only.split(",")]
        try:
            for name, case in cases:
                started = time.time()
                try:
                    page = name not in ("codec", "resume")
                    if page:
                        self.driver.get("about:blank")
                    case()
                    if page:
                        self.shot(name)
                    self.passed.append(name)
                    print(f"ok   {name} ({time.time() - started:.1f} s)", flush=True)
                except Exception as e:  # noqa: BLE001 - report every case
                    self.failed.append(name)
                    print(f"FAIL {name}: {e}", flush=True)
                    if not isinstance(e, Failed):
                        traceback.print_exc()
                    try:
                        print(f"     screenshot: {self.shot(name + '-failure')}")
                        print(f"     page: {json.dumps(self.page_state(), ensure_ascii=False)}")
                    except Exception as e2:  # noqa: BLE001
                        print(f"     (no screenshot: {e2})")
                    for entry in self.console():
                        print(f"     console {entry.get('level')}: {entry.get('message')}")
                    continue
                severe = [e for e in self.console() if e.get("level") == "SEVERE"]
                for entry in severe:
                    print(f"     console {entry.get('level')}: {entry.get('message')}")
        finally:
            self.driver.quit()
        print(f"browser test: {len(self.passed)} passed ({', '.join(self.passed)})"
              + (f", {len(self.failed)} FAILED ({', '.join(self.failed)})" if self.failed else ""))
        return not self.failed


def stalemating(t, g, moves):
    """The move of `moves` that stalemates (ValidateMove says so), for a start position whose
    notation of the king's move is not known in advance."""
    for m in moves:
        pos = common.Position(variant=g.state.variant, text=g.board(A).position)
        r = t.rules.ValidateMove(rules.ValidateMoveRequest(position=pos, move=m.uci), timeout=10)
        if r.WhichOneof("result") == "legal" and r.legal.outcome.reason == common.END_REASON_STALEMATE:
            return m
    raise Failed("no stalemating move in the Glinski position")


def main():
    addr, artifacts = sys.argv[1], sys.argv[2]
    os.makedirs(artifacts, exist_ok=True)
    started = time.time()
    try:
        ok = Test(addr, artifacts).run()
    except Failed as e:
        print(f"FAILED: {e}")
        ok = False
    print(f"({time.time() - started:.1f} s)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
