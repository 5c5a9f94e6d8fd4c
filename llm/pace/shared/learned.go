package shared

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Learned is the pace of a lane as a process last set it, per minute (0:
// none), for every process to adopt: the key's pace, not any one process's.
type Learned struct {
	RPM, TPM float64
	Ver      int64  // counts the changes: a higher one is newer
	By       string // the process that set it (its Config.ID)
}

// learnedTTL is how long a learned pace stays without being renewed: a
// pace learned yesterday is not today's.
const learnedTTL = 10 * time.Minute

// publishScript sets the lane's pace to ARGV[1] requests and ARGV[2]
// tokens a minute, by ARGV[3], and returns its new version.
var publishScript = redis.NewScript(`
local v = redis.call('HINCRBY', KEYS[1], 'ver', 1)
redis.call('HSET', KEYS[1], 'rpm', ARGV[1], 'tpm', ARGV[2], 'by', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return v
`)

// Publish sets the lane's pace for every process, and returns it as
// recorded (with its version and this process as its author).
func (s *Store) Publish(ctx context.Context, lane string, l Learned) (Learned, error) {
	rpm, tpm := strconv.FormatFloat(l.RPM, 'g', -1, 64), strconv.FormatFloat(l.TPM, 'g', -1, 64)
	v, err := publishScript.Run(ctx, s.rdb, []string{lane + ":learned"}, rpm, tpm, s.id, learnedTTL.Milliseconds()).Int64()
	l.Ver, l.By = v, s.id
	return l, err
}

// Learned returns the lane's pace as last published; ok is false when
// nothing was, or it has expired.
func (s *Store) Learned(ctx context.Context, lane string) (l Learned, ok bool, err error) {
	m, err := s.rdb.HGetAll(ctx, lane+":learned").Result()
	if err != nil {
		return Learned{}, false, err
	}
	l, ok = parseLearned(m)
	return l, ok, nil
}

func parseLearned(m map[string]string) (l Learned, ok bool) {
	if len(m) == 0 {
		return Learned{}, false
	}
	l.RPM, _ = strconv.ParseFloat(m["rpm"], 64)
	l.TPM, _ = strconv.ParseFloat(m["tpm"], 64)
	l.Ver, _ = strconv.ParseInt(m["ver"], 10, 64)
	l.By = m["by"]
	return l, true
}

// Look returns in one round trip how long the lane is still paused (0:
// not) and its pace as last published (ok false: none).
func (s *Store) Look(ctx context.Context, lane string) (paused time.Duration, l Learned, ok bool, err error) {
	p := s.rdb.Pipeline()
	ttl := p.PTTL(ctx, lane+":pause")
	all := p.HGetAll(ctx, lane+":learned")
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return 0, Learned{}, false, err
	}
	l, ok = parseLearned(all.Val())
	return max(ttl.Val(), 0), l, ok, nil
}
