package blossom

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// FuzzParseAuth: the Authorization header faces the network. Whatever it
// holds, parseAuth does not panic, and what it accepts is a kind 24242 with
// a valid signature, the verb asked for and an expiration in the future.
func FuzzParseAuth(f *testing.F) {
	sk := nostr.GeneratePrivateKey()
	now := time.Now()
	ev := nostr.Event{Kind: KindAuth, CreatedAt: nostr.Timestamp(now.Unix() - 1), Content: "Upload",
		Tags: nostr.Tags{{"t", "upload"}, {"x", "00"}, {"expiration", strconv.FormatInt(now.Add(time.Hour).Unix(), 10)}}}
	_ = ev.Sign(sk)
	raw, _ := json.Marshal(ev)
	f.Add("Nostr " + base64.RawURLEncoding.EncodeToString(raw))
	f.Add("Nostr " + base64.StdEncoding.EncodeToString(raw))
	f.Add("Nostr " + base64.RawURLEncoding.EncodeToString([]byte(`{"kind":24242,"tags":[["expiration","x"]]}`)))
	f.Add("nostr ====")
	f.Add("")
	f.Fuzz(func(t *testing.T, header string) {
		req, _ := http.NewRequest(http.MethodPut, "http://h/upload", nil)
		req.Header.Set("Authorization", header)
		a, aerr := parseAuth(req, VerbUpload, now, 24*time.Hour, "h")
		if aerr != nil {
			if aerr.status < 400 || aerr.reason == "" {
				t.Fatalf("refusal without a status or reason: %+v", aerr)
			}
			return
		}
		if a.Event.Kind != KindAuth || !a.Expires.After(now) {
			t.Fatalf("accepted %+v", a.Event)
		}
		if ok, err := a.Event.CheckSignature(); err != nil || !ok {
			t.Fatal("accepted a bad signature")
		}
		if a.Event.Tags.GetFirst([]string{"t", "upload"}) == nil {
			t.Fatal("accepted another verb")
		}
	})
}
