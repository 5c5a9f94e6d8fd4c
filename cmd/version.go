package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// NewCmdVersion returns `llmbatch version`.
func NewCmdVersion(ios *IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version",
		Example: "  llmbatch version",
		Args:    cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintf(ios.Out, "llmbatch %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}
