package shared

import (
	"context"
	"math"
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

// joinWait is how long a process that joins a lane waits, after its first
// heartbeat, before its second and its first request: processes started
// together then count each other before they count what they send for
// their share (see pace.Sharer), which a leader counting itself alone
// would misjudge three times over.
const joinWait = 150 * time.Millisecond

// leaderPoll is how often a process waiting for the leader's first pace
// (see awaitLeader) looks for it.
const leaderPoll = 50 * time.Millisecond

// awaitLeader returns how long this process is to wait before it draws,
// for the pace of the lane's leader, which it reads: it follows, told
// nothing, in the lane's first seconds, and no pace is known yet; then
// for the pause the leader's refusal set, if it holds still. Processes
// that start together and send together before any of them knows a pace
// each take part of the server's first allowance; the leader, counting
// what it sent for all of them, would take the key's rate for a multiple
// of what it is (or, counting for itself alone, for a fraction). Sending
// alone, the leader finds it as one process would, and the others take it
// up once its refusal's pause is over; told nothing and refused nothing
// in those seconds, they go on their own.
func (c *Client) awaitLeader(ctx context.Context, ls *laneState) (time.Duration, error) {
	c.mu.Lock()
	wait := !ls.leads && ls.key.Ver == 0 && perMinute(ls.own[0]) == 0 && c.now().Sub(ls.born) < young
	c.mu.Unlock()
	if !wait {
		return 0, nil
	}
	paused, l, ok, err := c.s.Look(ctx, ls.name)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		ls.seen(l)
	}
	if ls.key.Ver == 0 {
		return leaderPoll, nil
	}
	if until := c.now().Add(paused); until.After(ls.paused) {
		ls.paused = until
	}
	return paused, nil
}

// join beats for ls, and the first time, waits joinWait and beats again
// first; takers meanwhile wait for it. Redis failing is the caller's.
func (c *Client) join(ctx context.Context, ls *laneState, now time.Time) error {
	c.mu.Lock()
	ch := ls.joined
	if ch == nil {
		ls.joined = make(chan struct{})
	}
	c.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		return c.beat(ctx, ls, now)
	}
	defer close(ls.joined)
	if err := c.beat(ctx, ls, now); err != nil {
		return err
	}
	t := time.NewTimer(joinWait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return c.beat(ctx, ls, c.now())
}

// beat says this process is alive in ls's lane, and notes how many are and
// whether this one leads.
func (c *Client) beat(ctx context.Context, ls *laneState, now time.Time) error {
	live, leads, err := c.s.Beat(ctx, ls.name, beatTTL)
	if err == nil {
		c.mu.Lock()
		ls.beat, ls.live, ls.leads = now, live, leads
		c.mu.Unlock()
	}
	return err
}

// paceFor returns the paces to draw at: this process's own when it leads
// the lane (or no pace is known for the key yet), else the key's, which the
// leader sets; and whether its own is to be published, per minute (own):
// it leads, and changed it. c.mu is held.
func (ls *laneState) paceFor() (r, t float64, own [2]float64, publish bool) {
	rps, tps := ls.own[0], ls.own[1]
	own = [2]float64{perMinute(rps), perMinute(tps)}
	if ls.leads || ls.key.Ver == 0 {
		publish = ls.leads && own != ls.mine
		ls.mine = own
		return rps, tps, own, publish
	}
	return perSecond(ls.key.RPM), perSecond(ls.key.TPM), own, false
}

// publish makes pace (per minute) the key's, for the other processes to
// adopt.
func (c *Client) publish(ctx context.Context, ls *laneState, pace [2]float64) error {
	l, err := c.s.Publish(ctx, ls.name, Learned{RPM: pace[0], TPM: pace[1]})
	if err == nil {
		c.log.Debug("the key's pace, set by this process (it leads)", "rpm", l.RPM, "tpm", l.TPM, "version", l.Ver)
		c.mu.Lock()
		ls.seen(l)
		c.mu.Unlock()
	}
	return err
}

// seen notes l, the key's pace read or published, if it is newer than the
// one known. c.mu is held.
func (ls *laneState) seen(l Learned) {
	if l.Ver > ls.key.Ver {
		ls.key = l
	}
}

// Pace returns the key's pace, rps requests and tps tokens a second (+Inf:
// none), when another process leads the lane and has set it: this one then
// follows it (follow), and its caller makes it its own. The processes go
// at one pace, the leader's, whose estimator alone learns; a follower's
// own pace counts only while Redis is away or no pace is known yet.
func (c *Client) Pace(model string) (rps, tps float64, follow bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ls := c.lane(model)
	if ls.leads || ls.key.Ver == 0 || !c.up(c.now()) {
		return 0, 0, false
	}
	ls.mine = [2]float64{ls.key.RPM, ls.key.TPM}
	return perSecond(ls.key.RPM), perSecond(ls.key.TPM), true
}

func perSecond(perMinute float64) float64 {
	if perMinute <= 0 {
		return math.Inf(1)
	}
	return perMinute / 60
}
