package schema

import (
	"encoding/binary"
	"testing"
)

// TestLockKeys: every fixed advisory-lock key is "cn_" and five more printable
// ASCII bytes, and no two are equal.
func TestLockKeys(t *testing.T) {
	seen := map[int64]string{}
	for name, key := range FixedLocks {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(key))
		if string(b[:3]) != "cn_" {
			t.Errorf("%s = %#x (%q): not cn_...", name, key, b[:])
		}
		for _, c := range b {
			if c < 0x21 || c > 0x7e {
				t.Errorf("%s = %#x (%q): not printable ASCII", name, key, b[:])
				break
			}
		}
		if other, ok := seen[key]; ok {
			t.Errorf("%s and %s share the key %#x", name, other, key)
		}
		seen[key] = name
	}
	if len(FixedLocks) != 13 {
		t.Errorf("FixedLocks has %d keys; list every constant of locks.go", len(FixedLocks))
	}
}
