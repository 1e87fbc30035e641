package textsearch

import (
	"strings"
	"testing"
)

// Typical notes: mixed English/Japanese (~280 bytes, with a little half-width
// katakana so the NFKC slow path runs too), plain English and plain Japanese.
var benchNotes = []struct{ name, text string }{
	{"mixed", "Meetup at 東京 tomorrow! 昨日は東京タワーに行った。The runners were running " +
		"quickly to the cities 🎉 #nostr https://example.com/post/12345 楽しかったです。" +
		"See you there, don't be late ｶﾀｶﾅ. 明日も晴れるといいね、みんなで写真を撮ろう"},
	{"english", "Just shipped a new release of the relay: faster full-text search, better " +
		"spam filtering and a smaller memory footprint. Thanks to everyone who tested the " +
		"betas and reported bugs! Upgrade notes are in the changelog, and as always, " +
		"feedback is welcome. #nostr #relay"},
	{"japanese", "今日は朝から雨が降っていたけど、午後には晴れて気持ちのいい天気になりました。" +
		"駅前の新しいカフェでコーヒーを飲みながら本を読んで、のんびり過ごしました。"},
}

func BenchmarkAnalyze(b *testing.B) {
	for _, n := range benchNotes {
		b.Run(n.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(n.text)))
			for b.Loop() {
				Analyze(n.text)
			}
		})
	}
}

func BenchmarkParseQuery(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = ParseQuery("東京タワー running \"new york\" -spam")
	}
}

func BenchmarkSnippet(b *testing.B) {
	q, _ := ParseQuery("cities")
	b.ReportAllocs()
	for b.Loop() {
		Snippet(benchNotes[0].text, q, 80)
	}
}

// BenchmarkAnalyzeWorst measures inputs at the limits: 64 KiB of text that
// expands under NFKC, of one-letter words, of CJK, and of combining marks.
func BenchmarkAnalyzeWorst(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"ﷺ", strings.Repeat("ﷺ", 22000)},
		{"㍿", strings.Repeat("㍿", 22000)},
		{"ﬃ", strings.Repeat("ﬃ ", 16000)},
		{"words", strings.Repeat("a b c d e f g h ", 4100)},
		{"cjk", strings.Repeat("東京タワーに行った", 2500)},
		{"marks", "東" + strings.Repeat("\u0301", 32000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Analyze(c.text)
			}
		})
	}
}
