package batch

import (
	"crypto/sha256"
	"hash/fnv"
)

// idSet remembers the ids seen in this run, to reject duplicates, in 16
// bytes an id however long the ids are. Not safe for concurrent use.
type idSet map[[16]byte]struct{}

// add records id and reports whether it was new.
func (s idSet) add(id string) bool {
	k := sha256.Sum256([]byte(id))
	var h [16]byte
	copy(h[:], k[:16])
	if _, ok := s[h]; ok {
		return false
	}
	s[h] = struct{}{}
	return true
}

// hashID gives a short stable number for an id, for generated Batch ids.
func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
