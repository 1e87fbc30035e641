package protocol

// KindClass is how NIP-01 says relays treat a kind.
type KindClass int

const (
	// Regular events are all stored.
	Regular KindClass = iota
	// Replaceable events (0, 3, 10000-19999): only the newest per pubkey+kind counts.
	Replaceable
	// Ephemeral events (20000-29999) are fanned out live and never stored.
	Ephemeral
	// Addressable events (30000-39999): only the newest per kind+pubkey+d counts.
	Addressable
)

// String returns the lower-case class name, for logs and metric labels.
func (c KindClass) String() string {
	switch c {
	case Regular:
		return "regular"
	case Replaceable:
		return "replaceable"
	case Ephemeral:
		return "ephemeral"
	case Addressable:
		return "addressable"
	}
	return "unknown"
}

// ClassOf returns the NIP-01 class of kind: replaceable for 0, 3 and 10000-19999,
// ephemeral for 20000-29999, addressable for 30000-39999, regular otherwise
// (including kinds outside 0..65535, which ValidateEvent rejects).
func ClassOf(kind int) KindClass {
	switch {
	case kind == 0 || kind == 3 || (kind >= 10000 && kind < 20000):
		return Replaceable
	case kind >= 20000 && kind < 30000:
		return Ephemeral
	case kind >= 30000 && kind < 40000:
		return Addressable
	}
	return Regular
}
