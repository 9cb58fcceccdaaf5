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
