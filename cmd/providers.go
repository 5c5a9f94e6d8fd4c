package cmd

import (
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

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

// endpoint is where and as whom requests go.
type endpoint struct {
	baseURL string
	keys    []string
}

// resolveEndpoint reads the key from the environment and, for the mock
// provider with no --base-url, starts it on loopback; the returned func
// stops it. A dry run sends nothing, so it has no endpoint and needs no key.
func resolveEndpoint(opts *RunOptions, log *slog.Logger) (endpoint, func(), error) {
	none := func() {}
	if opts.DryRun {
		return endpoint{}, none, nil
	}
	ep, closeEP := endpoint{baseURL: opts.BaseURL}, none
	if opts.Provider == "mock" && opts.BaseURL == "" {
		mcfg, err := mock.ParseOptions(opts.MockOpts)
		if err != nil {
			return endpoint{}, none, usageErr("--mock: %v", err)
		}
		srv, err := mock.Start(mcfg)
		if err != nil {
			return endpoint{}, none, err
		}
		ep.baseURL, closeEP = srv.URL, func() { srv.Close() }
	}
	if ep.baseURL == "" {
		return endpoint{}, none, usageErr("no endpoint: give --provider (%s) or --base-url", strings.Join(presetNames(), ", "))
	}
	keys, err := apiKeys(opts, presets[opts.Provider])
	if err != nil {
		closeEP()
		return endpoint{}, none, err
	}
	ep.keys = keys
	if len(keys) > 0 && plainRemote(ep.baseURL) {
		log.Warn("the API key is sent over plain http to a remote host; use https", "base_url", llm.Redact(ep.baseURL))
	}
	return ep, closeEP, nil
}

// apiKeys reads the key from the first variable set among --api-key-env,
// LLMBATCH_API_KEY and the provider's usual one. The key is never a flag.
//
// --api-key-env A,B,C names several variables: every one must be set, and
// the keys are rotated (a key that gets a 429 rests, one that is refused is
// dropped).
func apiKeys(opts *RunOptions, p preset) ([]string, error) {
	if opts.APIKeyEnv != "" {
		var keys []string
		for _, name := range strings.Split(opts.APIKeyEnv, ",") {
			name = strings.TrimSpace(name)
			if !envName(name) {
				// Not echoed: what is pasted here by mistake is often the key itself.
				return nil, usageErr("--api-key-env takes the names of environment variables (letters, digits, _), " +
					"not a key: export the key in a variable and give its name")
			}
			k := strings.TrimSpace(opts.Getenv(name))
			if k == "" {
				return nil, usageErr("--api-key-env %s: that environment variable is empty or unset", name)
			}
			keys = append(keys, k)
		}
		return keys, nil
	}
	names := []string{"LLMBATCH_API_KEY"}
	if p.KeyEnv != "" {
		names = append(names, p.KeyEnv)
	}
	for _, n := range names {
		if k := strings.TrimSpace(opts.Getenv(n)); k != "" {
			return []string{k}, nil
		}
	}
	if opts.Provider != "" && !p.NoKey {
		return nil, usageErr("no API key: set %s (or name another variable with --api-key-env)", strings.Join(names, " or "))
	}
	return nil, nil
}

// envName reports whether s can be the name of an environment variable
// holding a key: letters, digits and _, not starting with a digit, and
// short, since a long run of letters and digits is more likely a key.
func envName(s string) bool {
	if s == "" || len(s) > 64 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func plainRemote(base string) bool {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return false
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
}
