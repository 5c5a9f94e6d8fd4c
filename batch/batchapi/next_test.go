package batchapi

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// ms is the journal's time of t0+d.
func ms(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

const hashA = "a3f1c2d4e5b60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

// Records of shard 1's history, to compose the cases from.
var (
	rPlanned  = Record{Shard: 1, Step: StepPlanned, At: ms(0), Hash: hashA, Lines: 100, Bytes: 5000, Tokens: 900}
	rUploaded = Record{Shard: 1, Step: StepUploaded, At: ms(time.Second), File: "file-1"}
	rCreating = Record{Shard: 1, Step: StepCreating, At: ms(2 * time.Second)}
	rCreated  = Record{Shard: 1, Step: StepCreated, At: ms(3 * time.Second), Batch: "batch-1"}
)

func state(d time.Duration, st Status, done, failed int) Record {
	return Record{Shard: 1, Step: StepState, At: ms(d), Status: st, Total: 100, Completed: done, Failed: failed}
}

func replay(t *testing.T, recs ...Record) Shard {
	t.Helper()
	var s Shard
	for _, r := range recs {
		var err error
		if s, err = Apply(s, r); err != nil {
			t.Fatalf("Apply(%+v) = %v", r, err)
		}
	}
	return s
}

func TestNext(t *testing.T) {
	submitted := []Record{rPlanned, rUploaded, rCreating, rCreated}
	with := func(extra ...Record) []Record { return append(append([]Record{}, submitted...), extra...) }
	round1 := rPlanned
	round1.Round = 1
	expired := with(state(10*time.Hour, StatusExpired, 60, 0),
		Record{Shard: 1, Step: StepCollected, At: ms(11 * time.Hour), Retry: 40})
	round1Expired := append([]Record{round1}, expired[1:]...)
	failed := with(Record{Shard: 1, Step: StepState, At: ms(time.Minute), Status: StatusFailed, Code: "invalid_json_line"})
	cancelled := with(Record{Shard: 1, Step: StepCancel, At: ms(time.Hour)}, state(time.Hour+time.Second, StatusCancelling, 30, 0),
		state(time.Hour+time.Minute, StatusCancelled, 30, 0))

	tests := []struct {
		name   string
		recs   []Record
		policy Policy
		now    time.Duration
		want   Action
	}{
		{"planned: upload", []Record{rPlanned}, Policy{}, time.Second, Action{Do: Upload}},
		{"kill after upload, before create: create, not upload", []Record{rPlanned, rUploaded}, Policy{}, time.Hour,
			Action{Do: Create, Record: &Record{Shard: 1, Step: StepCreating, At: ms(time.Hour)}}},
		{"kill after create, before record: find, once the listing has settled",
			[]Record{rPlanned, rUploaded, rCreating}, Policy{}, 10 * time.Second,
			Action{Do: Find, At: t0.Add(2*time.Second + time.Minute)}},
		{"kill after create, rerun much later: find at once (At is past)",
			[]Record{rPlanned, rUploaded, rCreating}, Policy{Settle: 5 * time.Second}, time.Hour,
			Action{Do: Find, At: t0.Add(7 * time.Second)}},
		{"listing found nothing: create again, with a new intent",
			[]Record{rPlanned, rUploaded, rCreating, {Shard: 1, Step: StepAbsent, At: ms(2 * time.Minute)}}, Policy{}, 3 * time.Minute,
			Action{Do: Create, Record: &Record{Shard: 1, Step: StepCreating, At: ms(3 * time.Minute)}}},
		{"created: first poll after every", submitted, Policy{}, 3 * time.Second,
			Action{Do: Poll, At: t0.Add(33 * time.Second)}},
		{"counts changed: poll again after every", with(state(time.Minute, StatusInProgress, 10, 0)), Policy{}, time.Minute,
			Action{Do: Poll, At: t0.Add(90 * time.Second)}},
		{"two quiet polls: the wait has doubled twice", with(state(time.Minute, StatusInProgress, 10, 0),
			state(2*time.Minute, StatusInProgress, 10, 0), state(3*time.Minute, StatusInProgress, 10, 0)), Policy{}, 3 * time.Minute,
			Action{Do: Poll, At: t0.Add(5 * time.Minute)}},
		{"a change resets the schedule", with(state(time.Minute, StatusInProgress, 10, 0),
			state(2*time.Minute, StatusInProgress, 10, 0), state(3*time.Minute, StatusInProgress, 11, 0)),
			Policy{Poll: PollEvery(10*time.Second, time.Minute)}, 3 * time.Minute,
			Action{Do: Poll, At: t0.Add(3*time.Minute + 10*time.Second)}},
		{"completed: download", with(state(time.Hour, StatusCompleted, 98, 2)), Policy{}, time.Hour, Action{Do: Download}},
		{"collected, every line answered: nothing more", with(state(time.Hour, StatusCompleted, 100, 0),
			Record{Shard: 1, Step: StepCollected, At: ms(time.Hour), Retry: 0}), Policy{}, time.Hour, Action{Do: Stop}},
		{"completed with retryable line errors: resubmit", with(state(time.Hour, StatusCompleted, 97, 3),
			Record{Shard: 1, Step: StepCollected, At: ms(time.Hour), Retry: 3}), Policy{}, time.Hour,
			Action{Do: Resubmit, Round: 1, Reason: "batch_unanswered"}},
		{"expired keeps its finished lines: download first", with(state(10*time.Hour, StatusExpired, 60, 0)), Policy{}, 10 * time.Hour,
			Action{Do: Download}},
		{"expired, collected: the rest resubmitted once more", expired, Policy{}, 11 * time.Hour,
			Action{Do: Resubmit, Round: 1, Reason: "batch_expired"}},
		{"expired again in round 1: reported", round1Expired, Policy{}, 11 * time.Hour,
			Action{Do: Report, Reason: "batch_expired"}},
		{"expired again in round 1, fallback online", round1Expired, Policy{Fallback: FallbackOnline}, 11 * time.Hour,
			Action{Do: Online, Reason: "batch_expired"}},
		{"no resubmission at all (Rounds < 0)", expired, Policy{Rounds: -1}, 11 * time.Hour,
			Action{Do: Report, Reason: "batch_expired"}},
		{"failed validation: no download, resubmitted once", failed, Policy{}, time.Minute,
			Action{Do: Resubmit, Round: 1, Reason: "invalid_json_line"}},
		{"failed validation in round 1: reported with its code", append([]Record{round1}, failed[1:]...), Policy{}, time.Minute,
			Action{Do: Report, Reason: "invalid_json_line"}},
		{"failed and resubmitted: nothing more", append(failed, Record{Shard: 1, Step: StepResubmitted}), Policy{}, time.Minute,
			Action{Do: Stop}},
		{"create refused: all lines resubmitted", []Record{rPlanned, rUploaded, rCreating,
			{Shard: 1, Step: StepRefused, Code: "invalid_file"}}, Policy{}, time.Minute,
			Action{Do: Resubmit, Round: 1, Reason: "invalid_file"}},
		{"cancel asked: cancel at once", with(state(time.Minute, StatusInProgress, 10, 0), Record{Shard: 1, Step: StepCancel, At: ms(time.Hour)}),
			Policy{}, time.Hour, Action{Do: Cancel}},
		{"cancel sent, provider still in progress: again on the poll schedule",
			with(Record{Shard: 1, Step: StepCancel, At: ms(time.Hour)}, state(time.Hour+time.Second, StatusInProgress, 10, 0)),
			Policy{}, time.Hour + time.Second, Action{Do: Cancel, At: t0.Add(time.Hour + 31*time.Second)}},
		{"cancelling: poll", cancelled[:len(cancelled)-1], Policy{}, time.Hour + time.Second,
			Action{Do: Poll, At: t0.Add(time.Hour + 31*time.Second)}},
		{"cancelled: its finished lines downloaded", cancelled, Policy{}, 2 * time.Hour, Action{Do: Download}},
		{"cancelled and collected: a rerun resubmits the rest, spending no round",
			append(cancelled, Record{Shard: 1, Step: StepCollected, Retry: 70}), Policy{Rounds: -1}, 2 * time.Hour,
			Action{Do: Resubmit, Round: 0, Reason: "batch_cancelled"}},
		{"cancel asked while the create was unconfirmed, then the batch found: cancel at once",
			[]Record{rPlanned, rUploaded, rCreating, {Shard: 1, Step: StepCancel, At: ms(time.Hour)},
				{Shard: 1, Step: StepCreated, At: ms(time.Hour + time.Minute), Batch: "b", Status: StatusInProgress}},
			Policy{}, time.Hour + time.Minute, Action{Do: Cancel}},
		{"cancel of a shard not yet created: a rerun goes on", []Record{rPlanned, {Shard: 1, Step: StepCancel}}, Policy{}, 0,
			Action{Do: Upload}},
		{"the zero shard: nothing", nil, Policy{}, 0, Action{Do: Stop}},
		{"dropped (its file was lost before the upload): nothing", []Record{rPlanned, {Shard: 1, Step: StepDropped}}, Policy{}, 0,
			Action{Do: Stop}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := replay(t, tt.recs...)
			got := tt.policy.Next(s, t0.Add(tt.now))
			if !sameAction(got, tt.want) {
				t.Errorf("Next(%v %s, t0+%v) = %s, want %s", s.Phase, s.Status, tt.now, show(got), show(tt.want))
			}
		})
	}
}

func sameAction(a, b Action) bool {
	if (a.Record == nil) != (b.Record == nil) || (a.Record != nil && *a.Record != *b.Record) {
		return false
	}
	if !a.At.Equal(b.At) {
		return false
	}
	a.Record, b.Record, a.At, b.At = nil, nil, time.Time{}, time.Time{}
	return a == b
}

func show(a Action) string {
	var b strings.Builder
	b.WriteString(a.Do.String())
	if !a.At.IsZero() {
		b.WriteString(" at t0+" + a.At.Sub(t0).String())
	}
	if a.Record != nil {
		b.WriteString(" after " + string(a.Record.Step))
	}
	if a.Reason != "" || a.Round != 0 {
		b.WriteString(" round " + string(rune('0'+a.Round)) + " " + a.Reason)
	}
	return b.String()
}

func TestApplyRefuses(t *testing.T) {
	tests := []struct {
		name string
		recs []Record
		bad  Record
	}{
		{"uploaded before planned", nil, rUploaded},
		{"created with no intent journaled", []Record{rPlanned, rUploaded}, rCreated},
		{"a second upload", []Record{rPlanned, rUploaded}, rUploaded},
		{"state before created", []Record{rPlanned, rUploaded, rCreating}, state(time.Minute, StatusInProgress, 1, 0)},
		{"collected while running", []Record{rPlanned, rUploaded, rCreating, rCreated, state(time.Minute, StatusInProgress, 1, 0)},
			Record{Shard: 1, Step: StepCollected}},
		{"another shard's record", []Record{rPlanned}, Record{Shard: 2, Step: StepUploaded, File: "f"}},
		{"planned again after upload", []Record{rPlanned, rUploaded}, rPlanned},
		{"dropped after upload", []Record{rPlanned, rUploaded}, Record{Shard: 1, Step: StepDropped}},
		{"reported before collected", []Record{rPlanned, rUploaded, rCreating, rCreated}, Record{Shard: 1, Step: StepReported}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := replay(t, tt.recs...)
			got, err := Apply(s, tt.bad)
			var se *StepError
			if !errors.As(err, &se) || se.Step != tt.bad.Step || se.Phase != s.Phase {
				t.Fatalf("Apply(%v, %s) = %v, want a *StepError for it", s.Phase, tt.bad.Step, err)
			}
			if got != s {
				t.Errorf("Apply(%v, %s) changed the shard on error: %+v", s.Phase, tt.bad.Step, got)
			}
		})
	}
}

func TestApplyFinishedCancelIsHarmless(t *testing.T) {
	s := replay(t, rPlanned, rUploaded, rCreating, rCreated, state(time.Hour, StatusCompleted, 100, 0),
		Record{Shard: 1, Step: StepCollected})
	got, err := Apply(s, Record{Shard: 1, Step: StepCancel, At: ms(2 * time.Hour)})
	if err != nil || got != s || got.Phase != Finished {
		t.Fatalf("Apply(finished, cancel) = %+v, %v; want it unchanged", got, err)
	}
}

func TestApplyKeepsFileIDs(t *testing.T) {
	s := replay(t, rPlanned, rUploaded, rCreating, rCreated,
		Record{Shard: 1, Step: StepState, At: ms(time.Hour), Status: StatusFinalizing, Output: "file-out"},
		Record{Shard: 1, Step: StepState, At: ms(2 * time.Hour), Status: StatusCompleted, Errors: "file-err"})
	if s.Output != "file-out" || s.Errors != "file-err" || !s.Polled.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("after two states: output %q, errors %q, polled %v; want both ids and the last time", s.Output, s.Errors, s.Polled)
	}
}
