// Package batchapi is the pure core of `llmbatch run --batch-api` (DESIGN §8):
// it cuts a job into shards, says what each shard needs next, and reads the
// provider's answers. It does no network I/O, starts no goroutine and reads
// no clock. A job flows through it like this:
//
//  1. A [Planner] writes request lines into shard files of at most 50,000
//     lines and 95% of 200 MB; each [Plan] has a number and a SHA-256.
//  2. Each Plan's planned [Record] is journaled; from then on a [Tracker]
//     holds the shard, rebuilt on a rerun by applying its records in order.
//  3. [Policy.Next] (through [Tracker.Next]) names each shard's next step:
//     upload, create, find by [Metadata], poll on a [Schedule], cancel,
//     download, resubmit, report. The owner takes it, journals the record the
//     step's doc names, applies it, and asks again. A create is sent only once
//     its intent is journaled, and one whose record was lost is found with
//     [Pick], so a kill at any instant never submits a shard twice.
//  4. Each output line is [Classify]'d as llm classifies an online answer.
//  5. [Price.AtBatch] and [Factor] price the job at batch rates.
//
// The wiring (batch and cmd) owns the loop, the client calls, the results
// writer and the journal: it journals and syncs each record before the next
// network step, and keeps an item that has a result, or is in a live shard,
// out of new shards.
package batchapi
