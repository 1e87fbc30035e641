package wsconn

import (
	"encoding/binary"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Opcodes (RFC 6455 5.2).
const (
	OpContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	OpPong         = 0xA
)

// Close codes (RFC 6455 7.4.1).
const (
	CloseNormal          = 1000
	CloseGoingAway       = 1001
	CloseProtocolError   = 1002
	CloseUnsupportedData = 1003
	CloseNoStatus        = 1005 // never sent: a close frame without a code
	CloseAbnormal        = 1006 // never sent: the connection ended without a close frame
	CloseInvalidPayload  = 1007
	ClosePolicyViolation = 1008
	CloseMessageTooBig   = 1009
	CloseInternalError   = 1011
	CloseServiceRestart  = 1012 // IANA registry: the server is restarting; reconnect
	maxControlPayload    = 125
	maxServerFrameHeader = 10
	maxClientFrameHeader = 14
	finBit               = 0x80
	rsv1Bit              = 0x40
	rsvBits              = 0x70
	maskBit              = 0x80
)

// CloseError is why a connection's reading ended with a close frame: the
// peer's (Remote, with the code and reason it sent, CloseNoStatus when it sent
// none) or the transport's own refusal of what the peer sent (not Remote: the
// code to send, 1002, 1007 or 1009, and a reason).
type CloseError struct {
	Code   int
	Text   string
	Remote bool
}

func (e *CloseError) Error() string {
	who := "refused"
	if e.Remote {
		who = "peer closed"
	}
	return "websocket " + who + ": " + strconv.Itoa(e.Code) + " " + e.Text
}

// Sink receives what Parser.Parse finds, in order. The slices are the
// parser's (or the caller's buffer): valid during the call only.
type Sink interface {
	// Message is a complete data message (text or binary, every fragment
	// joined); a text message has been checked to be UTF-8.
	Message(op byte, data []byte)
	// Ping and Pong are control frames, with their payloads.
	Ping(payload []byte)
	Pong(payload []byte)
}

// Parser reads the frames a client sends (RFC 6455 5): it joins fragments,
// passes control frames through (also between fragments), and refuses with a
// *CloseError what a server must refuse. It keeps state between calls only
// while a fragmented message is in progress: an idle parser holds no buffer.
type Parser struct {
	// MaxMessage bounds a message (all its fragments) and a frame: a longer
	// one is refused with 1009 as soon as its header says so. Zero: no limit.
	MaxMessage int64
	// Deflate: RSV1 may be set on a message's first frame (permessage-deflate
	// was negotiated; the message is inflated by Inflate before it is checked
	// and delivered).
	Deflate bool
	Inflate func(dst, src []byte) ([]byte, error)

	msgOp   byte   // the opcode of the fragmented message in progress, 0 if none
	msgComp bool   // it is compressed (RSV1 on its first frame)
	msg     []byte // its fragments so far
}

// Fragmented reports whether a fragmented message is in progress.
func (p *Parser) Fragmented() bool { return p.msgOp != 0 }

// Parse reads the complete frames at the start of b, which it may modify (it
// unmasks payloads in place), hands each to s, and returns how many bytes
// they took. need is, when b ends inside a frame, that frame's length from its
// first byte once its header is complete (so that the caller can read it
// whole), or maxClientFrameHeader while the header is incomplete. err ends
// the connection: a close frame from the peer (Remote) or a refusal; frames
// after it are not read.
func (p *Parser) Parse(b []byte, s Sink) (n int, need int, err *CloseError) {
	for {
		rest := b[n:]
		if len(rest) < 2 {
			return n, maxClientFrameHeader, nil
		}
		b0, b1 := rest[0], rest[1]
		fin, op := b0&finBit != 0, b0&0x0f
		rsv := b0 & rsvBits
		h := 2
		plen := int64(b1 & 0x7f)
		switch plen {
		case 126:
			if len(rest) < 4 {
				return n, maxClientFrameHeader, nil
			}
			plen = int64(binary.BigEndian.Uint16(rest[2:]))
			h = 4
		case 127:
			if len(rest) < 10 {
				return n, maxClientFrameHeader, nil
			}
			u := binary.BigEndian.Uint64(rest[2:])
			if u>>63 != 0 {
				return n, 0, refuse(CloseProtocolError, "frame length's most significant bit set")
			}
			plen = int64(u)
			h = 10
		}
		if e := p.checkHeader(fin, op, rsv, b1, plen); e != nil {
			return n, 0, e
		}
		h += 4 // masking key
		if int64(len(rest)) < int64(h)+plen {
			return n, h + int(plen), nil
		}
		key := rest[h-4 : h]
		payload := rest[h : h+int(plen)]
		unmask(payload, key)
		n += h + int(plen)
		if e := p.frame(fin, op, rsv, payload, s); e != nil {
			return n, 0, e
		}
	}
}

// checkHeader refuses a frame by its header alone.
func (p *Parser) checkHeader(fin bool, op, rsv, b1 byte, plen int64) *CloseError {
	if b1&maskBit == 0 {
		return refuse(CloseProtocolError, "unmasked client frame")
	}
	switch op {
	case OpContinuation:
		if p.msgOp == 0 {
			return refuse(CloseProtocolError, "continuation frame without a message")
		}
		if rsv != 0 {
			return refuse(CloseProtocolError, "reserved bits set")
		}
	case OpText, OpBinary:
		if p.msgOp != 0 {
			return refuse(CloseProtocolError, "data frame inside a fragmented message")
		}
		if rsv != 0 && (rsv != rsv1Bit || !p.Deflate) {
			return refuse(CloseProtocolError, "reserved bits set")
		}
	case OpClose, OpPing, OpPong:
		if !fin {
			return refuse(CloseProtocolError, "fragmented control frame")
		}
		if plen > maxControlPayload {
			return refuse(CloseProtocolError, "control frame too long")
		}
		if rsv != 0 {
			return refuse(CloseProtocolError, "reserved bits set")
		}
		return nil
	default:
		return refuse(CloseProtocolError, "unknown opcode")
	}
	if p.MaxMessage > 0 && int64(len(p.msg))+plen > p.MaxMessage {
		return refuse(CloseMessageTooBig, "message too big")
	}
	return nil
}

// frame handles one complete, unmasked frame.
func (p *Parser) frame(fin bool, op, rsv byte, payload []byte, s Sink) *CloseError {
	switch op {
	case OpPing:
		s.Ping(payload)
		return nil
	case OpPong:
		s.Pong(payload)
		return nil
	case OpClose:
		return closeFrame(payload)
	case OpContinuation:
		p.msg = append(p.msg, payload...)
		if !fin {
			return nil
		}
		op, comp, data := p.msgOp, p.msgComp, p.msg
		p.msgOp, p.msgComp, p.msg = 0, false, nil
		return p.deliver(op, comp, data, s)
	}
	comp := rsv == rsv1Bit
	if !fin {
		p.msgOp, p.msgComp = op, comp
		p.msg = append(make([]byte, 0, 2*len(payload)), payload...)
		return nil
	}
	return p.deliver(op, comp, payload, s)
}

func (p *Parser) deliver(op byte, comp bool, data []byte, s Sink) *CloseError {
	if comp {
		out, err := p.Inflate(nil, data)
		if err != nil {
			if err == errInflateTooBig {
				return refuse(CloseMessageTooBig, "message too big")
			}
			return refuse(CloseInvalidPayload, "bad compressed message")
		}
		data = out
	}
	if op == OpText && !utf8.Valid(data) {
		return refuse(CloseInvalidPayload, "invalid UTF-8 in a text message")
	}
	s.Message(op, data)
	return nil
}

// closeFrame is the peer's close frame as a *CloseError, or the refusal of a
// malformed one.
func closeFrame(payload []byte) *CloseError {
	switch len(payload) {
	case 0:
		return &CloseError{Code: CloseNoStatus, Remote: true}
	case 1:
		return refuse(CloseProtocolError, "close frame of one byte")
	}
	code := int(binary.BigEndian.Uint16(payload))
	if !validCloseCode(code) {
		return refuse(CloseProtocolError, "invalid close code")
	}
	if !utf8.Valid(payload[2:]) {
		return refuse(CloseInvalidPayload, "invalid UTF-8 in a close reason")
	}
	return &CloseError{Code: code, Text: string(payload[2:]), Remote: true}
}

// validCloseCode reports whether a peer may send code (RFC 6455 7.4; the
// IANA registry adds 1012-1014).
func validCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// errInflateTooBig is Inflate's error for a message that inflates past MaxMessage.
var errInflateTooBig = errors.New("wsconn: inflated message too big")

func refuse(code int, text string) *CloseError { return &CloseError{Code: code, Text: text} }

// unmask XORs b with the masking key, in place.
func unmask(b, key []byte) {
	if len(b) >= 8 {
		k := uint64(binary.LittleEndian.Uint32(key))
		k |= k << 32
		for len(b) >= 8 {
			binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)^k)
			b = b[8:]
		}
	}
	for i := range b {
		b[i] ^= key[i&3]
	}
}

// AppendFrameHeader appends the header of a final, unmasked (server) frame
// of n payload bytes with opcode op.
func AppendFrameHeader(b []byte, op byte, n int) []byte {
	return appendHeader(b, finBit|op, n)
}

func appendHeader(b []byte, b0 byte, n int) []byte {
	b = append(b, b0)
	switch {
	case n < 126:
		return append(b, byte(n))
	case n <= 0xffff:
		return append(b, 126, byte(n>>8), byte(n))
	}
	return append(b, 127, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// MaxFrameHeader is the longest header of a server's frame.
const MaxFrameHeader = maxServerFrameHeader

// ClosePayload is a close frame's payload: code and text (cut to fit a
// control frame); none for CloseNoStatus.
func ClosePayload(code int, text string) []byte {
	if code == CloseNoStatus || code == 0 {
		return nil
	}
	if len(text) > maxControlPayload-2 {
		text = text[:maxControlPayload-2]
	}
	b := make([]byte, 2, 2+len(text))
	binary.BigEndian.PutUint16(b, uint16(code))
	return append(b, text...)
}
