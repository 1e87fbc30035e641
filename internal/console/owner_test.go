package console

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleWritesNoSQL: no string in the console's code names a table of
// the node's schemas or is a statement; it reads every list through the
// functions of the package that owns the table (doc.go).
func TestConsoleWritesNoSQL(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	sql := regexp.MustCompile(`\bcn_[a-z]+\.[a-z_]+|(?i)\b(SELECT|INSERT|UPDATE|DELETE)\b.*\b(FROM|INTO|SET|WHERE)\b`)
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		f, err := parser.ParseFile(token.NewFileSet(), file, src, 0) // without comments: doc comments may name tables
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				require.False(t, sql.MatchString(lit.Value), "%s: %s is SQL: read through the table owner's function", file, lit.Value)
			}
			return true
		})
		checked++
	}
	require.Positive(t, checked)
}
