package pace

import "time"

// charge notes what the refusal episode begun at now costs the next step
// up (see worth): the hold it set, but where that hold is not what the
// next such refusal would set, what that one would. A coarse hint (one
// second) pauses the lane for the estimator's own hold once a pace has
// held (see coarse), a quarter second. So does the drain's whole span
// (see goOn): the lane's own caution, taken once while nothing is known
// of the rate, not the server's, and the next refusal holds a quarter
// second. (Charged the span, a window of 20 a second starting at the
// lane's first request, with no hint, made the first step up from a cut
// to 1080/min wait 1 s over its 5% gain, 20 s at 90% of the limit.)
func (e *estimator) charge(now time.Time, hold, hint time.Duration, drains bool) {
	e.cost, e.costAt = min(hold, maxSpan), now
	if (coarse(hint) && !e.fine) || drains {
		e.cost = quickHold
	}
}
