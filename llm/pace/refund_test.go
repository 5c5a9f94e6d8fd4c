package pace

import (
	"testing"
	"time"
)

// TestRefund: a refused send leaves the own second when its refusal comes
// back; one about tokens also holds the second, until that send's second
// has passed, to what it held of the others and half the refused units;
// one about requests refunds alone; a sliding counter's (which counts
// refusals) refunds nothing.
func TestRefund(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	// 600 at 0 s, admitted; 400 at 0.1 s, refused at 0.15 s: paced at
	// 1,000 a second, the own second counted 1,000 and let nothing more go.
	sent := func() *quantity {
		return secondAt(t0, map[time.Duration]float64{0: 600, 100 * time.Millisecond: 400}, []time.Duration{0, 100 * time.Millisecond})
	}
	refused, now := t0.Add(100*time.Millisecond), t0.Add(150*time.Millisecond)
	if ok, _ := sent().inSecond(now, 150, 0, 0); ok {
		t.Fatal("before the refusal: 150 fitted beside 1,000 sent")
	}
	q := sent()
	q.refund(now, refused, 400, true)
	if ok, _ := q.inSecond(now, 150, 0, 0); !ok {
		t.Error("after a token refusal of 400: 150 did not fit beside the 600 admitted (held to 800)")
	}
	ok, wait := q.inSecond(now, 300, 0, 0)
	if ok || wait != 850*time.Millisecond {
		t.Errorf("after a token refusal of 400: 300 = %v, %v; want false, 850ms (held to 800 till the 600 leave)", ok, wait)
	}
	if ok, _ := q.inSecond(t0.Add(1100*time.Millisecond), 900, 0, 0); !ok {
		t.Error("once the 600 and the refused send's second have passed: 900 did not fit")
	}
	q = sent()
	q.refund(now, refused, 400, false)
	if ok, _ := q.inSecond(now, 350, 0, 0); !ok {
		t.Error("after a refusal about requests: 350 did not fit beside the 600 admitted")
	}
	q = sent()
	q.win.ctr.length, q.win.limit = time.Second, 1000 // followed as a sliding counter
	q.refund(now, refused, 400, true)
	if ok, _ := q.inSecond(now, 150, 0, 0); ok {
		t.Error("a sliding counter's refusal: 150 fitted, want the 400 still counted")
	}
	q = sent()
	q.win.ctr.length, q.win.ctr.tick, q.win.limit = time.Second, time.Second, 1000 // a counter told in whole seconds (blurred)
	q.refund(now, refused, 400, true)
	if ok, _ := q.inSecond(now, 150, 0, 0); ok {
		t.Error("a blurred sliding counter's refusal: 150 fitted, want the 400 still counted")
	}
}

// TestRefundsAfter: what was refused of the sends after a time, refunds
// added out of order and forgotten after keepRefunds.
func TestRefundsAfter(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var r refunds
	r.add(t0.Add(time.Second), t0.Add(300*time.Millisecond), 3)
	r.add(t0.Add(time.Second), t0.Add(100*time.Millisecond), 1)
	r.add(t0.Add(time.Second), t0.Add(200*time.Millisecond), 2)
	for _, tc := range []struct {
		after time.Duration
		want  float64
	}{{0, 6}, {100 * time.Millisecond, 5}, {250 * time.Millisecond, 3}, {300 * time.Millisecond, 0}} {
		if got := r.after(t0.Add(tc.after)); got != tc.want {
			t.Errorf("after %v: %v, want %v", tc.after, got, tc.want)
		}
	}
	r.add(t0.Add(keepRefunds+250*time.Millisecond), t0.Add(keepRefunds), 4)
	if got := r.after(time.Time{}); got != 7 {
		t.Errorf("after the first two were forgotten: %v in all, want 3+4", got)
	}
}
