package shared

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// moveScript moves the GCRA budget KEYS[1] by ARGV[2] units of ARGV[1]
// seconds each: forward (units taken, whatever the burst allows) or back
// (given back), never to before now: a budget given back more than it owes
// is full, not in credit. The budget is redis_rate's own (the theoretical
// arrival time, in seconds since 2017 by Redis's clock, under
// "rate:"+name), so that [Store.Take] draws from what this moves. Its
// expiry is redis_rate's: when the arrival time is past, the key may go.
var moveScript = redis.NewScript(`
local t = redis.call('TIME')
local now = (t[1] - 1483228800) + (t[2] / 1000000)
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
local moved = math.max(tat, now) + tonumber(ARGV[1]) * tonumber(ARGV[2])
if moved <= now then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], moved, 'EX', math.ceil(moved - now))
return 1
`)

// redisRatePrefix is where redis_rate keeps a budget named name: at
// "rate:"+name (see TestGiveIsTakenBack, which fails should it move).
const redisRatePrefix = "rate:"

// Settle tells model's token budget what a request that took taken tokens
// of it used, as the server counted them: what it did not use is given
// back, for every process to draw; what it used beyond is taken too, so
// that the next requests wait for it. It goes at the token pace the latest
// draw went at (the one taken was drawn at, but for a change meanwhile).
// While Redis is away nothing is settled: the draws are this process's own.
func (c *Client) Settle(ctx context.Context, model string, taken, used int) {
	c.mu.Lock()
	ok := c.up(c.now())
	ls := c.lane(model)
	tps := ls.drawn
	c.mu.Unlock()
	d := taken - used
	if !ok || d == 0 {
		return
	}
	var err error
	if d > 0 {
		err = c.s.Give(ctx, ls.name, Tokens, perMinute(tps), d)
	} else {
		err = c.s.Charge(ctx, ls.name, Tokens, perMinute(tps), -d)
	}
	if err != nil {
		c.mu.Lock()
		c.failed(c.now(), err)
		c.mu.Unlock()
	}
}

// Give returns n to the lane's budget b, limited to perMinute, as when a
// request used fewer tokens than were taken for it, or a request drawn
// could not go. What the budget does not owe (it is full) is dropped.
func (s *Store) Give(ctx context.Context, lane string, b Budget, perMinute float64, n int) error {
	return s.move(ctx, lane, b, perMinute, -n)
}

// Charge takes n more from the lane's budget b, limited to perMinute,
// whether or not the budget has them: they were used (a request used more
// tokens than were taken for it), and the next takers wait for them.
func (s *Store) Charge(ctx context.Context, lane string, b Budget, perMinute float64, n int) error {
	return s.move(ctx, lane, b, perMinute, n)
}

func (s *Store) move(ctx context.Context, lane string, b Budget, perMinute float64, n int) error {
	if perMinute <= 0 || n == 0 {
		return nil
	}
	l := gcraLimit(b, perMinute, 1)
	interval := l.Period.Seconds() / float64(l.Rate) // redis_rate's emission interval
	key := redisRatePrefix + lane + ":" + string(b)
	return moveScript.Run(ctx, s.rdb, []string{key}, strconv.FormatFloat(interval, 'g', -1, 64), n).Err()
}
