package schema_test

import (
	"testing"

	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// TestHiddenIsModeration: the hidden state names the outbox's moderation reason.
func TestHiddenIsModeration(t *testing.T) {
	if want := "e.deleted_reason = '" + string(outbox.ReasonModeration) + "'"; schema.HiddenSQL != want {
		t.Fatalf("HiddenSQL = %q, want %q", schema.HiddenSQL, want)
	}
}
