package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// NewCmdConfig returns `llmbatch config` with its `init` child.
func NewCmdConfig(f *Factory) *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "Manage the TOML config file", Example: "  llmbatch config init"}
	var force bool
	initCmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented starter config (default ./llmbatch.toml)",
		Long: `Init writes a starter config file with every setting commented out.
Settings apply in this order: command-line flags, then LLMBATCH_<NAME>
environment variables (LLMBATCH_RPM=500), then the chosen [profiles.NAME]
table, then the file's top level, then what the --provider preset gives
(base URL, model, timeout), then the defaults.`,
		Example: `  llmbatch config init
  llmbatch run --profile deepseek tickets.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path := defaultConfig
			if len(args) == 1 {
				path = args[0]
			}
			if err := writeStarter(path, force); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "wrote %s\n", path)
			return nil
		},
	}
	initCmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	c.AddCommand(initCmd)
	return c
}

// writeStarter writes the starter config to path, over an existing file
// only with force.
func writeStarter(path string, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	file, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		if os.IsExist(err) {
			return usageErr("%s exists; use --force to overwrite it", path)
		}
		return usageErr("%v", unwrapPath(err))
	}
	_, err = file.WriteString(starterConfig)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	return err
}

const starterConfig = `# llmbatch configuration. Keys are the flags of "llmbatch run" (- or _).
# Order: flags > LLMBATCH_<NAME> environment > [profiles.NAME] > top level > provider preset > defaults.
# The API key never goes here: set it in the environment (api_key_env names the variable).

# provider = "deepseek"        # openai, deepseek, doubao, ollama, vllm, mock
# base_url = "https://api.deepseek.com/v1"
# model = "deepseek-chat"
# api_key_env = "DEEPSEEK_API_KEY"

# concurrency = 4              # requests in flight at most
# rpm = 0                      # requests per minute, 0 = no limit
# tpm = 0                      # tokens per minute, 0 = no limit
# max_attempts = 6
# base_delay = "1s"
# max_delay = "60s"
# timeout = "60s"              # one attempt, whole response

# system = "You are a careful annotator."
# template = "Classify as billing, bug, account or other: {{.text}}"
#   or: template_file = "prompt.tmpl"
# max_tokens = 16
# temperature = 0

# progress = "auto"            # auto, on, off
# log_format = "text"          # text, json

# [profiles.deepseek]
# provider = "deepseek"
# concurrency = 16
# rpm = 1000

# [profiles.local]
# base_url = "http://localhost:8000/v1"
# model = "Qwen/Qwen2.5-7B-Instruct"
# concurrency = 64
`
