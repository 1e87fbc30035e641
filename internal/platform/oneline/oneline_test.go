package oneline

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestError(t *testing.T) {
	require.Equal(t, "a b c", Error(errors.New("a\n  b\tc")))
	require.Equal(t, "connect: refused", Error(errors.New("\nconnect:\r\n refused\n")))
}
