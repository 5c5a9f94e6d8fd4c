package checkpoint_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmbatch/llmbatch/checkpoint"
)

func Example() {
	dir, _ := os.MkdirTemp("", "llmbatch")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "out.jsonl.ckpt")
	settings := checkpoint.Settings{"model": "deepseek-chat"}

	// A first run finishes two items, fails one, then dies.
	j, err := checkpoint.Open(path, settings)
	if err != nil {
		fmt.Println(err)
		return
	}
	j.Append("t-1", checkpoint.Done)
	j.Append("t-2", checkpoint.Failed)
	j.Append("t-3", checkpoint.Done)
	if err := j.Close(); err != nil { // Close syncs
		fmt.Println(err)
		return
	}

	// A rerun with another model must not resume into the same output.
	_, err = checkpoint.Open(path, checkpoint.Settings{"model": "deepseek-reasoner"})
	var mismatch *checkpoint.MismatchError
	if errors.As(err, &mismatch) {
		fmt.Printf("refused: %+v\n", mismatch.Diff)
	}

	// The same command skips what is done and, with --retry-failed, redoes the failures.
	j, err = checkpoint.Open(path, settings)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	for _, id := range []string{"t-1", "t-2", "t-3", "t-4"} {
		if st, ok := j.Status(id); ok {
			fmt.Println(id, st)
		} else {
			fmt.Println(id, "to do")
		}
	}
	j.Keys(checkpoint.Failed, func(id string) bool {
		fmt.Println("retry", id)
		return true
	})
	// Output:
	// refused: [{Key:model Old:deepseek-chat New:deepseek-reasoner}]
	// t-1 done
	// t-2 failed
	// t-3 done
	// t-4 to do
	// retry t-2
}

// A status command looks at a journal that a run may be writing: Load neither locks nor changes it.
func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "llmbatch")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "out.jsonl.ckpt")

	// A run is going on: it holds the journal open, and has made two records durable.
	j, err := checkpoint.Open(path, checkpoint.Settings{"model": "deepseek-chat"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	j.Append("i:t-1", checkpoint.Done)
	j.Append("l:7", checkpoint.Bad)
	j.Sync()

	running, err := checkpoint.Locked(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := checkpoint.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	done, failed, bad := s.Counts()
	st, _ := s.Status("i:t-1")
	fmt.Println("running:", running)
	fmt.Println("model:", s.Settings()["model"])
	fmt.Println("done, failed, bad:", done, failed, bad)
	fmt.Println("i:t-1 is", st)
	// Output:
	// running: true
	// model: deepseek-chat
	// done, failed, bad: 1 0 1
	// i:t-1 is done
}
