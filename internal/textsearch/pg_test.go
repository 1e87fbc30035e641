package textsearch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// acceptance is the table of required matches: document, query, whether
// Analyze(doc)::tsvector @@ ParseQuery(query).TSQuery()::tsquery.
var acceptance = []struct {
	doc   string
	query string
	want  bool
}{
	{"昨日は東京タワーに行った", "東京", true},
	{"昨日は東京タワーに行った", "タワー", true},
	{"昨日は東京タワーに行った", "東", true},
	{"昨日は東京タワーに行った", "京", true},
	{"昨日は東京タワーに行った", "ー", true},
	{"昨日は東京タワーに行った", "東京タワー", true},
	{"昨日は東京タワーに行った", "タワ", true},
	{"昨日は東京タワーに行った", "行った", true},
	{"昨日は東京タワーに行った", "大阪", false},
	{"昨日は東京タワーに行った", "京都", false},
	{"昨日は東京タワーに行った", "た", true},           // last character: the unigram
	{"昨日は東京タワーに行った", "東京 行った", true},      // AND
	{"昨日は東京タワーに行った", "東京 大阪", false},      // AND
	{"昨日は東京タワーに行った", "\"東京タワー\"", true},   // quoted run
	{"昨日は東京タワーに行った", "\"東京 タワー\"", false}, // the document has no boundary there
	{"昨日は東京タワーに行った", "東京 -大阪", true},
	{"昨日は東京タワーに行った", "東京 -タワー", false},
	{"昨日は東京タワーに行った", "ﾀﾜｰ", true}, // half-width query

	{"我今天在北京大学学习中文", "北京", true},
	{"我今天在北京大学学习中文", "北京大学", true},
	{"我今天在北京大学学习中文", "学", true},
	{"我今天在北京大学学习中文", "中文", true},
	{"我今天在北京大学学习中文", "上海", false},
	{"我今天在北京大学学习中文", "大学学习", true},
	{"我今天在北京大学学习中文", "北京学习", false},

	{"The runners were running quickly to the cities", "run", true},
	{"The runners were running quickly to the cities", "running", true},
	{"The runners were running quickly to the cities", "runs", true},
	{"The runners were running quickly to the cities", "city", true},
	{"The runners were running quickly to the cities", "quick", true},
	{"The runners were running quickly to the cities", "\"running quickly\"", true},
	{"The runners were running quickly to the cities", "\"quickly running\"", false},
	{"The runners were running quickly to the cities", "walk", false},
	{"The runners were running quickly to the cities", "RUNNER", true},
	{"The runners were running quickly to the cities", "ＲＵＮ", true},
	{"The runners were running quickly to the cities", "“running quickly”", true},
	{"The runners were running quickly to the cities", "\"running quickly", true}, // unterminated
	{"The runners were running quickly to the cities", "cities -walk", true},
	{"The runners were running quickly to the cities", "cities -runner", false},
	{"The runners were running quickly to the cities", "\"runners were\" quick", true},

	{"Meetup at 東京 tomorrow 🎉 #nostr", "東京 tomorrow", true},
	{"Meetup at 東京 tomorrow 🎉 #nostr", "nostr", true},
	{"Meetup at 東京 tomorrow 🎉 #nostr", "meetup 東京", true},
	{"Meetup at 東京 tomorrow 🎉 #nostr", "#nostr", true},
	{"Meetup at 東京 tomorrow 🎉 #nostr", "\"at 東京 tomorrow\"", true},
	{"Meetup at 東京 tomorrow 🎉 #nostr", "\"東京 meetup\"", false},
	{"Meetup at 東京 tomorrow 🎉 #nostr", "nost*", true},
	{"Meetup at 東京 tomorrow 🎉 #nostr", "🎉 nostr", true},

	{"서울에서 만나요", "서울", true},
	{"서울에서 만나요", "만나", true},
	{"서울에서 만나요", "부산", false},

	{"ＴＯＫＹＯ is big", "tokyo", true},
	{"tokyo is big", "ＴＯＫＹＯ", true},
	{"ｶﾀｶﾅで書く", "カタカナ", true},
	{"カタカナで書く", "ｶﾀｶﾅ", true},
	{"ｶﾞｲﾄﾞ", "ガイド", true}, // half-width voiced mark composes
	{"東京tower", "東京tower", true},
	{"東京tower", "tower", true},
	{"大東tower", "東tower", true},
	{"send me an e-mail", "e-mail", true},
	{"send me an e-mail", "\"e mail\"", true},
	{"send me an e-mail", "email", false},
	{"I don't know", "don't", true},
	{"I don't know", "dont", true},
	{"I don’t know", "don't", true},
	{"John's book", "john", true},
	{"2024年の抱負", "2024年", true},
	{"2024年の抱負", "年", true},
	{"2024年の抱負", "抱負", true},
	{"2024年の抱負", "2025", false},
	{"葛\U000E0100飾区", "葛飾", true},    // ideographic variation selector ignored
	{"hy\u00ADphen", "hyphen", true}, // soft hyphen ignored
	{"a café in Paris", "café", true},
	{"a cafe\u0301 in Paris", "café", true}, // NFKC composes
	{"it's a \\ back'slash", "backslash", true},
	{"it's a \\ back'slash", "back'slash", true},
	{"ｱｲｽｸﾘｰﾑ食べたい", "アイスクリーム", true},
	{"ｱｲｽｸﾘｰﾑ食べたい", "食べ", true},
	{"東京・大阪", "東京", true},
	{"東京・大阪", "\"東京 大阪\"", true}, // ・ separates like a space
}

// noTerms are queries that must give ErrNoTerms.
var noTerms = []string{"", "   ", "🎉", "!!! ???", "#", "\"\"", "\"", "-", "- -", "-foo", "-\"new york\"", "・・・", "\xff\xfe", "\x00", "👨‍👩‍👧", "#️⃣", "-東京 -大阪"}

func TestAcceptancePostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Conn(t)
	ctx := context.Background()

	// Index every document, to check the GIN index agrees with direct evaluation.
	var docs []string
	for _, c := range acceptance {
		if !slices.Contains(docs, c.doc) {
			docs = append(docs, c.doc)
		}
	}
	mustExec(t, conn, "CREATE TEMP TABLE ts_docs (id int PRIMARY KEY, tsv tsvector NOT NULL)")
	mustExec(t, conn, "CREATE INDEX ON ts_docs USING gin (tsv)")
	for i, d := range docs {
		mustExec(t, conn, "INSERT INTO ts_docs VALUES ($1, $2::tsvector)", i, Analyze(d))
	}
	mustExec(t, conn, "ANALYZE ts_docs")

	for _, c := range acceptance {
		tsv := Analyze(c.doc)
		q, err := ParseQuery(c.query)
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", c.query, err)
			continue
		}
		var got bool
		if err := conn.QueryRow(ctx, "SELECT $1::tsvector @@ $2::tsquery", tsv, q.TSQuery()).Scan(&got); err != nil {
			t.Fatalf("doc %q query %q (%s): %v", c.doc, c.query, q.TSQuery(), err)
		}
		if got != c.want {
			t.Errorf("doc %q query %q: match = %v, want %v\n  tsvector %s\n  tsquery  %s", c.doc, c.query, got, c.want, tsv, q.TSQuery())
		}
		direct := docsMatching(t, conn, q.TSQuery(), false)
		indexed := docsMatching(t, conn, q.TSQuery(), true)
		if !slices.Equal(direct, indexed) {
			t.Errorf("query %q (%s): seq scan finds %v, GIN index finds %v", c.query, q.TSQuery(), direct, indexed)
		}
	}

	for _, s := range noTerms {
		if q, err := ParseQuery(s); !errors.Is(err, ErrNoTerms) {
			t.Errorf("ParseQuery(%q) = %q, %v; want ErrNoTerms", s, q.TSQuery(), err)
		}
	}

	var empty string
	if err := conn.QueryRow(ctx, "SELECT $1::tsvector::text", Analyze("🎉🎉 !!! ???")).Scan(&empty); err != nil || empty != "" {
		t.Errorf("emoji-only content: %q, %v", empty, err)
	}
}

// docsMatching returns the ids of ts_docs rows matching tsq, by sequential scan
// or through the GIN index.
func docsMatching(t *testing.T, conn *pgx.Conn, tsq string, index bool) []int {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if index {
		_, err = tx.Exec(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off")
	} else {
		_, err = tx.Exec(ctx, "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexscan = off")
	}
	if err != nil {
		t.Fatal(err)
	}
	const sql = "SELECT id FROM ts_docs WHERE tsv @@ $1::tsquery"
	if index {
		var plan strings.Builder
		rows, _ := tx.Query(ctx, "EXPLAIN "+sql, tsq)
		ps, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("explain %s: %v", tsq, err)
		}
		for _, p := range ps {
			plan.WriteString(p + "\n")
		}
		if !strings.Contains(plan.String(), "Bitmap Index Scan") {
			t.Errorf("query %s does not use the GIN index:\n%s", tsq, plan.String())
		}
	}
	rows, _ := tx.Query(ctx, sql, tsq)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatalf("%s: %v", tsq, err)
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	slices.Sort(out)
	return out
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestPostgresAcceptsEverything feeds nasty and random strings through Analyze and
// ParseQuery and checks that Postgres accepts every literal, that Analyze's
// literal is already in Postgres's canonical form, and that every query without
// negation matches the document made of the query's own text.
func TestPostgresAcceptsEverything(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Conn(t)
	ctx := context.Background()

	inputs := append(nastyStrings(), randomStrings(3000, 1)...)
	batch := &pgx.Batch{}
	type check struct {
		input, tsv, tsq string
		selfMatch       bool
	}
	var checks []check
	for _, s := range inputs {
		c := check{input: s, tsv: Analyze(s)}
		if q, err := ParseQuery(s); err == nil {
			c.tsq = q.TSQuery()
			c.selfMatch = len(s) < maxQueryBytes && !strings.Contains(c.tsq, "!")
		}
		checks = append(checks, c)
		batch.Queue("SELECT $1::tsvector::text, $1::tsvector @@ $2::tsquery, numnode($2::tsquery)", c.tsv, c.tsq)
	}
	br := conn.SendBatch(ctx, batch)
	selfMatches := 0
	for _, c := range checks {
		var text string
		var match bool
		var nodes int
		if err := br.QueryRow().Scan(&text, &match, &nodes); err != nil {
			t.Fatalf("input %q\n tsvector %q\n tsquery %q\n %v", c.input, c.tsv, c.tsq, err)
		}
		if text != c.tsv {
			t.Errorf("input %q: Analyze %q, Postgres reads it as %q", truncate(c.input), truncate(c.tsv), truncate(text))
		}
		if c.selfMatch {
			selfMatches++
		}
		if c.selfMatch && !match {
			t.Errorf("input %q: tsquery %q does not match its own text %q", c.input, c.tsq, c.tsv)
		}
		if c.tsq != "" && nodes == 0 {
			t.Errorf("input %q: tsquery %q has no nodes", c.input, c.tsq)
		}
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	if selfMatches < 1000 {
		t.Errorf("only %d of %d inputs checked for self-match", selfMatches, len(checks))
	}
}

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

// TestQuotingPostgres checks appendQuoted against Postgres with lexemes that
// need escaping (Analyze and ParseQuery never produce them today, since
// apostrophes are dropped and backslashes separate, but the escaping is the
// last line of defence).
func TestQuotingPostgres(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Conn(t)
	for _, lex := range []string{"it's", "a\\b", "'", "\\", "''\\\\''", "東'京\\", "x y", ":*", "&|!()<->"} {
		tsv := string(appendQuoted(nil, lex)) + ":1"
		tsq := string(appendQuoted(nil, lex)) + ":*"
		var got []string
		var text string
		var match bool
		err := conn.QueryRow(context.Background(),
			"SELECT tsvector_to_array($1::tsvector), $1::tsvector::text, $1::tsvector @@ $2::tsquery", tsv, tsq).
			Scan(&got, &text, &match)
		if err != nil {
			t.Fatalf("lexeme %q: %v", lex, err)
		}
		if len(got) != 1 || got[0] != lex || text != tsv || !match {
			t.Errorf("lexeme %q: literal %s reads as %q (%s), match %v", lex, tsv, got, text, match)
		}
	}
}
