package shared

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Timing of a Client's use of Redis.
const (
	pauseFresh = 100 * time.Millisecond // a shared pause read this recently is not read again
	beatEvery  = 2 * time.Second        // how often a process says it is alive
	beatYoung  = 100 * time.Millisecond // as often, in a lane's first seconds: the processes starting together learn soon how many they are
	young      = 3 * time.Second
	beatTTL    = 3 * beatEvery   // how long it counts as alive without a beat
	retryEvery = 2 * time.Second // how often Redis is tried again while it is away
)

// A Client is one process's use of a [Store] for the lanes of one base URL
// and key: it draws each request's budgets, shares the pauses, keeps the
// count of live processes, and publishes the lane's pace when this process
// leads it, or hands on the leader's when it follows (see [Client.Pace]). When Redis is away it warns once, paces
// locally at this process's share of the pace (the last count of live
// processes), tries Redis again every few seconds, and says when it is
// back: it never fails a request for Redis's sake.
//
// A Client is safe for simultaneous use by multiple goroutines. It starts
// no goroutines but a timer's, which renews the leases of [Client.CapInFlight]
// while it holds any.
type Client struct {
	s       *Store
	baseURL string
	keyHash string // LaneName's input; never the key
	log     *slog.Logger
	now     func() time.Time

	mu    sync.Mutex
	lanes map[string]*laneState
	away  bool      // Redis failed; local pacing
	retry time.Time // when to try Redis again while away

	slots *slots // the shared cap on requests in flight; nil: none (see CapInFlight)
}

// laneState is what a Client keeps of one model's shared lane.
type laneState struct {
	name      string
	live      int           // processes alive, this one included
	leads     bool          // this process's estimator sets the key's pace (see Store.Beat)
	born      time.Time     // when this process first used the lane
	joined    chan struct{} // closed once this process has counted the others in the lane; nil: not begun
	beat      time.Time     // last heartbeat sent
	paused    time.Time     // the shared pause, as last read
	pauseRead time.Time
	local     *rate.Limiter // while Redis is away: this process's share
	localRPS  float64
	own       [2]float64 // this process's paces a second, as the latest Take was given them
	key       Learned    // the key's pace, as last read or published
	mine      [2]float64 // the paces per minute this process last published or adopted
	drawn     float64    // the token pace a second of the latest draw from Redis, for Settle
}

// NewClient returns a Client drawing from s for the lanes of baseURL and
// apiKey (only a hash of it is kept). log gets the warning when Redis goes
// away and the note when it is back; nil discards.
func NewClient(s *Store, baseURL, apiKey string, log *slog.Logger) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{s: s, baseURL: baseURL, keyHash: apiKey, log: log, now: time.Now, lanes: map[string]*laneState{}}
}

func (c *Client) lane(model string) *laneState {
	ls, ok := c.lanes[model]
	if !ok {
		ls = &laneState{name: LaneName(c.baseURL, model, c.keyHash), live: 1, born: c.now()}
		c.lanes[model] = ls
	}
	return ls
}

// up reports whether Redis is to be used now. c.mu is held.
func (c *Client) up(now time.Time) bool {
	return !c.away || !now.Before(c.retry)
}

// failed notes that Redis failed at now. c.mu is held.
func (c *Client) failed(now time.Time, err error) {
	if !c.away {
		c.log.Warn("redis is away: pacing locally at this process's share of the limit until it is back", "err", err)
	}
	c.away, c.retry = true, now.Add(retryEvery)
}

// worked notes that Redis answered. c.mu is held.
func (c *Client) worked() {
	if c.away {
		c.log.Info("redis is back: the limits are shared again")
	}
	c.away = false
}

// Take waits until one request and n tokens of model may be sent at the
// key's paces, drawn from Redis so that every process together keeps to
// them. rps requests and tps tokens a second (+Inf or 0: none) are this
// process's own paces: the key's when it leads the lane (they are
// published for the others), else those of the leader are drawn at (see
// [Client.Pace]). Waiters already in Take go at the paces the latest one
// brought. It returns only ctx's error.
func (c *Client) Take(ctx context.Context, model string, rps, tps float64, n int) error {
	c.mu.Lock()
	c.lane(model).own = [2]float64{rps, tps} // the freshest: every waiter goes at it
	c.mu.Unlock()
	for {
		d, drawn, err := c.take(ctx, model, n)
		if err != nil || d <= 0 {
			return err
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		if drawn {
			return nil
		}
	}
}

// take makes one attempt of Take and returns how long to wait: before the
// next attempt when not drawn, before sending when drawn (from the local
// share, with Redis away).
func (c *Client) take(ctx context.Context, model string, n int) (d time.Duration, drawn bool, err error) {
	c.mu.Lock()
	now := c.now()
	ls := c.lane(model)
	rps := ls.own[0]
	if !c.up(now) {
		d := ls.localWait(now, rps)
		c.mu.Unlock()
		return d, true, ctx.Err()
	}
	beat := now.Sub(ls.beat) >= beatEvery || now.Sub(ls.beat) >= beatYoung && now.Sub(ls.born) < young
	c.mu.Unlock()

	if beat {
		err = c.join(ctx, ls, now)
	}
	var wait time.Duration
	if err == nil {
		wait, err = c.awaitLeader(ctx, ls)
	}
	if err == nil && wait <= 0 {
		d, err = c.drawFor(ctx, ls, n)
	}
	if ctx.Err() != nil {
		return 0, false, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		now = c.now()
		c.failed(now, err)
		return ls.localWait(now, ls.own[0]), true, nil
	}
	c.worked()
	if wait > 0 {
		return wait, false, nil
	}
	return d, d <= 0, nil
}

// drawFor draws one request and n tokens of ls's lane at the paces
// paceFor says, publishing this process's first if it leads and they
// changed.
func (c *Client) drawFor(ctx context.Context, ls *laneState, n int) (time.Duration, error) {
	c.mu.Lock()
	r, t, own, publish := ls.paceFor()
	ls.drawn = t
	c.mu.Unlock()
	if publish {
		if err := c.publish(ctx, ls, own); err != nil {
			return 0, err
		}
	}
	return c.draw(ctx, ls.name, r, t, n)
}

// draw takes one request and n tokens from the shared budgets. A request
// drawn whose tokens are not is given back, so that a wait for tokens does
// not spend the request budget of others.
func (c *Client) draw(ctx context.Context, lane string, rps, tps float64, n int) (time.Duration, error) {
	d, err := c.s.Take(ctx, lane, Requests, perMinute(rps), 1)
	if err != nil || d > 0 {
		return d, err
	}
	d, err = c.s.Take(ctx, lane, Tokens, perMinute(tps), n)
	if err == nil && d > 0 {
		err = c.s.Give(ctx, lane, Requests, perMinute(rps), 1)
	}
	return d, err
}

// localWait paces this process alone at its share of rps while Redis is
// away: the requests of the others are not seen, so each takes 1/live.
// c.mu is held.
func (ls *laneState) localWait(now time.Time, rps float64) time.Duration {
	share := rps / float64(max(ls.live, 1))
	if rps <= 0 || math.IsInf(rps, 1) {
		return 0
	}
	if ls.local == nil || ls.localRPS != share {
		ls.local, ls.localRPS = rate.NewLimiter(rate.Limit(share), 1), share
	}
	return ls.local.ReserveN(now, 1).DelayFrom(now)
}

// Pause holds every process's requests of model for d from now (a
// request-429's hint). While Redis is away only this process holds, which
// its own limiter does already.
func (c *Client) Pause(ctx context.Context, model string, d time.Duration) {
	c.mu.Lock()
	now := c.now()
	ok := c.up(now)
	ls := c.lane(model)
	if until := now.Add(d); until.After(ls.paused) {
		ls.paused = until
	}
	c.mu.Unlock()
	if !ok {
		return
	}
	if err := c.s.Pause(ctx, ls.name, d); err != nil {
		c.mu.Lock()
		c.failed(now, err)
		c.mu.Unlock()
	}
}

// Paused returns how long model's requests are still held by a pause that
// any process set; 0 when none. It reads Redis (the pause, and the key's
// pace for [Client.Pace]) at most every 100 ms.
func (c *Client) Paused(ctx context.Context, model string) time.Duration {
	c.mu.Lock()
	now := c.now()
	ls := c.lane(model)
	if !c.up(now) || now.Sub(ls.pauseRead) < pauseFresh {
		d := ls.paused.Sub(now)
		c.mu.Unlock()
		return max(d, 0)
	}
	c.mu.Unlock()
	d, l, ok, err := c.s.Look(ctx, ls.name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failed(now, err)
	} else {
		c.worked()
		if ok {
			ls.seen(l)
		}
		ls.pauseRead = now
		if until := now.Add(d); until.After(ls.paused) {
			ls.paused = until
		}
	}
	return max(ls.paused.Sub(now), 0)
}

// Live returns how many processes send in model's lane, as last counted:
// 1 while this one leads a young lane whose pace is not known yet, since
// the others wait for its first (see awaitLeader).
func (c *Client) Live(model string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ls := c.lane(model)
	if ls.leads && ls.key.Ver == 0 && c.now().Sub(ls.born) < young {
		return 1
	}
	return ls.live
}

func perMinute(perSecond float64) float64 {
	if perSecond <= 0 || math.IsInf(perSecond, 1) {
		return 0
	}
	return perSecond * 60
}
