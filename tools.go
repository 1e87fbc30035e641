//go:build tools

package main

import (
	_ "github.com/fergusstrange/embedded-postgres"
	_ "github.com/gorilla/websocket"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/nbd-wtf/go-nostr"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/stretchr/testify/require"
	_ "github.com/testcontainers/testcontainers-go/modules/postgres"
	_ "github.com/urfave/cli/v2"
	_ "golang.org/x/sync/errgroup"
)

func main() {}
