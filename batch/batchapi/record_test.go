package batchapi

import (
	"bytes"
	"errors"
	"testing"
)

// allSteps holds a valid record of every step.
var allSteps = []Record{
	rPlanned, rUploaded, rCreating, rCreated,
	{Shard: 1, Step: StepAbsent, At: 5},
	{Shard: 4, Step: StepDropped, Note: "shard-000004-….jsonl is missing"},
	{Shard: 1, Step: StepRefused, Code: "invalid_file", Note: "the provider refused the input file"},
	{Shard: 1, Step: StepState, At: 7, Status: StatusInProgress, Total: 100, Completed: 40, Failed: 2, Output: "file-o", Errors: "file-e"},
	{Shard: 1, Step: StepCancel, At: 8},
	{Shard: 1, Step: StepCollected, Retry: 3},
	{Shard: 1, Step: StepResubmitted},
	{Shard: 7, Step: StepReported},
	{Shard: 2, Step: StepCreated, Batch: "batch_\"odd\"\n\u2028id", Status: StatusCompleted, Note: "2 batches carry ..."},
}

func TestRecordRoundTrip(t *testing.T) {
	var journal []byte
	for _, r := range allSteps {
		var err error
		if journal, err = Encode(journal, r); err != nil {
			t.Fatalf("Encode(%+v) = %v", r, err)
		}
	}
	lines := bytes.SplitAfter(journal, []byte("\n"))
	lines = lines[:len(lines)-1] // after the last newline
	if len(lines) != len(allSteps) {
		t.Fatalf("Encode wrote %d lines for %d records:\n%s", len(lines), len(allSteps), journal)
	}
	for i, line := range lines {
		got, err := Decode(line)
		if err != nil || got != allSteps[i] {
			t.Errorf("Decode(%s) = %+v, %v; want %+v", line, got, err, allSteps[i])
		}
	}
}

func TestRecordShape(t *testing.T) {
	got, _ := Encode(nil, Record{Shard: 3, Step: StepUploaded, File: "file-abc"})
	if want := `{"shard":3,"step":"uploaded","file":"file-abc"}` + "\n"; string(got) != want {
		t.Errorf("Encode(uploaded) = %s, want %s", got, want)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, line := range []string{
		``,
		`{"k":"item-1","s":"d"}`, // an item's record
		`not json "shard"`,
		`{"shard":0,"step":"uploaded","file":"f"}`,
		`{"shard":1,"step":"uploaded"}`,
		`{"shard":1,"step":"planned","hash":"abc","lines":1,"bytes":1}`,
		`{"shard":1,"step":"planned","hash":"` + hashA + `","lines":0,"bytes":1}`,
		`{"shard":1,"step":"created"}`,
		`{"shard":1,"step":"state","status":"sleeping"}`,
		`{"shard":1,"step":"created","batch":"b","status":"sleeping"}`,
		`{"shard":1,"step":"exploded"}`,
		`{"shard":1,"step":"collected","retry":-1}`,
		`{"shard":1.5,"step":"cancel"}`,
		`{"shard":1,"step":"cancel"} trailing`,
	} {
		if r, err := Decode([]byte(line)); !errors.Is(err, ErrNotRecord) {
			t.Errorf("Decode(%s) = %+v, %v; want ErrNotRecord", line, r, err)
		}
	}
	if _, err := Encode(nil, Record{Shard: 1, Step: StepUploaded}); !errors.Is(err, ErrNotRecord) {
		t.Errorf("Encode(uploaded without file) = %v, want ErrNotRecord", err)
	}
}

// FuzzRecord: any bytes decode without a panic; a record that decodes
// encodes to one line that decodes to the same record.
func FuzzRecord(f *testing.F) {
	for _, r := range allSteps {
		line, _ := Encode(nil, r)
		f.Add(line)
	}
	f.Add([]byte(`{"k":"x","s":"d"}`))
	f.Add([]byte(`{"shard":1,"STEP":"cancel","shard":2}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := Decode(line)
		if err != nil {
			return
		}
		enc, err := Encode(nil, r)
		if err != nil {
			t.Fatalf("Encode(Decode(%q)) = %v", line, err)
		}
		if bytes.IndexByte(enc, '\n') != len(enc)-1 {
			t.Fatalf("Encode(%+v) = %q, not one line", r, enc)
		}
		back, err := Decode(enc)
		if err != nil || back != r {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", r, back, err)
		}
	})
}
