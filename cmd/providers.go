package cmd

import "time"

// preset is what a provider name stands for. Every preset speaks JSON mode
// for merged requests; a server that refuses it is detected at the first
// refusal and merged requests go on without it.
type preset struct {
	BaseURL string        // OpenAI-compatible base
	KeyEnv  string        // the variable its users already have; "" for none
	Model   string        // a default model, when the provider has an obvious one
	NoKey   bool          // runs locally without a key
	Timeout time.Duration // one attempt, when --timeout is not given: long answers and busy servers take minutes
}

var presets = map[string]preset{
	"openai": {BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY", Timeout: 10 * time.Minute},
	// DeepSeek holds a request for many minutes under load, sending blank
	// keep-alive lines until it answers.
	"deepseek": {BaseURL: "https://api.deepseek.com/v1", KeyEnv: "DEEPSEEK_API_KEY", Model: "deepseek-chat", Timeout: 15 * time.Minute},
	"doubao":   {BaseURL: "https://ark.cn-beijing.volces.com/api/v3", KeyEnv: "ARK_API_KEY", Timeout: 10 * time.Minute},
	"ollama":   {BaseURL: "http://localhost:11434/v1", NoKey: true, Timeout: 10 * time.Minute},
	"vllm":     {BaseURL: "http://localhost:8000/v1", KeyEnv: "VLLM_API_KEY", NoKey: true, Timeout: 10 * time.Minute},
	"mock":     {Model: "mock-1", NoKey: true},
}

func presetNames() []string {
	return []string{"openai", "deepseek", "doubao", "ollama", "vllm", "mock"}
}
