package textsearch

import "strings"

// topicPrefix starts the lexemes that carry an event's topics in its tsvector.
// Analyze never produces a lexeme with '#' (it keeps letters, digits and CJK
// characters only), so topic lexemes never collide with words.
const topicPrefix = "#t:"

// maxTopicBytes bounds a topic lexeme below Postgres's 2046-byte lexeme limit.
const maxTopicBytes = 1024

// WithTopics returns the tsvector literal of content (Analyze) plus one lexeme
// without position per topic, so that a single GIN index on the tsvector serves
// both the text and the topic filter (TopicQuery). Topics are used as given
// (normalised by the caller); an over-long one is cut at maxTopicBytes.
func WithTopics(content string, topics []string) string {
	tsv := Analyze(content)
	if len(topics) == 0 {
		return tsv
	}
	b := make([]byte, 0, len(tsv)+16*len(topics))
	b = append(b, tsv...)
	for _, t := range topics {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = appendQuoted(b, topicPrefix+cutAt(t, maxTopicBytes))
	}
	return string(b)
}

// TopicQuery returns the tsquery literal matching documents (WithTopics) of any of
// topics; "" for none.
func TopicQuery(topics []string) string {
	parts := make([]string, 0, len(topics))
	for _, t := range topics {
		parts = append(parts, string(appendQuoted(nil, topicPrefix+cutAt(t, maxTopicBytes))))
	}
	return strings.Join(parts, " | ")
}
