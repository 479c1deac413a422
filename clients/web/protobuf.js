// A small protobuf codec (the binary wire format) driven by a JSON schema: the one
// gen-schema.py writes from proto/ (clients/web/schema.json), or any object of that shape.
//
// Messages are plain objects keyed by the proto field names (snake_case, as in the .proto):
//   - scalars: numbers, booleans, strings; bytes as Uint8Array;
//   - 64-bit integers (int64, uint64, sint64, fixed64, sfixed64) decode to a Number when they
//     fit in Number.MAX_SAFE_INTEGER, else to a BigInt; they encode from a Number, a BigInt or
//     a decimal string;
//   - enums: numbers (the encoder also takes the value's name, "VARIANT_CHESS");
//   - nested messages: objects; repeated fields: arrays (packed or not, both read);
//   - maps: plain objects keyed by the key's string form;
//   - oneofs: the member that is set is a property like any field, and the oneof's name holds
//     the member's name (`resp.event === "move"`, then `resp.move`); unset oneofs are absent;
//   - proto3 `optional` fields are absent when not on the wire.
// Decoded messages carry every other field with its default (0, "", false, [], {}); unset
// message fields are absent (undefined). Unknown fields are skipped.

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const U64 = (1n << 64n) - 1n;

const utf8enc = new TextEncoder();
const utf8dec = new TextDecoder("utf-8", { fatal: false });

const LONG = new Set(["int64", "uint64", "sint64", "fixed64", "sfixed64"]);
const WIRE = {
  int32: 0, int64: 0, uint32: 0, uint64: 0, sint32: 0, sint64: 0, bool: 0, enum: 0,
  fixed64: 1, sfixed64: 1, double: 1,
  string: 2, bytes: 2, message: 2,
  fixed32: 5, sfixed32: 5, float: 5,
};

export class ProtoError extends Error {}

// ---------------------------------------------------------------- writer

class Writer {
  constructor() { this.buf = new Uint8Array(64); this.len = 0; }
  ensure(n) {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const b = new Uint8Array(size);
    b.set(this.buf.subarray(0, this.len));
    this.buf = b;
  }
  byte(b) { this.ensure(1); this.buf[this.len++] = b; }
  bytes(a) { this.ensure(a.length); this.buf.set(a, this.len); this.len += a.length; }
  // An unsigned varint of a non-negative Number below 2^53 or a BigInt below 2^64.
  varint(v) {
    if (typeof v === "number" && v >= 0 && v <= 0x7fffffff) {
      while (v > 0x7f) { this.byte((v & 0x7f) | 0x80); v >>>= 7; }
      this.byte(v);
      return;
    }
    let b = BigInt.asUintN(64, BigInt(v));
    while (b > 0x7fn) { this.byte(Number(b & 0x7fn) | 0x80); b >>= 7n; }
    this.byte(Number(b));
  }
  tag(number, wire) { this.varint(number * 8 + wire); }
  fixed32(v, signed) {
    this.ensure(4);
    new DataView(this.buf.buffer).setUint32(this.len, signed ? (v | 0) >>> 0 : v >>> 0, true);
    this.len += 4;
  }
  fixed64(v) {
    this.ensure(8);
    new DataView(this.buf.buffer).setBigUint64(this.len, BigInt.asUintN(64, BigInt(v)), true);
    this.len += 8;
  }
  float(v) { this.ensure(4); new DataView(this.buf.buffer).setFloat32(this.len, v, true); this.len += 4; }
  double(v) { this.ensure(8); new DataView(this.buf.buffer).setFloat64(this.len, v, true); this.len += 8; }
  finish() { return this.buf.slice(0, this.len); }
}

// ---------------------------------------------------------------- reader

class Reader {
  constructor(bytes) { this.buf = bytes; this.pos = 0; this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength); }
  eof() { return this.pos >= this.buf.length; }
  need(n) { if (this.pos + n > this.buf.length) throw new ProtoError("truncated message"); }
  // A varint as a BigInt (up to 64 bits; longer ones are refused).
  varintBig() {
    let result = 0n, shift = 0n;
    for (let i = 0; i < 10; i++) {
      this.need(1);
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return BigInt.asUintN(64, result);
      shift += 7n;
    }
    throw new ProtoError("varint longer than 10 bytes");
  }
  // A varint as a Number when it has at most 4 bytes (the common case), else via BigInt.
  varint() {
    const start = this.pos;
    let result = 0;
    for (let i = 0; i < 4; i++) {
      this.need(1);
      const b = this.buf[this.pos++];
      result |= (b & 0x7f) << (7 * i);
      if (b < 0x80) return result >>> 0;
    }
    this.pos = start;
    return this.varintBig();
  }
  fixed32() { this.need(4); const v = this.view.getUint32(this.pos, true); this.pos += 4; return v; }
  fixed64() { this.need(8); const v = this.view.getBigUint64(this.pos, true); this.pos += 8; return v; }
  float() { this.need(4); const v = this.view.getFloat32(this.pos, true); this.pos += 4; return v; }
  double() { this.need(8); const v = this.view.getFloat64(this.pos, true); this.pos += 8; return v; }
  lengthDelimited() {
    const n = Number(this.varint());
    this.need(n);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  skip(wire, number) {
    switch (wire) {
      case 0: this.varintBig(); break;
      case 1: this.need(8); this.pos += 8; break;
      case 2: this.lengthDelimited(); break;
      case 5: this.need(4); this.pos += 4; break;
      case 3: // a group: skip to its end tag
        for (;;) {
          if (this.eof()) throw new ProtoError("unterminated group");
          const t = Number(this.varint());
          if ((t & 7) === 4) { if (t >>> 3 !== number) throw new ProtoError("mismatched group end"); return; }
          this.skip(t & 7, t >>> 3);
        }
      default: throw new ProtoError(`unknown wire type ${wire}`);
    }
  }
}

// ---------------------------------------------------------------- scalars

function toBig(v) {
  if (typeof v === "bigint") return v;
  if (typeof v === "number") {
    if (!Number.isInteger(v)) throw new ProtoError(`not an integer: ${v}`);
    return BigInt(v);
  }
  if (typeof v === "string" && /^-?\d+$/.test(v)) return BigInt(v);
  throw new ProtoError(`not a 64-bit integer: ${v}`);
}

function fromBig(b) {
  return b <= MAX_SAFE && b >= MIN_SAFE ? Number(b) : b;
}

function isDefault(type, v) {
  switch (type) {
    case "string": return v === "";
    case "bytes": return v.length === 0;
    case "bool": return v === false;
    default: return v === 0 || v === 0n || v === "0";
  }
}

function defaultOf(f) {
  switch (f.type) {
    case "string": return "";
    case "bytes": return new Uint8Array(0);
    case "bool": return false;
    case "message": return undefined;
    default: return 0;
  }
}

// ---------------------------------------------------------------- the codec

export class Codec {
  // `schema`: {messages, enums, services} as gen-schema.py writes it.
  constructor(schema) {
    this.schema = schema;
    this.fieldsByNumber = new Map();
  }

  merge(other) {
    for (const k of ["messages", "enums", "services"]) {
      this.schema[k] = Object.assign({}, this.schema[k], other[k] || {});
    }
    this.fieldsByNumber.clear();
    return this;
  }

  message(name) {
    const m = this.schema.messages[name];
    if (!m) throw new ProtoError(`unknown message ${name}`);
    return m;
  }

  // {NAME: number} of an enum.
  enumValues(name) {
    const e = this.schema.enums[name];
    if (!e) throw new ProtoError(`unknown enum ${name}`);
    return e.values;
  }

  // The name of an enum's number ("VARIANT_CHESS"), or the number as text when unknown.
  enumName(name, number) {
    const values = this.enumValues(name);
    for (const [k, v] of Object.entries(values)) if (v === number) return k;
    return String(number);
  }

  enumNumber(name, v) {
    if (typeof v === "number") return v;
    if (typeof v === "string") {
      const n = this.enumValues(name)[v];
      if (n === undefined) throw new ProtoError(`${name} has no value ${v}`);
      return n;
    }
    throw new ProtoError(`bad value for enum ${name}: ${v}`);
  }

  // Bytes of message `name` from object `obj`.
  encode(name, obj) {
    const w = new Writer();
    this.writeMessage(w, name, obj || {});
    return w.finish();
  }

  // The object of message `name` from `bytes` (a Uint8Array).
  decode(name, bytes) {
    return this.readMessage(new Reader(bytes), name);
  }

  writeMessage(w, name, obj) {
    const m = this.message(name);
    for (const f of m.fields) {
      const v = obj[f.name];
      if (v === undefined || v === null) continue;
      if (f.label === "repeated") {
        const entryType = f.type === "message" ? this.schema.messages[f.typeName] : null;
        if (entryType && entryType.mapEntry) {
          const [kf, vf] = entryType.fields;
          const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
          for (const [key, val] of entries) {
            const sub = new Writer();
            this.writeField(sub, kf, kf.type === "bool" ? key === true || key === "true" : key, true);
            this.writeField(sub, vf, val, true);
            w.tag(f.number, 2);
            const bytes = sub.finish();
            w.varint(bytes.length);
            w.bytes(bytes);
          }
          continue;
        }
        if (!Array.isArray(v)) throw new ProtoError(`${name}.${f.name}: expected an array`);
        if (f.packed && v.length > 0) {
          const sub = new Writer();
          for (const item of v) this.writeScalar(sub, f, item);
          const bytes = sub.finish();
          w.tag(f.number, 2);
          w.varint(bytes.length);
          w.bytes(bytes);
        } else {
          for (const item of v) this.writeField(w, f, item, true);
        }
        continue;
      }
      // Presence: oneof members, proto3 optional fields and messages are written when set;
      // other scalars only when they differ from their default.
      const explicit = f.oneof !== undefined || f.optional || f.type === "message";
      this.writeField(w, f, v, explicit);
    }
  }

  writeField(w, f, v, always) {
    if (f.type === "message") {
      const sub = new Writer();
      this.writeMessage(sub, f.typeName, v);
      const bytes = sub.finish();
      w.tag(f.number, 2);
      w.varint(bytes.length);
      w.bytes(bytes);
      return;
    }
    if (f.type === "enum") v = this.enumNumber(f.typeName, v);
    if (f.type === "string" && typeof v !== "string") throw new ProtoError(`${f.name}: expected a string`);
    if (!always && isDefault(f.type, v)) return;
    w.tag(f.number, WIRE[f.type]);
    this.writeScalar(w, f, v);
  }

  writeScalar(w, f, v) {
    switch (f.type) {
      case "string": { const b = utf8enc.encode(v); w.varint(b.length); w.bytes(b); return; }
      case "bytes": w.varint(v.length); w.bytes(v); return;
      case "bool": w.varint(v ? 1 : 0); return;
      case "enum": v = this.enumNumber(f.typeName, v); // fallthrough: enums are int32
      case "int32":
        if (v < 0) w.varint(BigInt.asUintN(64, BigInt(v | 0))); else w.varint(v >>> 0);
        return;
      case "uint32": w.varint(v >>> 0); return;
      case "sint32": w.varint((((v | 0) << 1) ^ ((v | 0) >> 31)) >>> 0); return;
      case "int64": w.varint(BigInt.asUintN(64, toBig(v))); return;
      case "uint64": w.varint(BigInt.asUintN(64, toBig(v))); return;
      case "sint64": { const b = toBig(v); w.varint(BigInt.asUintN(64, (b << 1n) ^ (b >> 63n))); return; }
      case "fixed32": w.fixed32(v, false); return;
      case "sfixed32": w.fixed32(v, true); return;
      case "fixed64": case "sfixed64": w.fixed64(toBig(v)); return;
      case "float": w.float(v); return;
      case "double": w.double(v); return;
      default: throw new ProtoError(`cannot write type ${f.type}`);
    }
  }

  fieldMap(name) {
    let map = this.fieldsByNumber.get(name);
    if (!map) {
      map = new Map(this.message(name).fields.map((f) => [f.number, f]));
      this.fieldsByNumber.set(name, map);
    }
    return map;
  }

  readMessage(r, name) {
    const m = this.message(name);
    const byNumber = this.fieldMap(name);
    const obj = {};
    const seen = new Map(); // message field number -> its bytes so far (to merge repeats)
    for (const f of m.fields) {
      if (f.oneof !== undefined || f.optional) continue;
      if (f.label === "repeated") {
        const et = f.type === "message" ? this.schema.messages[f.typeName] : null;
        obj[f.name] = et && et.mapEntry ? {} : [];
      } else if (f.type !== "message") {
        obj[f.name] = defaultOf(f);
      }
    }
    while (!r.eof()) {
      const t = r.varint();
      const tag = typeof t === "bigint" ? Number(t) : t;
      const number = Math.floor(tag / 8), wire = tag & 7;
      const f = byNumber.get(number);
      if (!f) { r.skip(wire, number); continue; }
      if (f.label === "repeated") {
        const et = f.type === "message" ? this.schema.messages[f.typeName] : null;
        if (et && et.mapEntry) {
          const entry = this.readMessage(new Reader(r.lengthDelimited()), f.typeName);
          const [kf, vf] = et.fields;
          let val = entry[vf.name];
          if (val === undefined && vf.type === "message") val = this.readMessage(new Reader(new Uint8Array(0)), vf.typeName);
          obj[f.name][String(entry[kf.name])] = val;
        } else if (wire === 2 && WIRE[f.type] !== 2) {
          const sub = new Reader(r.lengthDelimited());
          while (!sub.eof()) obj[f.name].push(this.readScalar(sub, f));
        } else {
          this.checkWire(name, f, wire);
          obj[f.name].push(this.readValue(r, f));
        }
        continue;
      }
      this.checkWire(name, f, wire);
      if (f.type === "message") {
        // A message field seen twice is merged (the wire format's rule): decoding the
        // concatenation of its occurrences is exactly that merge.
        let bytes = r.lengthDelimited();
        const prev = seen.get(number);
        if (prev && obj[f.name] !== undefined) {
          const both = new Uint8Array(prev.length + bytes.length);
          both.set(prev);
          both.set(bytes, prev.length);
          bytes = both;
        }
        seen.set(number, bytes);
        obj[f.name] = this.readMessage(new Reader(bytes), f.typeName);
      } else {
        obj[f.name] = this.readValue(r, f);
      }
      if (f.oneof !== undefined) {
        const previous = obj[f.oneof];
        if (previous && previous !== f.name) delete obj[previous];
        obj[f.oneof] = f.name;
      }
    }
    return obj;
  }

  checkWire(name, f, wire) {
    if (WIRE[f.type] !== wire) throw new ProtoError(`${name}.${f.name}: wire type ${wire}, expected ${WIRE[f.type]}`);
  }

  readValue(r, f) {
    if (f.type === "message") return this.readMessage(new Reader(r.lengthDelimited()), f.typeName);
    return this.readScalar(r, f);
  }

  readScalar(r, f) {
    switch (f.type) {
      case "string": return utf8dec.decode(r.lengthDelimited());
      case "bytes": return r.lengthDelimited().slice();
      case "bool": { const v = r.varint(); return v !== 0 && v !== 0n; }
      case "enum":
      case "int32": { const v = r.varint(); return typeof v === "number" ? v | 0 : Number(BigInt.asIntN(32, v)); }
      case "uint32": { const v = r.varint(); return typeof v === "number" ? v : Number(BigInt.asUintN(32, v)); }
      case "sint32": { const v = Number(BigInt.asUintN(32, BigInt(r.varint()))); return (v >>> 1) ^ -(v & 1); }
      case "int64": return fromBig(BigInt.asIntN(64, r.varintBig()));
      case "uint64": return fromBig(r.varintBig());
      case "sint64": { const v = r.varintBig(); return fromBig((v >> 1n) ^ -(v & 1n)); }
      case "fixed32": return r.fixed32();
      case "sfixed32": return r.fixed32() | 0;
      case "fixed64": return fromBig(r.fixed64());
      case "sfixed64": return fromBig(BigInt.asIntN(64, r.fixed64()));
      case "float": return r.float();
      case "double": return r.double();
      default: throw new ProtoError(`cannot read type ${f.type}`);
    }
  }
}

// The codec of the schema at `url` (default: schema.json beside this module).
export async function loadCodec(url = new URL("./schema.json", import.meta.url)) {
  const resp = await fetch(url);
  if (!resp.ok) throw new ProtoError(`cannot load the schema ${url}: HTTP ${resp.status}`);
  return new Codec(await resp.json());
}

export { LONG as LONG_TYPES, U64 };
