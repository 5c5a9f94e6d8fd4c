package cmd

// preset is what a provider name stands for.
type preset struct {
	BaseURL string // OpenAI-compatible base
	KeyEnv  string // the variable its users already have; "" for none
	Model   string // a default model, when the provider has an obvious one
	NoKey   bool   // runs locally without a key
}

var presets = map[string]preset{
	"openai":   {BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY"},
	"deepseek": {BaseURL: "https://api.deepseek.com/v1", KeyEnv: "DEEPSEEK_API_KEY", Model: "deepseek-chat"},
	"doubao":   {BaseURL: "https://ark.cn-beijing.volces.com/api/v3", KeyEnv: "ARK_API_KEY"},
	"ollama":   {BaseURL: "http://localhost:11434/v1", NoKey: true},
	"vllm":     {BaseURL: "http://localhost:8000/v1", KeyEnv: "VLLM_API_KEY", NoKey: true},
	"mock":     {Model: "mock-1", NoKey: true},
}

func presetNames() []string {
	return []string{"openai", "deepseek", "doubao", "ollama", "vllm", "mock"}
}
