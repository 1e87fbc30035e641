package schema_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// roomTables are the tables of the two rooms of the store (docs/architecture.md,
// internal/store/doc.go): NIP-29 groups and NIP-43 membership.
var roomTables = regexp.MustCompile(`cn_relay\.(groups|group_access|group_users|group_withheld|nip43_members|nip43_roles|membership_claims|membership_pending)\b`)

// roomOwners are the only places whose SQL may name those tables: the rooms'
// own packages, the store that runs their parts inside its batch transaction,
// their declarations here, and the grants. Everything else (console, dashboard,
// relay admin, the operator's tool, the relay) reads through their functions.
// sqlWords tells SQL from prose (flag usages name the tables too).
var sqlWords = regexp.MustCompile(`\b(SELECT|INSERT|UPDATE|DELETE|FROM|JOIN|TRUNCATE|COPY|LOCK)\b`)

var roomOwners = []string{"internal/groups", "internal/membership", "internal/store", "schema", "internal/dbroles",
	// A benchmark that reports each table's size after a flood; it reads no row.
	"scripts/memberflood"}

// TestRoomTablesHaveOwners: no SQL in a Go string outside the owners names a
// group or membership table (comments and flag usages may). It reads the module's non-test sources, so
// a new query in the wrong package fails here with its file and line.
func TestRoomTablesHaveOwners(t *testing.T) {
	tablesHaveOwners(t, roomTables, roomOwners)
}

// blossomTables are Blossom's (internal/blossom, docs/media.md); its package
// is their one owner: cnctl blobs, the console's Media page and the relay's
// NIP-86 hideblob read and change them through its functions.
var blossomTables = regexp.MustCompile(`cn_blossom\.[a-z_]+\b`)

var blossomOwners = []string{"internal/blossom", "schema", "internal/dbroles"}

// TestBlossomTablesHaveOwners: no SQL in a Go string outside internal/blossom
// (and the schema and grants) names a cn_blossom table.
func TestBlossomTablesHaveOwners(t *testing.T) {
	tablesHaveOwners(t, blossomTables, blossomOwners)
}

// tablesHaveOwners fails for each SQL string outside owners that names one
// of tables.
func tablesHaveOwners(t *testing.T, tables *regexp.Regexp, owners []string) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		dir := filepath.ToSlash(filepath.Dir(rel))
		if slices.Contains(owners, dir) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			if m := tables.FindString(s); m != "" && sqlWords.MatchString(s) {
				t.Errorf("%s: names %s in a string; read it through the owner's functions (%v)", fset.Position(lit.Pos()), m, owners)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read only %d files outside the owners: is the module root %s?", files, root)
	}
}
