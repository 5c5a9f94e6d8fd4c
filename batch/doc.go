// Package batch runs one llmbatch job: it streams the JSONL input, sends each
// item through an [llm.Client] with bounded concurrency, and writes results,
// errors and the checkpoint so that a rerun resumes exactly where the last
// run stopped.
//
// # Stages
//
// [Run] starts every goroutine of a run in one errgroup and returns only
// after the group's Wait, when every one of them has ended:
//
//	watch: Config.Stop → drain; once drained, ends a blocked input read
//	read ──items──▶ pack ──groups──▶ workers ×Concurrency ──results──▶ writer
//	                                            (line writer ──▶ committer)
//
// Each stage owns what it works on:
//   - read (stages.go) owns the input and the set of ids seen. It shapes
//     each line into an *Item (or a rejected line), skips what an earlier
//     run finished, and closes items at the end of the input or when the
//     run drains.
//   - pack (group.go) owns the [Packer]: with --merge it groups items into
//     requests, otherwise it passes each on alone. It closes groups.
//   - workers (stages.go) are Concurrency goroutines in a group of their
//     own, each making one request at a time; the stage closes results
//     once all have ended. A worker hands each outcome to the writer and
//     waits until its line is with the OS before it sends again.
//   - writer (writer.go) alone owns the results file, the errors file and
//     the journal. Its line writer hands each outcome's line to the OS as it
//     arrives; its committer, a goroutine beside it, fsyncs the files and
//     then appends and syncs the journal records of what was fsynced (a
//     group commit, at least every Config.SyncEvery). A kill of the process
//     thus loses only the requests in flight, at most Concurrency answers;
//     a line written but not journaled is journaled by the next run's
//     recovery, which reads the results file.
//
// items and groups hold Concurrency entries; results is unbuffered. Memory
// stays flat however long the input: the ids seen spill to disk, held
// failures are bounded (see heldFailures).
//
// # Stopping
//
// A stage returns its error. A stop it returns (a *[StopError]: bad key,
// spent quota, the server down for Config.Client's breaker, the budget
// spent, the input unreadable; or [ErrInterrupted]) drains the run: one
// context, run.drained, is cancelled with the stop as its cause. Its Done
// channel is every request's [llm.Request.Drain], so the client starts no
// further attempt and ends its waits, while attempts already sent finish;
// the reader stops reading (watch ends a read blocked on a silent pipe,
// see input), the packer and the workers take no new work, the writer
// writes every outcome that still comes, commits and ends. Config.Stop
// (the first Ctrl-C) is such a stop.
//
// Any other error of a stage (a file that cannot be written) cancels the
// group's context with that error as its cause (errgroup uses
// context.WithCancelCause), and so does the caller cancelling ctx (the
// second Ctrl-C): requests in flight are abandoned, but an answer already
// in a worker's hands is still written unless the writer is what failed.
//
// # Outcomes
//
// An item whose attempts ran out on transient errors is recorded as failed
// only when the server proved up: an answer was written after it, or, at
// the normal end of the run, the server answered a request after the item
// was first sent. A run that stops leaves it for the rerun, and so does a
// run that ends with only such items left: it returns a *StopError of
// [ErrServerDown] (DESIGN §5: failed means the item is at fault).
package batch
