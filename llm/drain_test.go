package llm

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestClientDrain checks Request.Drain: a request waiting to retry ends at
// once with ErrStopped (wrapping its last error), one whose attempt is in
// flight gets its answer, and a drained request sends nothing.
func TestClientDrain(t *testing.T) {
	t.Run("waiting to retry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFakeHTTP(t, reply{status: 503, header: map[string]string{"Retry-After": "60"}})
			c := fakeClient(t, f, nil)
			drain := make(chan struct{})
			req := testRequest()
			req.Drain = drain
			var err error
			var n int
			var wg sync.WaitGroup
			wg.Go(func() { _, n, err = c.Do(t.Context(), req) })
			synctest.Wait() // the first attempt failed; the retry waits 60s
			start := time.Now()
			close(drain)
			wg.Wait()
			var ae *APIError
			if !errors.Is(err, ErrStopped) || !errors.As(err, &ae) || ae.Status != 503 || n != 1 {
				t.Errorf("Do() after drain = (%d, %v), want 1 attempt and ErrStopped wrapping the 503", n, err)
			}
			if waited := time.Since(start); waited != 0 {
				t.Errorf("Do() returned %v after the drain, want at once", waited)
			}
		})
	})
	t.Run("in flight", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			drain := make(chan struct{})
			f := newFakeHTTP(t, reply{before: func() { close(drain) }})
			c := fakeClient(t, f, nil)
			req := testRequest()
			req.Drain = drain
			if resp, n, err := c.Do(t.Context(), req); err != nil || resp == nil || n != 1 {
				t.Errorf("Do() drained in flight = (%v, %d, %v), want the answer", resp, n, err)
			}
		})
	})
	t.Run("already drained", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFakeHTTP(t)
			c := fakeClient(t, f, nil)
			drain := make(chan struct{})
			close(drain)
			req := testRequest()
			req.Drain = drain
			if _, n, err := c.Do(t.Context(), req); !errors.Is(err, ErrStopped) || n != 0 {
				t.Errorf("Do() drained before = (%d, %v), want 0 attempts and ErrStopped", n, err)
			}
		})
	})
}
