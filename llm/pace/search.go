package pace

// The search between the rate held and the rate refused: what a refusal
// over a pace held says (see bracket), and what the refusals after it do
// not say.

// overHeld reports whether rate is over a pace held for a span (good):
// refused there, the rate lies between the two.
func (e *estimator) overHeld(rate float64) bool { return e.good > 0 && e.good < rate }

// stepRefused reports whether cut is the first after a step over a pace
// held (good), before the step's answers were enough to measure anything:
// the rate lies between the two (see bracket), and the share refused of
// so few (one of three) says nothing of how far over the step went. Cut a
// twentieth under the pace held by that share (see bounded), the climb
// back to it took 15 s at nginx's 10 a second with no burst, each time a
// probe at 605/min was refused.
func (e *estimator) stepRefused(cut pending) bool {
	return e.downs == 0 && e.overHeld(cut.sentRate) && e.ep.answers < minAnswers
}

// inWake reports whether cut is of a request sent at a pace held (good)
// in the wake of a step over it refused: in the run of refusals that
// began there, nothing admitted since, for less than lockout. A ban that
// the step set refuses whatever the pace while it lasts, as a window the
// step overfilled does until the overshoot leaves it; neither says the
// pace held is over the rate. (At a 2 s ban for going over 20 a second,
// answered in 1.5 s, the pace held at 1,200/min was halved by the ban's
// refusals of its probes, and the climb back, each step worth a ban,
// took the run to 2.1x.) Refused on past lockout, the run is a longer
// window's (see dryRun), and the cuts go on.
func (e *estimator) inWake(cut pending) bool {
	return !e.stepNay.IsZero() && e.stepNay.Equal(e.nayAt) && e.nayAt.After(e.okAt) &&
		cut.at.Sub(e.nayAt) < lockout && e.good > 0 && cut.sentRate <= e.good
}
