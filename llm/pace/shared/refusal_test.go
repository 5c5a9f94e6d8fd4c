package shared

import (
	"testing"
	"time"

	"github.com/llmbatch/llmbatch/internal/redistest"
	"github.com/llmbatch/llmbatch/llm/pace"
)

// TestLeaderLearnsFromFollowersRefusals checks, through real limiters,
// that a refusal in a process that follows reaches the estimator of the
// one that leads, as its own would: the key's pace is cut, not only held
// for the pause.
func TestLeaderLearnsFromFollowersRefusals(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	lead := pace.New(pace.Config{RPM: 600, Adapt: true, Shared: NewClient(open(t, srv, "lead"), "u", testKey, nil)})
	follow := pace.New(pace.Config{Adapt: true, Shared: NewClient(open(t, srv, "follow"), "u", testKey, nil)})
	var fp *pace.Permit
	for _, l := range []*pace.Limiter{lead, follow} { // the first beats first: it leads
		p, err := l.Acquire(ctx, "m", 10)
		if err != nil {
			t.Fatal(err)
		}
		if l == lead {
			p.Done(pace.Outcome{Result: pace.Admitted})
		}
		fp = p
	}
	before, _ := lead.Effective("m")
	// The follower's refusal: the key pauses (two seconds: a hint of one,
	// once a pace has held, holds only its own request; see pace's coarse).
	fp.Done(pace.Outcome{Result: pace.Refused, Hint: 2 * time.Second})
	time.Sleep(150 * time.Millisecond) // the leader reads the pause afresh
	start := time.Now()
	sent := make(chan time.Duration, 1)
	go func() {
		p, err := lead.Acquire(ctx, "m", 10)
		if err != nil {
			t.Error(err)
		}
		p.Done(pace.Outcome{Result: pace.Admitted})
		sent <- time.Since(start)
	}()
	time.Sleep(300 * time.Millisecond) // within the pause
	if during, _ := lead.Effective("m"); during >= before {
		t.Errorf("the leader's pace while a follower's refusal holds the key = %v a minute, want under its %v", during, before)
	}
	if d := <-sent; d < 500*time.Millisecond {
		t.Errorf("the leader sent %v after a follower's refusal paused the key for two seconds, want after the pause", d)
	}
}
