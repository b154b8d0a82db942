// @ts-check
/**
 * The shared frontier's Lua scripts, each atomic. KEYS[1] is `prerender:{id}:`: one hash tag, one Cluster slot.
 * Time is Redis's TIME, so worker clocks do not matter. Keys after the prefix:
 *   config  string   the crawl's configuration (JSON)
 *   meta    hash     phase (seeding | crawl | finish | finished), startedAt
 *   rec     hash     url -> its place in the seen-set (one byte: q/r queued or leased, a link/a requisite,
 *                    Q/R the same with 5 referrers noted, d done (a page), x done (not a page)), then its record
 *                    (packed.js: never bodies or links). The exact seen-set and the record store in one entry.
 *   refs    hash     url -> up to 5 pages linking to it, one per line, noted while it is not done (failures list them)
 *   prior   hash     url -> what the last crawl into OUT kept of it (validators, file, blob ids), for re-crawls
 *   q:<origin> list  queued urls of one origin
 *   origins zset     origin with urls queued -> earliest time one may be taken (politeness)
 *   onext   hash     origin -> earliest time its next url may be taken (kept while its queue is empty; --rate/--delay, and
 *                    429/503 backoff from any process: BACKOFF)
 *   oinf    hash     origin -> urls of it leased now (--origin-concurrency)
 *   lease   hash     url -> token|worker|origin
 *   leases  zset     url -> lease deadline (ms)
 *   wl:<worker> set  urls leased by a worker
 *   deliv   hash     url -> times taken
 *   cnt     hash     queued, leased, pages, done, failed, redirect, over, freed, backoffs,
 *                    reqSkipped (references to requisites not fetched, without --assets)
 *   over / overseen  urls in scope refused by --max-pages, in order / as a set
 *   workers zset     worker -> last heartbeat (ms); winfo hash worker -> JSON
 *   warn    hash     warning JSON -> 1;  redir hash url -> redirect JSON;  deep set: urls past --max-depth
 *   errs    hash     error code -> failures;  token string: lease counter, one INCR per TAKE
 */

/** Shared Lua helpers, prepended to each script. */
const COMMON = `
local P = KEYS[1]
local REC = P .. 'rec'
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function origin_of(key)
  local s = string.find(key, '//', 1, true)
  local p = string.find(key, '/', (s or 0) + 2, true)
  if p then return string.sub(key, 1, p - 1) end
  return key
end
local function enqueue(key, origin, front)
  if front then redis.call('LPUSH', P .. 'q:' .. origin, key) else redis.call('RPUSH', P .. 'q:' .. origin, key) end
  redis.call('ZADD', P .. 'origins', 'NX', redis.call('HGET', P .. 'onext', origin) or 0, origin)
  redis.call('HINCRBY', P .. 'cnt', 'queued', 1)
end
local function admit_new(key, origin, kind, referrer)
  redis.call('HSET', REC, key, kind == 'navigation' and 'q' or 'r')
  if referrer ~= '' then redis.call('HSET', P .. 'refs', key, referrer) end
  redis.call('HINCRBY', P .. 'cnt', 'pages', 1)
  enqueue(key, origin, false)
end
local function release(key, lease)
  local sep1 = string.find(lease, '|', 1, true)
  local sep2 = string.find(lease, '|', sep1 + 1, true)
  local worker = string.sub(lease, sep1 + 1, sep2 - 1)
  local origin = string.sub(lease, sep2 + 1)
  redis.call('HDEL', P .. 'lease', key)
  redis.call('ZREM', P .. 'leases', key)
  redis.call('SREM', P .. 'wl:' .. worker, key)
  redis.call('HINCRBY', P .. 'oinf', origin, -1)
  redis.call('HINCRBY', P .. 'cnt', 'leased', -1)
  return origin, worker
end
local function promote_one()
  local item = redis.call('LPOP', P .. 'over')
  if not item then return nil end
  local it = cjson.decode(item)
  redis.call('SREM', P .. 'overseen', it.key)
  redis.call('HINCRBY', P .. 'cnt', 'over', -1)
  if redis.call('HEXISTS', REC, it.key) == 1 then return nil end
  admit_new(it.key, it.origin, it.kind, it.referrer or '')
  return item
end
local function counts(worker)
  local c = redis.call('HMGET', P .. 'cnt', 'queued', 'leased', 'over')
  local phase = redis.call('HGET', P .. 'meta', 'phase') or 'none'
  return { tonumber(c[1] or 0), tonumber(c[2] or 0), tonumber(c[3] or 0), redis.call('SCARD', P .. 'wl:' .. worker), phase }
end
`;

/**
 * ADD: exact dedup atomic with the enqueue. ARGV: maxPages, fenceKey, fenceToken, seed, referrer, then 'n' or 'r' + key.
 * A worker whose lease on the referrer is gone adds nothing. Returns per item: 1 added, 0 known, 2 over --max-pages,
 * 3 settled (adding again changes nothing), 4 settled for a requisite.
 */
export const ADD = COMMON + `
if redis.call('EXISTS', P .. 'config') == 0 then return redis.error_reply('LOST crawl state is gone') end
local maxPages = tonumber(ARGV[1])
local referrer = ARGV[5]
local out = {}
if ARGV[2] ~= '' then
  local lease = redis.call('HGET', P .. 'lease', ARGV[2])
  if not lease or string.sub(lease, 1, string.len(ARGV[3]) + 1) ~= ARGV[3] .. '|' then
    for i = 6, #ARGV do out[#out + 1] = 0 end
    return out
  end
end
local phase = redis.call('HGET', P .. 'meta', 'phase')
if ARGV[4] == '1' and (phase == 'seeding' or not phase) then phase = 'crawl' end
if phase ~= 'crawl' then
  for i = 6, #ARGV do out[#out + 1] = 0 end
  return out
end
local c = redis.call('HMGET', P .. 'cnt', 'pages', 'freed')
local pages = tonumber(c[1] or 0) - tonumber(c[2] or 0)
local added = 0
local queues, order = {}, {}
for i = 6, #ARGV do
  local item = ARGV[i]
  local nav = string.byte(item, 1) == 110
  local key = string.sub(item, 2)
  local raw = redis.call('HGET', REC, key)
  if raw then
    local st = string.sub(raw, 1, 1)
    if (st == 'q' or st == 'r') and referrer ~= '' then
      local refs = redis.call('HGET', P .. 'refs', key)
      if not refs then
        redis.call('HSET', P .. 'refs', key, referrer)
      elseif not string.find('\\n' .. refs .. '\\n', '\\n' .. referrer .. '\\n', 1, true) then
        refs = refs .. '\\n' .. referrer
        redis.call('HSET', P .. 'refs', key, refs)
        local _, lines = string.gsub(refs, '\\n', '')
        if lines >= 4 then
          st = string.upper(st)
          raw = st .. string.sub(raw, 2)
          redis.call('HSET', REC, key, raw)
        end
      end
    end
    if nav and (st == 'r' or st == 'R') then
      local body = string.sub(raw, 2)
      st = st == 'r' and 'q' or 'Q'
      if body == '' then
        redis.call('HSET', REC, key, st)
      else
        local rec = cjson.decode(body)
        rec.kind = nil
        redis.call('HSET', REC, key, st .. cjson.encode(rec))
      end
    end
    out[#out + 1] = (st == 'd' or st == 'x' or st == 'Q') and 3 or st == 'R' and 4 or 0
  elseif pages >= maxPages then
    if redis.call('SISMEMBER', P .. 'overseen', key) == 1 then
      out[#out + 1] = 0
    else
      if redis.call('SCARD', P .. 'overseen') < 200000 then
        redis.call('SADD', P .. 'overseen', key)
        redis.call('RPUSH', P .. 'over', cjson.encode({ key = key, origin = origin_of(key), kind = nav and 'navigation' or 'requisite', referrer = referrer }))
        redis.call('HINCRBY', P .. 'cnt', 'over', 1)
      else
        redis.call('HSET', P .. 'cnt', 'overSaturated', 1)
      end
      out[#out + 1] = 2
    end
  else
    redis.call('HSET', REC, key, nav and 'q' or 'r')
    if referrer ~= '' then redis.call('HSET', P .. 'refs', key, referrer) end
    local origin = origin_of(key)
    local list = queues[origin]
    if not list then
      list = {}
      queues[origin] = list
      order[#order + 1] = origin
    end
    list[#list + 1] = key
    pages = pages + 1
    added = added + 1
    out[#out + 1] = 1
  end
end
for _, origin in ipairs(order) do
  redis.call('RPUSH', P .. 'q:' .. origin, unpack(queues[origin]))
  redis.call('ZADD', P .. 'origins', 'NX', redis.call('HGET', P .. 'onext', origin) or 0, origin)
end
if added > 0 then
  redis.call('HINCRBY', P .. 'cnt', 'pages', added)
  redis.call('HINCRBY', P .. 'cnt', 'queued', added)
end
return out
`;

/** Reclaim one lease: back to the front of its origin's queue, or, after --max-deliveries, a failed record. */
const RECLAIM = `
local function reclaim(key, maxDeliveries, why)
  local lease = redis.call('HGET', P .. 'lease', key)
  if not lease then
    redis.call('ZREM', P .. 'leases', key)
    return
  end
  local origin, worker = release(key, lease)
  local deliveries = tonumber(redis.call('HGET', P .. 'deliv', key) or 0)
  if deliveries >= maxDeliveries then
    local raw = redis.call('HGET', REC, key) or 'q'
    local st = string.sub(raw, 1, 1)
    local rec = string.sub(raw, 2, 2) == '{' and cjson.decode(string.sub(raw, 2)) or {}
    if (st == 'r' or st == 'R') and not rec.kind then rec.kind = 'requisite' end
    rec.state = 'failed'
    rec.error = { code = 'MAX_DELIVERIES', message = 'taken ' .. deliveries .. ' times without a result (last: ' .. why .. ' of worker ' .. worker .. ')' }
    redis.call('HSET', REC, key, 'x' .. cjson.encode(rec))
    redis.call('HDEL', P .. 'deliv', key)
    redis.call('HINCRBY', P .. 'cnt', 'failed', 1)
    redis.call('HINCRBY', P .. 'cnt', 'freed', 1)
    redis.call('HINCRBY', P .. 'errs', 'MAX_DELIVERIES', 1)
    promote_one()
  else
    enqueue(key, origin, true)
  end
end
`;

/**
 * Heartbeat, reclaim dead and expired leases, then lease up to `max` urls origin by origin, within concurrency,
 * interval and backoff. `a` is ARGV from `at`: worker, max, leaseMs, deadAfterMs, originConcurrency, intervalMs,
 * maxDeliveries, seed. Returns { queued, leased, over, mine, phase, key1, token1, record1, prior1, ... }.
 */
const TAKING = RECLAIM + `
local function take_some(a, at)
  local worker = a[at]
  local max = tonumber(a[at + 1])
  local leaseMs = tonumber(a[at + 2])
  local deadAfter = tonumber(a[at + 3])
  local originConcurrency = tonumber(a[at + 4])
  local interval = tonumber(a[at + 5])
  local maxDeliveries = tonumber(a[at + 6])
  local now = now_ms()
  redis.call('ZADD', P .. 'workers', now, worker)
  local dead = redis.call('ZRANGEBYSCORE', P .. 'workers', '-inf', now - deadAfter, 'LIMIT', 0, 10)
  for _, w in ipairs(dead) do
    for _, key in ipairs(redis.call('SMEMBERS', P .. 'wl:' .. w)) do reclaim(key, maxDeliveries, 'no heartbeat') end
    redis.call('DEL', P .. 'wl:' .. w)
    redis.call('ZREM', P .. 'workers', w)
    redis.call('HDEL', P .. 'winfo', w)
  end
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', now, 'LIMIT', 0, 100)) do
    reclaim(key, maxDeliveries, 'lease expired')
  end
  local taken = {}
  local phase = redis.call('HGET', P .. 'meta', 'phase')
  if a[at + 7] == '1' and (phase == 'seeding' or not phase) then
    redis.call('HSET', P .. 'meta', 'phase', 'crawl')
    phase = 'crawl'
  end
  if phase == 'crawl' and max > 0 then
    local ready = redis.call('ZRANGEBYSCORE', P .. 'origins', '-inf', now, 'LIMIT', 0, 64)
    local base
    local hasPrior = redis.call('EXISTS', P .. 'prior') == 1
    local leases, deadlines, mine = {}, {}, {}
    local n = 0
    for _, origin in ipairs(ready) do
      if n >= max then break end
      local inflight = tonumber(redis.call('HGET', P .. 'oinf', origin) or 0)
      local before = inflight
      while n < max and inflight < originConcurrency do
        local key = redis.call('LPOP', P .. 'q:' .. origin)
        if not key then
          redis.call('ZREM', P .. 'origins', origin) -- back with its next URL
          break
        end
        base = base or redis.call('INCR', P .. 'token')
        n = n + 1
        local token = base .. '.' .. n
        leases[#leases + 1] = key
        leases[#leases + 1] = token .. '|' .. worker .. '|' .. origin
        deadlines[#deadlines + 1] = now + leaseMs
        deadlines[#deadlines + 1] = key
        mine[#mine + 1] = key
        redis.call('HINCRBY', P .. 'deliv', key, 1)
        inflight = inflight + 1
        taken[#taken + 1] = key
        taken[#taken + 1] = token
        taken[#taken + 1] = redis.call('HGET', REC, key) or ''
        taken[#taken + 1] = hasPrior and redis.call('HGET', P .. 'prior', key) or ''
        if interval > 0 then
          redis.call('ZADD', P .. 'origins', now + interval, origin)
          redis.call('HSET', P .. 'onext', origin, now + interval)
          break
        end
      end
      if inflight ~= before then redis.call('HSET', P .. 'oinf', origin, inflight) end
    end
    if n > 0 then
      redis.call('HSET', P .. 'lease', unpack(leases))
      redis.call('ZADD', P .. 'leases', unpack(deadlines))
      redis.call('SADD', P .. 'wl:' .. worker, unpack(mine))
      redis.call('HINCRBY', P .. 'cnt', 'queued', -n)
      redis.call('HINCRBY', P .. 'cnt', 'leased', n)
    end
  end
  local out = counts(worker)
  for _, v in ipairs(taken) do out[#out + 1] = v end
  return out
end
`;

/** TAKE: see take_some. ARGV: worker, max, leaseMs, deadAfterMs, originConcurrency, intervalMs, maxDeliveries, seed. */
export const TAKE = COMMON + TAKING + `
if redis.call('EXISTS', P .. 'config') == 0 then return redis.error_reply('LOST crawl state is gone') end
return take_some(ARGV, 1)
`;

/**
 * DONE: the result counts only if the lease is still this one, but a late result's idempotent side data is kept.
 * Then take_some, so a page costs two round trips. ARGV: record ('' keeps it), key, token, d or x, state, error code,
 * requisites not fetched, nWarnings, nRedirects, nDeep, feed links, those values, take_some's arguments. A fed result
 * is pushed as separate values: a string built in Lua would be hashed. Returns { accepted, promoted, feeding, take_some's reply... }.
 */
export const DONE = COMMON + TAKING + `
if redis.call('EXISTS', P .. 'config') == 0 then return redis.error_reply('LOST crawl state is gone') end
local key, token, seen, state = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local i = 12
for n = 1, tonumber(ARGV[8]) do redis.call('HSET', P .. 'warn', ARGV[i], 1); i = i + 1 end
for n = 1, tonumber(ARGV[9]) do redis.call('HSET', P .. 'redir', ARGV[i], ARGV[i + 1]); i = i + 2 end
for n = 1, tonumber(ARGV[10]) do redis.call('SADD', P .. 'deep', ARGV[i]); i = i + 1 end
local feed_until, feed_to = string.match(redis.call('HGET', P .. 'meta', 'feed') or '', '^(%d+)|(.+)$')
local feeding = feed_until ~= nil and tonumber(feed_until) > now_ms()
local function finish(accepted, promoted)
  local out = { accepted, promoted or '', feeding and 1 or 0 }
  if tonumber(ARGV[i + 1]) > 0 then
    for _, v in ipairs(take_some(ARGV, i)) do out[#out + 1] = v end
  end
  return out
end
if key == '' then return finish(1) end
local lease = redis.call('HGET', P .. 'lease', key)
if not lease or string.sub(lease, 1, string.len(token) + 1) ~= token .. '|' then return finish(0) end
if ARGV[1] ~= '' then
  local stored = seen .. ARGV[1]
  redis.call('HSET', REC, key, stored)
  if feeding then redis.call('RPUSH', P .. 'feed:' .. feed_to, key, stored, ARGV[11]) end
else
  redis.call('HSET', REC, key, seen .. string.sub(redis.call('HGET', REC, key) or 'q', 2))
end
release(key, lease)
redis.call('HDEL', P .. 'deliv', key)
if tonumber(ARGV[7]) > 0 then redis.call('HINCRBY', P .. 'cnt', 'reqSkipped', tonumber(ARGV[7])) end
if state == 'failed' then
  redis.call('HINCRBY', P .. 'cnt', 'failed', 1)
  redis.call('HINCRBY', P .. 'errs', ARGV[6] ~= '' and ARGV[6] or 'ERROR', 1)
else
  redis.call('HDEL', P .. 'refs', key) -- only failures list their referrers
  redis.call('HINCRBY', P .. 'cnt', state == 'redirect' and 'redirect' or 'done', 1)
end
if seen == 'd' then return finish(1) end
redis.call('HINCRBY', P .. 'cnt', 'freed', 1)
return finish(1, promote_one())
`;

/**
 * FEED: coordinator ARGV[2] wants the feed ARGV[1] ms more, 0 to stop. It reads with a plain LPOP in the same round
 * trip: a script would copy each result into Lua and back. Returns 1 when the feed is this process's.
 */
export const FEED = COMMON + `
local worker = ARGV[2]
if tonumber(ARGV[1]) <= 0 then
  local feed = redis.call('HGET', P .. 'meta', 'feed')
  if feed and string.sub(feed, -(#worker + 1)) == '|' .. worker then redis.call('HDEL', P .. 'meta', 'feed') end
  redis.call('DEL', P .. 'feed:' .. worker)
  return 0
end
if redis.call('EXISTS', P .. 'config') == 0 then return 0 end
if redis.call('HGET', P .. 'meta', 'coord') ~= worker then return 0 end
redis.call('HSET', P .. 'meta', 'feed', (now_ms() + tonumber(ARGV[1])) .. '|' .. worker)
return 1
`;

/** RETRY: an aborted url goes back to the front of its queue, not counted as a delivery. ARGV: key, token. */
export const RETRY = COMMON + `
local key, token = ARGV[1], ARGV[2]
local lease = redis.call('HGET', P .. 'lease', key)
if not lease or string.sub(lease, 1, string.len(token) + 1) ~= token .. '|' then return 0 end
local origin = release(key, lease)
redis.call('HINCRBY', P .. 'deliv', key, -1)
enqueue(key, origin, true)
return 1
`;

/** HEARTBEAT: leases get a new deadline. ARGV: worker, leaseMs, info JSON, c or w, (key, token) pairs. Returns 0 state gone, 2 replaced, else 1. */
export const HEARTBEAT = COMMON + `
if redis.call('EXISTS', P .. 'config') == 0 then return 0 end
if ARGV[4] == 'c' and redis.call('HGET', P .. 'meta', 'coord') ~= ARGV[1] then return 2 end
local now = now_ms()
redis.call('ZADD', P .. 'workers', now, ARGV[1])
redis.call('HSET', P .. 'winfo', ARGV[1], ARGV[3])
local deadline = now + tonumber(ARGV[2])
for i = 5, #ARGV, 2 do
  local lease = redis.call('HGET', P .. 'lease', ARGV[i])
  if lease and string.sub(lease, 1, string.len(ARGV[i + 1]) + 1) == ARGV[i + 1] .. '|' then
    redis.call('ZADD', P .. 'leases', 'XX', deadline, ARGV[i])
  end
end
return 1
`;

/** BACKOFF after a 429 or 503: no process takes the origin's URLs for `ms`; onext only moves later. ARGV: origin, ms. */
export const BACKOFF = COMMON + `
local origin = ARGV[1]
local at = now_ms() + tonumber(ARGV[2])
local current = tonumber(redis.call('HGET', P .. 'onext', origin) or 0)
if at <= current then return current end
redis.call('HSET', P .. 'onext', origin, at)
redis.call('ZADD', P .. 'origins', 'XX', 'GT', at, origin)
redis.call('HINCRBY', P .. 'cnt', 'backoffs', 1)
return at
`;

/**
 * PUT: a record written outside DONE. A queued record is written only while still queued, so a result recorded
 * meanwhile stands. ARGV: key, value with its first byte. Returns 1 written, 0 not.
 */
export const PUT = COMMON + `
local key, value = ARGV[1], ARGV[2]
local first = string.sub(value, 1, 1)
if first == 'q' or first == 'r' then
  local raw = redis.call('HGET', REC, key)
  local st = raw and string.sub(raw, 1, 1)
  if st == 'd' or st == 'x' then return 0 end
  if st == 'Q' or st == 'R' then value = string.upper(first) .. string.sub(value, 2) end
end
redis.call('HSET', REC, key, value)
return 1
`;
