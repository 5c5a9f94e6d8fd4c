package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Reference renders every command's help as Markdown: docs/reference.md is
// this output, and a test keeps the two equal, so the reference cannot
// drift from the code.
func Reference(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("# llmbatch command reference\n\n")
	b.WriteString("Generated from the commands themselves (`go test ./cmd -run TestReference -update` rewrites it).\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if c.Runnable() {
			writeCommand(&b, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return b.String()
}

func writeCommand(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "\n## %s\n\n", c.CommandPath())
	if c.Long != "" {
		b.WriteString(strings.TrimSpace(c.Long) + "\n\n")
	} else if c.Short != "" {
		b.WriteString(c.Short + ".\n\n")
	}
	fmt.Fprintf(b, "```\n%s\n```\n", c.UseLine())
	if c.Example != "" {
		fmt.Fprintf(b, "\nExamples:\n\n```sh\n%s\n```\n", strings.TrimRight(c.Example, "\n"))
	}
	if flags := c.NonInheritedFlags().FlagUsagesWrapped(100); strings.TrimSpace(flags) != "" {
		fmt.Fprintf(b, "\nFlags:\n\n```\n%s```\n", flags)
	}
}
