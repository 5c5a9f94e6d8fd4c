// Package batchapi is the pure core of `llmbatch run --batch-api` (DESIGN §8):
// it cuts a job into shards, says what each shard needs next, and reads the
// provider's answers; it does no network I/O, starts no goroutine and reads
// no clock (time is passed in). A job flows through it like this:
//
//  1. A [Planner] turns request lines into shard files of at most 50,000 lines
//     and 95% of 200 MB, each with a number and a SHA-256 ([Plan]).
//  2. Each Plan's planned [Record] is journaled; from then on the shard is a
//     [Shard], rebuilt on a rerun by [Apply]ing its records in order.
//  3. [Policy.Next] says the shard's next step (upload, create, find by
//     [Metadata], poll on a [Schedule], cancel, download, resubmit, report);
//     the owner does it, journals the record the step's doc names, applies it,
//     and asks again. A create is sent only after its intent is journaled, so a
//     kill at any instant never submits a shard twice ([Pick] finds the batch a
//     lost record left behind).
//  4. Each downloaded line is [Classify]'d as llm classifies an online answer:
//     written, retried in a later shard (or online), or reported.
//  5. [Price.AtBatch] and [Factor] give the cost at batch prices.
//
// The wiring (package batch and cmd) owns the loop, the client calls, the
// results writer and the journal: it must journal and sync each record before
// the next network step, add these records to the checkpoint journal's replay,
// and keep an item done elsewhere, or already in a live shard, out of new ones.
package batchapi
