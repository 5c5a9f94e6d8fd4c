package batch

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/llmbatch/llmbatch/llm"
)

// The lines of the results and errors files (DESIGN §3).

type resultRecord struct {
	ID           string          `json:"id"`
	Output       json.RawMessage `json:"output"`
	Model        string          `json:"model,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Usage        *usage          `json:"usage,omitempty"`
	Attempts     int             `json:"attempts"`
	Merged       int             `json:"merged,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type batchRecord struct {
	ID       string        `json:"id"`
	CustomID string        `json:"custom_id"`
	Response batchResponse `json:"response"`
	Error    *struct{}     `json:"error"`
}

type batchResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

// usage is the item's part of the response's usage: all of it, or its
// share of a merged request's.
func (o *outcome) usage() *usage {
	u := o.resp.Chat.Usage
	if u == nil {
		return nil
	}
	if o.merged == 0 {
		return &usage{u.PromptTokens, u.CompletionTokens}
	}
	return &usage{apportion(u.PromptTokens, o.share), apportion(u.CompletionTokens, o.share)}
}

// resultLine is the results-file line of a success, whose usage is u.
func resultLine(o outcome, u *usage) ([]byte, error) {
	it, r := o.item, o.resp
	if it.Batch {
		// The body is re-encoded, so a pretty-printed answer still takes one line.
		body, err := json.Marshal(r.Chat)
		if err != nil {
			return nil, err
		}
		return json.Marshal(batchRecord{
			ID: "batch_req_" + strconv.FormatUint(hashID(it.ID), 16), CustomID: it.ID,
			Response: batchResponse{StatusCode: r.Status, RequestID: r.RequestID, Body: body},
		})
	}
	rec := resultRecord{ID: it.ID, Output: o.output, Model: r.Chat.Model, FinishReason: r.Chat.Choices[0].FinishReason,
		Usage: u, Attempts: o.attempts, Merged: o.merged}
	if rec.Output == nil {
		text, err := json.Marshal(r.Content())
		if err != nil {
			return nil, err
		}
		rec.Output = text
	}
	return json.Marshal(rec)
}

type errorRecord struct {
	ID       string      `json:"id,omitempty"`
	Line     int         `json:"line"`
	Error    errorDetail `json:"error"`
	Attempts int         `json:"attempts,omitempty"`
}

type errorDetail struct {
	Kind    string `json:"kind"`
	Status  int    `json:"status,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// KindInvalidInput is the errors-file kind of a rejected input line.
const KindInvalidInput = "invalid_input"

func badLine(e *LineError) errorRecord {
	return errorRecord{ID: e.ID, Line: e.Line, Error: errorDetail{Kind: KindInvalidInput, Message: e.Err.Error()}}
}

func failedLine(it *Item, err error, attempts int) errorRecord {
	rec := errorRecord{ID: it.ID, Line: it.Line, Attempts: attempts}
	var ae *llm.APIError
	if errors.As(err, &ae) {
		rec.Error = errorDetail{Kind: ae.Kind.String(), Status: ae.Status, Code: ae.Code, Message: ae.Message}
	} else {
		rec.Error = errorDetail{Kind: "error", Message: err.Error()}
	}
	return rec
}
