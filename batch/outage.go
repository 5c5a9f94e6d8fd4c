package batch

import (
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
//   - a run that ends normally records them as failed;
//   - a run that stops (the client's breaker finds the server down, an
//     interrupt, a bad key) leaves them unrecorded: the rerun sends them,
//     without --retry-failed.
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
	o.item = &Item{ID: it.ID, Line: it.Line, fixes: it.fixes} // the body is not needed to record it
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

// transient reports whether an item's last error may be the server's
// rather than the item's: a transient failure or a rate limit.
func transient(err error) bool {
	ae, ok := errors.AsType[*llm.APIError](err)
	return ok && (ae.Kind == llm.Transient || ae.Kind == llm.RateLimited)
}
