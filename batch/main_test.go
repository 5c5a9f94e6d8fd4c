package batch

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running once
// they are done: every stage of a Run must end with it (DESIGN §7, STYLE §4).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
