package wsconn

import "net/http"

// DeflateOptions configures permessage-deflate (RFC 7692).
type DeflateOptions struct {
	Enabled bool
}

// deflater is a connection's negotiated permessage-deflate.
type deflater struct{}

func (o DeflateOptions) negotiate(http.Header) (*deflater, string) { return nil, "" }

func (d *deflater) inflate(limit int64) func(dst, src []byte) ([]byte, error) { return nil }
