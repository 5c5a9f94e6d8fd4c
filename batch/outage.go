package batch

import (
	"context"
	"errors"

	"github.com/llmbatch/llmbatch/llm"
)

// heldFailures are the items whose attempts ran out on transient errors
// (5xx, timeouts, connection failures, 429s) with no answer written since:
// their failure may be the server's, not theirs. DESIGN §5: an item fails
// only for what is wrong with it; when the server as a whole is down, the
// run stops and its unfinished items are left for the rerun.
//
// So the writer holds them until the run knows:
//   - an answer written after them proves the server up while they failed:
//     they are recorded as failed (the request made the server fail);
//   - at the normal end of a run, one is recorded as failed only if the
//     server answered some request (a success, or an error that is the
//     server's own verdict, such as a 400) after the item's first request
//     was sent, so it failed while the server was up; the others are left
//     unrecorded and the run stops with a *StopError (exit 3): the server
//     seems down, and the same command later sends them again;
//   - a run that stops (the client's breaker finds the server down, an
//     interrupt, a bad key) leaves them all unrecorded: the rerun sends
//     them, without --retry-failed.
//
// "After its first request was sent" is as close as batch can see to
// "after its first attempt failed" (the client retries inside Do): an
// answer that came while that first attempt was under way counts too.
//
// # Memory
//
// At most maxHeld are held, each without its request body; when one more
// comes, the oldest is recorded as failed: maxHeld items in a row ran out of
// attempts with no answer between them, which no breaker stopped.
//
// heldFailures is owned by the line writer; it is not safe for concurrent
// use.
type heldFailures struct {
	q []outcome
}

// maxHeld bounds the failures held at once.
const maxHeld = 4096

// add holds o. When the bound is reached it returns the oldest outcome held,
// which is to be recorded now, and true.
func (h *heldFailures) add(o outcome) (oldest outcome, full bool) {
	it := o.item
	o.item = &Item{ID: it.ID, Line: it.Line, fixes: it.fixes, sentAt: it.sentAt} // the body is not needed to record it
	o.ack = nil
	if len(h.q) < maxHeld {
		h.q = append(h.q, o)
		return outcome{}, false
	}
	oldest = h.q[0]
	copy(h.q, h.q[1:])
	h.q[len(h.q)-1] = o
	return oldest, true
}

// take returns the outcomes held, oldest first, and holds none after.
func (h *heldFailures) take() []outcome {
	q := h.q
	h.q = nil
	return q
}

// answered reports whether err (nil: a success) is the server's own answer
// to a request: a success, or an error that is not transient (a 400, a
// 404, a refusal of the key). A transient error, a rate limit or no answer
// at all proves nothing about whether the server is up.
func answered(err error) bool {
	if err == nil {
		return true
	}
	ae, ok := errors.AsType[*llm.APIError](err)
	return ok && ae.Status != 0 && !transient(err) && ae.Kind != llm.Unavailable
}

// do makes one client request for items, noting when they were first
// sent (see heldFailures) and counting the server's answers.
func (r *run) do(ctx context.Context, req *llm.Request, items ...*Item) (*llm.Response, int, error) {
	for _, it := range items {
		if it.sentAt == 0 {
			it.sentAt = r.answers.Load() + 1
		}
	}
	resp, n, err := r.cfg.Client.Do(ctx, req)
	if answered(err) {
		r.answers.Add(1)
	}
	return resp, n, err
}

// provenUp reports whether the server answered a request after it was
// first sent: its failure is its own.
func (r *run) provenUp(it *Item) bool { return it.sentAt > 0 && r.answers.Load() >= it.sentAt }

// ErrServerDown is the cause of the *StopError of a run that ended with
// items whose attempts ran out on transient errors and no answer of the
// server after they were sent: they are left unrecorded for the rerun.
var ErrServerDown = errors.New("the server seems down: items ran out of attempts with no answer of the server since they were sent; they are not recorded as failed")

// transient reports whether an item's last error may be the server's
// rather than the item's: a transient failure or a rate limit.
func transient(err error) bool {
	ae, ok := errors.AsType[*llm.APIError](err)
	return ok && (ae.Kind == llm.Transient || ae.Kind == llm.RateLimited)
}
