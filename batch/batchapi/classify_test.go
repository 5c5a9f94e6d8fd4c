package batchapi

import (
	"errors"
	"strconv"
	"testing"

	"github.com/llmbatch/llmbatch/llm"
)

const chatBody = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`

func response(status int, body string) string {
	return `{"id":"batch_req_1","custom_id":"item-1","response":{"status_code":` + strconv.Itoa(status) +
		`,"request_id":"req-9","body":` + body + `},"error":null}`
}

func lineError(code string) string {
	return `{"id":"batch_req_2","custom_id":"item-2","response":null,"error":{"code":` + code + `,"message":"This request could not be executed before the completion window expired."}}`
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Class
		kind llm.Kind // for all but Success
	}{
		{"a chat completion", response(200, chatBody), Success, 0},
		{"200 without choices", response(200, `{"object":"chat.completion","choices":[]}`), Retry, llm.Transient},
		{"200 with an error envelope", response(200, `{"error":{"message":"upstream failed"}}`), Retry, llm.Transient},
		{"400: the item is at fault", response(400, `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error"}}`), Permanent, llm.BadRequest},
		{"400 for length", response(400, `{"error":{"code":"context_length_exceeded","message":"maximum context length is 128000 tokens"}}`), Permanent, llm.TooLarge},
		{"429 rate limit", response(429, `{"error":{"code":"rate_limit_exceeded","message":"Rate limit reached"}}`), Retry, llm.RateLimited},
		{"429 spent quota", response(429, `{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}`), Halt, llm.QuotaSpent},
		{"401", response(401, `{"error":{"message":"Incorrect API key"}}`), Halt, llm.Auth},
		{"500", response(500, `{"error":{"message":"The server had an error"}}`), Retry, llm.Transient},
		{"503 with a non-JSON body", response(503, `"Service Unavailable"`), Retry, llm.Transient},
		{"batch_expired", lineError(`"batch_expired"`), Retry, llm.Transient},
		{"batch_cancelled", lineError(`"batch_cancelled"`), Retry, llm.Transient},
		{"neither response nor error", `{"id":"x","custom_id":"item-3","response":null,"error":null}`, Retry, llm.Transient},
		{"a response without a status", `{"custom_id":"item-4","response":{"body":{}}}`, Retry, llm.Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Classify([]byte(tt.line))
			if err != nil {
				t.Fatalf("Classify(%s) = %v", tt.line, err)
			}
			if got.Class != tt.want || got.CustomID == "" {
				t.Fatalf("Classify(%s) = %v %q (err %v), want %v", tt.line, got.Class, got.CustomID, got.Err, tt.want)
			}
			switch {
			case tt.want == Success && (got.Response == nil || got.Err != nil || got.Response.RequestID != "req-9"):
				t.Errorf("Classify(success) = %+v, want a response with its request id", got)
			case tt.want != Success && (got.Err == nil || got.Err.Kind != tt.kind || got.Response != nil):
				t.Errorf("Classify(%s).Err = %v, want kind %v", tt.name, got.Err, tt.kind)
			}
		})
	}
}

func TestClassifyKeepsTheAnswer(t *testing.T) {
	got, err := Classify([]byte(response(200, chatBody)))
	if err != nil || string(got.Response.Chat.Choices[0].Message.Content) != `"hi"` || got.Response.Chat.Usage.PromptTokens != 5 {
		t.Fatalf("Classify(success) = %+v, %v; want the answer and its usage", got.Response, err)
	}
}

func TestClassifyRefuses(t *testing.T) {
	for _, line := range []string{``, `nope`, `{"id":"x","response":{"status_code":200,"body":{}}}`, `[1]`,
		lineError(`500`)} { // llm reads a code as a string; such a line stays without a result

		if r, err := Classify([]byte(line)); !errors.Is(err, ErrResultLine) {
			t.Errorf("Classify(%q) = %+v, %v; want ErrResultLine", line, r, err)
		}
	}
}

// FuzzClassify: any bytes, no panic; an accepted line has its custom_id,
// one class, and a response exactly when it is a success.
func FuzzClassify(f *testing.F) {
	f.Add([]byte(response(200, chatBody)))
	f.Add([]byte(response(429, `{"error":{"code":"rate_limit_exceeded"}}`)))
	f.Add([]byte(lineError(`"batch_expired"`)))
	f.Add([]byte(`{"custom_id":"a","response":{"status_code":-1,"body":"\u001b[2J"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := Classify(line)
		if err != nil {
			return
		}
		if r.CustomID == "" || r.Class < Success || r.Class > Halt {
			t.Fatalf("Classify(%q) = %+v", line, r)
		}
		if (r.Class == Success) != (r.Response != nil) || (r.Class == Success) != (r.Err == nil) {
			t.Fatalf("Classify(%q): class %v with response %v and error %v", line, r.Class, r.Response != nil, r.Err)
		}
	})
}
