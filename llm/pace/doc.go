// Package pace is the client's limiter: it paces requests to a server whose
// limits it is told or must find, each model in a lane of its own.
//
// A request goes through its lane in five steps (see [Limiter.Acquire]): it
// waits out the shared pause that a request-429 sets; waits until it fits
// what the server's windows have left (the newest header reading, less what
// was sent since) and, for its tokens, within the last second's share of
// the token pace, room that comes back going to the biggest waiter it fits
// (queue.go); takes a slot of the concurrency gate; takes its turn at the
// request pace and its tokens at the token pace (golang.org/x/time/rate);
// and goes. Its [Permit.Done] tells the lane what came of it, and the policy
// (the estimator: a pure state machine fed sent, admitted and refused, with
// times, sizes and hints) moves the paces as a search: a refusal goes back
// to the pace last held or cuts to a little under what was admitted, a span
// held without one climbs by a step that doubles while it holds, towards
// the rate last refused once it is worth a refusal's hold; refusals that
// come whatever the pace are told from a limit by likelihood (noise.go) and
// then cost only their own request. Everything else is mechanism; time is
// read in one place.
package pace
