/**
 * Characters of stored JSON the event stream keeps, about (not a hard bound): each XADD trims the
 * stream (MAXLEN ~) to at most this many characters' worth of events the size of the one it adds,
 * and to the configured event count. Without it the stream kept its 100,000 events whatever their
 * size: a tenant rewriting objects of 1.4 MB made Redis hold 140 GB. Events smaller than the ones
 * before them trim nothing until the count is reached, so the stream holds at most about this
 * much plus the configured count of the smallest events.
 */
export const STREAM_EVENT_CHARS = 256 * 1024 * 1024;

/**
 * Lua defining `keep(maxlen, obj)`: the MAXLEN of an XADD adding `obj`, the configured count
 * `maxlen` or fewer, so that as many events of `obj`'s size hold at most `maxChars` characters
 * (at least 1). See {@link STREAM_EVENT_CHARS}.
 */
export function streamKeepLua(maxChars = STREAM_EVENT_CHARS): string {
  return `
local function keep(maxlen, obj)
  local m = tonumber(maxlen)
  local n = math.floor(${maxChars} / math.max(#obj, 1))
  if n < 1 then n = 1 end
  if n < m then return n end
  return m
end
`;
}

/** {@link streamKeepLua} with the default bound, as every write script starts. */
export const STREAM_KEEP_LUA = streamKeepLua();

/**
 * The one Lua write script of the shard (docs/architecture.md, "Storage (Redis)": one Lua script per write).
 *
 * KEYS[1] resourceVersion counter, KEYS[2] object key, KEYS[3] event stream.
 * ARGV[1] operation: `c` create, `u` update, `d` delete.
 * ARGV[2] expected resourceVersion of the stored object for `u`/`d` (`''` = no precondition).
 * ARGV[3], ARGV[4] the new object's JSON split around its resourceVersion: the stored JSON is
 *   `ARGV[3] .. rv .. ARGV[4]`, so the object carries the revision that wrote it.
 * ARGV[5] approximate stream length kept (XADD MAXLEN ~), fewer for large objects ({@link STREAM_EVENT_CHARS}).
 * ARGV[6] object key written into the stream entry.
 *
 * Returns `{'ok', rv}`, `{'exists', current}`, `{'notfound'}` or `{'conflict', current}`.
 * The script reads the stored revision from the first `"resourceVersion":"` of the stored JSON:
 * the serializer always writes metadata.resourceVersion before any user-controlled string.
 * Revisions are dense (INCR and XADD happen together), so a tailer detects gaps exactly.
 */
export const WRITE_SCRIPT = `${STREAM_KEEP_LUA}
local cur = redis.call('GET', KEYS[2])
local op = ARGV[1]
if op == 'c' then
  if cur then return {'exists', cur} end
else
  if not cur then return {'notfound'} end
  if ARGV[2] ~= '' then
    local _, e = string.find(cur, '"resourceVersion":"', 1, true)
    local q = string.find(cur, '"', e + 1, true)
    if string.sub(cur, e + 1, q - 1) ~= ARGV[2] then return {'conflict', cur} end
  end
end
local rv = redis.call('INCR', KEYS[1])
local obj = ARGV[3] .. rv .. ARGV[4]
local etype = 'MODIFIED'
if op == 'd' then
  redis.call('DEL', KEYS[2])
  etype = 'DELETED'
else
  redis.call('SET', KEYS[2], obj)
  if op == 'c' then etype = 'ADDED' end
end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', keep(ARGV[5], obj), rv .. '-0', 't', etype, 'k', ARGV[6], 'o', obj)
return {'ok', tostring(rv)}
`;

/**
 * A transaction over several objects — a unit of work such as a new logical cluster, its initial
 * content and the Workspace that now points at it — in one round trip. First every precondition
 * is checked; if one fails nothing is written. Then each written object gets its own revision
 * and its own event, in order (same rules as WRITE_SCRIPT).
 *
 * KEYS[1] resourceVersion counter, KEYS[2] event stream, KEYS[3..] the objects' keys.
 * ARGV[1] approximate stream length kept; then per object five values: the operation (`c`
 * create, failing if the key exists; `a` create if absent, else skip; `u` update and `d` delete,
 * failing if the key is missing or — with an expected revision — stored at another one; a
 * delete's JSON is the object's final state, which its DELETED event carries), the expected
 * revision (`''` = none), the JSON prefix and suffix around its resourceVersion, and the object
 * key written into the stream entry.
 *
 * Returns `{'ok', rv1, rv2, …}` (`''` for a skipped create) or `{'abort', index, reason}` with
 * the 1-based index of the first failing object and `exists`, `notfound` or `conflict`.
 */
export const COMMIT_SCRIPT = `${STREAM_KEEP_LUA}
local n = #KEYS - 2
local skip = {}
for i = 1, n do
  local j = 2 + (i - 1) * 5
  local op = ARGV[j]
  if op == 'u' or op == 'd' then
    local cur = redis.call('GET', KEYS[i + 2])
    if not cur then return {'abort', tostring(i), 'notfound'} end
    if ARGV[j + 1] ~= '' then
      local _, e = string.find(cur, '"resourceVersion":"', 1, true)
      local q = string.find(cur, '"', e + 1, true)
      if string.sub(cur, e + 1, q - 1) ~= ARGV[j + 1] then return {'abort', tostring(i), 'conflict'} end
    end
  elseif redis.call('EXISTS', KEYS[i + 2]) == 1 then
    if op == 'c' then return {'abort', tostring(i), 'exists'} end
    skip[i] = true
  end
end
local out = {'ok'}
for i = 1, n do
  if skip[i] then
    out[#out + 1] = ''
  else
    local j = 2 + (i - 1) * 5
    local rv = redis.call('INCR', KEYS[1])
    local obj = ARGV[j + 2] .. rv .. ARGV[j + 3]
    local etype = 'ADDED'
    if ARGV[j] == 'd' then
      redis.call('DEL', KEYS[i + 2])
      etype = 'DELETED'
    else
      redis.call('SET', KEYS[i + 2], obj)
      if ARGV[j] == 'u' then etype = 'MODIFIED' end
    end
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', keep(ARGV[1], obj), rv .. '-0', 't', etype, 'k', ARGV[j + 4], 'o', obj)
    out[#out + 1] = tostring(rv)
  end
end
return out
`;
