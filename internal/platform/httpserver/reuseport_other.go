//go:build !unix

package httpserver

import "errors"

func setReusePort(uintptr) error {
	return errors.New("SO_REUSEPORT is not supported on this system")
}
