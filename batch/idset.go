package batch

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"io"
	"os"
	"slices"
)

// idSet remembers the ids seen in this run, to reject duplicates, in memory
// that stays flat however long the input: it keeps 64-bit hashes of the
// recent ids in a map, and spills them, sorted, to temporary files when the
// map is full, with a Bloom filter in front so that most lookups never
// touch the files. Two different ids share a hash with odds of about n²/2^65
// (3e-8 for a million ids); the later one would then be reported as a
// duplicate, never lost silently. If the temporary files cannot be written,
// it keeps everything in memory instead. Not safe for concurrent use; Close
// removes the files.
type idSet struct {
	seed    maphash.Seed
	mem     map[uint64]struct{}
	memCap  int
	runs    []hashRun // sorted hashes on disk, merged when there are too many
	bloom   *bloom    // over the hashes in runs; nil until the first spill
	spilled int64     // hashes in runs
	noDisk  bool      // spilling failed once: keep to memory
}

// hashRun is a file of sorted little-endian uint64 hashes.
type hashRun struct {
	f *os.File
	n int64
}

const (
	idMemCap  = 1 << 15 // hashes kept in the map before a spill (under 1 MB)
	bloomBits = 1 << 23 // 1 MiB to start with: about 1% false positives at 840,000 ids
	bitsPerID = 10      // the filter grows fourfold when it holds more ids than its bits / this
)

func newIDSet() *idSet {
	return &idSet{seed: maphash.MakeSeed(), mem: map[uint64]struct{}{}, memCap: idMemCap}
}

// add records id and reports whether it was new. It fails only when a
// spilled file cannot be read back: then no answer would be safe.
func (s *idSet) add(id string) (bool, error) {
	h := maphash.String(s.seed, id)
	if _, ok := s.mem[h]; ok {
		return false, nil
	}
	if s.bloom != nil && s.bloom.has(h) {
		if seen, err := s.onDisk(h); seen || err != nil {
			return false, err
		}
	}
	s.mem[h] = struct{}{}
	if len(s.mem) >= s.memCap && !s.noDisk {
		if err := s.spill(); err != nil {
			s.noDisk = true // memory grows, the run goes on
		}
	}
	return true, nil
}

func (s *idSet) onDisk(h uint64) (bool, error) {
	for _, r := range s.runs {
		if seen, err := r.has(h); seen || err != nil {
			return seen, err
		}
	}
	return false, nil
}

// spill writes the map's hashes as a sorted run and empties the map.
func (s *idSet) spill() error {
	hs := make([]uint64, 0, len(s.mem))
	for h := range s.mem {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	r, err := writeRun(func(put func(uint64) error) error {
		for _, h := range hs {
			if err := put(h); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.bloom == nil {
		s.bloom = newBloom(bloomBits)
	}
	for _, h := range hs {
		s.bloom.add(h)
	}
	s.runs = append(s.runs, r)
	s.spilled += int64(len(hs))
	clear(s.mem)
	// Like a binary counter: two runs of about the same size become one,
	// so there are some log2(n) runs and each hash is rewritten as often.
	for k := len(s.runs); k >= 2 && s.runs[k-1].n*2 >= s.runs[k-2].n; k = len(s.runs) {
		if err := s.merge(k - 2); err != nil {
			return err
		}
	}
	if s.spilled > int64(len(s.bloom.bits))*64/bitsPerID {
		return s.growBloom()
	}
	return nil
}

// growBloom replaces the filter by one four times larger, filled from the
// runs, so it stays selective however many ids the set holds.
func (s *idSet) growBloom() error {
	b := newBloom(len(s.bloom.bits) * 64 * 4)
	for _, r := range s.runs {
		rd := bufio.NewReaderSize(io.NewSectionReader(r.f, 0, r.n*8), 64<<10)
		for {
			h, ok, err := readHash(rd)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			b.add(h)
		}
	}
	s.bloom = b
	return nil
}

// merge replaces the runs from index from on by one.
func (s *idSet) merge(from int) error {
	old := s.runs[from:]
	readers := make([]*bufio.Reader, len(old))
	heads := make([]uint64, len(old))
	live := make([]bool, len(old))
	for i, r := range old {
		readers[i] = bufio.NewReaderSize(io.NewSectionReader(r.f, 0, r.n*8), 64<<10)
	}
	var readErr error
	for i := range readers {
		var err error
		if heads[i], live[i], err = readHash(readers[i]); err != nil {
			readErr = err
		}
	}
	merged, err := writeRun(func(put func(uint64) error) error {
		for {
			best := -1
			for i := range heads {
				if live[i] && (best < 0 || heads[i] < heads[best]) {
					best = i
				}
			}
			if best < 0 || readErr != nil {
				return readErr
			}
			if err := put(heads[best]); err != nil {
				return err
			}
			var err error
			if heads[best], live[best], err = readHash(readers[best]); err != nil {
				readErr = err
			}
		}
	})
	if err != nil {
		return err
	}
	for _, r := range old {
		r.f.Close()
		os.Remove(r.f.Name()) // gone already, but on Windows
	}
	s.runs = append(s.runs[:from], merged)
	return nil
}

// readHash reads the next hash; ok is false at the end of the run, and err
// is set when the run cannot be read to its end.
func readHash(r *bufio.Reader) (h uint64, ok bool, err error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err == io.EOF {
		return 0, false, nil
	} else if err != nil {
		return 0, false, fmt.Errorf("batch: id set: read a run: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]), true, nil
}

// writeRun writes the hashes fill puts, in order, to a new temporary file,
// removed from its directory at once where the system allows (it lives on
// while open, and a crash leaves nothing behind).
func writeRun(fill func(put func(uint64) error) error) (hashRun, error) {
	f, err := os.CreateTemp("", "llmbatch-ids-*")
	if err != nil {
		return hashRun{}, err
	}
	os.Remove(f.Name()) // fails on Windows, where Close leaves the file: see close
	w := bufio.NewWriterSize(f, 64<<10)
	var n int64
	var b [8]byte
	err = fill(func(h uint64) error {
		binary.LittleEndian.PutUint64(b[:], h)
		n++
		_, err := w.Write(b[:])
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return hashRun{}, err
	}
	return hashRun{f: f, n: n}, nil
}

// has looks h up by binary search in the file.
func (r hashRun) has(h uint64) (bool, error) {
	lo, hi := int64(0), r.n
	var b [8]byte
	for lo < hi {
		mid := lo + (hi-lo)/2
		if _, err := r.f.ReadAt(b[:], mid*8); err != nil {
			return false, fmt.Errorf("batch: id set: read %s: %w", r.f.Name(), err)
		}
		switch v := binary.LittleEndian.Uint64(b[:]); {
		case v == h:
			return true, nil
		case v < h:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return false, nil
}

// close removes the run files.
func (s *idSet) close() {
	for _, r := range s.runs {
		r.f.Close()
		os.Remove(r.f.Name())
	}
	s.runs = nil
}

// bloom is a Bloom filter of 64-bit hashes, with four probes drawn from the
// hash itself.
type bloom struct{ bits []uint64 }

func newBloom(n int) *bloom { return &bloom{bits: make([]uint64, n/64)} }

func (b *bloom) probes(h uint64, fn func(i uint64) bool) bool {
	m := uint64(len(b.bits) * 64)
	h2 := h>>32 | h<<32 | 1
	for k := uint64(0); k < 4; k++ {
		if !fn((h + k*h2) % m) {
			return false
		}
	}
	return true
}

func (b *bloom) add(h uint64) {
	b.probes(h, func(i uint64) bool { b.bits[i/64] |= 1 << (i % 64); return true })
}

func (b *bloom) has(h uint64) bool {
	return b.probes(h, func(i uint64) bool { return b.bits[i/64]&(1<<(i%64)) != 0 })
}

// hashID gives a short stable number for an id, for generated Batch ids.
func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
