/**
 * The one Lua write script of the shard (DESIGN.md: "every write is one Lua script").
 *
 * KEYS[1] resourceVersion counter, KEYS[2] object key, KEYS[3] event stream.
 * ARGV[1] operation: `c` create, `u` update, `d` delete.
 * ARGV[2] expected resourceVersion of the stored object for `u`/`d` (`''` = no precondition).
 * ARGV[3], ARGV[4] the new object's JSON split around its resourceVersion: the stored JSON is
 *   `ARGV[3] .. rv .. ARGV[4]`, so the object carries the revision that wrote it.
 * ARGV[5] approximate stream length kept (XADD MAXLEN ~).
 * ARGV[6] object key written into the stream entry.
 *
 * Returns `{'ok', rv}`, `{'exists', current}`, `{'notfound'}` or `{'conflict', current}`.
 * The script reads the stored revision from the first `"resourceVersion":"` of the stored JSON:
 * the serializer always writes metadata.resourceVersion before any user-controlled string.
 * Revisions are dense (INCR and XADD happen together), so a tailer detects gaps exactly.
 */
export const WRITE_SCRIPT = `
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
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], rv .. '-0', 't', etype, 'k', ARGV[6], 'o', obj)
return {'ok', tostring(rv)}
`;

/**
 * Creates several objects atomically, each only if absent — the write of a unit of work (a new
 * logical cluster and its initial content) in one round trip. Same revision and event rules as
 * WRITE_SCRIPT: each created object gets its own revision and its own ADDED event, in order.
 *
 * KEYS[1] resourceVersion counter, KEYS[2] event stream, KEYS[3..] the objects' keys.
 * ARGV[1] approximate stream length kept; then per object three values: the JSON prefix and
 * suffix around its resourceVersion, and the object key written into the stream entry.
 *
 * Returns one value per object: its new revision, or `exists` (left unchanged).
 */
export const CREATE_MANY_SCRIPT = `
local out = {}
for i = 3, #KEYS do
  local j = 2 + (i - 3) * 3
  if redis.call('EXISTS', KEYS[i]) == 1 then
    out[#out + 1] = 'exists'
  else
    local rv = redis.call('INCR', KEYS[1])
    local obj = ARGV[j] .. rv .. ARGV[j + 1]
    redis.call('SET', KEYS[i], obj)
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], rv .. '-0', 't', 'ADDED', 'k', ARGV[j + 2], 'o', obj)
    out[#out + 1] = tostring(rv)
  end
end
return out
`;
