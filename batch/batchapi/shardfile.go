package batchapi

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/llmbatch/llmbatch/llm"
)

// ErrShardLine is wrapped by [ReadLines] for a line that is not a batch
// input line with a custom_id and a body.
var ErrShardLine = errors.New("batchapi: not a batch input line")

// ReadLines reads a shard file (or any batch input file) from r and calls
// fn with each request line, in file order, until fn returns an error,
// which ReadLines returns unchanged. The Line's Body aliases a buffer that
// is reused: fn must copy it to keep it. Tokens is 0 (a file does not say).
//
// It is how the lines of a shard that ended without a result for every
// line are resubmitted: the owner reads the shard's file again and plans
// into a later round each line the journal has no result for. It holds one
// line in memory at a time; a line longer than limit bytes (0: the
// default byte limit) is an error wrapping ErrShardLine.
func ReadLines(r io.Reader, limit int64, fn func(Line) error) error {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for n := 1; ; n++ {
		line, err := nextLine(br, &long, limit)
		if err != nil && err != io.EOF {
			return err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var l llm.BatchRequestLine
			if jerr := json.Unmarshal(line, &l); jerr != nil || l.CustomID == "" || len(l.Body) == 0 {
				return fmt.Errorf("%w: line %d", ErrShardLine, n)
			}
			if ferr := fn(Line{ID: l.CustomID, Body: l.Body}); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// nextLine returns the next line of br without its newline; *long keeps
// the space a line longer than br's buffer needs, for reuse.
func nextLine(br *bufio.Reader, long *[]byte, limit int64) ([]byte, error) {
	*long = (*long)[:0]
	for {
		frag, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if *long = append(*long, frag...); int64(len(*long)) > limit {
				return nil, fmt.Errorf("%w: a line longer than %d bytes", ErrShardLine, limit)
			}
			continue
		}
		if len(*long) > 0 {
			*long = append(*long, frag...)
			frag = *long
		}
		return bytes.TrimSuffix(frag, []byte("\n")), err
	}
}

// ErrHashMismatch is wrapped by [Verify] for a shard file whose content is
// not what its planned record says.
var ErrHashMismatch = errors.New("batchapi: the shard file does not hold what was planned")

// Verify reads the shard file at path and checks that its SHA-256 is hash
// (as planned), returning its size. A rerun verifies a planned shard's file
// before uploading it: a file missing (an error wrapping fs.ErrNotExist) or
// changed is never uploaded; the owner journals a dropped record for the
// shard instead, and its lines go into new shards.
func Verify(path, hash string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("batchapi: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return n, fmt.Errorf("batchapi: read %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != hash {
		return n, fmt.Errorf("%w: %s has SHA-256 %.16s…, the journal planned %.16s…", ErrHashMismatch, path, got, hash)
	}
	return n, nil
}
