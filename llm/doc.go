// Package llm talks to one OpenAI-compatible chat completions endpoint: the
// wire types, the client with its retry loop, error classes, backoff, the
// shared rate limiter and the prompt token estimate, and the client side of
// the same endpoint's Files and Batch APIs (batchapi.go). It knows nothing
// of items, the user's files or the pipeline.
package llm
