//! The Lua scripts of the Redis store: each makes one multi-key step (a save with its
//! version check, a fenced save, a lease change, a journal intent) atomic in the
//! server, which plain commands from the client could not.

/// KEYS: session hash, index. ARGV: expected, version, updated_ms, bytes, id.
/// Returns {1, found} when saved, {0, found} on a version mismatch.
pub(super) const SAVE: &str = r"
local cur = redis.call('HGET', KEYS[1], 'v')
if not cur then cur = '0' end
if cur ~= ARGV[1] then return {0, cur} end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'u', ARGV[3], 'b', ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
return {1, cur}
";

/// KEYS: session hash, index, journal hash, journal index. ARGV: id. Returns whether
/// the session existed.
pub(super) const DELETE: &str = r"
local n = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[1])
return n
";

/// KEYS: journal hash, journal index. ARGV: call key, now ms, session id.
/// Returns {1, ''} when the intent is written now, {2, result} when the call has a
/// result, {3, intent ms} when it has an intent only.
pub(super) const JOURNAL_BEGIN: &str = r"
if redis.call('HSETNX', KEYS[1], 'i:' .. ARGV[1], ARGV[2]) == 1 then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
  return {1, ''}
end
local r = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
if r then return {2, r} end
return {3, redis.call('HGET', KEYS[1], 'i:' .. ARGV[1]) or '0'}
";

/// KEYS: journal index. ARGV: cutoff (exclusive), journal key prefix, batch size.
/// Returns how many sessions' journals were examined (and deleted).
pub(super) const PRUNE_JOURNALS: &str = r"
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('DEL', ARGV[2] .. id)
end
return #ids
";

/// KEYS: index. ARGV: cutoff (exclusive), session key prefix, batch size, lease key
/// prefix, fence key prefix. Returns {ids examined, sessions deleted}. The fence of a
/// deleted session goes too unless its lease is held (tokens never repeat: they come
/// from the counter).
pub(super) const PRUNE: &str = r"
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local n = 0
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  n = n + redis.call('DEL', ARGV[2] .. id)
  if redis.call('EXISTS', ARGV[4] .. id) == 0 then redis.call('DEL', ARGV[5] .. id) end
end
return {#ids, n}
";

/// KEYS: session hash, index, fence. ARGV: expected, version, updated_ms, bytes, id,
/// token. Returns {1, found} when saved, {0, found} on a version mismatch, {2, fence}
/// when the fence is not the token (lease lost; `fence` is `''` when none).
pub(super) const SAVE_LEASED: &str = r"
local f = redis.call('GET', KEYS[3])
if f ~= ARGV[6] then return {2, f or ''} end
local cur = redis.call('HGET', KEYS[1], 'v')
if not cur then cur = '0' end
if cur ~= ARGV[1] then return {0, cur} end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'u', ARGV[3], 'b', ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
return {1, cur}
";

/// KEYS: lease, fence, token counter, queue (sorted set of tickets, scored by
/// ticket), queue expiries (hash: ticket -> expiry ms). ARGV: holder, ttl ms, ticket
/// (`''`: none), ticket ttl ms, enqueue (`1` to draw a ticket when waiting).
/// Returns {1, '', token, 0, 0} when taken, {0, holder or '', ms left, ticket or 0,
/// ahead} when waiting. Tickets come from the token counter (it only grows).
pub(super) const ACQUIRE: &str = r"
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local live = tonumber(ARGV[4])
for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  local e = tonumber(redis.call('HGET', KEYS[5], m) or '0')
  if e <= now then
    redis.call('ZREM', KEYS[4], m)
    redis.call('HDEL', KEYS[5], m)
  end
end
local mine = ARGV[3]
if mine ~= '' then
  redis.call('ZADD', KEYS[4], tonumber(mine), mine)
  redis.call('HSET', KEYS[5], mine, now + live)
end
local head = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
local h = redis.call('GET', KEYS[1])
if (not h) and ((not head) or head == mine) then
  local t = redis.call('INCR', KEYS[3])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('SET', KEYS[2], t)
  if mine ~= '' then
    redis.call('ZREM', KEYS[4], mine)
    redis.call('HDEL', KEYS[5], mine)
  end
  return {1, '', t, 0, 0}
end
if mine == '' and ARGV[5] == '1' then
  mine = tostring(redis.call('INCR', KEYS[3]))
  redis.call('ZADD', KEYS[4], tonumber(mine), mine)
  redis.call('HSET', KEYS[5], mine, now + live)
end
local ahead
if mine == '' then
  ahead = redis.call('ZCARD', KEYS[4])
else
  ahead = redis.call('ZCOUNT', KEYS[4], '-inf', '(' .. mine)
end
if live > 0 and redis.call('ZCARD', KEYS[4]) > 0 then
  redis.call('PEXPIRE', KEYS[4], live + 1000)
  redis.call('PEXPIRE', KEYS[5], live + 1000)
end
local left = 0
if h then left = redis.call('PTTL', KEYS[1]) else h = '' end
if mine == '' then mine = '0' end
return {0, h, left, tonumber(mine), ahead}
";

/// KEYS: queue, queue expiries. ARGV: ticket. Drops the ticket.
pub(super) const LEAVE_QUEUE: &str = r"
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
";

/// KEYS: lease, fence. ARGV: token, holder, ttl ms. Returns {1, token} when renewed
/// (re-created if it had expired untaken), {0, fence or ''} when lost.
pub(super) const RENEW: &str = r"
local f = redis.call('GET', KEYS[2])
if f ~= ARGV[1] then return {0, f or ''} end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return {1, f}
";

/// KEYS: lease, fence. ARGV: token. Returns whether it was this holder's.
pub(super) const RELEASE: &str = r"
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
";
