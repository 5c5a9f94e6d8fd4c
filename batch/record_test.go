package batch

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"text/template"
)

func TestShape(t *testing.T) {
	seven := 7
	half := 0.5
	s := &recordShaper{model: "m1", system: "be brief", maxTokens: &seven, temperature: &half}
	tests := []struct {
		name   string
		line   string
		id     string
		batch  bool
		body   map[string]any // fields of the request body to check
		system string         // the first message when it is a system one
	}{
		{name: "prompt", line: `{"id":"a","prompt":"hi"}`, id: "a",
			body: map[string]any{"model": "m1", "max_tokens": 7.0, "temperature": 0.5}, system: "be brief"},
		{name: "integer id", line: `{"id":42,"prompt":"hi"}`, id: "42"},
		{name: "record model and params win", line: `{"id":"b","prompt":"hi","model":"m2","params":{"max_tokens":3,"top_p":0.9}}`, id: "b",
			body: map[string]any{"model": "m2", "max_tokens": 3.0, "top_p": 0.9, "temperature": 0.5}},
		{name: "record system wins", line: `{"id":"c","prompt":"hi","system":"be long"}`, id: "c", system: "be long"},
		{name: "messages", line: `{"id":"d","messages":[{"role":"system","content":"mine"},{"role":"user","content":"x"}]}`, id: "d", system: "mine"},
		{name: "batch line", line: `{"custom_id":"r-1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt","messages":[{"role":"user","content":"x"}],"seed":3}}`,
			id: "r-1", batch: true, body: map[string]any{"model": "gpt", "seed": 3.0}},
		{name: "batch line without model takes the default", line: `{"custom_id":"r-2","body":{"messages":[{"role":"user","content":"x"}]}}`,
			id: "r-2", batch: true, body: map[string]any{"model": "m1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, id, err := s.shape([]byte(tt.line))
			if err != nil {
				t.Fatalf("shape(%s) error = %v", tt.line, err)
			}
			if id != tt.id || it.ID != tt.id || it.Batch != tt.batch {
				t.Errorf("shape(%s) = id %q batch %v, want %q %v", tt.line, it.ID, it.Batch, tt.id, tt.batch)
			}
			var body map[string]any
			if err := json.Unmarshal(it.Body, &body); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			for k, want := range tt.body {
				if body[k] != want {
					t.Errorf("body[%q] = %v, want %v", k, body[k], want)
				}
			}
			msgs := body["messages"].([]any)
			first := msgs[0].(map[string]any)
			if tt.system != "" && (first["role"] != "system" || first["content"] != tt.system) {
				t.Errorf("first message = %v, want system %q", first, tt.system)
			}
			if it.Tokens <= 0 {
				t.Errorf("Tokens = %d, want > 0", it.Tokens)
			}
		})
	}
}

func TestShapeRejects(t *testing.T) {
	s := &recordShaper{model: "m"}
	tests := []struct {
		name string
		line string
		want error
	}{
		{"not json", `{"id":1,`, ErrNotJSON},
		{"array", `[1,2]`, ErrNotJSON},
		{"null", `null`, ErrNotJSON},
		{"nul byte", "{\"id\":1,\"prompt\":\"a\x00b\"}", ErrNotJSON},
		{"invalid utf-8", "{\"id\":1,\"prompt\":\"\xff\xfe\"}", ErrBadUTF8},
		{"no prompt", `{"id":1}`, ErrNoPrompt},
		{"empty prompt", `{"id":1,"prompt":""}`, ErrNoPrompt},
		{"empty messages", `{"id":1,"messages":[]}`, ErrNoPrompt},
		{"float id", `{"id":1.5,"prompt":"a"}`, ErrBadID},
		{"object id", `{"id":{"a":1},"prompt":"a"}`, ErrBadID},
		{"null id", `{"id":null,"prompt":"a"}`, ErrBadID},
		{"empty id", `{"id":"","prompt":"a"}`, ErrBadID},
		{"batch without custom_id", `{"body":{"messages":[{"role":"user","content":"x"}]}}`, ErrBadID},
		{"batch other endpoint", `{"custom_id":"x","url":"/v1/embeddings","body":{"input":"x"}}`, ErrNoPrompt},
		{"deeply nested", `{"id":1,"prompt":"a","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, ErrNotJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := s.shape([]byte(tt.line))
			if !errors.Is(err, tt.want) {
				t.Errorf("shape(%.60s) error = %v, want %v", tt.line, err, tt.want)
			}
		})
	}
	if _, _, err := (&recordShaper{}).shape([]byte(`{"id":1,"prompt":"a"}`)); !errors.Is(err, ErrNoModel) {
		t.Errorf("shape without any model: error = %v, want ErrNoModel", err)
	}
}

func TestShapeDerivedIDIsStable(t *testing.T) {
	s := &recordShaper{model: "m"}
	a, _, _ := s.shape([]byte(`{"prompt":"same"}`))
	b, _, _ := s.shape([]byte(`{"prompt":"same"}`))
	c, _, _ := s.shape([]byte(`{"prompt":"other"}`))
	if a.ID != b.ID || a.ID == c.ID || !strings.HasPrefix(a.ID, "sha256:") {
		t.Errorf("derived ids %q %q %q: want equal for equal lines, different otherwise", a.ID, b.ID, c.ID)
	}
}

func TestShapeTemplate(t *testing.T) {
	tmpl := template.Must(template.New("p").Option("missingkey=error").Parse("Classify: {{.text}} ({{.n}})"))
	s := &recordShaper{model: "m", tmpl: tmpl}
	it, _, err := s.shape([]byte(`{"id":"a","text":"hello","n":12345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(it.Body), `Classify: hello (12345678901234567890)`) {
		t.Errorf("body %s does not hold the rendered prompt", it.Body)
	}
	if _, _, err := s.shape([]byte(`{"id":"b","other":"x"}`)); !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "text") {
		t.Errorf("missing field: error = %v, want ErrTemplate naming the field", err)
	}
}
