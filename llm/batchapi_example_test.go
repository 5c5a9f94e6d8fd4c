package llm_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/llmbatch/llmbatch/llm"
	"github.com/llmbatch/llmbatch/llm/mock"
)

// A batch's whole trip against the mock provider: upload the requests,
// create the batch, poll until it is done, read the answers (in no
// particular order) and match them to the requests by custom_id.
func ExampleClient_CreateBatch() {
	srv, err := mock.Start(mock.Config{Batch: mock.BatchConfig{Delay: 10 * time.Millisecond}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	c, err := llm.New(llm.Config{BaseURL: srv.URL})
	if err != nil {
		panic(err)
	}
	defer c.CloseIdleConnections()
	ctx := context.Background()

	var file []byte
	for _, id := range []string{"a", "b", "c"} {
		body := fmt.Sprintf(`{"model":"mock-1","messages":[{"role":"user","content":"question %s"}]}`, id)
		file, _ = llm.AppendBatchLine(file, id, []byte(body))
	}
	f, err := c.UploadFile(ctx, "shard-0.jsonl", bytes.NewReader(file), int64(len(file)))
	if err != nil {
		panic(err)
	}
	b, err := c.CreateBatch(ctx, f.ID, map[string]string{"llmbatch_job": "example", "llmbatch_shard": "0"})
	if err != nil {
		panic(err) // not retried: look for the batch with FindBatch before creating another
	}
	for !b.Status.Done() {
		time.Sleep(10 * time.Millisecond)
		if b, err = c.GetBatch(ctx, b.ID); err != nil {
			panic(err)
		}
	}
	fmt.Println(b.Status, b.RequestCounts.Completed, "of", b.RequestCounts.Total)

	out, err := c.FileContent(ctx, b.OutputFileID)
	if err != nil {
		panic(err)
	}
	defer out.Close()
	var answers []string
	err = llm.ReadBatchResults(out, func(l llm.BatchResultLine) error {
		resp, err := l.Result()
		if err != nil {
			return err
		}
		answers = append(answers, l.CustomID+": "+resp.Content())
		return nil
	})
	if err != nil {
		panic(err)
	}
	slices.Sort(answers)
	for _, a := range answers {
		fmt.Println(a)
	}
	// Output:
	// completed 3 of 3
	// a: echo: question a
	// b: echo: question b
	// c: echo: question c
}
