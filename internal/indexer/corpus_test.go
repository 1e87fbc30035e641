package indexer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A synthetic corpus for the benchmarks: 60% English and 40% Japanese notes of
// 8-30 words, words drawn Zipf-like from a common vocabulary (70%) and a long tail
// of rare words (30%), 50 topics, 5,000 authors. Events are not signed (the
// indexer never verifies); ids are unique hashes.

var englishWords = strings.Fields(`the be to of and a in that have i it for not on with he as you do at this but his
by from they we say her she or an will my one all would there their what so up out if about who get which go me when
make can like time no just him know take people into year your good some could them see other than then now look only
come its over think also back after use two how our work first well way even new want because any these give day most
us relay nostr meetup coffee weather music travel photo garden bitcoin lightning running cooking reading writing
design network server client protocol market city train station mountain river ocean summer winter spring autumn
morning evening night weekend holiday family friend school office project release update feature community event
question answer problem solution idea story book movie game sport football tennis guitar piano camera phone laptop`)

var japaneseWords = strings.Fields(`今日 明日 昨日 東京 大阪 京都 北海道 沖縄 天気 会議 写真 電車 友達 仕事 ラーメン 寿司 コーヒー
音楽 映画 旅行 散歩 公園 学校 会社 週末 休日 家族 料理 読書 勉強 日本語 英語 中国語 桜 紅葉 温泉 富士山 タワー
駅 空港 新幹線 ニュース 技術 開発 サーバー リレー ノストラ 猫 犬 雨 雪 晴れ 夏 冬 春 秋 朝 夜`)

var particles = []string{"は", "に", "を", "で", "が", "の", "と", "も", "へ", "から"}

// zipf picks an index in [0, n) with probability ~ 1/(i+1).
type zipf struct{ cum []float64 }

func newZipf(n int) zipf {
	z := zipf{cum: make([]float64, n)}
	total := 0.0
	for i := range n {
		total += 1 / float64(i+1)
		z.cum[i] = total
	}
	for i := range z.cum {
		z.cum[i] /= total
	}
	return z
}

func (z zipf) pick(rng *rand.Rand) int {
	x := rng.Float64()
	lo, hi := 0, len(z.cum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if z.cum[mid] < x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

type corpus struct {
	rng        *rand.Rand
	en, ja     zipf
	authors    []string
	topicCount int
}

func newCorpus(seed uint64) *corpus {
	c := &corpus{rng: rand.New(rand.NewPCG(seed, seed+1)), en: newZipf(len(englishWords)), ja: newZipf(len(japaneseWords)), topicCount: 50}
	for i := range 5000 {
		sum := sha256.Sum256([]byte(fmt.Sprintf("author %d", i)))
		c.authors = append(c.authors, hex.EncodeToString(sum[:]))
	}
	return c
}

func (c *corpus) text() string {
	var b strings.Builder
	words := 8 + c.rng.IntN(23)
	japanese := c.rng.IntN(10) < 4
	for i := range words {
		rare := c.rng.IntN(10) < 3
		switch {
		case japanese && rare:
			b.WriteString(japaneseWords[c.rng.IntN(len(japaneseWords))] + japaneseWords[c.rng.IntN(len(japaneseWords))])
		case japanese:
			b.WriteString(japaneseWords[c.ja.pick(c.rng)])
			b.WriteString(particles[c.rng.IntN(len(particles))])
		case rare:
			fmt.Fprintf(&b, "w%05d ", c.rng.IntN(50000))
		default:
			b.WriteString(englishWords[c.en.pick(c.rng)])
			b.WriteByte(' ')
		}
		if japanese && i%6 == 5 {
			b.WriteString("。")
		}
	}
	return b.String()
}

// bulkLoad writes n kind-1 events with one topic each straight into the relay's
// tables (COPY), and, with outboxRows, their upsert rows: a backlog for index-v1.
func bulkLoad(ctx context.Context, pool *pgxpool.Pool, c *corpus, n int, outboxRows bool) error {
	const chunk = 50_000
	sig := strings.Repeat("ab", 64)
	now := time.Now()
	for start := 0; start < n; start += chunk {
		var events, topics, rows [][]any
		for i := start; i < min(start+chunk, n); i++ {
			sum := sha256.Sum256([]byte(fmt.Sprintf("event %d %d", i, c.rng.Uint64())))
			id := hex.EncodeToString(sum[:])
			at := int64(1_700_000_000 + i)
			topic := fmt.Sprintf("topic%d", c.rng.IntN(c.topicCount))
			pubkey := c.authors[c.rng.IntN(len(c.authors))]
			events = append(events, []any{id, pubkey, int32(1), at,
				`[["t","` + topic + `"]]`, c.text(), sig, now})
			topics = append(topics, []any{id, topic, at, pubkey, int32(1)})
			rows = append(rows, []any{"upsert", id, topic, int32(1), at, now})
		}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{"cn_relay", "events"},
			[]string{"id", "pubkey", "kind", "created_at", "tags", "content", "sig", "ingested_at"}, pgx.CopyFromRows(events)); err != nil {
			return fmt.Errorf("copy events: %w", err)
		}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{"cn_relay", "event_topics"},
			[]string{"event_id", "topic_id", "created_at", "pubkey", "kind"}, pgx.CopyFromRows(topics)); err != nil {
			return fmt.Errorf("copy topics: %w", err)
		}
		if outboxRows {
			// One writer, no concurrent appends: seq order is commit order without the
			// outbox lock.
			if _, err := pool.CopyFrom(ctx, pgx.Identifier{"cn_relay", "events_outbox"},
				[]string{"op", "event_id", "topic_id", "kind", "created_at", "ingested_at"}, pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("copy outbox: %w", err)
			}
		}
	}
	_, err := pool.Exec(ctx, "SELECT cn_relay.outbox_ensure_partitions()")
	if err != nil {
		return err
	}
	for _, table := range []string{"cn_relay.events", "cn_relay.event_topics"} {
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+table); err != nil {
			return err
		}
	}
	return nil
}
