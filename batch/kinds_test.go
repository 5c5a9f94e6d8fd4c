package batch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/llmbatch/llmbatch/llm"
)

// modelServer answers every model but "gone", for which it gives refusal.
func modelServer(status int, refusal string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req llm.ChatRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Model == "gone" {
			w.WriteHeader(status)
			fmt.Fprint(w, refusal)
			return
		}
		fmt.Fprintf(w, `{"model":%q,"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`, req.Model)
	})
}

// TestRunModelNotFound: however a provider says the model is unknown, the
// item goes to the fallback model; without one, it fails with the kind
// model_not_found and the server's status, code and message.
func TestRunModelNotFound(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
	}{
		{"DeepSeek", `{"error":{"message":"Model Not Exist","type":"invalid_request_error","code":"invalid_request_error"}}`, 400},
		{"Ollama", `{"error":"model \"gone\" not found, try pulling it first"}`, 404},
		{"vLLM", `{"object":"error","message":"The model ` + "`gone`" + ` does not exist.","type":"NotFoundError","code":404}`, 404},
		{"Ark", `{"error":{"code":"InvalidEndpointOrModel.NotFound","message":"The model or endpoint gone does not exist or you do not have access to it."}}`, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(t, modelServer(tt.status, tt.body), prompts(2)...)
			sum, err := j.run(func(c *Config) { c.Model, c.Fallbacks = "gone", []string{"backup"} })
			if err != nil || sum.Done != 2 {
				t.Fatalf("Run() with a fallback = %+v, %v; want 2 done on backup", sum, err)
			}
			j = newJob(t, modelServer(tt.status, tt.body), prompts(1)...)
			if sum, err := j.run(func(c *Config) { c.Model = "gone" }); err != nil || sum.Failed != 1 {
				t.Fatalf("Run() without a fallback = %+v, %v; want 1 failed", sum, err)
			}
			errs := lines(t, ErrorsPath(j.out()))
			if len(errs) != 1 {
				t.Fatalf("errors file holds %v, want one line", errs)
			}
			e := errs[0]["error"].(map[string]any)
			if e["kind"] != "model_not_found" || e["status"] != float64(tt.status) || e["message"] == "" {
				t.Errorf("errors line %v: want kind model_not_found, status %d and the server's message", e, tt.status)
			}
		})
	}
}
