package pace

import (
	"math"
	"time"
)

// Noise: refusals that come whatever the pace (a gateway shedding load it
// does not have, at random). They are told from a limit by evidence: a
// limit admits what it admits, so what is sent over it is refused and what
// is sent under it passes (but for strays at a window's edge), while noise
// refuses the same share at any pace. The last epochs' rates and shares
// refused are weighed under both: once they are far likelier under noise
// than under any limit, the cuts they made bought nothing and are undone,
// and the share becomes the noise level, which refusals must then clearly
// exceed to start an episode.
const (
	strayShare  = 0.01  // the share a limit still refuses once the pace is under it
	noiseOdds   = 3.0   // log-likelihood ratio that shows noise: twenty to one
	hintOdds    = 1.0   // one that makes it likelier than a limit: worth a probe
	noiseSpread = 3     // epochs with a refusal (and refusals) noise needs: "whatever the pace"
	forgetting  = 0.005 // a noise level measured under this is none
	noiseMemo   = 1000  // answers the noise level is measured over, at most
)

// noise is what an estimator knows of refusals that come whatever the pace.
type noise struct {
	level     float64 // the share of requests refused whatever the pace; 0: none known
	ans, nays float64 // the answers and refusals of requests it was measured over
	log       [24]tried
	n         int     // epochs logged, the newest at (n-1) % len(log)
	top       float64 // the highest pace they tried (+Inf: none)
}

// tried is what one epoch showed: the rate sent, the rate admitted from
// its first answer to its end (holds and all), and its requests answered
// and refused.
type tried struct{ rate, got, ans, nays float64 }

// explains reports whether the known noise level accounts for the epoch's
// refusals so far: no more than it would refuse, give or take four
// standard deviations and one (the count is weighed at each refusal, and
// a chance crossing costs a cut and its undoing).
func (nz *noise) explains(ep *epoch) bool {
	if nz.level == 0 {
		return false
	}
	n, p := float64(ep.answers), nz.level
	return float64(ep.nays) <= p*n+4*math.Sqrt(n*p*(1-p))+1
}

// fold adds an epoch's answers to the noise level's measure, once a level
// is known, and forgets the level once the share refused has risen to
// maxNoise (a limit, then) or fallen under forgetting over many answers.
func (nz *noise) fold(ep *epoch) {
	if nz.level == 0 || ep.answers == 0 {
		return
	}
	nz.ans += float64(ep.answers)
	nz.nays += float64(ep.nays)
	if nz.ans > noiseMemo {
		nz.ans, nz.nays = nz.ans/2, nz.nays/2
	}
	nz.level = nz.nays / nz.ans
	if nz.level >= maxNoise || nz.level < forgetting && nz.ans >= noiseMemo/2 {
		*nz = noise{}
	}
}

// record logs an epoch that ended at now, sent at rate at pace. One with
// no pace is not logged, but is the pace to go back to: the rate it sent
// at is a burst's (and a bucket's burst allowance may have let it
// through).
func (nz *noise) record(now time.Time, rate, pace float64, ep *epoch) {
	nz.top = max(nz.top, pace)
	if ep.answers == 0 || math.IsInf(pace, 1) {
		return
	}
	got := ep.admitted / max(now.Sub(ep.first), time.Millisecond).Seconds() // units, as rate is
	nz.log[nz.n%len(nz.log)] = tried{rate: rate, got: got, ans: float64(ep.answers), nays: float64(ep.nays)}
	nz.n++
}

// odds returns the log of how much likelier the epochs logged are under
// noise (one share refused at every rate) than under any limit (see
// limitFit); -Inf when they cannot say: refusals in fewer than three
// epochs, too high a share for noise, shares too unlike to be one, or an
// epoch capped.
func (nz *noise) odds() float64 {
	ans, nays := nz.count()
	if nays < noiseSpread || nz.refusing() < noiseSpread {
		return math.Inf(-1) // refusals at one pace or two say nothing of "whatever the pace"
	}
	log, p := nz.logged(), nays/ans
	if p >= maxNoise || !alike(log, p) || capped(log, p) {
		return math.Inf(-1)
	}
	return loglik(nays, ans, p) - limitFit(log)
}

// learn makes the share refused over the epochs logged the noise level,
// clears the log, and returns the pace to go back to: the highest the
// epochs tried (+Inf: none).
func (nz *noise) learn() (top float64) {
	ans, nays := nz.count()
	top = nz.top
	*nz = noise{level: nays / ans, ans: ans, nays: nays}
	return top
}

// probe returns a pace that tells noise from a limit: twice the fastest
// epoch logged, the top at most. A limit refuses much more there, noise
// the same share.
func (nz *noise) probe() float64 {
	fastest := 0.0
	for _, t := range nz.logged() {
		fastest = max(fastest, t.rate)
	}
	return min(2*fastest, nz.top)
}

func (nz *noise) logged() []tried { return nz.log[:min(nz.n, len(nz.log))] }

// refusing returns how many of the epochs logged had a refusal.
func (nz *noise) refusing() int {
	n := 0
	for _, t := range nz.logged() {
		if t.nays > 0 {
			n++
		}
	}
	return n
}

func (nz *noise) count() (ans, nays float64) {
	for _, t := range nz.logged() {
		ans, nays = ans+t.ans, nays+t.nays
	}
	return ans, nays
}

// alike reports whether the epochs' shares refused could all be p, as
// noise would refuse: their deviance from it is within three standard
// deviations of what chance gives (a chi-square of one degree less than
// the epochs). A share that rose as the pace fell is a long window's
// memory, not noise.
func alike(log []tried, p float64) bool {
	dev := 0.0
	for _, t := range log {
		d := 2 * (loglik(t.nays, t.ans, t.nays/t.ans) - loglik(t.nays, t.ans, p))
		if d > outlier {
			return false // one epoch noise would refuse so seldom as this (see outlier)
		}
		dev += d
	}
	df := float64(len(log) - 1)
	return dev <= df+3*math.Sqrt(2*df)
}

// outlier is the deviance from the share noise refuses past which one
// epoch alone shows the refusals are not noise's: a chi-square of one
// degree that chance passes once in a thousand. Summed with the rest, an
// epoch at 1.25 a second refused 5 of 9 by a sliding log still full from
// the opening (a deviance of 18 from the 5% of all) passed among 17, and
// the log of 20 a second was taken for noise.
const outlier = 10.83

// capped reports whether an epoch of the log got admitted clearly less
// than noise refusing a share p would let through of what it sent: what
// a limit does (an epoch ends at its first refusal, so its share refused
// may look small however far over a window it went; what the window let
// through over the epoch, holds and all, does not).
func capped(log []tried, p float64) bool {
	for _, t := range log {
		if t.ans >= noiseSpread && t.got < (1-p)*t.rate*2/3 {
			return true
		}
	}
	return false
}

// limitFit returns the log-likelihood of the epochs under the limit that
// best explains them: one admitting l a second refuses the share of a
// rate r over it, 1-l/r, and strays under it. The limits tried are the
// rates the epochs sent at and what they got admitted.
func limitFit(log []tried) float64 {
	best := math.Inf(-1)
	for _, c := range log {
		for _, l := range [2]float64{c.rate, c.rate * (1 - c.nays/c.ans)} {
			ll := 0.0
			for _, t := range log {
				ll += loglik(t.nays, t.ans, 1-l/t.rate)
			}
			best = max(best, ll)
		}
	}
	return best
}

// loglik is the log-likelihood of r refusals in n answers, each refused
// with probability p (kept within strayShare of 0 and 1).
func loglik(r, n, p float64) float64 {
	p = min(max(p, strayShare), 1-strayShare)
	return r*math.Log(p) + (n-r)*math.Log(1-p)
}

// undo takes back the cuts that noise explains: the pace goes back to top,
// and what they taught of a limit is forgotten.
func (e *estimator) undo(now time.Time, top float64) {
	e.good, e.bad, e.downs, e.climbs, e.held, e.probing, e.measured = 0, 0, 0, 0, 0, false, false
	e.shift(now, min(top, e.ceil))
}
