package negentropy

import (
	"bytes"
	"errors"
	"fmt"
)

// ProtocolVersion is the first byte of every NIP-77 message (version 1).
const ProtocolVersion = 0x61

// Mode values of a range in a message.
const (
	modeSkip        = 0
	modeFingerprint = 1
	modeIDList      = 2
)

const (
	idSize          = 32
	fingerprintSize = 16
	// maxVarintBytes bounds a varint: 9 groups of 7 bits hold 63 bits, and
	// values are further held below 2^62 so that no sum or shift of the
	// library overflows an int.
	maxVarintBytes = 9
	maxVarint      = 1 << 62
)

// ErrMalformed is wrapped by every error Check returns but
// ErrUnsupportedVersion.
var ErrMalformed = errors.New("malformed negentropy message")

// ErrUnsupportedVersion is wrapped by Check's error for a message of another
// protocol version (a first byte 0x60 to 0x6f other than 0x61). The protocol
// (NIP-77's appendix) has a server answer it with its own version byte alone,
// "61", so that the client may downgrade; Server.Reconcile does.
var ErrUnsupportedVersion = errors.New("unsupported negentropy protocol version")

// VersionReply is a server's answer to a message of another protocol version.
const VersionReply = "61"

// Check reports whether msg (hex, as carried in NEG-OPEN and NEG-MSG) is a
// complete, well-formed NIP-77 version 1 message; a message of another
// version gets an error wrapping ErrUnsupportedVersion (its rest is not read).
// It never panics and reads msg once; a nil error means the library can decode msg without panicking or
// allocating more than msg's own size.
func Check(msg string) error {
	if len(msg) == 0 {
		return fmt.Errorf("%w: empty", ErrMalformed)
	}
	if len(msg)%2 != 0 {
		return fmt.Errorf("%w: odd number of hex digits", ErrMalformed)
	}
	b := make([]byte, len(msg)/2)
	for i := range b {
		hi, ok1 := unhex(msg[2*i])
		lo, ok2 := unhex(msg[2*i+1])
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: not lowercase hex at offset %d", ErrMalformed, 2*i)
		}
		b[i] = hi<<4 | lo
	}
	if b[0] != ProtocolVersion {
		if b[0]&0xf0 == 0x60 {
			return fmt.Errorf("%w 0x%02x (this side speaks 0x%02x)", ErrUnsupportedVersion, b[0], ProtocolVersion)
		}
		return fmt.Errorf("%w: 0x%02x is no protocol version", ErrMalformed, b[0])
	}
	r := reader{b: b, i: 1}
	// The ranges' upper bounds must ascend, (timestamp, id prefix) as the
	// library orders items, and the infinite bound (timestamp delta 0) can only
	// be the last: the library writes its answer's bounds as deltas from the
	// previous one and panics on a negative delta.
	var (
		prevTS   uint64
		prevID   []byte
		infinite bool
	)
	for r.i < len(r.b) {
		if infinite {
			return fmt.Errorf("%w: a range after the infinite bound", ErrMalformed)
		}
		delta, err := r.varint("bound timestamp")
		if err != nil {
			return err
		}
		n, err := r.varint("bound length")
		if err != nil {
			return err
		}
		if n > idSize {
			return fmt.Errorf("%w: bound id prefix of %d bytes (at most %d)", ErrMalformed, n, idSize)
		}
		id := r.b[r.i:min(r.i+int(n), len(r.b))]
		if err := r.skip(int(n), "bound id"); err != nil {
			return err
		}
		if delta == 0 {
			infinite = true
		} else {
			ts := prevTS + delta - 1
			if ts >= maxVarint {
				return fmt.Errorf("%w: bound timestamp %d out of range", ErrMalformed, ts)
			}
			if ts == prevTS && bytes.Compare(id, prevID) < 0 {
				return fmt.Errorf("%w: bounds not in ascending order", ErrMalformed)
			}
			prevTS, prevID = ts, id
		}
		mode, err := r.varint("mode")
		if err != nil {
			return err
		}
		switch mode {
		case modeSkip:
		case modeFingerprint:
			if err := r.skip(fingerprintSize, "fingerprint"); err != nil {
				return err
			}
		case modeIDList:
			n, err := r.varint("id count")
			if err != nil {
				return err
			}
			if n > uint64(len(r.b)-r.i)/idSize {
				return fmt.Errorf("%w: id list of %d ids is longer than the message", ErrMalformed, n)
			}
			if err := r.skip(int(n)*idSize, "id list"); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: unknown mode %d", ErrMalformed, mode)
		}
	}
	return nil
}

type reader struct {
	b []byte
	i int
}

// varint reads one NIP-77 varint (big-endian groups of 7 bits, high bit set on
// every byte but the last).
func (r *reader) varint(what string) (uint64, error) {
	var v uint64
	for n := 0; ; n++ {
		if n == maxVarintBytes {
			return 0, fmt.Errorf("%w: %s varint longer than %d bytes", ErrMalformed, what, maxVarintBytes)
		}
		if r.i >= len(r.b) {
			return 0, fmt.Errorf("%w: truncated %s", ErrMalformed, what)
		}
		c := r.b[r.i]
		r.i++
		v = v<<7 | uint64(c&0x7f)
		if c&0x80 == 0 {
			break
		}
	}
	if v >= maxVarint {
		return 0, fmt.Errorf("%w: %s %d out of range", ErrMalformed, what, v)
	}
	return v, nil
}

func (r *reader) skip(n int, what string) error {
	if n < 0 || n > len(r.b)-r.i {
		return fmt.Errorf("%w: truncated %s", ErrMalformed, what)
	}
	r.i += n
	return nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// IsID reports whether id is 64 lowercase hex characters (an event id).
func IsID(id string) bool {
	if len(id) != 2*idSize {
		return false
	}
	for i := 0; i < len(id); i++ {
		if _, ok := unhex(id[i]); !ok {
			return false
		}
	}
	return true
}
