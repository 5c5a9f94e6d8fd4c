package llm

import (
	"context"
	"sync"
	"time"
)

// keyRing rotates several API keys for one endpoint: each attempt takes the
// next usable key in turn; a key that got a 429 cools down for the
// server's hint while the others go on; a key the server refused (401,
// 403) is dropped for the rest of the run. Safe for concurrent use.
type keyRing struct {
	mu   sync.Mutex
	keys []keyState
	next int
	now  func() time.Time
}

type keyState struct {
	key       string
	coolUntil time.Time
	dead      bool
}

// newKeyRing returns a ring of keys, or nil for fewer than two: one key
// needs no rotation.
func newKeyRing(keys []string) *keyRing {
	if len(keys) < 2 {
		return nil
	}
	r := &keyRing{now: time.Now}
	for _, k := range keys {
		r.keys = append(r.keys, keyState{key: k})
	}
	return r
}

// pick returns the key to use now and its index. When every live key is
// cooling down, it returns how long until the first is usable again; when
// none is alive, ok is false.
func (r *keyRing) pick() (i int, key string, wait time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	soonest := time.Duration(-1)
	for n := range r.keys {
		i := (r.next + n) % len(r.keys)
		k := &r.keys[i]
		if k.dead {
			continue
		}
		if d := k.coolUntil.Sub(now); d > 0 {
			if soonest < 0 || d < soonest {
				soonest = d
			}
			continue
		}
		r.next = (i + 1) % len(r.keys)
		return i, k.key, 0, true
	}
	if soonest < 0 {
		return -1, "", 0, false
	}
	return -1, "", soonest, true
}

// cool rests key i for d.
func (r *keyRing) cool(i int, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if until := r.now().Add(d); until.After(r.keys[i].coolUntil) {
		r.keys[i].coolUntil = until
	}
}

// kill drops key i and reports whether any key is left.
func (r *keyRing) kill(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys[i].dead = true
	for _, k := range r.keys {
		if !k.dead {
			return true
		}
	}
	return false
}

// pickKey returns the key for the next attempt and its index in the ring,
// -1 without a ring. When every key is resting it waits for the first to be
// usable; when every key was refused it returns an Auth error.
func (c *Client) pickKey(ctx context.Context) (int, string, error) {
	if c.keys == nil {
		return -1, c.cfg.APIKey, nil
	}
	for {
		i, key, wait, ok := c.keys.pick()
		switch {
		case !ok:
			return -1, "", &APIError{Status: 401, Kind: Auth, Message: "every API key was refused"}
		case wait <= 0:
			return i, key, nil
		}
		if err := sleep(ctx, wait); err != nil {
			return -1, "", err
		}
	}
}

// keyFailed handles a failure of key i and reports whether the attempt
// should be made again at once with another key: a 429 rests the key for
// the server's hint, a refusal or a spent quota drops it (while others are
// left).
func (c *Client) keyFailed(i int, ae *APIError) bool {
	switch ae.Kind {
	case RateLimited:
		d := ae.RetryAfter
		if d <= 0 {
			d = time.Second
		}
		c.keys.cool(i, d)
		c.log.Debug("key resting after a 429", "key", i+1, "for", d)
		return true
	case Auth, QuotaSpent: // keys of other accounts may still work
		c.log.Warn("an API key was refused; going on with the others", "key", i+1, "status", ae.Status, "kind", ae.Kind.String())
		return c.keys.kill(i)
	}
	return false
}
