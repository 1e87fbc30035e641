package store

import "context"

// Ping reports whether the database answers (the relay's /healthz).
func (s *Reader) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }
