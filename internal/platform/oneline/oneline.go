// Package oneline turns an error into the one line that a terminal, a log
// reader or an HTTP status body expects: the node's daemons, cnctl and the
// relay's /healthz all print errors through it.
package oneline

import "strings"

// Error returns err's text with every run of white space (newlines and tabs
// included) replaced by one space, trimmed.
func Error(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
