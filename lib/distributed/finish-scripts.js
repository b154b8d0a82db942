// @ts-check
/**
 * The finishing phase's Lua scripts: leased buckets of pages for every live process. KEYS[1] is the crawl's prefix,
 * time is Redis's own. Keys after the prefix:
 *   meta        hash    fin: the write pass under way; coord: the coordinator; finleft: a killed coordinator's pass
 *   f:<t>:q     list    buckets of pass <t> waiting to be taken
 *   f:<t>:b     hash    bucket -> its requests (JSON)
 *   f:<t>:lease hash    bucket -> lease token|worker|deadline (ms)
 *   f:<t>:r     hash    bucket -> its answers (JSON), until collected; f:<t>:d list: buckets answered, in order
 *   f:<t>:deliv hash    bucket -> times it was taken back; cnt.finReclaimed: buckets taken back
 */

const COMMON = `
local P = KEYS[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * FIN_TAKE. ARGV: worker, leaseMs, maxDeliveries. Returns {phase, token, coordinator alive} and maybe {bucket, lease,
 * requests}; nothing while the coordinator is dead. A bucket taken back maxDeliveries times is answered with errors,
 * so nothing is redone forever.
 */
export const FIN_TAKE = COMMON + `
local worker, leaseMs, maxDeliveries = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local meta = redis.call('HMGET', P .. 'meta', 'phase', 'fin', 'coord')
local phase, token, coord = meta[1] or '', meta[2], meta[3]
local now = now_ms()
local alive = 0
if coord then
  local beat = redis.call('ZSCORE', P .. 'workers', coord)
  if beat and tonumber(beat) > now - leaseMs then alive = 1 end
end
if phase ~= 'finish' or not token or alive == 0 then return {phase, '', alive} end
local F = P .. 'f:' .. token .. ':'
local leased = redis.call('HGETALL', F .. 'lease')
for i = 1, #leased, 2 do
  local holder, deadline = string.match(leased[i + 1], '^[^|]*|(.*)|(%d+)$')
  local beat = redis.call('ZSCORE', P .. 'workers', holder)
  if tonumber(deadline) < now or not beat or tonumber(beat) < now - leaseMs / 2 then
    local bucket = leased[i]
    redis.call('HDEL', F .. 'lease', bucket)
    redis.call('HINCRBY', P .. 'cnt', 'finReclaimed', 1)
    if redis.call('HINCRBY', F .. 'deliv', bucket, 1) >= maxDeliveries then
      local requests = cjson.decode(redis.call('HGET', F .. 'b', bucket) or '[]')
      local answers = {}
      for j = 1, #requests do
        answers[j] = { error = { message = 'its bucket of the finishing phase was taken ' .. maxDeliveries .. ' times without an answer (--max-deliveries)', code = 'MAX_DELIVERIES' } }
      end
      redis.call('HDEL', F .. 'b', bucket)
      redis.call('HSET', F .. 'r', bucket, #answers > 0 and cjson.encode(answers) or '[]')
      redis.call('RPUSH', F .. 'd', bucket)
    else
      redis.call('LPUSH', F .. 'q', bucket)
    end
  end
end
local bucket = redis.call('LPOP', F .. 'q')
if not bucket then return {phase, token, alive} end
local lease = tostring(redis.call('INCR', P .. 'token'))
redis.call('HSET', F .. 'lease', bucket, lease .. '|' .. worker .. '|' .. (now + leaseMs))
return {phase, token, alive, bucket, lease, redis.call('HGET', F .. 'b', bucket) or '[]'}
`;

/** FIN_DONE: answers recorded only while the lease is this process's. ARGV: token, bucket, lease, answers JSON. Returns 1, or 0 when late. */
export const FIN_DONE = COMMON + `
local F = P .. 'f:' .. ARGV[1] .. ':'
local bucket, lease = ARGV[2], ARGV[3]
local held = redis.call('HGET', F .. 'lease', bucket)
if not held or string.sub(held, 1, string.len(lease) + 1) ~= lease .. '|' then return 0 end
redis.call('HDEL', F .. 'lease', bucket)
redis.call('HDEL', F .. 'b', bucket)
redis.call('HSET', F .. 'r', bucket, ARGV[4])
redis.call('RPUSH', F .. 'd', bucket)
return 1
`;

/** FIN_RENEW. ARGV: token, bucket, lease, leaseMs. Returns 1, or 0 when the lease is no longer this process's. */
export const FIN_RENEW = COMMON + `
local F = P .. 'f:' .. ARGV[1] .. ':'
local bucket, lease = ARGV[2], ARGV[3]
local held = redis.call('HGET', F .. 'lease', bucket)
if not held or string.sub(held, 1, string.len(lease) + 1) ~= lease .. '|' then return 0 end
local holder = string.match(held, '^[^|]*|(.*)|%d+$')
redis.call('HSET', F .. 'lease', bucket, lease .. '|' .. holder .. '|' .. (now_ms() + tonumber(ARGV[4])))
return 1
`;

/** FIN_COLLECT: up to ARGV[2] answered buckets of pass ARGV[1]: {bucket, answers, …}; {'LOST'} when the pass is gone. */
export const FIN_COLLECT = COMMON + `
if redis.call('HGET', P .. 'meta', 'fin') ~= ARGV[1] then return {'LOST'} end
local F = P .. 'f:' .. ARGV[1] .. ':'
local buckets = redis.call('LPOP', F .. 'd', tonumber(ARGV[2]))
if not buckets then return {} end
local out = {}
for _, bucket in ipairs(buckets) do
  out[#out + 1] = bucket
  out[#out + 1] = redis.call('HGET', F .. 'r', bucket) or '[]'
  redis.call('HDEL', F .. 'r', bucket)
end
return out
`;

/** FIN_CURRENT: whether pass ARGV[1] is the crawl's and its coordinator beat within ARGV[2] ms. Returns 1 or 0. */
export const FIN_CURRENT = COMMON + `
local meta = redis.call('HMGET', P .. 'meta', 'fin', 'coord')
if meta[1] ~= ARGV[1] or not meta[2] then return 0 end
local beat = redis.call('ZSCORE', P .. 'workers', meta[2])
if beat and tonumber(beat) > now_ms() - tonumber(ARGV[2]) then return 1 end
return 0
`;

/**
 * COORD_CLAIM, unless another coordinator beat within staleMs. ARGV: worker, staleMs, info JSON. A killed
 * coordinator's pass moves to meta.finleft, so none of its buckets is handed out. Returns {1, left pass} or {0, live
 * coordinator, ms since its heartbeat}.
 */
export const COORD_CLAIM = COMMON + `
local worker, staleMs, info = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = now_ms()
local coord = redis.call('HGET', P .. 'meta', 'coord')
if coord and coord ~= worker then
  local beat = redis.call('ZSCORE', P .. 'workers', coord)
  if beat and tonumber(beat) > now - staleMs then return {0, coord, now - tonumber(beat)} end
end
local left = redis.call('HGET', P .. 'meta', 'fin') or redis.call('HGET', P .. 'meta', 'finleft') or ''
if left ~= '' then redis.call('HSET', P .. 'meta', 'finleft', left) end
redis.call('HDEL', P .. 'meta', 'fin')
redis.call('HSET', P .. 'meta', 'coord', worker)
redis.call('ZADD', P .. 'workers', now, worker)
redis.call('HSET', P .. 'winfo', worker, info)
return {1, left}
`;

/**
 * COORD_KEEP: until the heartbeat runs. ARGV: worker, mode, info JSON; 'reset' also empties meta and the worker list
 * but this claim. Returns 0 when the claim is no longer this process's.
 */
export const COORD_KEEP = COMMON + `
if redis.call('HGET', P .. 'meta', 'coord') ~= ARGV[1] then return 0 end
if ARGV[2] == 'release' then
  redis.call('ZADD', P .. 'workers', 0, ARGV[1])
  return 1
end
if ARGV[2] == 'reset' then
  redis.call('DEL', P .. 'meta', P .. 'workers', P .. 'winfo')
  redis.call('HSET', P .. 'meta', 'coord', ARGV[1])
end
redis.call('ZADD', P .. 'workers', now_ms(), ARGV[1])
redis.call('HSET', P .. 'winfo', ARGV[1], ARGV[3])
return 1
`;
