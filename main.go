// Command llmbatch pushes batches of prompts through OpenAI-compatible chat
// APIs as fast as the provider allows, resumably and exactly once.
package main

import (
	"os"

	"github.com/llmbatch/llmbatch/cmd"
)

func main() { os.Exit(cmd.Execute()) }
