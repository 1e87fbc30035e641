// Command relay is the community node's Nostr relay: flags (each with an
// environment variable) -> relay.Config -> Run until SIGINT or SIGTERM.
package main

import "github.com/kukuri/communitynode/internal/daemon"

func main() { daemon.Main(newApp) }
