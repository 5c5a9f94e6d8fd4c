package pace

import (
	"math"
	"time"
)

// Policy constants. A refusal cuts the pace to a little under what the
// server admitted, by a tenth at least and by three quarters at most; a span held
// without refusal moves the pace halfway to the rate last refused; near it,
// the pace holds for a patience of spans before it probes again.
const (
	cutTo          = 0.95  // of the admitted rate, after a refusal
	cutLeast       = 0.9   // of the rate sent: a refusal always lowers the pace this much
	toldCut        = 0.975 // of the told limit, the first cut at it: settled near it (see bounded)
	cutDeep        = 0.25  // of the rate sent: never lower it more in one step
	nearBad        = 0.97  // a pace this close under the refused rate is settled
	firstPatience  = 4     // spans held at a settled pace before the next probe, at first;
	maxPatience    = 64    // doubling with each probe refused, up to this
	maxProbeWait   = 64    // requests admitted since the last cut a probe waits for at most
	climb          = 1.1   // twice the first step up (see step)
	minSpan        = time.Second
	maxSpan        = time.Minute
	lockout        = 2 * time.Second        // refused all along this long: a window longer than a second's
	quickHold      = 250 * time.Millisecond // the hold of a refusal with no hint, while the rate is known
	minRate        = 1.0 / 60               // a unit a minute
	minAnswers     = 8                      // answers in an epoch that make its admitted share a measure
	minLocked      = 3                      // refusals, with nothing admitted, that show a lockout
	maxNoise       = 0.3                    // a share refused this high is a limit, however it falls
	deepShare      = 0.2                    // a share refused this high in cuts in a row: each cut deeper
	sustainedShare = 0.8                    // refused all along, admitting less than this share of the rate sent: the long run is the measure
)

// An estimator decides the pace of one quantity of a lane (requests or
// tokens, in units per second) from what happened to what was sent. It is
// a pure state machine, in the manner of a search: good is the highest
// rate held for a whole span without a refusal, bad the rate sent at when
// the server last refused; the pace moves between them, and probes at bad
// after holding near it for patience spans, which doubles with each probe
// refused: quick while unsure, rare once settled. Time is passed in,
// and nothing is locked: the lane owns it.
//
// An epoch is one pace's trial. A refusal of a request sent in the epoch
// ends it with a cut, decided once the hold it sets is over (one cut per
// episode: refusals of requests sent before are old news); a span without
// one ends it with a step up, if the pace was used (raising a pace nobody
// reached tests nothing).
//
// The zero value is not usable; see newEstimator.
type estimator struct {
	ceil  float64 // the told limit less the margin; +Inf when untold
	floor float64 // the pace never goes under this (tokens: the longest request a minute)
	adapt bool    // learn from refusals; if not, the pace is ceil for ever

	rate                 float64       // the pace now; +Inf: none
	good                 float64       // highest rate held for a span without refusal; 0: none yet
	goodFor              time.Duration // how long it held (see fullRate)
	bad                  float64       // the rate sent at when last refused; 0: none known
	span                 time.Duration // how long a pace is tried: the longest window or round trip seen
	locked               int           // cuts in a row of epochs that admitted nothing
	rtt                  time.Duration // the round trip of the newest answer admitted
	nayTrip              time.Duration // the longest round trip of a refusal lately; 0: none seen (see heard)
	okAt                 time.Time     // when the newest request admitted went
	nayAt                time.Time     // when the first request refused since went
	stepNay              time.Time     // the nayAt of the run in which a step over good was last refused (see inWake)
	dryCut               bool          // an episode began in the run of refusals since nayAt, past lockout or at a wall
	runCut               bool          // an episode began in that run at all, told nothing and with no hint (see outWalled)
	drain                bool          // the next refusal holds a whole span (see goOn), while nothing is known of the rate
	explained            bool          // the last refusal was one the known noise level accounts for
	shown                bool          // the newest refusal's headers told its window, which the lane's tracker follows
	tracked              float64       // the rate that window admits, as the tracker follows it (see admits); 0: not known
	stayed               bool          // that rate is the stay late probes showed (see late.go)
	single               float64       // the least rate the opening's bunches show, one taken of each (see flights.singles)
	fine                 bool          // its hint came finer than whole seconds
	drained              bool          // it has, once
	held                 int           // spans held at a settled pace
	patience             int           // spans to hold a settled pace before a probe
	sinceProbe           int           // requests admitted since the last cut
	probing              bool          // the pace is a probe at bad
	downs                int           // cuts in a row with no step up between: each cuts deeper
	cut                  pending       // a refusal episode's cut, to decide when its hold is over
	cost                 time.Duration // the hold the newest refusal episode set (see worth)
	costAt               time.Time     // when it began
	noise                noise         // refusals that come whatever the pace, if shown
	climbs               int           // steps up in a row with no refusal known: each is bigger (a search's doubling phase)
	long                 longRun       // what was admitted and refused over the last minute or so
	full                 sinceFull     // what the server took since it last refused (see fullRate)
	measured             bool          // bad is what it took between two refusals (see up)
	searching            bool          // the pace is one a step up reached and held, back to it after a step further refused, nothing measured: the rate lies anywhere between (see towards)
	climbed, goodClimbed bool          // the pace is a step up, not a cut's; so was good, when held
	hedge                hedge         // the last cut's, if it went under what was admitted out of holds
	window               time.Duration // the window the lane's answers show, its burst a window's worth (see windowRate); 0: none
	lockedOut            bool          // a run of refusals has lasted lockout (see dryRun)
	sparse               bool          // the opening showed no burst: a step waits for fewer answers (see stepAnswers)
	sends                int           // requests sent in all: with full.sent, the mean request's units (see epoch.weight)
	ep                   epoch
}

// pending is a cut to decide: when, and what was known at the refusal.
type pending struct {
	decideAt, at   time.Time // zero decideAt: none
	sentRate, rate float64   // the rate sent at, and the pace, at the refusal
	sent           float64   // units the epoch had sent by then, in sends requests
	sends          int
	n              float64       // units of the request refused
	shown, fine    bool          // its headers told the window; its hint was finer than whole seconds
	hint           time.Duration // the server's hint; 0: none
	took           float64       // units taken since the refusal before, at the server's full (see sinceFull)
	since          time.Duration // the time since it, the holds left out; 0: none
	between        time.Duration // the time since it, holds and all
	dry            time.Duration // how long the server had taken nothing since a refusal (see dryRate)
	tracked        float64       // see estimator.tracked
	stayed         bool          // see estimator.stayed
	hedge          hedge         // the hedge it was sent under (see confirmed)
}

// epoch is what was sent at one pace since start, and what came of it.
type epoch struct {
	start             time.Time
	sent              float64       // units sent since start
	sends             int           // requests sent since start
	biggest           float64       // the most units one request of those took
	pressed           bool          // a request waited for the pace's own second (see inSecond)
	admitted, refused float64       // units of those answered, admitted and refused
	answers, nays     int           // requests answered, and of those refused
	first             time.Time     // when the first was answered
	held              time.Duration // held by refusals since start, in which nothing was sent
	walled            time.Duration // of that, held at a wall (see wallHold)
	dry               time.Duration // the longest run of refusals with nothing taken in it, so far
	judged            time.Time     // when tick last judged it
	weight            float64       // the requests admitted, each as its units over the lane's mean request's (see heard)
}

// newEstimator returns an estimator pacing at ceil (units per second,
// +Inf for none) from now.
func newEstimator(ceil float64, adapt bool, now time.Time) estimator {
	return estimator{ceil: ceil, adapt: adapt, rate: ceil, span: minSpan, patience: firstPatience, ep: epoch{start: now}}
}

// sent counts n units sent. A pace never goes under one such a minute.
func (e *estimator) sent(n float64) {
	e.ep.sent += n
	e.full.sent += n
	e.ep.sends++
	e.sends++
	e.ep.biggest = max(e.ep.biggest, n)
	e.floor = max(e.floor, min(n/60, e.ceil))
}

// admitted counts n units sent at sentAt that the server admitted (any
// answer but a refusal), observed at now, and how long they took. A pace
// is tried for two round trips, and for answers slower than two seconds
// for one and two seconds: time for the answers to come and two seconds
// of them to measure by. (Two round trips of 3 s made each step of a
// climb wait 6 s: a leaky bucket of 10 a second so answered, 1.38x. One
// round trip and a second, for answers of 1.5 s, brought a penalty box's
// probe 21 s after its refusal into the run: 1.09x -> 1.10x.)
func (e *estimator) admitted(now, sentAt time.Time, n float64) {
	e.stretch(min(2*now.Sub(sentAt), now.Sub(sentAt)+2*minSpan))
	e.rtt = now.Sub(sentAt)
	e.long.got.add(now, n)
	e.full.open(sentAt)
	if sentAt.After(e.okAt) {
		e.okAt = sentAt
	}
	e.sinceProbe++
	if sentAt.Before(e.ep.start) {
		return
	}
	e.ep.admitted += n
	e.ep.weight += n / max(e.full.sent/float64(max(e.sends, 1)), minUnit)
	e.ep.answered(now)
}

// stretch makes a span at least d: a window the server named, or a round
// trip, is the least a pace must be tried for to say anything.
func (e *estimator) stretch(d time.Duration) { e.span = min(max(e.span, d), maxSpan) }

// refused handles the refusal, seen at now, of n units sent at sentAt,
// with the server's hint (0: none), and returns how long the whole lane
// should hold before sending again: the hint, or without one a quarter
// second, and a whole span while the server admits nothing at all (one
// that counts refused requests too keeps a client that pushes on locked
// out). The first refusal of an epoch starts an episode: the pace drops a
// tenth at once, and the cut is decided when the hold is over (see
// decide), when what was sent before it has been answered. A refusal of
// the same episode gets what is left of its hold; one that is old news, 0.
func (e *estimator) refused(now, sentAt time.Time, n float64, hint time.Duration) (hold time.Duration) {
	e.explained = false
	if !e.adapt {
		return 0
	}
	e.long.nays.add(now, n)
	e.full.nay(sentAt, n)                                                    // see sinceFull
	e.nayTrip = max(now.Sub(sentAt), e.nayTrip-e.nayTrip/8, time.Nanosecond) // a refusal's round trip (see heard); 0: none seen
	dry := time.Duration(0)
	if hint == 0 { // a hint says when; with none, how long the refusals last tells
		dry = e.dryRun(sentAt)
	}
	if sentAt.Before(e.ep.start) {
		return 0
	}
	e.ep.refused, e.ep.nays, e.ep.dry = e.ep.refused+n, e.ep.nays+1, max(e.ep.dry, dry)
	e.ep.answered(now)
	if !e.cut.decideAt.IsZero() {
		return max(e.cut.decideAt.Sub(now), 0) // the episode's hold, what is left of it
	}
	if e.dryCut && (dry >= lockout || (dry > 0 && e.full.walled(n))) || e.runCut && e.full.outWalled(dry, n) {
		// Locked out longer than any second's window, or at a wall (see walled,
		// outWalled), and cut once in it: refusals until something is
		// admitted again say nothing more of the rate. Held a span.
		return e.wallHold(now, dry, n)
	}
	if e.noise.explains(&e.ep) {
		e.explained = true
		return 0 // noise, as much as is known: it costs the request its hint, the pace nothing
	}
	hold = max(quickHold, min(e.full.dryFor(sentAt), lockout)) // see dryFor
	drains := e.drain && e.good == 0 && e.bad == 0 && e.locked == 0 && hint == 0
	if e.locked > 0 || drains {
		hold = e.span // locked out, or draining (see goOn): a whole span
	}
	e.drain = false
	if hint > 0 {
		hold = hint
		e.stretch(2 * hint) // a window lasts at least the hint: judge over two
	}
	e.long.held.add(now, min(hold, maxSpan).Seconds())
	e.charge(now, hold, hint, drains)
	e.cut = pending{decideAt: now.Add(hold), at: now, sentRate: e.sentRate(now), rate: e.rate,
		sent: e.ep.sent, sends: e.ep.sends, n: n, hint: hint, shown: e.shown, fine: e.fine, tracked: e.tracked, stayed: e.stayed, hedge: e.hedge}
	e.markFull(sentAt, min(hold, maxSpan))
	e.runCut = hint == 0 && math.IsInf(e.ceil, 1) // told, the first cut is small (see bounded)
	e.dryCut = dry >= lockout || (e.runCut && e.full.walled(n))
	e.rate = max(cutLeast*e.cut.sentRate, e.least(e.cut))
	return min(hold, maxSpan)
}

// sentRate is the rate sent at in the epoch so far, never over the pace.
// With no pace, it is taken over a second at least (a burst says nothing
// of a rate); with one, an epoch younger than a span says too little, and
// the pace it tried stands for it.
func (e *estimator) sentRate(now time.Time) float64 {
	elapsed := now.Sub(e.ep.start) - e.ep.held
	if math.IsInf(e.rate, 1) {
		return e.ep.sent / max(elapsed, minSpan).Seconds()
	}
	if elapsed < e.span {
		return e.rate
	}
	return min(e.ep.sent/elapsed.Seconds(), e.rate)
}

// tick decides a cut whose hold is over, and otherwise judges the epoch
// each span it lasts without refusal: the pace steps up if it was used,
// and a new epoch starts; a pace not used, or held where it is, goes on
// measuring in the same epoch.
func (e *estimator) tick(now time.Time) {
	if !e.cut.decideAt.IsZero() {
		if !now.Before(e.cut.decideAt) {
			e.decide(now)
		}
		return
	}
	if !e.adapt || now.Sub(e.ep.judged) < e.span || now.Sub(e.ep.start) < e.span {
		return
	}
	if math.IsInf(e.rate, 1) {
		if e.noise.level > 0 {
			e.shift(now, e.rate) // no pace, but noise to measure: over recent answers
		}
		return
	}
	e.ep.judged = now
	if !e.used(now) || e.heard(now) < e.stepAnswers() {
		return // a pace not used, or too slow to have said anything yet
	}
	e.downs = 0
	if next := min(e.up(now), e.ceil); next != e.rate {
		e.noise.record(now, e.sentRate(now), e.rate, &e.ep)
		if e.noise.odds() >= noiseOdds {
			e.undo(now, e.noise.learn()) // refusals that noise explains cut the pace: back to where they found it
			return
		}
		e.probing, e.climbed = next == e.bad, next > e.rate
		e.shift(now, next)
	} else if e.noise.level > 0 {
		e.shift(now, e.rate) // held where it is, with noise to measure: over recent answers, as above
	}
}

// shift starts a new epoch at pace rate from start.
func (e *estimator) shift(start time.Time, rate float64) {
	e.noise.fold(&e.ep)
	e.rate = rate
	e.ep = epoch{start: start, judged: start}
}

// pace returns the pace now, in units per second: +Inf for none.
func (e *estimator) pace() float64 { return e.rate }
