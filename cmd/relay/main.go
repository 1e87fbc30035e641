// Command relay is the community node's Nostr relay: flags (each with an
// environment variable) -> relay.Config -> Run until SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "relay: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

// run executes one relay command line. It never exits the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return newApp(stdout, stderr).RunContext(ctx, args)
}
