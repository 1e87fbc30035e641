// Command cnctl is the operator's tool for the community node: migrations, the
// local all-in-one dev node, status, replay and dead letters, retention,
// search reindexing, moderation and relay management, trust, import and export,
// the status page and load generation. Its commands share one scaffold
// (cnctl.go): a wrong command line exits 2 with one line, any other failure 1.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
)

func main() { daemon.Main(newApp) }

// run executes one cnctl command line. It never exits the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return newApp(stdout, stderr).RunContext(ctx, args)
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:                 "cnctl",
		Usage:                "operate a Nostr community node",
		Writer:               stdout,
		ErrWriter:            stderr,
		HideHelpCommand:      true,
		EnableBashCompletion: false,
		ExitErrHandler:       func(*cli.Context, error) {}, // daemon.Main decides the exit code
		OnUsageError:         onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("unknown command %q (see cnctl --help)", c.Args().First())}
			}
			return cli.ShowAppHelp(c)
		},
		Flags: []cli.Flag{databaseURLFlag()},
		Commands: []*cli.Command{
			migrateCommand(),
			devCommand(),
			statusCommand(),
			resetOffsetCommand(),
			dlqCommand(),
			outboxCommand(),
			benchCommand(),
			reindexCommand(),
			nodeKeyCommand(),
			moderationCommand(),
			dashboardCommand(),
			importCommand(),
			syncCommand(),
			exportCommand(),
			trustCommand(),
			groupsCommand(),
			membersCommand(),
			blobsCommand(),
		},
	}
}
