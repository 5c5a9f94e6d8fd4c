package mock

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkHandler measures one chat completion through ServeHTTP, without
// sockets: decode, admit, answer, encode.
func BenchmarkHandler(b *testing.B) {
	plain := `{"model":"mock-1","messages":[{"role":"system","content":"Classify the ticket as billing, bug or other."},` +
		`{"role":"user","content":"Classify: my card was charged twice for the same order and support does not answer"}],"max_tokens":16}`
	var items []string
	for i := range 20 {
		items = append(items, fmt.Sprintf(`{"id":"%d","input":"ticket number %d: the app crashes on start"}`, i, i))
	}
	merged := fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"response_format":{"type":"json_object"}}`,
		"Answer each item. Items:\n["+strings.Join(items, ",")+"]")
	cases := []struct {
		name string
		cfg  Config
		body string
	}{
		{"plain", Config{}, plain},
		{"limits", Config{RPM: 1 << 30, TPM: 1 << 40, FailRate: 1e-9, Quota: 1 << 40}, plain},
		{"merged20", Config{}, merged},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			h := New(c.cfg)
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(c.body))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkHandlerParallel is BenchmarkHandler's plain case from every
// processor at once, to show contention on the handler's mutex.
func BenchmarkHandlerParallel(b *testing.B) {
	body := `{"messages":[{"role":"user","content":"Classify: my card was charged twice"}]}`
	h := New(Config{RPM: 1 << 30})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)))
			if rec.Code != 200 {
				b.Errorf("status %d", rec.Code)
				return
			}
		}
	})
}

// BenchmarkServer sends chat completions over loopback to a started Server
// from every processor at once, with kept-alive connections: the mock's
// share of a run's cost per request, client side included.
func BenchmarkServer(b *testing.B) {
	s, err := Start(Config{RPM: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	body := `{"messages":[{"role":"user","content":"Classify: my card was charged twice"}]}`
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
