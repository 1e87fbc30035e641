package wsconn

import (
	"bytes"
	"compress/flate"
	"io"
	"net/http"
	"strings"
	"sync"
)

// DeflateOptions configures permessage-deflate (RFC 7692), off by default.
//
// Only the no-context-takeover form is negotiated (the answer is always
// "permessage-deflate; server_no_context_takeover;
// client_no_context_takeover"): every message is compressed and inflated on
// its own, with a compressor or decompressor taken from a pool for that
// message and given back after it. So a connection that negotiated the
// extension holds nothing more than one that did not (its Conn's one
// pointer to a shared, empty deflater): the memory is per message in
// flight, about 1.2 MiB per compressor at level 1 (compress/flate's
// hash tables and window) and 45 KiB per decompressor, pooled, at most one
// of each per connection writing or reading a message at that instant. A
// client that asks for a server window under 15 bits is declined (Go's
// compressor always uses 32 KiB); sliding windows (context takeover) are
// not offered.
type DeflateOptions struct {
	Enabled bool
	// MinSize is the smallest message compressed (smaller ones go plain, as
	// RFC 7692 allows per message); 0: 256 bytes.
	MinSize int
}

// deflater is a connection's negotiated permessage-deflate: no state of its
// own (no context takeover), only the options.
type deflater struct {
	minSize int
}

const deflateAnswer = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"

// negotiate picks the first permessage-deflate offer in h it can honour.
func (o DeflateOptions) negotiate(h http.Header) (*deflater, string) {
	for _, v := range h.Values("Sec-Websocket-Extensions") {
		for offer := range strings.SplitSeq(v, ",") {
			params := strings.Split(offer, ";")
			if strings.TrimSpace(params[0]) != "permessage-deflate" {
				continue
			}
			if acceptableOffer(params[1:]) {
				d := &deflater{minSize: o.MinSize}
				if d.minSize <= 0 {
					d.minSize = 256
				}
				return d, deflateAnswer
			}
		}
	}
	return nil, ""
}

// acceptableOffer reports whether an offer's parameters can be honoured with
// no context takeover on either side.
func acceptableOffer(params []string) bool {
	for _, p := range params {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		value = strings.Trim(strings.TrimSpace(value), `"`)
		switch strings.TrimSpace(name) {
		case "server_no_context_takeover", "client_no_context_takeover":
		case "client_max_window_bits": // (any: the inflater takes every window)
		case "server_max_window_bits":
			if value != "15" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// The pools of compressors and decompressors (see DeflateOptions).
var (
	flateWriters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed)
		return w
	}}
	flateReaders = sync.Pool{New: func() any { return flate.NewReader(nil) }}
)

// deflateTail ends every compressed message (RFC 7692 7.2.1): removed after
// compressing, added back before inflating.
var deflateTail = []byte{0, 0, 0xff, 0xff}

// inflate returns the Parser's Inflate for messages of at most limit bytes
// (0: no limit).
func (d *deflater) inflate(limit int64) func(dst, src []byte) ([]byte, error) {
	return func(dst, src []byte) ([]byte, error) {
		fr := flateReaders.Get().(io.ReadCloser)
		defer flateReaders.Put(fr)
		_ = fr.(flate.Resetter).Reset(io.MultiReader(bytes.NewReader(src), bytes.NewReader(deflateTail)), nil)
		var r io.Reader = fr
		if limit > 0 {
			r = io.LimitReader(fr, limit+1)
		}
		buf := bytes.NewBuffer(dst[:0])
		_, err := buf.ReadFrom(r)
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, err
		}
		if limit > 0 && int64(buf.Len()) > limit {
			return nil, errInflateTooBig
		}
		return buf.Bytes(), nil
	}
}

// Deflating reports whether the connection negotiated permessage-deflate:
// its writer makes its text frames with AppendText then.
func (c *Conn) Deflating() bool { return c.defl != nil }

// AppendText appends one text frame whose payload is head, body and tail
// (any may be empty): compressed (RSV1) when the connection negotiated
// permessage-deflate and the payload is at least DeflateOptions.MinSize
// long, else plain.
func (c *Conn) AppendText(b, head, body, tail []byte) []byte {
	n := len(head) + len(body) + len(tail)
	if c.defl == nil || n < c.defl.minSize {
		b = AppendFrameHeader(b, OpText, n)
		return append(append(append(b, head...), body...), tail...)
	}
	cb := compressBufs.Get().(*bytes.Buffer)
	defer compressBufs.Put(cb)
	cb.Reset()
	fw := flateWriters.Get().(*flate.Writer)
	fw.Reset(cb)
	_, _ = fw.Write(head)
	_, _ = fw.Write(body)
	_, _ = fw.Write(tail)
	_ = fw.Flush()
	flateWriters.Put(fw)
	z := bytes.TrimSuffix(cb.Bytes(), deflateTail)
	b = appendHeader(b, finBit|rsv1Bit|OpText, len(z))
	return append(b, z...)
}

var compressBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}
