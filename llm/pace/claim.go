package pace

// spentClaim reports whether r says the window is spent although the
// lane's own count contradicts it: it sent less than a quarter of what the
// reading says was used (of the limit, or of the most ever said to be
// left, most) in the window's time, sentOwn. A claim the client
// cannot check (no size known) is believed.
func spentClaim(r Reading, most int, sentOwn float64) bool {
	size := max(r.Limit, most)
	if !r.Told || size <= 0 || r.Left > size/100 {
		return false
	}
	return sentOwn < float64(size-r.Left)/4
}
