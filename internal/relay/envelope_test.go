package relay

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// TestQuoteAsEncodingJSON: every string is quoted exactly as json.Marshal
// quotes it, the fast path (plain printable ASCII) and the others.
func TestQuoteAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "sub1", "a b~{}[]:,", `q"uote`, `back\slash`, "<script>", "a&b", "tab\t", "nul\x00", "\x7f",
		"é", "日本", "\u2028", "bad utf-8 \xff", "ctl\x1f"} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(quote(s)), "%q", s)
		require.Equal(t, `["EVENT",`+string(want)+`,{}]`, string(wsconn.Msg{Head: eventHead(s), Body: []byte(`{}`)}.Bytes()), "%q", s)
	}
}

func FuzzQuoteAsEncodingJSON(f *testing.F) {
	f.Add("sub")
	f.Add("<\x00é")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := quote(s); string(got) != string(want) {
			t.Fatalf("%q: quote %s, json %s", s, got, want)
		}
	})
}
