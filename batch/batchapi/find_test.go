package batchapi

import (
	"strings"
	"testing"
	"time"
)

func TestPick(t *testing.T) {
	const job = "job-f00d"
	meta := Metadata(job, 3)
	other := Metadata(job, 4)
	foreign := Metadata("job-beef", 3)
	tests := []struct {
		name      string
		list      []Remote
		want      string   // the id used; "" for none
		stray     []string // ids to cancel
		withNote  bool
		notesName []string // ids the note must name
	}{
		{"none listed", nil, "", nil, false, nil},
		{"only other shards and jobs", []Remote{{ID: "b1", Metadata: other}, {ID: "b2", Metadata: foreign}, {ID: "b3"}}, "", nil, false, nil},
		{"one match", []Remote{{ID: "b0", Metadata: other}, {ID: "b1", Status: StatusInProgress, Metadata: meta}}, "b1", nil, false, nil},
		{"two: the newest that did not fail", []Remote{
			{ID: "b-new", Status: StatusFailed, CreatedAt: 300, Metadata: meta},
			{ID: "b-mid", Status: StatusInProgress, CreatedAt: 200, Metadata: meta},
			{ID: "b-old", Status: StatusValidating, CreatedAt: 100, Metadata: meta},
		}, "b-mid", []string{"b-old"}, true, []string{"b-mid", "b-new", "b-old"}},
		{"two, both failed: the newest", []Remote{
			{ID: "b-old", Status: StatusFailed, CreatedAt: 100, Metadata: meta},
			{ID: "b-new", Status: StatusFailed, CreatedAt: 200, Metadata: meta},
		}, "b-new", nil, true, []string{"b-new", "b-old"}},
		{"same time: the order of the listing does not matter", []Remote{
			{ID: "b-a", Status: StatusCompleted, CreatedAt: 100, Metadata: meta},
			{ID: "b-b", Status: StatusCompleted, CreatedAt: 100, Metadata: meta},
		}, "b-b", nil, true, []string{"b-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := Pick(job, 3, tt.list)
			if ok != (tt.want != "") || m.Use.ID != tt.want {
				t.Fatalf("Pick(%s, 3, ...) = %q, %v; want %q", job, m.Use.ID, ok, tt.want)
			}
			var stray []string
			for _, b := range m.Stray {
				stray = append(stray, b.ID)
			}
			if strings.Join(stray, ",") != strings.Join(tt.stray, ",") {
				t.Errorf("Pick(...).Stray = %v, want %v", stray, tt.stray)
			}
			if (m.Note != "") != tt.withNote {
				t.Errorf("Pick(...).Note = %q, want a note: %v", m.Note, tt.withNote)
			}
			for _, id := range tt.notesName {
				if !strings.Contains(m.Note, id) {
					t.Errorf("Pick(...).Note = %q, does not name %s", m.Note, id)
				}
			}
		})
	}
}

// TestFindAfterLostRecord walks the kill between create and record: the
// rerun's Next says Find, the match is journaled as created, and the shard
// follows the batch found, which is never created a second time.
func TestFindAfterLostRecord(t *testing.T) {
	s := replay(t, rPlanned, rUploaded, rCreating) // the created record was never written
	now := t0.Add(10 * time.Minute)
	if a := (Policy{}).Next(s, now); a.Do != Find {
		t.Fatalf("Next(creating) = %v, want find", a.Do)
	}
	list := []Remote{{ID: "batch-9", Status: StatusInProgress, CreatedAt: t0.Unix(), Metadata: Metadata("job", 1)}}
	m, ok := Pick("job", 1, list)
	if !ok {
		t.Fatal("Pick found no batch")
	}
	rec := m.Record(1, now)
	line, err := Encode(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	s = replay(t, rPlanned, rUploaded, rCreating, back)
	if s.Phase != Submitted || s.Batch != "batch-9" || s.Status != StatusInProgress {
		t.Fatalf("after the found record: %v %q %s, want submitted batch-9 in_progress", s.Phase, s.Batch, s.Status)
	}
	if a := (Policy{}).Next(s, now); a.Do != Poll {
		t.Errorf("Next(found) = %v, want poll", a.Do)
	}
}

func TestStateRecord(t *testing.T) {
	b := Remote{ID: "b", Status: StatusCompleted, Counts: Counts{Total: 10, Completed: 9, Failed: 1}, Output: "o", Errors: "e"}
	s := replay(t, rPlanned, rUploaded, rCreating, rCreated, StateRecord(1, b, t0.Add(time.Hour)))
	if s.Counts != b.Counts || s.Output != "o" || s.Errors != "e" || s.Status != StatusCompleted {
		t.Errorf("after StateRecord: %+v", s)
	}
}
