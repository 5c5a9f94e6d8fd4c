// Package llm talks to one OpenAI-compatible chat completions endpoint: the
// wire types, the client with its retry loop, error classes, backoff, the
// shared rate limiter and the prompt token estimate. It knows nothing of
// items, files or the pipeline.
package llm
