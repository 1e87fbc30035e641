// Command cnctl is the operator's tool for the community node: migrations, the
// local all-in-one dev node, and (as the node grows) backlog, replay and retention.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cnctl: %s\n", oneLine(err))
		os.Exit(exitCode(err))
	}
}

// run executes one cnctl command line. It never exits the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return newApp(stdout, stderr).RunContext(ctx, args)
}
