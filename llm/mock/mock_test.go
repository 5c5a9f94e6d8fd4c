package mock

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmbatch/llmbatch/llm"
)

// newServer serves New(cfg) on an httptest server closed at cleanup.
func newServer(t *testing.T, cfg Config) (*httptest.Server, *Handler) {
	t.Helper()
	h := New(cfg)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, h
}

// reply is a response read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with body (none when empty) and the given header pairs.
func do(t *testing.T, method, url, body string, header ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// chatBody returns a chat request body with one user message.
func chatBody(t *testing.T, prompt string, extra map[string]any) string {
	t.Helper()
	m := map[string]any{"messages": []llm.Message{llm.TextMessage("user", prompt)}}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func decodeChat(t *testing.T, r reply) llm.ChatResponse {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var resp llm.ChatResponse
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("got %d choices, want 1: %s", len(resp.Choices), r.body)
	}
	return resp
}

func decodeError(t *testing.T, r reply) llm.ErrorBody {
	t.Helper()
	var e llm.ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("body %s is not an OpenAI-style error (%v)", r.body, err)
	}
	return e
}

func code(e llm.ErrorBody) string {
	var s string
	_ = json.Unmarshal(e.Error.Code, &s)
	return s
}

func TestPlainAnswer(t *testing.T) {
	srv, h := newServer(t, Config{})
	long := strings.Repeat("é", 150) // 300 bytes
	tests := []struct {
		name       string
		path       string
		body       string
		model      string
		content    string
		finish     string
		prompt     int
		completion int
	}{
		{"short", "/v1/chat/completions", chatBody(t, "hello world!", nil), DefaultModel, "echo: hello world!", "stop", 3, 4},
		{"model echoed", "/chat/completions", chatBody(t, "hi", map[string]any{"model": "m-9"}), "m-9", "echo: hi", "stop", 1, 2},
		{"cut at 200 bytes", "/v1/chat/completions", chatBody(t, long, nil), DefaultModel, "echo: " + strings.Repeat("é", 100), "stop", 37, 26},
		{
			name: "last user message of several, parts joined",
			path: "/v1/chat/completions",
			body: `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"first"},` +
				`{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
			model: DefaultModel, content: "echo: a\nb", finish: "stop", prompt: 4, completion: 2,
		},
		{"max_tokens cuts", "/v1/chat/completions", chatBody(t, strings.Repeat("x", 40), map[string]any{"max_tokens": 3}),
			DefaultModel, "echo: xxxxxx", "length", 10, 3},
		{"max_tokens large enough", "/v1/chat/completions", chatBody(t, "abc", map[string]any{"max_tokens": 2}),
			DefaultModel, "echo: abc", "stop", 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := decodeChat(t, do(t, "POST", srv.URL+tt.path, tt.body))
			if !strings.HasPrefix(resp.ID, "chatcmpl-mock-") || resp.Object != "chat.completion" || resp.Created == 0 {
				t.Errorf("id, object, created = %q, %q, %d", resp.ID, resp.Object, resp.Created)
			}
			if resp.Model != tt.model {
				t.Errorf("model = %q, want %q", resp.Model, tt.model)
			}
			c := resp.Choices[0]
			if got := llm.TextContent(c.Message.Content); got != tt.content || c.Message.Role != "assistant" {
				t.Errorf("message = %s %q, want assistant %q", c.Message.Role, got, tt.content)
			}
			if c.FinishReason != tt.finish {
				t.Errorf("finish_reason = %q, want %q", c.FinishReason, tt.finish)
			}
			want := llm.Usage{PromptTokens: tt.prompt, CompletionTokens: tt.completion, TotalTokens: tt.prompt + tt.completion}
			if resp.Usage == nil || *resp.Usage != want {
				t.Errorf("usage = %+v, want %+v", resp.Usage, want)
			}
		})
	}
	if s := h.Stats(); s.OK != int64(len(tests)) || s.Requests != int64(len(tests)) {
		t.Errorf("Stats() = %+v, want %d requests and OK", s, len(tests))
	}
}

func TestIDsDistinct(t *testing.T) {
	srv, _ := newServer(t, Config{})
	seen := make(map[string]bool)
	for range 3 {
		id := decodeChat(t, do(t, "POST", srv.URL+"/v1/chat/completions", chatBody(t, "x", nil))).ID
		if seen[id] {
			t.Errorf("id %q given twice", id)
		}
		seen[id] = true
	}
}

func TestMergedAnswer(t *testing.T) {
	srv, _ := newServer(t, Config{})
	jsonMode := map[string]any{"response_format": map[string]string{"type": "json_object"}}
	items := `[{"id":"a","input":"one"},{"id":7,"input":"zwei ü"},{"id":"c","input":""}]`
	want := `{"results":[{"id":"a","output":"echo: one"},{"id":7,"output":"echo: zwei ü"},{"id":"c","output":"echo: "}]}`
	prose := "Answer each item [in order] as JSON. Items:\n" + items + "\nThanks [really]."
	tests := []struct {
		name  string
		text  string
		extra map[string]any
		want  string
	}{
		{"bare array", items, jsonMode, want},
		{"array in prose", prose, jsonMode, want},
		{"decoy arrays first", `see [1,2] and [{"x":1}] then ` + items, jsonMode, want},
		{"not json mode", prose, nil, Answer(prose)},
		{"no array", "no items here [{]", jsonMode, Answer("no items here [{]")},
		{"items lack input", `[{"id":"a"}]`, jsonMode, Answer(`[{"id":"a"}]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := decodeChat(t, do(t, "POST", srv.URL+"/v1/chat/completions", chatBody(t, tt.text, tt.extra)))
			if got := llm.TextContent(resp.Choices[0].Message.Content); got != tt.want {
				t.Errorf("content = %s\nwant      %s", got, tt.want)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	srv, h := newServer(t, Config{})
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
		code   string
	}{
		{"not JSON", "POST", "/v1/chat/completions", "hello", 400, "invalid_json"},
		{"truncated JSON", "POST", "/v1/chat/completions", `{"messages":[`, 400, "invalid_json"},
		{"array body", "POST", "/v1/chat/completions", `[]`, 400, "invalid_json"},
		{"empty body", "POST", "/v1/chat/completions", "", 400, "invalid_json"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"x"}`, 400, "missing_required_parameter"},
		{"empty messages", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "missing_required_parameter"},
		{"max_tokens 0", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":0}`, 400, "integer_below_min_value"},
		{"wrong method", "GET", "/v1/chat/completions", "", 405, "method_not_allowed"},
		{"models wrong method", "POST", "/v1/models", "{}", 405, "method_not_allowed"},
		{"unknown path", "POST", "/v1/completions", "{}", 404, "unknown_url"},
		{"root", "GET", "/", "", 404, "unknown_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tt.method, srv.URL+tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("%s %s = %d, want %d; body %s", tt.method, tt.path, r.status, tt.status, r.body)
			}
			e := decodeError(t, r)
			if code(e) != tt.code || e.Error.Type != "invalid_request_error" {
				t.Errorf("type, code = %q, %q, want invalid_request_error, %q", e.Error.Type, code(e), tt.code)
			}
		})
	}
	if s := h.Stats(); s.BadRequests != int64(len(tests)) || s.OK != 0 {
		t.Errorf("Stats() = %+v, want %d bad requests", s, len(tests))
	}
}

func TestModels(t *testing.T) {
	srv, _ := newServer(t, Config{Model: "m-1"})
	r := do(t, "GET", srv.URL+"/v1/models", "")
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != 200 {
		t.Fatalf("GET /v1/models = %d %s (%v)", r.status, r.body, err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "m-1" || list.Data[0].Object != "model" {
		t.Errorf("GET /v1/models = %s, want a list holding m-1", r.body)
	}
}

func TestAuth(t *testing.T) {
	const key = "sk-mock-secret"
	srv, h := newServer(t, Config{APIKey: key})
	body := chatBody(t, "hi", nil)
	tests := []struct {
		name   string
		header []string
		status int
	}{
		{"no header", nil, 401},
		{"wrong key", []string{"Authorization", "Bearer sk-wrong-guess"}, 401},
		{"no Bearer", []string{"Authorization", key}, 401},
		{"key prefix", []string{"Authorization", "Bearer " + key[:5]}, 401},
		{"right key", []string{"Authorization", "Bearer " + key}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, "POST", srv.URL+"/v1/chat/completions", body, tt.header...)
			if r.status != tt.status {
				t.Fatalf("status = %d, want %d; body %s", r.status, tt.status, r.body)
			}
			if r.status != 401 {
				return
			}
			if e := decodeError(t, r); code(e) != "invalid_api_key" || e.Error.Type != "invalid_request_error" {
				t.Errorf("error = %+v, want invalid_api_key", e.Error)
			}
			if strings.Contains(string(r.body), "sk-") {
				t.Errorf("401 body %s echoes a key", r.body)
			}
		})
	}
	if r := do(t, "GET", srv.URL+"/v1/models", ""); r.status != 401 {
		t.Errorf("GET /v1/models without key = %d, want 401", r.status)
	}
	if s := h.Stats(); s.Unauthorized != 5 || s.OK != 1 {
		t.Errorf("Stats() = %+v, want 5 unauthorized, 1 OK", s)
	}
}

func TestFailRate(t *testing.T) {
	const n = 2000
	run := func() (fails int, statuses map[int]int) {
		h := New(Config{FailRate: 0.1, Seed: 42})
		statuses = make(map[int]int)
		for range n {
			rec := serve(h, chatBody(t, "x", nil))
			statuses[rec.Code]++
			if rec.Code != 200 {
				fails++
				if e := decodeError(t, reply{rec.Code, rec.Header(), rec.Body.Bytes()}); e.Error.Type != "server_error" {
					t.Errorf("fault type = %q, want server_error", e.Error.Type)
				}
			}
		}
		if s := h.Stats(); s.Failed != int64(fails) || s.OK != int64(n-fails) {
			t.Errorf("Stats() = %+v, want %d failed", s, fails)
		}
		return fails, statuses
	}
	fails, statuses := run()
	if fails < n*7/100 || fails > n*13/100 {
		t.Errorf("%d of %d requests failed with FailRate 0.1", fails, n)
	}
	for _, s := range faults {
		if statuses[s] == 0 {
			t.Errorf("no %d among the faults: %v", s, statuses)
		}
	}
	if again, _ := run(); again != fails {
		t.Errorf("same seed gave %d faults, then %d", fails, again)
	}
}

func TestQuota(t *testing.T) {
	srv, h := newServer(t, Config{Quota: 3})
	body := chatBody(t, "x", nil)
	for i := range 5 {
		r := do(t, "POST", srv.URL+"/v1/chat/completions", body)
		if i < 3 {
			decodeChat(t, r)
			continue
		}
		if r.status != 429 {
			t.Fatalf("request %d: status = %d, want 429", i+1, r.status)
		}
		if e := decodeError(t, r); code(e) != "insufficient_quota" {
			t.Errorf("request %d: code = %q, want insufficient_quota", i+1, code(e))
		}
	}
	if s := h.Stats(); s.OK != 3 || s.QuotaSpent != 2 {
		t.Errorf("Stats() = %+v, want 3 OK, 2 quota spent", s)
	}
}

// TestConcurrentLimits hammers one handler from many goroutines: exactly RPM
// requests are answered in the (minute-long) window, and Quota holds.
func TestConcurrentLimits(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   int64
	}{
		{"rpm", Config{RPM: 25}, 25},
		{"quota", Config{Quota: 17}, 17},
		{"quota under faults", Config{Quota: 17, FailRate: 0.3, Seed: 3}, 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, h := newServer(t, tt.cfg)
			body := chatBody(t, "x", nil)
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 15 {
						do(t, "POST", srv.URL+"/v1/chat/completions", body)
					}
				})
			}
			wg.Wait()
			s := h.Stats()
			if s.OK != tt.ok || s.Requests != 120 || s.OK+s.RateLimited+s.QuotaSpent+s.Failed != 120 {
				t.Errorf("Stats() = %+v, want %d OK of 120", s, tt.ok)
			}
		})
	}
}
