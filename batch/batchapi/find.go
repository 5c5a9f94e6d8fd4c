package batchapi

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

// The metadata keys every batch of a job carries, by which a rerun finds a
// batch whose create it did not journal.
const (
	MetaJob   = "llmbatch_job"
	MetaShard = "llmbatch_shard"
)

// Metadata returns the metadata of shard n's batch in the job with the
// given fingerprint: {"llmbatch_job": job, "llmbatch_shard": "<n>"}.
func Metadata(job string, n int) map[string]string {
	return map[string]string{MetaJob: job, MetaShard: strconv.Itoa(n)}
}

// Remote is a batch as the provider describes it: the fields of an
// [llm.Batch] that a shard needs (see [RemoteOf]).
type Remote struct {
	ID        string
	Status    Status
	CreatedAt int64 // Unix seconds
	Counts    Counts
	Output    string // the output file's id; "" until there is one
	Errors    string // the error file's id; "" until there is one
	Code      string // the first validation error's code, for a failed batch
	Metadata  map[string]string
}

// RemoteOf returns what a shard needs of b, a batch as llm's client
// returns it: the first validation error's code stands for all of them.
func RemoteOf(b llm.Batch) Remote {
	r := Remote{ID: b.ID, Status: b.Status, CreatedAt: b.CreatedAt, Counts: b.RequestCounts,
		Output: b.OutputFileID, Errors: b.ErrorFileID, Metadata: b.Metadata}
	if b.Errors != nil && len(b.Errors.Data) > 0 {
		r.Code = b.Errors.Data[0].Code
	}
	return r
}

// StateRecord returns the state record of shard n for the batch b read at
// now. The owner journals it when [Apply] would change the shard's status
// or counts, and applies it always.
func StateRecord(n int, b Remote, now time.Time) Record {
	return Record{Shard: n, Step: StepState, At: now.UnixMilli(), Status: b.Status,
		Total: b.Counts.Total, Completed: b.Counts.Completed, Failed: b.Counts.Failed,
		Output: b.Output, Errors: b.Errors, Code: b.Code}
}

// A Match is the batch a listing gave for a shard.
type Match struct {
	Use   Remote   // the batch the shard follows
	Stray []Remote // other batches with the same metadata that are not done: to be cancelled
	Note  string   // what was chosen and why, when there was a choice; "" when one batch matched
}

// Pick chooses, among the listed batches, the one that carries shard n of
// job in its metadata, and reports whether there is one. Two can exist
// only when a create was retried after a listing that lagged; then Pick
// takes the newest that did not fail (or, when all failed, the newest),
// returns the others still running as Stray so that they are cancelled
// rather than billed twice, and says so in Note. Its result is journaled
// as the created record (see [Match.Record]).
func Pick(job string, n int, list []Remote) (Match, bool) {
	shard := strconv.Itoa(n)
	var ours []Remote
	for _, b := range list {
		if b.ID != "" && b.Metadata[MetaJob] == job && b.Metadata[MetaShard] == shard {
			ours = append(ours, b)
		}
	}
	if len(ours) == 0 {
		return Match{}, false
	}
	// Newest first; among equals, the larger id, so that the pick does not
	// depend on the listing's order.
	slices.SortFunc(ours, func(a, b Remote) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	use := 0
	if i := slices.IndexFunc(ours, func(b Remote) bool { return b.Status != StatusFailed }); i >= 0 {
		use = i
	}
	m := Match{Use: ours[use]}
	if len(ours) == 1 {
		return m, true
	}
	var others []string
	for i, b := range ours {
		if i == use {
			continue
		}
		others = append(others, fmt.Sprintf("%s (%s)", b.ID, b.Status))
		if !b.Status.Done() {
			m.Stray = append(m.Stray, b)
		}
	}
	m.Note = fmt.Sprintf("%d batches carry shard %d's metadata: following %s (%s, the newest not failed); not %s",
		len(ours), n, m.Use.ID, m.Use.Status, strings.Join(others, ", "))
	return m, true
}

// Record returns the created record of shard n for the match found at now.
func (m Match) Record(n int, now time.Time) Record {
	return Record{Shard: n, Step: StepCreated, At: now.UnixMilli(), Batch: m.Use.ID, Status: m.Use.Status, Note: m.Note}
}
