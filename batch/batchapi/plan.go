package batchapi

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/llmbatch/llmbatch/internal/durable"
	"github.com/llmbatch/llmbatch/llm"
)

// The provider limits a [Planner] keeps by default: OpenAI's, which the
// providers that copy its Batch API share or exceed.
const (
	DefaultMaxRequests       = 50_000
	DefaultMaxBytes    int64 = 200 << 20
)

// PlanConfig sets the limits and the place of a [Planner]. A zero field
// takes its default.
type PlanConfig struct {
	MaxRequests int    // request lines per shard at most; default DefaultMaxRequests
	MaxBytes    int64  // the provider's file-size limit; a shard holds at most 95% of it; default DefaultMaxBytes
	Dir         string // where shard files go; "" writes none: a dry run still gets numbers, sizes and hashes
	First       int    // the number of the first shard; default 1 (a rerun starts after the journal's last)
	Round       int    // the round of every shard planned (see [Shard])
}

// A Line is one request as it goes into a shard.
type Line struct {
	ID     string // the custom_id: the input's own for OpenAI Batch lines, the item id otherwise
	Body   []byte // the chat completions request, a JSON object
	Tokens int    // its estimated prompt tokens, summed for the dry run and the cost
}

// A Plan is a finished shard file: what the planned record journals.
type Plan struct {
	N      int    // the shard's number
	Round  int    // see [Shard]
	Path   string // the file; "" when the Planner writes none
	Hash   string // hex SHA-256 of the file's bytes
	Lines  int    // request lines
	Bytes  int64  // the file's size
	Tokens int64  // the lines' estimated prompt tokens
}

// Record returns the planned record of p at now.
func (p Plan) Record(now time.Time) Record {
	return Record{Shard: p.N, Step: StepPlanned, At: now.UnixMilli(), Round: p.Round, Hash: p.Hash,
		Lines: p.Lines, Bytes: p.Bytes, Tokens: p.Tokens}
}

// FileName returns the name of shard n's file with the given hash:
// "shard-000003-<first 16 hex digits>.jsonl": files sort by number, and
// the hash the journal planned is in the name.
func FileName(n int, hash string) string {
	return fmt.Sprintf("shard-%06d-%.16s.jsonl", n, hash)
}

// Causes of an [ItemError].
var (
	ErrLineTooLarge = errors.New("its batch line is larger than a shard may be")
	ErrBody         = errors.New("its request body is not a JSON object")
	ErrID           = errors.New("its custom_id is empty or not valid UTF-8") // it would not read back the same
	ErrDuplicateID  = errors.New("its custom_id is already in the shard")     // the provider would refuse the whole batch
)

// An ItemError says why one request cannot go into any shard. The item is
// reported (in the errors file); the Planner is unchanged and goes on.
type ItemError struct {
	ID   string
	Size int64 // the line's size in bytes, for ErrLineTooLarge
	Err  error // ErrLineTooLarge, ErrBody, ErrID or ErrDuplicateID
}

func (e *ItemError) Error() string {
	if errors.Is(e.Err, ErrLineTooLarge) {
		return fmt.Sprintf("batchapi: item %.80q: %v (%d bytes)", e.ID, e.Err, e.Size)
	}
	return fmt.Sprintf("batchapi: item %.80q: %v", e.ID, e.Err)
}

// Unwrap returns the cause.
func (e *ItemError) Unwrap() error { return e.Err }

// A Planner cuts a stream of request lines into shards of at most
// MaxRequests lines and 95% of MaxBytes bytes of JSONL, never splitting a
// line, and writes each shard to its own file as the lines come. Each line
// is exactly
//
//	{"custom_id":"<id>","method":"POST","url":"/v1/chat/completions","body":<body>}\n
//
// with the body compacted, as [llm.AppendBatchLine] writes it, so sizes and
// hashes are those of the uploaded file.
//
// A Planner is a plain value owned by one goroutine, like the packer: not
// safe for concurrent use, and it starts no goroutine.
//
// # Memory
//
// Bounded by one shard: the shard being built goes to a temporary file in
// Dir as it grows, and the Planner keeps its running hash, counts, a write
// buffer and a 16-byte hash of each of its custom_ids (to refuse a
// duplicate, for which the provider would fail the whole batch): under
// 3 MB for 50,000 lines. A line is held only while it is written.
//
// # Durability
//
// When Add or Flush returns a [Plan], its file is complete, fsynced and
// renamed to [FileName] in Dir, and the rename is synced too, so the owner
// may journal the planned record at once: the file it points at survives a
// crash. An unfinished shard is only a temporary file (".shard-*.tmp"),
// which Close removes and which a rerun may remove.
//
// # Errors
//
// An [*ItemError] concerns one line only. Any other error (a full disk) is
// sticky: it is returned by that call and every later Add and Flush.
type Planner struct {
	cfg   PlanConfig
	limit int64     // 95% of MaxBytes
	cur   Plan      // the shard being built; Lines 0 when none is
	h     hash.Hash // the running SHA-256 of cur
	f     *os.File  // cur's temporary file; nil when none or when Dir is ""
	w     *bufio.Writer
	line  []byte                // the line being encoded
	ids   map[[16]byte]struct{} // cur's custom_ids, hashed
	err   error
}

// NewPlanner returns a Planner with cfg's limits, defaults filled in.
func NewPlanner(cfg PlanConfig) *Planner {
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	cfg.First = max(cfg.First, 1)
	limit := cfg.MaxBytes/20*19 + cfg.MaxBytes%20*19/20 // 95%, rounded down, with no overflow
	p := &Planner{cfg: cfg, limit: limit, h: sha256.New(), ids: map[[16]byte]struct{}{}}
	p.cur.N, p.cur.Round = cfg.First, cfg.Round
	return p
}

// Limit returns the most bytes a shard may hold: 95% of MaxBytes.
func (p *Planner) Limit() int64 { return p.limit }

// Add appends l to the shard being built, and returns:
//   - (plan, nil) when l did not fit in the shard being built (it already
//     had MaxRequests lines, or l would take it past the byte limit): that
//     shard is finished and returned, and l starts the next one;
//   - (nil, nil) when l was added and no shard was finished;
//   - (nil, *ItemError) when l cannot go into any shard, or its custom_id
//     is already in the shard being built;
//   - (plan or nil, err) for a write error, sticky (see # Errors).
//
// A full shard is returned by the next Add or by Flush: one Add finishes
// one shard at most.
func (p *Planner) Add(l Line) (*Plan, error) {
	if p.err != nil {
		return nil, p.err
	}
	line, err := p.encode(l)
	if err != nil {
		return nil, err
	}
	var done *Plan
	if p.cur.Lines > 0 && (p.cur.Lines >= p.cfg.MaxRequests || p.cur.Bytes+int64(len(line)) > p.limit) {
		if done, err = p.finish(); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256([]byte(l.ID))
	if _, dup := p.ids[[16]byte(sum[:16])]; dup { // so done is nil: a finished shard clears ids
		return nil, &ItemError{ID: l.ID, Err: ErrDuplicateID}
	}
	p.ids[[16]byte(sum[:16])] = struct{}{}
	return done, p.write(line, l.Tokens)
}

// Flush finishes the shard being built and returns it, or nil when it has
// no line. The owner calls it at the end of the input.
func (p *Planner) Flush() (*Plan, error) {
	if p.err != nil || p.cur.Lines == 0 {
		return nil, p.err
	}
	return p.finish()
}

// Close removes the temporary file of an unfinished shard, if any: lines
// added since the last Plan are not planned. It is safe to call after
// Flush, and more than once.
func (p *Planner) Close() error {
	if p.f == nil {
		return nil
	}
	name := p.f.Name()
	p.f.Close()
	p.f, p.w = nil, nil
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("batchapi: remove %s: %w", name, err)
	}
	return nil
}

// encode returns l's line, newline included, valid until the next call.
func (p *Planner) encode(l Line) ([]byte, error) {
	if l.ID == "" || !utf8.ValidString(l.ID) {
		return nil, &ItemError{ID: l.ID, Err: ErrID}
	}
	if b := bytes.TrimSpace(l.Body); len(b) == 0 || b[0] != '{' {
		return nil, &ItemError{ID: l.ID, Err: ErrBody}
	}
	line, err := llm.AppendBatchLine(p.line[:0], l.ID, l.Body)
	if err != nil {
		return nil, &ItemError{ID: l.ID, Err: ErrBody} // the only thing that can fail: the body's JSON
	}
	p.line = line
	if int64(len(line)) > p.limit {
		return nil, &ItemError{ID: l.ID, Size: int64(len(line)), Err: ErrLineTooLarge}
	}
	return line, nil
}

// write adds line to the shard being built, opening its file first.
func (p *Planner) write(line []byte, tokens int) error {
	if p.cfg.Dir != "" && p.f == nil {
		f, err := os.CreateTemp(p.cfg.Dir, ".shard-*.tmp")
		if err != nil {
			return p.fail("create shard file", err)
		}
		p.f, p.w = f, bufio.NewWriterSize(f, 256<<10)
	}
	if p.w != nil {
		if _, err := p.w.Write(line); err != nil {
			return p.fail("write "+p.f.Name(), err)
		}
	}
	p.h.Write(line) // a hash never fails
	p.cur.Lines++
	p.cur.Bytes += int64(len(line))
	p.cur.Tokens += int64(tokens)
	return nil
}

// finish makes the shard being built durable under its final name, returns
// its Plan and starts the next shard.
func (p *Planner) finish() (*Plan, error) {
	done := p.cur
	done.Hash = hex.EncodeToString(p.h.Sum(nil))
	if p.f != nil {
		tmp := p.f.Name()
		done.Path = filepath.Join(p.cfg.Dir, FileName(done.N, done.Hash))
		if err := p.w.Flush(); err != nil {
			return nil, p.fail("write "+tmp, err)
		}
		if err := p.f.Sync(); err != nil {
			return nil, p.fail("sync "+tmp, err)
		}
		if err := p.f.Close(); err != nil {
			return nil, p.fail("close "+tmp, err)
		}
		p.f, p.w = nil, nil
		if err := os.Rename(tmp, done.Path); err != nil {
			return nil, p.fail("rename "+tmp, err)
		}
		if err := durable.SyncDir(p.cfg.Dir); err != nil {
			return nil, p.fail("sync "+p.cfg.Dir, err)
		}
	}
	p.h.Reset()
	clear(p.ids)
	p.cur = Plan{N: done.N + 1, Round: done.Round}
	return &done, nil
}

// fail makes err sticky, wrapped with what was being done.
func (p *Planner) fail(what string, err error) error {
	p.err = fmt.Errorf("batchapi: %s: %w", what, err)
	return p.err
}
