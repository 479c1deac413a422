// The reference page: lists a player's live matches, watches one (GetMatch, then WatchMatch
// with resumption), draws every board with RulesService.RenderBoard as inline SVG, lists the
// moves, runs the clocks, shows the result, and optionally plays a seat (MakeMove, OfferDraw,
// Resign with the seat's token and a fresh request id).
//
// Elements a test can read: #status[data-state] (loading | idle | live | reconnecting | over |
// error), #moves li[data-seq][data-board][data-ply][data-san][data-uci], #result[data-score]
// [data-reason] (shown once the match is over), #board-0 / #board-1 [data-board][data-ply]
// [data-rendered-ply][data-position] with the SVG inside, .clock[data-side][data-ms]
// [data-running], #match-list li[data-match-id].

import { loadCodec } from "./protobuf.js";
import { GrpcWebClient, GrpcError, requestId } from "./grpc-web.js";

const MS = "arbiter.matches.v1.MatchService";
const RS = "arbiter.rules.v1.RulesService";

const $ = (sel) => document.querySelector(sel);
const params = new URLSearchParams(location.search);

let codec;
let client;
let session = null; // the match being watched

// ---------------------------------------------------------------- small helpers

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function setStatus(state, text) {
  const s = $("#status");
  s.dataset.state = state;
  s.textContent = text || state;
}

function showError(err, where = "") {
  const box = $("#error");
  if (!err) { box.hidden = true; box.textContent = ""; return; }
  const reason = err instanceof GrpcError && err.reason ? ` [${err.reason}]` : "";
  box.textContent = `${where ? where + ": " : ""}${err.message || err}${reason}`;
  box.hidden = false;
  console.error(where, err);
}

function enumName(type, n) { return codec.enumName(type, n); }

const VARIANT_NAMES = {
  VARIANT_CHESS: "chess", VARIANT_CRAZYHOUSE: "crazyhouse", VARIANT_BUGHOUSE: "bughouse",
  VARIANT_GLINSKI: "Glinski hexagonal", VARIANT_BYZANTINE: "Byzantine",
  VARIANT_BYZANTINE_CITADEL: "Byzantine Citadel", VARIANT_CHESS960: "Chess960",
};
function variantName(n) {
  const name = enumName("arbiter.common.v1.Variant", n);
  return VARIANT_NAMES[name] || name;
}
const boardLetter = (n) => (n === 2 ? "B" : "A");
const sideName = (n) => (n === 1 ? "white" : n === 2 ? "black" : "");

function formatMs(ms) {
  ms = Math.max(0, Math.floor(ms));
  const total = Math.floor(ms / 1000);
  const h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
  if (h > 0) return `${h}:${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}`;
  if (ms < 10000) return `${m}:${String(s).padStart(2, "0")}.${Math.floor((ms % 1000) / 100)}`;
  return `${m}:${String(s).padStart(2, "0")}`;
}

function scoreText(score) {
  if (!score) return "";
  return score.text.replace("3/4", "¾").replace("1/4", "¼").replace("1/2", "½").replace("1/2", "½");
}

// ---------------------------------------------------------------- the match view

class MatchView {
  constructor(matchId) {
    this.matchId = matchId;
    this.abort = new AbortController();
    this.state = null;
    this.offsetMs = 0; // server time − local time
    this.rendered = []; // per board: the key of the picture shown
    this.refreshing = null;
    this.dirty = false;
    this.ticker = setInterval(() => this.tickClocks(), 100);
  }

  stop() {
    this.abort.abort();
    clearInterval(this.ticker);
  }

  get over() { return !!(this.state && this.state.outcome); }

  async start() {
    setStatus("loading", "loading the match…");
    showError(null);
    $("#moves").replaceChildren();
    $("#events").replaceChildren();
    $("#boards").replaceChildren();
    const result = $("#result");
    result.hidden = true;
    result.textContent = "";
    result.dataset.score = "";
    result.dataset.reason = "";
    $("#match").hidden = false;

    const { state } = await client.unary(MS, "GetMatch", { match_id: this.matchId }, { signal: this.abort.signal });
    this.applyState(state, Date.now());
    this.buildBoards();
    this.fillSeats();
    await this.renderBoards();
    if (state.outcome) this.showResult(state.outcome);
    this.watch();
  }

  applyState(state, receivedAt) {
    if (this.state && state.last_seq < this.state.last_seq) return; // an older answer
    this.state = state;
    if (state.server_time_ms) this.offsetMs = state.server_time_ms - receivedAt;
    const seats = state.seats.map((s) => `${s.player_id} (${boardLetter(s.board)} ${sideName(s.side)})`);
    $("#match-title").textContent = `${variantName(state.variant)} — ${state.match_id}`;
    const meta = [];
    if (state.variant === 3) {
      const by = (b, s) => (state.seats.find((x) => x.board === b && x.side === s) || {}).player_id || "?";
      meta.push(`team 1: ${by(1, 1)} & ${by(2, 2)}; team 2: ${by(1, 2)} & ${by(2, 1)}`);
    } else {
      meta.push(seats.join(" vs "));
    }
    if (state.time_control) meta.push(`${state.time_control}${state.speed ? ` (${state.speed})` : ""}`);
    else meta.push("no clock");
    if (state.rules.length) meta.push(state.rules.map((r) => `${r.name}=${r.value}`).join(", "));
    $("#match-meta").textContent = meta.join(" · ");
    this.updateBoards();
  }

  updateBoards() {
    const state = this.state;
    for (const [i, b] of state.boards.entries()) {
      const div = $(`#board-${i}`);
      if (!div) continue;
      div.dataset.ply = String(b.ply);
      div.dataset.sideToMove = sideName(b.side_to_move);
      div.querySelector(".reserves").textContent = (b.white_reserve || b.black_reserve)
        ? `reserves — white: ${b.white_reserve || "–"} · black: ${b.black_reserve || "–"}` : "";
      if (b.waiting_for_piece) div.querySelector(".reserves").textContent += " (waiting for a piece)";
    }
    this.tickClocks();
  }

  buildBoards() {
    const boards = $("#boards");
    boards.replaceChildren();
    $("#moves").className = `boards-${this.state.boards.length}`;
    this.rendered = [];
    for (const [i, b] of this.state.boards.entries()) {
      const letter = boardLetter(b.board);
      const player = (side) => {
        const seat = this.state.seats.find((s) => (s.board || 1) === (b.board || 1) && s.side === side);
        return el("div", { class: "player", "data-side": sideName(side) },
          el("span", { class: "name" }, `${side === 1 ? "♔" : "♚"} ${seat ? seat.player_id : sideName(side)}`),
          el("span", { class: "clock", "data-side": sideName(side) }));
      };
      boards.append(el("div", { class: "board", id: `board-${i}`, "data-board": letter, "data-ply": String(b.ply), "data-rendered-ply": "" },
        el("h3", {}, this.state.boards.length > 1 ? `Board ${letter}` : "Board"),
        player(2),
        el("div", { class: "svg-holder" }),
        player(1),
        el("div", { class: "reserves" })));
    }
    this.updateBoards();
  }

  fillSeats() {
    const select = $("#seat");
    select.replaceChildren();
    for (const s of this.state.seats) {
      select.append(el("option", { value: `${s.board || 1}:${s.side}` },
        `${this.state.boards.length > 1 ? boardLetter(s.board) + " " : ""}${sideName(s.side)} — ${s.player_id}`));
    }
  }

  // Draws each board whose position or last move changed since it was last drawn.
  async renderBoards() {
    const state = this.state;
    await Promise.all(state.boards.map(async (b, i) => {
      const lastMove = b.last_move ? b.last_move.uci : "";
      const key = `${b.position}|${lastMove}`;
      if (this.rendered[i] === key) return;
      const resp = await client.unary(RS, "RenderBoard", {
        position: { variant: state.variant, text: b.position, rules: state.rules },
        last_move: lastMove,
      }, { signal: this.abort.signal });
      if (this.state !== state && this.state.boards[i].position !== b.position) return; // superseded
      const div = $(`#board-${i}`);
      if (!div) return;
      div.querySelector(".svg-holder").replaceChildren(inlineSvg(resp.svg, `b${i}-`));
      div.dataset.renderedPly = String(b.ply);
      div.dataset.position = b.position;
      div.dataset.lastMove = lastMove;
      div.dataset.check = String(resp.check);
      this.rendered[i] = key;
    }));
  }

  // GetMatch again (coalesced: one at a time, once more if events came meanwhile), then redraw.
  refresh() {
    if (this.refreshing) { this.dirty = true; return this.refreshing; }
    this.refreshing = (async () => {
      try {
        do {
          this.dirty = false;
          const { state } = await client.unary(MS, "GetMatch", { match_id: this.matchId }, { signal: this.abort.signal });
          this.applyState(state, Date.now());
          await this.renderBoards();
        } while (this.dirty && !this.abort.signal.aborted);
      } catch (err) {
        if (!this.abort.signal.aborted) showError(err, "refresh");
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  async watch() {
    const initialSeq = this.state.last_seq;
    try {
      for await (const ev of client.watchMatch(this.matchId, {
        afterSeq: 0,
        signal: this.abort.signal,
        onState: (s, err) => {
          if (this.over) return;
          if (s === "live") setStatus("live", "live");
          else setStatus("reconnecting", `reconnecting… (${err ? err.codeName : ""})`);
        },
      })) {
        this.onEvent(ev);
        if (ev.seq > initialSeq) this.refresh();
      }
      await this.refresh();
      setStatus("over", "match over");
    } catch (err) {
      if (this.abort.signal.aborted) return;
      setStatus("error", "watch failed");
      showError(err, "WatchMatch");
    }
  }

  onEvent(ev) {
    switch (ev.event) {
      case "move": this.addMove(ev.seq, ev.move); break;
      case "reserve": this.log(ev.seq, `reserve ${boardLetter(ev.reserve.board)} ${sideName(ev.reserve.side)}: ${ev.reserve.pieces || "–"}`); break;
      case "draw_offer": this.log(ev.seq, `${this.sideLabel(ev.draw_offer)} offers a draw`); break;
      case "draw_declined": this.log(ev.seq, `${this.sideLabel(ev.draw_declined)}'s draw offer lapsed`); break;
      case "takeback_offer": this.log(ev.seq, `${this.sideLabel(ev.takeback_offer)} proposes a takeback`); break;
      case "takeback_declined": this.log(ev.seq, `${this.sideLabel(ev.takeback_declined)}'s takeback declined`); break;
      case "takeback": this.takeBack(ev.seq, ev.takeback); break;
      case "clock": break; // clocks come with the state that follows
      case "end": this.showResult(ev.end); this.log(ev.seq, "the match ended"); break;
      default: break;
    }
  }

  sideLabel(side) {
    if (this.state && this.state.variant === 3) return side === 1 ? "team 1" : "team 2";
    return sideName(side) || "?";
  }

  log(seq, text) {
    const list = $("#events");
    list.append(el("li", { "data-seq": String(seq) }, text));
    list.scrollTop = list.scrollHeight;
  }

  addMove(seq, m) {
    const list = $("#moves");
    const bughouse = this.state && this.state.boards.length > 1;
    const number = Math.ceil(m.ply / 2);
    const num = m.side === 2 ? `${number}…` : `${number}.`;
    const li = el("li", {
      "data-seq": String(seq), "data-board": boardLetter(m.board), "data-ply": String(m.ply),
      "data-side": sideName(m.side), "data-san": m.move.san, "data-uci": m.move.uci,
    });
    if (bughouse) li.append(el("span", { class: "board-tag" }, boardLetter(m.board)));
    li.append(el("span", { class: "num" }, num), " ", el("span", { class: "san" }, m.move.san || m.move.uci));
    list.append(li);
    list.scrollTop = list.scrollHeight;
  }

  takeBack(seq, tb) {
    // Drop the moves of that board past its new ply.
    for (const li of [...document.querySelectorAll("#moves li")]) {
      if (li.dataset.board === boardLetter(tb.board) && Number(li.dataset.ply) > tb.ply) li.remove();
    }
    this.log(seq, `takeback on board ${boardLetter(tb.board)} to ply ${tb.ply}`);
  }

  showResult(outcome) {
    const r = $("#result");
    const o = outcome.outcome || {};
    const score = o.score;
    let who = "";
    if (this.state && this.state.variant === 3) {
      who = outcome.winning_team ? `team ${outcome.winning_team} wins` : (score ? "draw" : "");
      if (outcome.board) who += ` on board ${boardLetter(outcome.board)}`;
    } else if (score) {
      who = score.white_quarters > score.black_quarters ? "White wins"
        : score.white_quarters < score.black_quarters ? "Black wins" : "draw";
      if (score.white_quarters % 4 && score.white_quarters !== 2) who += " on points";
    }
    const reason = o.reason_name || enumName("arbiter.common.v1.EndReason", o.reason || 0).replace(/^END_REASON_/, "").toLowerCase();
    r.textContent = `${score ? scoreText(score) + " — " : "no result — "}${reason}${who ? ` (${who})` : ""}`;
    r.dataset.score = score ? score.text : "";
    r.dataset.reason = reason;
    r.hidden = false;
    setStatus("over", "match over");
  }

  tickClocks() {
    if (!this.state) return;
    const now = Date.now() + this.offsetMs;
    for (const [i, b] of this.state.boards.entries()) {
      const div = document.getElementById(`board-${i}`);
      if (!div) continue;
      const c = b.clock;
      for (const side of [1, 2]) {
        const e = div.querySelector(`.clock[data-side="${sideName(side)}"]`);
        if (!e) continue;
        if (!c) { e.textContent = ""; e.dataset.running = "false"; continue; }
        let ms = side === 1 ? c.white_ms : c.black_ms;
        const running = c.phase === 2 && c.running === side && !this.over;
        if (running && c.running_since_ms) ms -= now - c.running_since_ms;
        ms = Math.max(0, Number(ms));
        e.textContent = formatMs(ms);
        e.dataset.ms = String(Math.floor(ms));
        e.dataset.running = String(running);
        e.dataset.toMove = String(!this.over && b.side_to_move === side);
        e.dataset.low = String(running && ms < 10000);
        e.title = c.phase === 1 && c.running === side ? "first move: untimed, within the first-move window" : "";
      }
    }
  }

  seat() {
    const [board, side] = $("#seat").value.split(":").map(Number);
    return { board, side };
  }

  async play(kind) {
    const status = $("#play-status");
    status.className = "";
    const token = $("#seat-token").value.trim();
    if (!token) { status.className = "error"; status.textContent = "a seat token is needed"; return; }
    const { board, side } = this.seat();
    const metadata = { authorization: `Bearer ${token}` };
    const base = { match_id: this.matchId, board: this.state.boards.length > 1 ? board : 0, side, request_id: requestId() };
    try {
      if (kind === "move") {
        const text = $("#move-input").value.trim();
        if (!text) return;
        const b = this.state.boards.find((x) => (x.board || 1) === board) || this.state.boards[0];
        status.textContent = `playing ${text}…`;
        const resp = await client.unary(MS, "MakeMove", { ...base, move: text, expected_ply: b.ply }, { metadata });
        status.textContent = `played ${resp.move.move.san}${resp.duplicate ? " (already applied)" : ""}`;
        $("#move-input").value = "";
        this.applyState(resp.state, Date.now());
        this.renderBoards().catch((e) => showError(e, "RenderBoard"));
      } else if (kind === "resign") {
        const resp = await client.unary(MS, "Resign", base, { metadata });
        status.textContent = "resigned";
        this.applyState(resp.state, Date.now());
      } else if (kind === "draw") {
        const resp = await client.unary(MS, "OfferDraw", base, { metadata });
        status.textContent = resp.state.outcome ? "drawn by agreement" : "draw offered";
      }
    } catch (err) {
      status.className = "error";
      status.textContent = err instanceof GrpcError
        ? `${err.codeName}${err.reason ? " " + err.reason : ""}: ${err.grpcMessage}` : String(err);
      console.warn(err); // a refusal is an answer, shown on the page
    }
  }
}

// Parses the server's SVG document and returns an element to insert inline: scripts and event
// handler attributes dropped, ids prefixed so that two boards on the page never share one.
function inlineSvg(text, prefix) {
  const prefixed = text
    .replace(/\bid="([^"]+)"/g, `id="${prefix}$1"`)
    .replace(/\bhref="#([^"]+)"/g, `href="#${prefix}$1"`)
    .replace(/url\(#([^)]+)\)/g, `url(#${prefix}$1)`);
  const doc = new DOMParser().parseFromString(prefixed, "image/svg+xml");
  const root = doc.documentElement;
  if (!root || root.nodeName.toLowerCase() !== "svg" || doc.querySelector("parsererror")) {
    return el("p", { class: "error" }, "the board picture could not be read");
  }
  for (const bad of root.querySelectorAll("script, foreignObject")) bad.remove();
  for (const node of [root, ...root.querySelectorAll("*")]) {
    for (const attr of [...node.attributes]) {
      if (/^on/i.test(attr.name) || /^\s*javascript:/i.test(attr.value)) node.removeAttribute(attr.name);
    }
  }
  const svg = document.importNode(root, true);
  svg.setAttribute("role", "img");
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  if (!svg.getAttribute("preserveAspectRatio")) svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
  return svg;
}

// ---------------------------------------------------------------- the controls

async function listMatches(playerId) {
  const list = $("#match-list");
  list.replaceChildren(el("li", { class: "empty" }, "loading…"));
  try {
    const resp = await client.unary(MS, "ListMatches", {
      player_id: playerId, state: "MATCH_STATE_FILTER_LIVE", page_size: 50,
    });
    list.replaceChildren();
    if (!resp.matches.length) {
      list.append(el("li", { class: "empty" }, `no live match for ${playerId}`));
      return;
    }
    for (const m of resp.matches) {
      const s = m.state;
      const players = s.seats.map((x) => x.player_id).join(", ");
      const plies = s.boards.map((b) => b.ply).join("+");
      list.append(el("li", { "data-match-id": s.match_id },
        el("button", { type: "button", onclick: () => openMatch(s.match_id) },
          `${variantName(s.variant)} · ${players} · ply ${plies} · ${s.match_id}`)));
    }
  } catch (err) {
    list.replaceChildren();
    showError(err, "ListMatches");
  }
}

async function openMatch(matchId) {
  matchId = matchId.trim();
  if (!matchId) return;
  $("#match-id").value = matchId;
  const url = new URL(location.href);
  url.searchParams.set("match", matchId);
  history.replaceState(null, "", url);
  if (session) session.stop();
  session = new MatchView(matchId);
  window.arbiterSession = session; // for debugging from the console
  try {
    await session.start();
  } catch (err) {
    if (session.abort.signal.aborted) return;
    setStatus("error", "cannot open the match");
    showError(err, "GetMatch");
  }
}

async function main() {
  try {
    codec = await loadCodec();
  } catch (err) {
    setStatus("error", "no schema");
    showError(err, "schema.json");
    return;
  }
  client = new GrpcWebClient(codec, {
    baseUrl: params.get("server") || location.origin,
    apiKey: params.get("key") || "",
    wire: params.get("wire") || "binary",
    onRetry: ({ name, attempt, error }) => console.warn(`retrying ${name} (attempt ${attempt + 1}): ${error.message}`),
  });
  window.arbiterClient = client;

  const keyInput = $("#api-key");
  keyInput.value = client.apiKey;
  keyInput.addEventListener("change", () => { client.apiKey = keyInput.value.trim(); });
  $("#key-form").addEventListener("submit", (e) => e.preventDefault());
  $("#find-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const p = $("#player-id").value.trim();
    if (p) listMatches(p);
  });
  $("#open-form").addEventListener("submit", (e) => { e.preventDefault(); openMatch($("#match-id").value); });
  $("#play-form").addEventListener("submit", (e) => { e.preventDefault(); if (session) session.play("move"); });
  $("#resign").addEventListener("click", () => session && session.play("resign"));
  $("#offer-draw").addEventListener("click", () => session && session.play("draw"));

  setStatus("idle", "ready");
  if (params.get("player")) {
    $("#player-id").value = params.get("player");
    listMatches(params.get("player"));
  }
  if (params.get("match")) openMatch(params.get("match"));
}

main();
