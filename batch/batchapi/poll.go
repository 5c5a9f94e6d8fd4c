package batchapi

import "time"

// Schedule returns how long to wait before the next poll of a batch after
// quiet polls in a row that found nothing changed (0 after a change).
type Schedule func(quiet int) time.Duration

// PollEvery returns the schedule of --poll-every: every after a change,
// doubling with each quiet poll up to ceil, so a batch that sits for
// hours costs a request each ceil, and one that moves is read every every.
// A ceil below every gives every always; an every of 0 or less polls at once
// (for tests); a quiet below 0 counts as 0, and a large one cannot
// overflow.
func PollEvery(every, ceil time.Duration) Schedule {
	return func(quiet int) time.Duration {
		if every <= 0 {
			return 0
		}
		if ceil <= every {
			return every
		}
		quiet = min(max(quiet, 0), 62)
		if every > ceil>>quiet {
			return ceil
		}
		return every << quiet
	}
}

// The defaults of --poll-every and of the backed-off wait.
const (
	DefaultPollEvery = 30 * time.Second
	DefaultPollMax   = 5 * time.Minute
)
