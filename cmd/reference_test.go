package cmd

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/reference.md")

// TestReference keeps docs/reference.md equal to the commands' own help.
func TestReference(t *testing.T) {
	ios, _, _, _ := Test()
	got := Reference(NewRootCmd(&Factory{IO: ios, Getenv: func(string) string { return "" }}))
	const path = "../docs/reference.md"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("%s is out of date: run go test ./cmd -run TestReference -update", path)
	}
}
