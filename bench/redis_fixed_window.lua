-- The fixed-window script of the Redis recipe this project compares with:
-- window from the server's TIME, INCR, EXPIRE on the first hit, TTL.
-- KEYS[1]: the key; ARGV[1]: window seconds; ARGV[2]: limit.
local window_size = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local now = redis.call('TIME')
local window = math.floor(tonumber(now[1]) / window_size)
local key = KEYS[1] .. ':' .. window
local current = redis.call('INCR', key)
if current == 1 then
  redis.call('EXPIRE', key, window_size)
end
local ttl = redis.call('TTL', key)
if current > limit then
  return {0, current, ttl}
else
  return {1, current, ttl}
end
