package node

import (
	"testing"

	"github.com/kukuri/communitynode/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
