//! The Redis match store: the data model of [`super::store`] in two keys per match,
//! `bug:{<id>}:state` (a hash) and `bug:{<id>}:events` (a list), both in the match's hash slot.
//! Every change is one Lua script, so it is atomic on the server: a move either happens whole
//! (ply check, reserve take and give, board, events, TTL) or not at all, whatever the clients
//! do concurrently. A connection manager reconnects after an outage; while Redis is away every
//! call fails with [`StoreError`] (the service answers `UNAVAILABLE`) and nothing is applied.

use super::store::{EndResult, Fields, MatchStore, MoveCommit, MoveResult, Retention, StoreError};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};
use std::time::Duration;

const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('DEL', KEYS[2])
local n = tonumber(ARGV[2])
for i = 0, n - 1 do
  redis.call('HSET', KEYS[1], ARGV[3 + 2 * i], ARGV[4 + 2 * i])
end
for i = 3 + 2 * n, #ARGV do
  redis.call('RPUSH', KEYS[2], ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
";

const MOVE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
if redis.call('HGET', KEYS[1], 'over') == '1' then return {'over'} end
local b = ARGV[1]
local ply = tonumber(redis.call('HGET', KEYS[1], 'ply:' .. b))
if ply ~= tonumber(ARGV[2]) then
  return {'stale', tostring(ply), redis.call('HGET', KEYS[1], 'last:' .. b) or ''}
end
local function reserve_event(board, side)
  local s = ''
  for _, p in ipairs({'Q', 'R', 'B', 'N', 'P'}) do
    local n = tonumber(redis.call('HGET', KEYS[1], 'res:' .. board .. ':' .. side .. ':' .. p) or '0')
    local letter = p
    if side == 'b' then letter = string.lower(p) end
    s = s .. string.rep(letter, n)
  end
  return 'R\t' .. board .. '\t' .. side .. '\t' .. s
end
if ARGV[5] ~= '' then
  local f = 'res:' .. b .. ':' .. ARGV[3] .. ':' .. ARGV[5]
  local n = tonumber(redis.call('HGET', KEYS[1], f) or '0')
  if n < 1 then return {'reserve'} end
  redis.call('HSET', KEYS[1], f, n - 1)
end
if ARGV[6] ~= '' then
  redis.call('HINCRBY', KEYS[1], 'res:' .. ARGV[7] .. ':' .. ARGV[8] .. ':' .. ARGV[6], 1)
end
redis.call('HSET', KEYS[1], 'fen:' .. b, ARGV[4], 'ply:' .. b, ply + 1, 'last:' .. b, ARGV[9])
redis.call('RPUSH', KEYS[2], ARGV[10])
if ARGV[5] ~= '' then redis.call('RPUSH', KEYS[2], reserve_event(b, ARGV[3])) end
if ARGV[6] ~= '' then redis.call('RPUSH', KEYS[2], reserve_event(ARGV[7], ARGV[8])) end
local ttl = ARGV[12]
if ARGV[11] ~= '' then
  redis.call('HSET', KEYS[1], 'over', '1', 'outcome', ARGV[11])
  redis.call('RPUSH', KEYS[2], ARGV[11])
  ttl = ARGV[13]
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {'ok', tostring(ply + 1), tostring(redis.call('LLEN', KEYS[2])),
  table.concat(redis.call('HGETALL', KEYS[1]), '\n')}
";

/// The whole state as one newline-joined string (one bulk reply parses far faster than 70) and
/// the number of events.
const LOAD: &str = r"
local t = redis.call('HGETALL', KEYS[1])
if #t == 0 then return {'0', ''} end
return {tostring(redis.call('LLEN', KEYS[2])), table.concat(t, '\n')}
";

const END: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
if redis.call('HGET', KEYS[1], 'over') == '1' then return 'over' end
redis.call('HSET', KEYS[1], 'over', '1', 'outcome', ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 'ended'
";

const DRAW: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
if redis.call('HGET', KEYS[1], 'over') == '1' then return 'over' end
redis.call('HSET', KEYS[1], 'draw:' .. ARGV[1], '1')
redis.call('RPUSH', KEYS[2], ARGV[2])
local other = tostring(3 - tonumber(ARGV[1]))
if redis.call('HGET', KEYS[1], 'draw:' .. other) == '1' then
  redis.call('HSET', KEYS[1], 'over', '1', 'outcome', ARGV[3])
  redis.call('RPUSH', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  return 'ended'
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 'offered'
";

/// Matches in Redis (see the module documentation).
#[derive(Clone)]
pub struct RedisStore {
    conn: ConnectionManager,
    retention: Retention,
    create: Script,
    load: Script,
    play: Script,
    end: Script,
    draw: Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

fn store_err(e: redis::RedisError) -> StoreError {
    StoreError(e.to_string())
}

fn keys(id: &str) -> (String, String) {
    (
        format!("bug:{{{id}}}:state"),
        format!("bug:{{{id}}}:events"),
    )
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX).max(1)
}

impl RedisStore {
    /// Connects to `url` (`redis://host:port/db`). Each command fails after a short timeout
    /// while Redis is unreachable, and the connection is re-established when it returns.
    pub async fn connect(url: &str, retention: Retention) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(store_err)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Duration::from_secs(2))
            .set_response_timeout(Duration::from_secs(2))
            .set_number_of_retries(2)
            .set_max_delay(500);
        let conn = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(store_err)?;
        Ok(RedisStore {
            conn,
            retention,
            create: Script::new(CREATE),
            load: Script::new(LOAD),
            play: Script::new(MOVE),
            end: Script::new(END),
            draw: Script::new(DRAW),
        })
    }
}

impl MatchStore for RedisStore {
    async fn create(
        &self,
        id: &str,
        fields: &Fields,
        events: &[String],
    ) -> Result<bool, StoreError> {
        let (state, ev) = keys(id);
        let mut inv = self.create.key(&state);
        inv.key(&ev)
            .arg(millis(self.retention.ttl))
            .arg(fields.len());
        for (k, v) in fields {
            inv.arg(k).arg(v);
        }
        for e in events {
            inv.arg(e);
        }
        let created: i64 = inv
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        Ok(created == 1)
    }

    async fn load(&self, id: &str) -> Result<Option<(Fields, u64)>, StoreError> {
        let (state, ev) = keys(id);
        let (len, joined): (u64, String) = self
            .load
            .key(&state)
            .key(&ev)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        Ok((!joined.is_empty()).then(|| (split_fields(&joined), len)))
    }

    async fn commit_move(&self, id: &str, c: &MoveCommit) -> Result<MoveResult, StoreError> {
        let (state, ev) = keys(id);
        let (cap_piece, cap_board, cap_side) = c.capture.map_or(
            (String::new(), String::new(), String::new()),
            |(p, b, s)| (p.to_string(), b.to_string(), s.to_string()),
        );
        let reply: Vec<String> = self
            .play
            .key(&state)
            .key(&ev)
            .arg(c.board.to_string())
            .arg(c.expected_ply)
            .arg(c.side.to_string())
            .arg(&c.fen)
            .arg(c.drop.map(String::from).unwrap_or_default())
            .arg(cap_piece)
            .arg(cap_board)
            .arg(cap_side)
            .arg(&c.last)
            .arg(&c.move_event)
            .arg(c.end_event.clone().unwrap_or_default())
            .arg(millis(self.retention.ttl))
            .arg(millis(self.retention.grace))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        let num = |i: usize| reply.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
        Ok(match reply.first().map(String::as_str) {
            Some("ok") => MoveResult::Applied {
                ply: num(1) as u32,
                last_seq: num(2),
                fields: split_fields(reply.get(3).map_or("", String::as_str)),
            },
            Some("stale") => MoveResult::Stale {
                ply: num(1) as u32,
                last: reply.get(2).cloned().unwrap_or_default(),
            },
            Some("over") => MoveResult::Over,
            Some("reserve") => MoveResult::NotInReserve,
            Some("missing") => MoveResult::Missing,
            other => return Err(StoreError(format!("unexpected script reply {other:?}"))),
        })
    }

    async fn end(&self, id: &str, end_event: &str) -> Result<EndResult, StoreError> {
        let (state, ev) = keys(id);
        let reply: String = self
            .end
            .key(&state)
            .key(&ev)
            .arg(end_event)
            .arg(millis(self.retention.grace))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        end_result(&reply)
    }

    async fn offer_draw(
        &self,
        id: &str,
        team: u8,
        offer_event: &str,
        draw_event: &str,
    ) -> Result<EndResult, StoreError> {
        let (state, ev) = keys(id);
        let reply: String = self
            .draw
            .key(&state)
            .key(&ev)
            .arg(team)
            .arg(offer_event)
            .arg(draw_event)
            .arg(millis(self.retention.grace))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        end_result(&reply)
    }

    async fn events(&self, id: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        let (_, ev) = keys(id);
        let start = isize::try_from(after).unwrap_or(isize::MAX);
        let lines: Vec<String> = self
            .conn
            .clone()
            .lrange(&ev, start, -1)
            .await
            .map_err(store_err)?;
        Ok(lines
            .into_iter()
            .enumerate()
            .map(|(i, l)| (after + i as u64 + 1, l))
            .collect())
    }
}

fn end_result(reply: &str) -> Result<EndResult, StoreError> {
    Ok(match reply {
        "ended" => EndResult::Applied { ended: true },
        "offered" => EndResult::Applied { ended: false },
        "over" => EndResult::Over,
        "missing" => EndResult::Missing,
        other => return Err(StoreError(format!("unexpected script reply '{other}'"))),
    })
}

/// Fields from `name \n value \n name \n value …` (no stored value contains a newline:
/// FENs, moves and events do not, and player ids are printable).
fn split_fields(joined: &str) -> Fields {
    let mut parts = joined.split('\n');
    let mut fields = Fields::with_capacity(40);
    while let (Some(k), Some(v)) = (parts.next(), parts.next()) {
        fields.insert(k.to_owned(), v.to_owned());
    }
    fields
}
