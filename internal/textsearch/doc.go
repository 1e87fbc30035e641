// Package textsearch turns text into Postgres full-text-search values for a
// tsvector column that must work for Japanese, Chinese, Korean and English.
//
// Postgres's own parsers do not split CJK text and no CJK extension (pgroonga,
// pg_bigm) is available, so all analysis happens here, in Go: Analyze produces a
// tsvector literal to store (the column is never re-analysed by Postgres; use the
// literal as $n::tsvector), and ParseQuery produces a tsquery literal to match it
// with (`tsv @@ $n::tsquery`). A GIN index on the column serves both.
//
// The rules below are promises; tests hold the package to them.
//
// # Limits
//
// Only the first 64 KiB (65536 bytes, cut back to a rune boundary) of a content
// string are analysed; the rest is ignored. After normalisation at most 128 KiB are
// tokenised. Tokens past position 16383 (the Postgres maximum) are dropped, each
// lexeme keeps at most 256 positions (the Postgres maximum) and the distinct
// lexemes stay well under the 1 MiB a tsvector may hold, so every literal Analyze
// returns is accepted by Postgres. A query string is cut to its first 1 KiB.
//
// # Normalisation
//
// Text is normalised to Unicode NFKC (full-width ＴＯＫＹＯ becomes tokyo, half-width
// ｶﾀｶﾅ becomes カタカナ, ① becomes 1) and words are lower-cased (unicode.ToLower,
// rune by rune, after NFKC). Invalid UTF-8 bytes are treated as separators.
// Format characters (Unicode Cf: soft hyphen, zero-width joiners, bidi marks, BOM;
// except U+200B ZERO WIDTH SPACE, which separates), variation selectors and
// U+034F COMBINING GRAPHEME JOINER are ignored: they neither separate nor become
// part of a lexeme, so 葛 followed by an ideographic variation selector indexes as
// 葛, and "hy\u00ADphen" as hyphen.
//
// # Runs
//
// The normalised text is split into runs:
//
//   - A CJK run is a maximal sequence of characters of the scripts Han (including
//     々 〆 〇), Hiragana (including ゝゞ), Katakana (including ヽヾ) and Hangul,
//     plus the prolonged sound mark ー (U+30FC) and the vertical kana repeat marks
//     〱〲〳〴〵 (U+3031–U+3035). The katakana middle dot ・ (U+30FB), ゠ and all other
//     punctuation separate runs.
//   - A word run is a maximal sequence of letters and digits (Unicode L* and N*)
//     of any other script. An apostrophe (U+0027, or U+2019 ’) between two letters
//     or digits of a word is dropped and the parts are joined: don't → dont,
//     John's → johns (→ stem john).
//   - Combining marks (Mn, Mc) continue the run they follow and belong to the
//     character they follow; a combining mark that follows no letter, and every
//     enclosing mark (Me, e.g. the keycap U+20E3), is a separator.
//   - Everything else — spaces, punctuation, symbols, emoji, control characters,
//     private-use and unassigned code points — separates runs and is not indexed.
//
// # Tokens and positions
//
// Each token takes the next position, starting at 1.
//
//   - A CJK run of two or more characters yields its overlapping character
//     bigrams, one position each: 東京タワー → 東京 京タ タワ ワー. In addition its last
//     character is a unigram lexeme (ー) at the same position as the last bigram, so
//     every character of a run starts some lexeme. A one-character run yields that
//     character as a unigram at its own position. A "character" is a base rune
//     plus the combining marks that follow it (at most 16 bytes; further marks are
//     dropped).
//   - A word run yields one token: the lower-cased word, truncated to its first 64
//     bytes (on a rune boundary) if longer. A word of three or more bytes made only
//     of the ASCII letters a–z (after lower-casing and apostrophe joining) that was
//     not truncated is replaced by its English Snowball (Porter2) stem, from
//     github.com/kljensen/snowball (running → run, cities → citi, quickly →
//     quick). Every other word — digits (2024), mixed letters and digits (mp3),
//     non-ASCII letters (café, ουρανός), truncated words — is kept as it is.
//
// Stop words are not removed.
//
// # Query syntax
//
// ParseQuery splits the (NFKC-normalised) query at white space into terms that are
// ANDed (&).
//
//   - Text between double quotes (", or the typographic “ ”) is one phrase term;
//     an unterminated quote runs to the end of the query. A quote also ends an
//     unquoted term it touches: foo"bar baz" is the terms foo and "bar baz".
//   - A term is analysed exactly as content is. Its tokens are joined with the
//     followed-by operator <-> in the order and at the distances Analyze gives the
//     same text (a CJK trailing unigram is never part of a query: inside a longer
//     run of a document it does not exist at that position). So 東京タワー becomes
//     '東京' <-> '京タ' <-> 'タワ' <-> 'ワー', e-mail becomes 'e' <-> 'mail', and
//     東京tower becomes '東京' <-> 'tower'.
//   - Words match by their stem, which covers inflections: run → 'run' finds
//     running and runs; city → 'citi' finds cities. An unquoted term ending in '*'
//     makes its last word token a prefix match if it has at least two characters:
//     run* → 'run':* also finds runner. Prefix matches are opt-in because a GIN
//     index answers them several times slower (measured: 7.5 ms instead of 1.3 ms
//     for one common word over 1,000,000 documents); a one-character word (a*)
//     stays exact, and inside quotes no word is a prefix match.
//   - A one-character CJK run is always a prefix match, quoted or not, since CJK
//     text has no word boundaries: 東 → '東':* matches the unigram 東 and every
//     bigram starting with 東. A CJK run of two or more characters becomes its
//     bigrams joined by <->.
//   - A term that starts with '-' (at the start of the query or after white space,
//     followed by something other than white space) is negated: -foo → !'foo':*,
//     -"new york" → !( 'new' <-> 'york' ). Negation needs at least one positive
//     term; a query of only negated terms has nothing to search for and returns
//     ErrNoTerms (a pure negation would also scan the whole table).
//   - Terms that yield no tokens (only punctuation, symbols or emoji) are ignored;
//     duplicate terms are dropped. If no positive term remains ParseQuery returns
//     ErrNoTerms.
//
// Every lexeme in a tsquery literal is single-quoted with ' and \ escaped, so the
// literal is always accepted by Postgres.
//
// # Snippets
//
// Snippet finds the first occurrence of a word, stem or CJK lexeme of the query's
// positive terms in the content (comparing NFKC-normalised, lower-cased text,
// preferring occurrences of words and stems at the start of a word; only the
// first 64 KiB are searched) and returns an excerpt of at most maxRunes runes
// around it, with runs of white space and control characters collapsed to one
// space and "…" where text was cut.
package textsearch
