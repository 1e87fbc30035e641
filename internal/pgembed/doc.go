// Package pgembed starts a private PostgreSQL server for local development
// and for tests that are not given a database URL.
//
// Promises:
//
//   - Reuse: Config.DataDir is created (initdb) on first use and reused on
//     later runs when it already holds a cluster (PG_VERSION present). Data
//     written in one run is there in the next. With Port 0 a reused DataDir
//     keeps the port it had last time if that port is still free.
//   - One server per DataDir: Start fails with "data directory ... is in use
//     by pid N" while another postmaster runs on the same DataDir.
//   - Root: PostgreSQL refuses to run as root, so when the process runs as
//     root, initdb, pg_ctl and postgres run as the "postgres" account (or
//     "nobody" if there is none). DataDir is chowned to that account, and every
//     parent directory of DataDir must be traversable by it; Start says so
//     clearly if it is not. The cluster superuser is always "postgres".
//   - Localhost only: the server listens on TCP 127.0.0.1 only and creates
//     no Unix socket. Its log is DataDir/server.log.
//   - Binaries: taken from Config.BinDir, CN_PG_BINDIR, pg_config, the
//     Debian/Ubuntu, Homebrew and Postgres.app locations or PATH; as a last
//     resort they are downloaded once with
//     github.com/fergusstrange/embedded-postgres into the user cache directory.
//
// Authentication is "trust": anyone who can reach 127.0.0.1 on that port is
// superuser, with no password. This is for development and tests only; never
// use pgembed for production data.
package pgembed
