package checkpoint

import "slices"

// index is the replayed content of a journal: the status of every key, the keys whose status is Failed or
// Bad (Done keys are kept only as hashes, see [Journal]), and how many distinct keys have each status.
// It is not safe for concurrent use: a Journal guards its index with a mutex, a Snapshot never changes its own.
type index struct {
	status map[keyHash]Status
	names  map[keyHash]string // the keys whose status is Failed or Bad
	counts [4]int             // distinct keys that are Done, Failed, Bad, Fixed
	steps  [][]byte           // the step lines, in order (see # Step lines)
}

// newIndex returns an empty index sized for a journal file of size bytes.
func newIndex(size int64) index {
	// A record is rarely shorter than 32 bytes, so this rarely grows the map, or overshoots by much.
	return index{status: make(map[keyHash]Status, size/32), names: make(map[keyHash]string)}
}

// lookup returns the status of key, and false if the index has no record of it.
func (x *index) lookup(key string) (Status, bool) {
	st, ok := x.status[hashString(key)]
	return st, ok
}

// mustKeepNames panics unless st is a status whose keys the index keeps as strings: asking for Done keys is
// a programmer error.
func mustKeepNames(st Status) {
	if st != Failed && st != Bad {
		panic("checkpoint: Keys(" + st.String() + "): only Failed and Bad keys are kept as strings")
	}
}

// keys returns the keys whose status is st (Failed or Bad), in no particular order.
func (x *index) keys(st Status) []string {
	var ks []string
	for h, k := range x.names {
		if x.status[h] == st {
			ks = append(ks, k)
		}
	}
	return ks
}

// set records that the key hashing to h has status st, keeping counts and names in step.
func set[K string | []byte](x *index, h keyHash, key K, st Status) {
	old, had := x.status[h]
	if had {
		if old == st {
			return
		}
		x.counts[countIndex(old)]--
	}
	x.counts[countIndex(st)]++
	x.status[h] = st
	if st == Done || st == Fixed {
		delete(x.names, h)
	} else if _, ok := x.names[h]; !ok {
		x.names[h] = keyString(key)
	}
}

// countIndex maps a valid status to its place in index.counts.
func countIndex(st Status) int {
	switch st {
	case Done:
		return 0
	case Failed:
		return 1
	case Bad:
		return 2
	}
	return 3
}

// eachKey calls fn with each of ks in sorted order until fn returns false.
func eachKey(ks []string, fn func(key string) bool) {
	slices.Sort(ks)
	for _, k := range ks {
		if !fn(k) {
			return
		}
	}
}
