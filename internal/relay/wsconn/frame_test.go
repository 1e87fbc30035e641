package wsconn

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// frame is a client's frame: masked unless unmasked, FIN unless more.
type frame struct {
	op       byte
	payload  string
	more     bool
	unmasked bool
	rsv      byte
	length   uint64 // the length the header claims, when not 0
}

func (f frame) bytes() []byte {
	b0 := f.op | f.rsv
	if !f.more {
		b0 |= finBit
	}
	n := uint64(len(f.payload))
	if f.length != 0 {
		n = f.length
	}
	var mask byte
	if !f.unmasked {
		mask = maskBit
	}
	b := []byte{b0}
	switch {
	case n < 126:
		b = append(b, mask|byte(n))
	case n <= 0xffff:
		b = append(b, mask|126, byte(n>>8), byte(n))
	default:
		b = append(b, mask|127)
		b = binary.BigEndian.AppendUint64(b, n)
	}
	p := []byte(f.payload)
	if !f.unmasked {
		key := []byte{0x37, 0xfa, 0x21, 0x3d}
		b = append(b, key...)
		masked := bytes.Clone(p)
		unmask(masked, key)
		p = masked
	}
	return append(b, p...)
}

func frames(fs ...frame) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, f.bytes()...)
	}
	return b
}

// record is a Sink that writes down what it gets.
type record []string

func (r *record) Message(op byte, data []byte) {
	*r = append(*r, fmt.Sprintf("msg%d:%s", op, data))
}
func (r *record) Ping(p []byte) { *r = append(*r, "ping:"+string(p)) }
func (r *record) Pong(p []byte) { *r = append(*r, "pong:"+string(p)) }

func closePayload(code uint16, text string) string {
	return string(binary.BigEndian.AppendUint16(nil, code)) + text
}

// parseAll parses in in pieces of step bytes (the socket delivering it in
// reads that size; 0: whole), as Conn.turn does, and returns what the sink got
// and the error.
func parseAll(p *Parser, in []byte, step int) (record, *CloseError) {
	var got record
	var buf []byte
	if step == 0 {
		step = len(in) + 1
	}
	for len(in) > 0 {
		k := min(step, len(in))
		buf = append(buf, in[:k]...)
		in = in[k:]
		n, _, err := p.Parse(buf, &got)
		if err != nil {
			return got, err
		}
		buf = buf[:copy(buf, buf[n:])]
	}
	return got, nil
}

// TestParserConformance: RFC 6455's rules for what a server reads, one row
// each; every row also fed one byte at a time and in 3-byte pieces (the
// socket may deliver a frame in any number of reads) with the same outcome.
func TestParserConformance(t *testing.T) {
	const limit = 70_000
	big := strings.Repeat("x", 300)
	huge := strings.Repeat("y", 65_536)
	for _, tc := range []struct {
		name string
		in   []byte
		want []string
		code int  // the refusal's or the peer's close code; 0: none
		peer bool // the close is the peer's
	}{
		{name: "text", in: frames(frame{op: OpText, payload: "hello"}), want: []string{"msg1:hello"}},
		{name: "binary", in: frames(frame{op: OpBinary, payload: "\xff\x00"}), want: []string{"msg2:\xff\x00"}},
		{name: "16-bit length", in: frames(frame{op: OpText, payload: big}), want: []string{"msg1:" + big}},
		{name: "64-bit length", in: frames(frame{op: OpText, payload: huge}), want: []string{"msg1:" + huge}},
		{name: "empty text", in: frames(frame{op: OpText}), want: []string{"msg1:"}},
		{name: "fragmented", in: frames(frame{op: OpText, payload: "he", more: true},
			frame{op: OpContinuation, payload: "ll", more: true}, frame{op: OpContinuation, payload: "o"}),
			want: []string{"msg1:hello"}},
		{name: "empty fragments", in: frames(frame{op: OpText, more: true},
			frame{op: OpContinuation, more: true}, frame{op: OpContinuation, payload: "x"}),
			want: []string{"msg1:x"}},
		{name: "control frames between fragments", in: frames(frame{op: OpText, payload: "he", more: true},
			frame{op: OpPing, payload: "p1"}, frame{op: OpContinuation, payload: "ll", more: true},
			frame{op: OpPong, payload: "p2"}, frame{op: OpContinuation, payload: "o"}),
			want: []string{"ping:p1", "pong:p2", "msg1:hello"}},
		{name: "close between fragments", in: frames(frame{op: OpText, payload: "he", more: true},
			frame{op: OpClose, payload: closePayload(1000, "")}), code: 1000, peer: true},
		{name: "two messages", in: frames(frame{op: OpText, payload: "a"}, frame{op: OpBinary, payload: "b"}),
			want: []string{"msg1:a", "msg2:b"}},
		{name: "unmasked", in: frames(frame{op: OpText, payload: "hi", unmasked: true}), code: 1002},
		{name: "unmasked ping", in: frames(frame{op: OpPing, unmasked: true}), code: 1002},
		{name: "continuation first", in: frames(frame{op: OpContinuation, payload: "x"}), code: 1002},
		{name: "text inside a fragmented message", in: frames(frame{op: OpText, payload: "a", more: true},
			frame{op: OpText, payload: "b"}), code: 1002},
		{name: "fragmented ping", in: frames(frame{op: OpPing, payload: "a", more: true}), code: 1002},
		{name: "ping of 126 bytes", in: frames(frame{op: OpPing, payload: strings.Repeat("p", 126)}), code: 1002},
		{name: "ping of 125 bytes", in: frames(frame{op: OpPing, payload: strings.Repeat("p", 125)}),
			want: []string{"ping:" + strings.Repeat("p", 125)}},
		{name: "reserved bit 1 without an extension", in: frames(frame{op: OpText, payload: "a", rsv: 0x40}), code: 1002},
		{name: "reserved bit 3", in: frames(frame{op: OpText, payload: "a", rsv: 0x10}), code: 1002},
		{name: "opcode 3", in: frames(frame{op: 3}), code: 1002},
		{name: "opcode 0xB", in: frames(frame{op: 0xB}), code: 1002},
		{name: "length's top bit", in: frames(frame{op: OpText, length: 1 << 63}), code: 1002},
		{name: "invalid UTF-8", in: frames(frame{op: OpText, payload: "ok \xff"}), code: 1007},
		{name: "invalid UTF-8 after valid messages", in: frames(frame{op: OpText, payload: "a"},
			frame{op: OpText, payload: "\xc3\x28"}), want: []string{"msg1:a"}, code: 1007},
		{name: "UTF-8 split across fragments", in: frames(frame{op: OpText, payload: "caf\xc3", more: true},
			frame{op: OpContinuation, payload: "\xa9"}), want: []string{"msg1:café"}},
		{name: "invalid UTF-8 across fragments", in: frames(frame{op: OpText, payload: "caf\xc3", more: true},
			frame{op: OpContinuation, payload: "x"}), code: 1007},
		{name: "frame too big", in: frames(frame{op: OpText, payload: strings.Repeat("a", limit+1)}), code: 1009},
		{name: "frame too big by its header alone", in: frames(frame{op: OpText, length: 1 << 40})[:10], code: 1009},
		{name: "message too big", in: frames(frame{op: OpText, payload: strings.Repeat("a", 60_000), more: true},
			frame{op: OpContinuation, payload: strings.Repeat("a", limit-60_000+1)}), code: 1009},
		{name: "message at the limit", in: frames(frame{op: OpText, payload: strings.Repeat("a", 60_000), more: true},
			frame{op: OpContinuation, payload: strings.Repeat("a", limit-60_000)}),
			want: []string{"msg1:" + strings.Repeat("a", limit)}},
		{name: "close 1000", in: frames(frame{op: OpClose, payload: closePayload(1000, "bye")}), code: 1000, peer: true},
		{name: "close 4000", in: frames(frame{op: OpClose, payload: closePayload(4000, "")}), code: 4000, peer: true},
		{name: "close without a code", in: frames(frame{op: OpClose}), code: CloseNoStatus, peer: true},
		{name: "close of one byte", in: frames(frame{op: OpClose, payload: "\x03"}), code: 1002},
		{name: "close 1005 sent", in: frames(frame{op: OpClose, payload: closePayload(1005, "")}), code: 1002},
		{name: "close 999", in: frames(frame{op: OpClose, payload: closePayload(999, "")}), code: 1002},
		{name: "close 2000", in: frames(frame{op: OpClose, payload: closePayload(2000, "")}), code: 1002},
		{name: "close reason not UTF-8", in: frames(frame{op: OpClose, payload: closePayload(1000, "\xff")}), code: 1007},
		{name: "frames after close unread", in: frames(frame{op: OpClose, payload: closePayload(1001, "")},
			frame{op: OpText, payload: "late"}), code: 1001, peer: true},
	} {
		for _, step := range []int{0, 1, 3, 1000} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, step), func(t *testing.T) {
				p := &Parser{MaxMessage: limit}
				got, err := parseAll(p, bytes.Clone(tc.in), step)
				require.Equal(t, tc.want, []string(got))
				if tc.code == 0 {
					require.Nil(t, err)
					require.False(t, p.Fragmented())
					return
				}
				require.NotNil(t, err)
				require.Equal(t, tc.code, err.Code, err.Text)
				require.Equal(t, tc.peer, err.Remote)
			})
		}
	}
}

// TestParserNeed: an incomplete frame's length is known once its header is
// read, so the reader can size its buffer for it.
func TestParserNeed(t *testing.T) {
	in := frames(frame{op: OpText, payload: strings.Repeat("a", 1000)})
	var p Parser
	var got record
	n, need, err := p.Parse(bytes.Clone(in[:3]), &got)
	require.Nil(t, err)
	require.Equal(t, 0, n)
	require.Equal(t, maxClientFrameHeader, need)
	n, need, err = p.Parse(bytes.Clone(in[:20]), &got)
	require.Nil(t, err)
	require.Equal(t, 0, n)
	require.Equal(t, len(in), need)
}

// FuzzParseFrames: the frame parser never panics, and gives the same
// messages and outcome whether the bytes come whole or in pieces.
func FuzzParseFrames(f *testing.F) {
	f.Add(frames(frame{op: OpText, payload: "he", more: true}, frame{op: OpPing, payload: "p"},
		frame{op: OpContinuation, payload: "llo"}), 1)
	f.Add(frames(frame{op: OpClose, payload: closePayload(1000, "bye")}), 2)
	f.Add(frames(frame{op: OpText, payload: strings.Repeat("b", 200)}), 7)
	f.Add([]byte{0x81, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 1}, 3)
	f.Fuzz(func(t *testing.T, in []byte, step int) {
		if step <= 0 || step > len(in) {
			step = 1
		}
		whole, werr := parseAll(&Parser{MaxMessage: 4096}, bytes.Clone(in), 0)
		pieces, perr := parseAll(&Parser{MaxMessage: 4096}, bytes.Clone(in), step)
		require.Equal(t, whole, pieces)
		require.Equal(t, werr, perr)
	})
}
