package batch

import (
	"hash/fnv"
	"hash/maphash"
)

// idSet remembers the ids seen in this run, to reject duplicates, in about
// 16 bytes an id however long the ids are: it keeps 64-bit hashes. Two
// different ids share a hash with odds of about n²/2^65 (3e-8 for a million
// ids); the later one would then be reported as a duplicate, never lost
// silently. Not safe for concurrent use.
type idSet struct {
	seed maphash.Seed
	m    map[uint64]struct{}
}

func newIDSet() *idSet { return &idSet{seed: maphash.MakeSeed(), m: map[uint64]struct{}{}} }

// add records id and reports whether it was new.
func (s *idSet) add(id string) bool {
	h := maphash.String(s.seed, id)
	if _, ok := s.m[h]; ok {
		return false
	}
	s.m[h] = struct{}{}
	return true
}

// hashID gives a short stable number for an id, for generated Batch ids.
func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
