// Package batch runs one llmbatch job: it streams the JSONL input, sends each
// item through an [llm.Client] with bounded concurrency, and writes results,
// errors and the checkpoint so that a rerun resumes exactly where the last
// run stopped.
package batch
