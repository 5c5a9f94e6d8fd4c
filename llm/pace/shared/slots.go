package shared

import (
	"context"
	"sync"
	"time"
)

// Timing of the shared slots.
const (
	leaseTTL  = 6 * time.Second       // a lease lapses this long after its last renewal (every third of it): a killed process's slots come back by then
	leasePoll = 20 * time.Millisecond // how often a process asks again for a slot while every one is held
)

// slots is what a Client keeps of the shared cap on requests in flight.
type slots struct {
	max int           // across the processes; 0: no cap
	ttl time.Duration // of a lease; renewed every third of it

	mu    sync.Mutex
	held  map[*Lease]struct{}      // leases this process holds, renewed together
	local map[string]int           // requests in flight of each lane that hold a slot, leased or (Redis away) local
	renew *time.Timer              // armed while any lease is held
	ask   map[string]chan struct{} // by lane: one goroutine at a time asks Redis for a slot; the others wait their turn
}

// CapInFlight caps the requests in flight of every process of the key, each
// model apart, at n (0: no cap), with leases in Redis that lapse within a
// few seconds of a process's death. Call it before the Client is used.
func (c *Client) CapInFlight(n int) {
	c.slots = &slots{max: n, ttl: leaseTTL, held: map[*Lease]struct{}{}, local: map[string]int{}, ask: map[string]chan struct{}{}}
}

// Hold waits for one of model's shared slots for a request in flight, and
// returns the func that gives it back (only its first call counts). Without
// a cap it returns at once. While Redis is away, this process holds at most
// its share of the slots (the cap over the live processes, one at least).
// It returns only ctx's error.
func (c *Client) Hold(ctx context.Context, model string) (release func(), err error) {
	sl := c.slots
	if sl == nil || sl.max <= 0 {
		return func() {}, nil
	}
	turn := sl.turn(model)
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-turn }()
	for {
		if release := c.hold(ctx, model); release != nil {
			return release, nil
		}
		t := time.NewTimer(leasePoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// turn returns the channel that gives model's askers their turn.
func (sl *slots) turn(model string) chan struct{} {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	ch, ok := sl.ask[model]
	if !ok {
		ch = make(chan struct{}, 1)
		sl.ask[model] = ch
	}
	return ch
}

// hold makes one attempt of Hold: the release func, or nil when every
// slot is held.
func (c *Client) hold(ctx context.Context, model string) func() {
	sl := c.slots
	c.mu.Lock()
	now := c.now()
	up := c.up(now)
	ls := c.lane(model)
	share := max(1, sl.max/max(ls.live, 1))
	c.mu.Unlock()
	if up {
		l, ok, err := c.s.Lease(ctx, ls.name, sl.max, sl.ttl)
		if err == nil {
			c.mu.Lock()
			c.worked()
			c.mu.Unlock()
			if !ok {
				return nil
			}
			return sl.add(c, ls.name, l)
		}
		if ctx.Err() != nil {
			return nil
		}
		c.mu.Lock()
		c.failed(c.now(), err)
		c.mu.Unlock()
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.local[ls.name] >= share {
		return nil
	}
	return sl.addLocked(c, ls.name, nil)
}

// add counts a slot of lane held, by lease l (nil: locally, Redis away),
// and returns the func that gives it back.
func (sl *slots) add(c *Client, lane string, l *Lease) func() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.addLocked(c, lane, l)
}

// addLocked is add with sl.mu held.
func (sl *slots) addLocked(c *Client, lane string, l *Lease) func() {
	sl.local[lane]++
	if l != nil {
		sl.held[l] = struct{}{}
		if sl.renew == nil {
			sl.renew = time.AfterFunc(sl.ttl/3, func() { c.renewLeases() })
		}
	}
	var once sync.Once
	return func() { once.Do(func() { c.release(lane, l) }) }
}

// release gives back a slot of lane held by l (nil: locally).
func (c *Client) release(lane string, l *Lease) {
	sl := c.slots
	sl.mu.Lock()
	sl.local[lane]--
	if l != nil {
		delete(sl.held, l)
		if len(sl.held) == 0 && sl.renew != nil {
			sl.renew.Stop()
			sl.renew = nil
		}
	}
	sl.mu.Unlock()
	if l == nil {
		return
	}
	c.mu.Lock()
	up := c.up(c.now())
	c.mu.Unlock()
	if up { // away: it lapses on its own
		_ = l.Release(context.Background()) // the store's timeout bounds it
	}
}

// renewLeases renews every lease held, lane by lane, and arms the next
// renewal while any is held. Redis away: they are tried again next time.
func (c *Client) renewLeases() {
	sl := c.slots
	sl.mu.Lock()
	byLane := map[string][]*Lease{}
	for l := range sl.held {
		byLane[l.key] = append(byLane[l.key], l)
	}
	sl.mu.Unlock()
	for _, ls := range byLane {
		if err := c.s.Renew(context.Background(), ls, sl.ttl); err != nil {
			c.mu.Lock()
			c.failed(c.now(), err)
			c.mu.Unlock()
			break
		}
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.renew != nil && len(sl.held) > 0 {
		sl.renew.Reset(sl.ttl / 3)
	}
}
