package loadgen

import (
	"errors"
	"fmt"
	"time"
)

// The configurations' Validate methods are lists of these rules; each returns
// nil when its value is acceptable and the message the commands print when not.

// firstError returns the first non-nil error, in the order the rules are listed.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// when is a rule of its own: the message when bad holds.
func when(bad bool, format string, args ...any) error {
	if bad {
		return fmt.Errorf(format, args...)
	}
	return nil
}

func atLeast(name string, v, low int) error {
	if low == 0 && v < 0 {
		return fmt.Errorf("%s must not be negative (got %d)", name, v)
	}
	if v < low {
		return fmt.Errorf("%s must be at least %d (got %d)", name, low, v)
	}
	return nil
}

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s must be positive (got %v)", name, d)
	}
	return nil
}

func nonEmpty(name, v string) error {
	if v == "" {
		return errors.New(name + " must not be empty")
	}
	return nil
}

func validKind(k int) error {
	if k < 0 || k > 65535 {
		return fmt.Errorf("kind must be in 0..65535 (got %d)", k)
	}
	return nil
}
