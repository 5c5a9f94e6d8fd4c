package mock_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llmbatch/llmbatch/llm/mock"
)

func ExampleAnswer() {
	fmt.Println(mock.Answer("Classify: my card was charged twice"))
	// Output: echo: Classify: my card was charged twice
}

func ExampleStart() {
	s, err := mock.Start(mock.Config{Model: "mock-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	resp, err := http.Post(s.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"content":"echo: hi"`))
	// Output: 200 true
}

func ExampleParseOptions() {
	cfg, err := mock.ParseOptions("latency=20ms,rpm=1200,fail=0.05,seed=1")
	fmt.Println(cfg.Latency, cfg.RPM, cfg.FailRate, cfg.Seed, err)
	// Output: 20ms 1200 0.05 1 <nil>
}
