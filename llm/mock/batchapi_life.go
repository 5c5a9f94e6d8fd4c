package mock

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/llmbatch/llmbatch/llm"
)

// batchJob is one batch. Its state is not stored but worked out from the
// time (see [BatchConfig]); only a cancel, and the files written once the
// batch is done, change it.
type batchJob struct {
	n        int // the job's number, 1 for the first
	obj      llm.Batch
	lines    []jobLine // in the order they finish
	failures []int32   // failures[k]: lines of lines[:k] that fail
	invalid  []llm.BatchError
	cfg      BatchConfig
	created  time.Time
	cancelAt time.Time // zero unless cancelled
	written  bool      // the output and error files exist
}

// jobLine is one request of a batch and how it is to end.
type jobLine struct {
	customID string
	body     []byte
	status   int      // 200; 400 for a body that is no chat request; 500, 502 or 503 injected
	asError  bool     // an injected fault shown as an error object, with no response
	bad      apiError // why a 400
}

// newJob builds the batch n of the request lines of a file. Lines are
// judged as online requests would be; the faults and the order they finish
// in are drawn from seed and n, so a run is the same each time.
func newJob(n int, obj llm.Batch, lines []fileLine, cfg BatchConfig, seed uint64, created time.Time) *batchJob {
	j := &batchJob{n: n, obj: obj, cfg: cfg, created: created, lines: make([]jobLine, len(lines))}
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	model := ""
	for i, fl := range lines {
		l := jobLine{customID: fl.customID, body: fl.body, status: http.StatusOK}
		req, status, bad := parseChat(fl.body)
		switch {
		case fl.url != obj.Endpoint:
			j.fault(i, "invalid_url", "The url %q does not match the batch's endpoint %q.", fl.url, obj.Endpoint)
		case status != 0:
			l.status, l.bad = status, bad
		case model != "" && req.Model != model:
			j.fault(i, "mismatched_model", "The model %q differs from the file's first, %q: a batch takes one model.", req.Model, model)
		case rng.Float64() < cfg.FailRate:
			l.status, l.asError = faultStatuses[rng.IntN(len(faultStatuses))], rng.IntN(4) == 0
		}
		if req != nil && model == "" {
			model = req.Model
		}
		j.lines[i] = l
	}
	rng.Shuffle(len(j.lines), func(a, b int) { j.lines[a], j.lines[b] = j.lines[b], j.lines[a] })
	j.failures = make([]int32, len(j.lines)+1)
	for k, l := range j.lines {
		j.failures[k+1] = j.failures[k]
		if l.status != http.StatusOK {
			j.failures[k+1]++
		}
	}
	return j
}

var unfinishedMessages = map[string]string{
	"batch_expired":   "This request could not be executed before the completion window expired.",
	"batch_cancelled": "This request was not executed: the batch was cancelled.",
}

var faultStatuses = []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}

// maxInvalid bounds the validation errors a failed batch lists.
const maxInvalid = 10

// fault records that input line i (0-based) makes the batch fail validation.
func (j *batchJob) fault(i int, code, format string, args ...any) {
	if len(j.invalid) < maxInvalid {
		e := invalid("", format, args...)
		j.invalid = append(j.invalid, llm.BatchError{Code: code, Message: e.Message, Line: i + 1})
	}
}

// The instants of a batch's life that do not depend on a cancel.
func (j *batchJob) validated() time.Time { return j.created.Add(j.cfg.Delay) }
func (j *batchJob) running() time.Duration {
	return j.cfg.Delay + time.Duration(len(j.lines))*j.cfg.LineTime
}
func (j *batchJob) finalizing() time.Time { return j.validated().Add(j.running()) }
func (j *batchJob) completed() time.Time  { return j.finalizing().Add(j.cfg.Delay) }
func (j *batchJob) expires() time.Time    { return j.created.Add(j.cfg.Expire) }

// ends returns when the batch ends unless expired or cancelled: it fails
// after validating, or completes.
func (j *batchJob) ends() time.Time {
	if j.invalid != nil {
		return j.validated()
	}
	return j.completed()
}

// finishedBy returns how many lines have finished at t: they finish evenly
// spread over in_progress, the last as it ends.
func (j *batchJob) finishedBy(t time.Time) int {
	n := len(j.lines)
	switch {
	case j.invalid != nil || t.Before(j.validated()):
		return 0
	case !t.Before(j.finalizing()):
		return n
	}
	f := float64(t.Sub(j.validated())) / float64(j.running()) * float64(n)
	return min(max(int(math.Floor(f)), 0), n)
}

// state returns the batch's status at t and how many of its lines are
// done for good then: finished, and (for an expired or cancelled batch)
// kept.
func (j *batchJob) state(t time.Time) (llm.BatchStatus, int) {
	switch {
	case !j.cancelAt.IsZero():
		done := j.finishedBy(j.cancelAt)
		if t.Before(j.cancelAt.Add(j.cfg.Delay)) {
			return llm.BatchCancelling, done
		}
		return llm.BatchCancelled, done
	case j.expires().Before(j.ends()) && !t.Before(j.expires()):
		return llm.BatchExpired, j.finishedBy(j.expires())
	case t.Before(j.validated()):
		return llm.BatchValidating, 0
	case j.invalid != nil:
		return llm.BatchFailed, 0
	case t.Before(j.finalizing()):
		return llm.BatchInProgress, j.finishedBy(t)
	case t.Before(j.completed()):
		return llm.BatchFinalizing, len(j.lines)
	}
	return llm.BatchCompleted, len(j.lines)
}

// view returns the batch as it is at t, writing its output and error files
// into s first when it has just become done. The caller holds s.mu.
func (s *batchStore) view(h *Handler, j *batchJob, t time.Time) llm.Batch {
	status, done := j.state(t)
	if status.Done() && !j.written {
		s.writeOutput(h, j, status, done)
	}
	b := j.obj
	b.Status = status
	stamp := func(at *int64, when time.Time, happened bool) {
		if happened && !t.Before(when) {
			*at = when.Unix()
		}
	}
	end := t // what happened up to a cancel or expiry happened; nothing after
	if !j.cancelAt.IsZero() {
		end = j.cancelAt
	} else if status == llm.BatchExpired {
		end = j.expires()
	}
	valid := j.invalid == nil
	stamp(&b.InProgressAt, j.validated(), valid && !end.Before(j.validated()))
	stamp(&b.FinalizingAt, j.finalizing(), valid && !end.Before(j.finalizing()))
	stamp(&b.CompletedAt, j.completed(), status == llm.BatchCompleted)
	stamp(&b.FailedAt, j.validated(), status == llm.BatchFailed)
	stamp(&b.ExpiredAt, j.expires(), status == llm.BatchExpired)
	stamp(&b.CancellingAt, j.cancelAt, !j.cancelAt.IsZero())
	stamp(&b.CancelledAt, j.cancelAt.Add(j.cfg.Delay), status == llm.BatchCancelled)
	if status == llm.BatchFailed {
		b.Errors = &llm.BatchErrors{Object: "list", Data: j.invalid}
	}
	if unfinished := unfinishedCode(j, status) != ""; b.InProgressAt != 0 || unfinished {
		b.RequestCounts.Total = len(j.lines)
		b.RequestCounts.Failed = int(j.failures[done])
		b.RequestCounts.Completed = done - b.RequestCounts.Failed
		if unfinished {
			b.RequestCounts.Failed += len(j.lines) - done
		}
	}
	return b
}

// unfinishedCode returns the error code of the lines j did not finish, in
// status, when they go to its error file; "" when they go nowhere.
func unfinishedCode(j *batchJob, status llm.BatchStatus) string {
	switch {
	case !j.cfg.Unfinished:
		return ""
	case status == llm.BatchExpired:
		return "batch_expired"
	case status == llm.BatchCancelled:
		return "batch_cancelled"
	}
	return ""
}

// writeOutput writes the first done lines of j, answered, into an output
// file (successes) and an error file (the rest, and with
// [BatchConfig.Unfinished] the lines not done), each made only when it has
// a line. The caller holds s.mu.
func (s *batchStore) writeOutput(h *Handler, j *batchJob, status llm.BatchStatus, done int) {
	var out, errs []byte
	if code := unfinishedCode(j, status); code != "" {
		for k, l := range j.lines[done:] {
			b, _ := json.Marshal(llm.BatchResultLine{ID: "batch_req_mock_" + strconv.Itoa(j.n) + "_" + strconv.Itoa(done+k+1),
				CustomID: l.customID, Error: &llm.BatchLineError{Code: code, Message: unfinishedMessages[code]}})
			errs = append(append(errs, b...), '\n')
		}
		s.stats.Lines += int64(len(j.lines) - done)
	}
	for k, l := range j.lines[:done] {
		line := h.answerLine(j, k, l)
		b, err := json.Marshal(line)
		if err != nil { // cannot happen: every body was checked as JSON
			continue
		}
		if l.status == http.StatusOK {
			out = append(append(out, b...), '\n')
		} else {
			errs = append(append(errs, b...), '\n')
		}
	}
	name := j.obj.ID + "_output.jsonl"
	if out != nil {
		j.obj.OutputFileID = s.addFile(name, "batch_output", out).obj.ID
	}
	if errs != nil {
		j.obj.ErrorFileID = s.addFile(j.obj.ID+"_error.jsonl", "batch_output", errs).obj.ID
	}
	s.stats.Lines += int64(done)
	j.written = true
}

// answerLine returns the result line of line l, the k-th of j to finish:
// the answer the online mock gives its body, or its error.
func (h *Handler) answerLine(j *batchJob, k int, l jobLine) llm.BatchResultLine {
	suffix := strconv.Itoa(j.n) + "_" + strconv.Itoa(k+1)
	line := llm.BatchResultLine{ID: "batch_req_mock_" + suffix, CustomID: l.customID}
	resp := &llm.BatchResponse{StatusCode: l.status, RequestID: "req_mock_" + suffix}
	switch {
	case l.status == http.StatusOK:
		req, _, _ := parseChat(l.body) // checked by newJob
		prompt, last := readMessages(req.Messages)
		model := req.Model
		if model == "" {
			model = h.cfg.Model
		}
		resp.Body, _ = json.Marshal(h.complete(req, model, last, prompt))
	case l.asError:
		line.Error = &llm.BatchLineError{Code: faultErrors[l.status].Code, Message: faultErrors[l.status].Message}
		return line
	case l.status == http.StatusBadRequest:
		resp.Body = errorBody(l.bad)
	default:
		resp.Body = errorBody(faultErrors[l.status])
	}
	line.Response = resp
	return line
}

// errorBody returns e as the JSON of an OpenAI error body, as writeError
// sends it.
func errorBody(e apiError) json.RawMessage {
	var body llm.ErrorBody
	body.Error.Message, body.Error.Type, body.Error.Param = e.Message, e.Type, e.Param
	body.Error.Code = json.RawMessage("null")
	if e.Code != "" {
		body.Error.Code, _ = json.Marshal(e.Code)
	}
	b, _ := json.Marshal(&body) // strings always marshal
	return b
}
