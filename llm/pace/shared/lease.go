package shared

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaseScript takes a lease ARGV[1] for ARGV[2] ms if fewer than ARGV[3]
// unexpired leases are held; it returns 1 when taken.
var leaseScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// renewScript extends the leases ARGV[2..] for ARGV[1] ms from now. A lease
// that lapsed meanwhile (Redis restarted empty, say) is held again: its
// request is still in flight, and counting it is the truth.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return #ARGV - 1
`)

// A Lease is one of a lane's shared slots for a request in flight.
type Lease struct {
	s    *Store
	key  string
	name string
}

// Lease takes one of at most maxSlots slots of the lane for ttl, after
// which it lapses on its own (so a killed process frees its slots) unless
// renewed. ok is false when every slot is held.
func (s *Store) Lease(ctx context.Context, lane string, maxSlots int, ttl time.Duration) (*Lease, bool, error) {
	name := s.id + ":" + strconv.FormatUint(s.seq.Add(1), 10)
	k := lane + ":leases"
	ok, err := leaseScript.Run(ctx, s.rdb, []string{k}, name, ttl.Milliseconds(), maxSlots).Int()
	if err != nil || ok == 0 {
		return nil, false, err
	}
	return &Lease{s: s, key: k, name: name}, true, nil
}

// Renew extends the leases, all of one lane, for ttl from now. One round trip.
func (s *Store) Renew(ctx context.Context, ls []*Lease, ttl time.Duration) error {
	if len(ls) == 0 {
		return nil
	}
	args := make([]any, 0, len(ls)+1)
	args = append(args, ttl.Milliseconds())
	for _, l := range ls {
		args = append(args, l.name)
	}
	return renewScript.Run(ctx, s.rdb, []string{ls[0].key}, args...).Err()
}

// Held returns how many unexpired leases the lane's slots hold.
func (s *Store) Held(ctx context.Context, lane string) (int, error) {
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return 0, err
	}
	n, err := s.rdb.ZCount(ctx, lane+":leases", strconv.FormatInt(now.UnixMilli()+1, 10), "+inf").Result()
	return int(n), err
}

// Release gives the slot back.
func (l *Lease) Release(ctx context.Context) error {
	return l.s.rdb.ZRem(ctx, l.key, l.name).Err()
}
