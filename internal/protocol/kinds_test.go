package protocol_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

func TestClassOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind int
		want protocol.KindClass
	}{
		{-1, protocol.Regular},
		{0, protocol.Replaceable},
		{1, protocol.Regular},
		{2, protocol.Regular},
		{3, protocol.Replaceable},
		{4, protocol.Regular},
		{5, protocol.Regular},
		{9999, protocol.Regular},
		{10000, protocol.Replaceable},
		{19999, protocol.Replaceable},
		{20000, protocol.Ephemeral},
		{29999, protocol.Ephemeral},
		{30000, protocol.Addressable},
		{39999, protocol.Addressable},
		{40000, protocol.Regular},
		{65535, protocol.Regular},
	} {
		require.Equal(t, tc.want, protocol.ClassOf(tc.kind), "kind %d", tc.kind)
	}
}

func TestKindClassString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "regular", protocol.Regular.String())
	require.Equal(t, "replaceable", protocol.Replaceable.String())
	require.Equal(t, "ephemeral", protocol.Ephemeral.String())
	require.Equal(t, "addressable", protocol.Addressable.String())
	require.Equal(t, "unknown", protocol.KindClass(99).String())
}
