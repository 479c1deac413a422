// gRPC-web over fetch: unary and server-streaming calls, metadata, status codes and messages,
// and the retries and watch resumption of the Arbiter client contract
// (docs/clients.md; /work/notes/client-contract.md while it is being written).
//
//   const client = new GrpcWebClient(codec, { baseUrl: location.origin, apiKey });
//   const state = await client.unary("arbiter.matches.v1.MatchService", "GetMatch", { match_id });
//   for await (const ev of client.serverStream(svc, "WatchMatch", req)) { ... }
//
// The wire: each message is a 5-byte frame (flag byte 0x00, big-endian length) followed by the
// protobuf bytes; the response ends with a trailer frame (flag 0x80) whose payload is HTTP/1
// header lines (`grpc-status: 0\r\ngrpc-message: ...\r\n`). A response with no message may carry
// the status in its HTTP headers instead ("trailers-only"). `wire: "text"` sends
// application/grpc-web-text: the same bytes in base64, request and response.

export const Code = {
  OK: 0, CANCELLED: 1, UNKNOWN: 2, INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5,
  ALREADY_EXISTS: 6, PERMISSION_DENIED: 7, RESOURCE_EXHAUSTED: 8, FAILED_PRECONDITION: 9,
  ABORTED: 10, OUT_OF_RANGE: 11, UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14,
  DATA_LOSS: 15, UNAUTHENTICATED: 16,
};
export const CodeName = Object.fromEntries(Object.entries(Code).map(([k, v]) => [v, k]));

// google.rpc.Status and the details Arbiter sends (hand-written: they are not under proto/).
const RPC_SCHEMA = {
  messages: {
    "google.rpc.Status": { oneofs: [], fields: [
      { name: "code", number: 1, type: "int32" },
      { name: "message", number: 2, type: "string" },
      { name: "details", number: 3, type: "message", label: "repeated", typeName: "google.protobuf.Any" }] },
    "google.protobuf.Any": { oneofs: [], fields: [
      { name: "type_url", number: 1, type: "string" },
      { name: "value", number: 2, type: "bytes" }] },
    "google.protobuf.Duration": { oneofs: [], fields: [
      { name: "seconds", number: 1, type: "int64" },
      { name: "nanos", number: 2, type: "int32" }] },
    "google.rpc.ErrorInfo": { oneofs: [], fields: [
      { name: "reason", number: 1, type: "string" },
      { name: "domain", number: 2, type: "string" },
      { name: "metadata", number: 3, type: "message", label: "repeated", typeName: "google.rpc.ErrorInfo.MetadataEntry" }] },
    "google.rpc.ErrorInfo.MetadataEntry": { oneofs: [], mapEntry: true, fields: [
      { name: "key", number: 1, type: "string" },
      { name: "value", number: 2, type: "string" }] },
    "google.rpc.BadRequest": { oneofs: [], fields: [
      { name: "field_violations", number: 1, type: "message", label: "repeated", typeName: "google.rpc.BadRequest.FieldViolation" }] },
    "google.rpc.BadRequest.FieldViolation": { oneofs: [], fields: [
      { name: "field", number: 1, type: "string" },
      { name: "description", number: 2, type: "string" }] },
    "google.rpc.RetryInfo": { oneofs: [], fields: [
      { name: "retry_delay", number: 1, type: "message", typeName: "google.protobuf.Duration" }] },
    "google.rpc.ResourceInfo": { oneofs: [], fields: [
      { name: "resource_type", number: 1, type: "string" },
      { name: "resource_name", number: 2, type: "string" },
      { name: "owner", number: 3, type: "string" },
      { name: "description", number: 4, type: "string" }] },
  },
  enums: {},
  services: {},
};

// A failed call: `code` (a number of Code), `codeName`, `message` (grpc-message, decoded), and
// `details` (decoded google.rpc details: {type, ...fields}).
export class GrpcError extends Error {
  constructor(code, message, details = [], metadata = {}) {
    super(`${CodeName[code] || code}: ${message}`);
    this.code = code;
    this.codeName = CodeName[code] || String(code);
    this.grpcMessage = message;
    this.details = details;
    this.metadata = metadata;
  }
  // The ErrorInfo reason (STALE_PLY, NOT_YOUR_TURN, ...), if any.
  get reason() {
    const info = this.details.find((d) => d.type === "google.rpc.ErrorInfo");
    return info ? info.reason : "";
  }
}

// HTTP statuses without a grpc-status, as the gRPC spec maps them.
function codeOfHttp(status) {
  switch (status) {
    case 400: return Code.INTERNAL;
    case 401: return Code.UNAUTHENTICATED;
    case 403: return Code.PERMISSION_DENIED;
    case 404: return Code.UNIMPLEMENTED;
    case 429: case 502: case 503: case 504: return Code.UNAVAILABLE;
    default: return Code.UNKNOWN;
  }
}

function b64decode(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function b64encode(bytes) {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

function frame(bytes) {
  const out = new Uint8Array(5 + bytes.length);
  new DataView(out.buffer).setUint32(1, bytes.length, false);
  out.set(bytes, 5);
  return out;
}

function parseTrailers(bytes) {
  const text = new TextDecoder().decode(bytes);
  const out = {};
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i <= 0) continue;
    out[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return out;
}

function headersObject(headers) {
  const out = {};
  headers.forEach((v, k) => { out[k.toLowerCase()] = v; });
  return out;
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener("abort", () => { clearTimeout(t); reject(new GrpcError(Code.CANCELLED, "cancelled")); }, { once: true });
  });
}

// Full-jitter exponential backoff of the contract: 100 ms, x2, capped at 2 s.
export function backoffMs(attempt) {
  const cap = Math.min(2000, 100 * 2 ** attempt);
  return Math.random() * cap;
}

// A fresh request id (UUID v4).
export function requestId() {
  if (globalThis.crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16)); // randomUUID needs a secure context
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// Reads gRPC-web frames from a fetch Response body, as they arrive.
class FrameReader {
  constructor(body, text) {
    this.reader = body.getReader();
    this.text = text;
    this.buf = new Uint8Array(0);
    this.pendingText = "";
    this.done = false;
  }
  append(bytes) {
    const b = new Uint8Array(this.buf.length + bytes.length);
    b.set(this.buf);
    b.set(bytes, this.buf.length);
    this.buf = b;
  }
  async fill() {
    const { value, done } = await this.reader.read();
    if (done) { this.done = true; return; }
    if (!this.text) { this.append(value); return; }
    // grpc-web-text: base64, decodable in groups of 4 characters (a chunk may end in between;
    // padded groups may also follow one another).
    this.pendingText += new TextDecoder().decode(value).replace(/\s+/g, "");
    const usable = this.pendingText.length - (this.pendingText.length % 4);
    let chunk = this.pendingText.slice(0, usable);
    this.pendingText = this.pendingText.slice(usable);
    while (chunk.length) {
      const pad = chunk.indexOf("=");
      const end = pad < 0 ? chunk.length : Math.ceil((pad + 1) / 4) * 4;
      this.append(b64decode(chunk.slice(0, end)));
      chunk = chunk.slice(end);
    }
  }
  // The next frame {flag, payload}, or null at a clean end of the body.
  async next() {
    for (;;) {
      if (this.buf.length >= 5) {
        const len = new DataView(this.buf.buffer, this.buf.byteOffset).getUint32(1, false);
        if (this.buf.length >= 5 + len) {
          const flag = this.buf[0];
          const payload = this.buf.slice(5, 5 + len);
          this.buf = this.buf.slice(5 + len);
          return { flag, payload };
        }
      }
      if (this.done) {
        if (this.buf.length) throw new GrpcError(Code.UNAVAILABLE, "the response ended inside a frame");
        return null;
      }
      await this.fill();
    }
  }
  cancel() { this.reader.cancel().catch(() => {}); }
}

export class GrpcWebClient {
  // options: baseUrl (default: the page's origin), apiKey, wire ("binary" | "text"),
  // deadlineMs (per attempt, default 10 s), overallMs (default 30 s), maxAttempts (6),
  // onRetry(info) called before each retry.
  constructor(codec, options = {}) {
    this.codec = codec.merge(RPC_SCHEMA);
    this.baseUrl = (options.baseUrl || globalThis.location?.origin || "").replace(/\/+$/, "");
    this.apiKey = options.apiKey || "";
    this.wire = options.wire === "text" ? "text" : "binary";
    this.deadlineMs = options.deadlineMs ?? 10000;
    this.overallMs = options.overallMs ?? 30000;
    this.maxAttempts = options.maxAttempts ?? 6;
    this.onRetry = options.onRetry || (() => {});
  }

  method(service, name) {
    const svc = this.codec.schema.services[service];
    const m = svc && svc.methods[name];
    if (!m) throw new GrpcError(Code.UNIMPLEMENTED, `unknown method ${service}/${name}`);
    return m;
  }

  headers(metadata, timeoutMs) {
    const contentType = this.wire === "text" ? "application/grpc-web-text" : "application/grpc-web+proto";
    const h = {
      "content-type": contentType,
      accept: contentType,
      "x-grpc-web": "1",
      "x-user-agent": "arbiter-web/1",
    };
    if (timeoutMs) h["grpc-timeout"] = `${Math.max(1, Math.ceil(timeoutMs))}m`;
    if (this.apiKey) h["x-api-key"] = this.apiKey;
    for (const [k, v] of Object.entries(metadata || {})) if (v !== undefined && v !== null && v !== "") h[k.toLowerCase()] = v;
    return h;
  }

  decodeDetails(bin) {
    try {
      const padded = bin.replace(/-/g, "+").replace(/_/g, "/");
      const status = this.codec.decode("google.rpc.Status", b64decode(padded + "===".slice((padded.length + 3) % 4)));
      return status.details.map((any) => {
        const type = any.type_url.slice(any.type_url.lastIndexOf("/") + 1);
        if (this.codec.schema.messages[type]) return { type, ...this.codec.decode(type, any.value) };
        return { type };
      });
    } catch {
      return [];
    }
  }

  statusError(meta) {
    const code = Number(meta["grpc-status"]);
    let message = meta["grpc-message"] || "";
    try { message = decodeURIComponent(message); } catch { /* as sent */ }
    const details = meta["grpc-status-details-bin"] ? this.decodeDetails(meta["grpc-status-details-bin"]) : [];
    return new GrpcError(code, message, details, meta);
  }

  // One attempt: yields decoded messages; throws GrpcError on a non-OK status.
  async *attempt(service, name, request, { metadata, signal, timeoutMs }) {
    const m = this.method(service, name);
    const bytes = frame(this.codec.encode(m.input, request));
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    if (signal) {
      if (signal.aborted) throw new GrpcError(Code.CANCELLED, "cancelled");
      signal.addEventListener("abort", onAbort, { once: true });
    }
    let timedOut = false;
    const timer = timeoutMs ? setTimeout(() => { timedOut = true; controller.abort(); }, timeoutMs) : null;
    let frames = null;
    try {
      let resp;
      try {
        resp = await fetch(`${this.baseUrl}/${service}/${name}`, {
          method: "POST",
          headers: this.headers(metadata, timeoutMs),
          body: this.wire === "text" ? b64encode(bytes) : bytes,
          signal: controller.signal,
          cache: "no-store",
        });
      } catch (e) {
        throw this.transportError(e, timedOut, signal);
      }
      const meta = headersObject(resp.headers);
      if (meta["grpc-status"] !== undefined && meta["grpc-status"] !== "0") throw this.statusError(meta);
      if (!resp.ok) {
        throw new GrpcError(codeOfHttp(resp.status), `HTTP ${resp.status} ${resp.statusText}`.trim(), [], meta);
      }
      const ctype = meta["content-type"] || "";
      if (!ctype.startsWith("application/grpc-web")) {
        throw new GrpcError(Code.UNKNOWN, `not a gRPC-web answer (content-type ${ctype || "none"})`, [], meta);
      }
      if (meta["grpc-status"] === "0" && !resp.body) return;
      frames = new FrameReader(resp.body, ctype.startsWith("application/grpc-web-text"));
      let trailers = null;
      for (;;) {
        let f;
        try {
          f = await frames.next();
        } catch (e) {
          throw e instanceof GrpcError ? e : this.transportError(e, timedOut, signal);
        }
        if (f === null) break;
        if (f.flag & 0x80) { trailers = parseTrailers(f.payload); break; }
        if (f.flag & 0x01) throw new GrpcError(Code.INTERNAL, "compressed message (no compression was asked for)");
        yield this.codec.decode(m.output, f.payload);
      }
      if (!trailers) {
        if (meta["grpc-status"] === "0") return; // trailers-only OK in the headers
        throw new GrpcError(Code.UNAVAILABLE, "the stream ended without its status (connection lost)");
      }
      if (trailers["grpc-status"] === undefined) throw new GrpcError(Code.INTERNAL, "trailers without grpc-status");
      if (trailers["grpc-status"] !== "0") throw this.statusError(trailers);
    } finally {
      if (timer) clearTimeout(timer);
      if (signal) signal.removeEventListener("abort", onAbort);
      if (frames) frames.cancel();
    }
  }

  transportError(e, timedOut, signal) {
    if (timedOut) return new GrpcError(Code.DEADLINE_EXCEEDED, "deadline exceeded (this attempt)");
    if (signal && signal.aborted) return new GrpcError(Code.CANCELLED, "cancelled");
    return new GrpcError(Code.UNAVAILABLE, `connection failed: ${e && e.message ? e.message : e}`);
  }

  static retryable(err) {
    if (!(err instanceof GrpcError)) return false;
    if (err.code === Code.UNAVAILABLE || err.code === Code.DEADLINE_EXCEEDED) return true;
    // RESOURCE_EXHAUSTED only when the server says when to come back (a rate limit).
    return err.code === Code.RESOURCE_EXHAUSTED && err.details.some((d) => d.type === "google.rpc.RetryInfo");
  }

  // A unary call. options: metadata ({header: value}), signal, deadlineMs (per attempt),
  // overallMs, idempotent (default true: every read, and every state change that carries a
  // request_id the caller keeps the same across attempts).
  async unary(service, name, request, options = {}) {
    const idempotent = options.idempotent !== false;
    const perAttempt = options.deadlineMs ?? this.deadlineMs;
    const until = Date.now() + (options.overallMs ?? this.overallMs);
    for (let attempt = 0; ; attempt++) {
      const left = until - Date.now();
      try {
        let result;
        for await (const msg of this.attempt(service, name, request, {
          metadata: options.metadata, signal: options.signal, timeoutMs: Math.max(1, Math.min(perAttempt, left)),
        })) {
          if (result !== undefined) throw new GrpcError(Code.INTERNAL, "a unary call answered more than once");
          result = msg;
        }
        if (result === undefined) throw new GrpcError(Code.INTERNAL, "a unary call answered nothing");
        return result;
      } catch (err) {
        const wait = backoffMs(attempt);
        if (!idempotent || !GrpcWebClient.retryable(err) || attempt + 1 >= this.maxAttempts || Date.now() + wait >= until) throw err;
        this.onRetry({ service, name, attempt: attempt + 1, error: err, waitMs: wait });
        await sleep(wait, options.signal);
      }
    }
  }

  // A server-streaming call, one attempt: an async iterator of messages. Break out of the loop
  // (or abort `signal`) to cancel it.
  serverStream(service, name, request, options = {}) {
    return this.attempt(service, name, request, { metadata: options.metadata, signal: options.signal, timeoutMs: options.deadlineMs || 0 });
  }

  // WatchMatch with the contract's resumption: each event once, in order; on a break
  // (UNAVAILABLE, a reset, the stream ending before the `end` event) it watches again with
  // after_seq = the last seq yielded, after the backoff, dropping events with seq <= last. Ends
  // after the `end` event; throws after maxAttempts attempts in a row that broke before any
  // event, and at once on an error that is not retryable (NOT_FOUND, ...). `onState(text,
  // error)` hears "live" / "reconnecting".
  async *watchMatch(matchId, { afterSeq = 0, signal, onState = () => {} } = {}) {
    let last = afterSeq;
    let failures = 0;
    for (;;) {
      try {
        onState("live");
        for await (const ev of this.serverStream("arbiter.matches.v1.MatchService", "WatchMatch", { match_id: matchId, after_seq: last }, { signal })) {
          failures = 0;
          if (ev.seq <= last) continue;
          last = ev.seq;
          yield ev;
          if (ev.event === "end") return;
        }
        throw new GrpcError(Code.UNAVAILABLE, "the watch ended before the match did");
      } catch (err) {
        if (!GrpcWebClient.retryable(err) || (signal && signal.aborted)) throw err;
        // At most maxAttempts watches in a row that yield nothing (a yielded event resets it).
        if (failures + 1 >= this.maxAttempts) throw err;
        const wait = backoffMs(failures);
        failures++;
        onState("reconnecting", err);
        await sleep(wait, signal);
      }
    }
  }
}
