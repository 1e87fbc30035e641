package indexer

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/testkit"
)

func getJSON(t *testing.T, srv *httptest.Server, query url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(srv.URL + "/v1/search?" + query.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var v map[string]any
	require.NoError(t, json.Unmarshal(body, &v), "body %s", body)
	return resp.StatusCode, v
}

func TestSearchAPI(t *testing.T) {
	n := newNode(t)
	// 25 notes that match "ramen": the first five of equal length with falling
	// relevance (fewer occurrences), the rest longer, of equal relevance; and one
	// in another topic by another author.
	var evs []*nostr.Event
	for i := range 25 {
		text := fmt.Sprintf("ramen soup soup soup soup extra note %d", i)
		if i < 5 {
			text = strings.Repeat("ramen ", 5-i) + strings.Repeat("soup ", i) + fmt.Sprintf("note %d", i)
		}
		evs = append(evs, n.event(t, 0, 1, base+nostr.Timestamp(i), nostr.Tags{topic("food")}, text))
	}
	other := n.event(t, 1, 1, base+100, nostr.Tags{topic("travel")}, "ramen in 東京")
	evs = append(evs, other)
	n.publish(t, evs...)
	n.sync(t)
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer((&API{Pool: n.db.Pool, Registerer: reg, Gatherer: reg}).Handler())
	defer srv.Close()

	// Pages of 10 walk all 26 hits exactly once, in (score, created_at, id) order.
	var got []string
	var scores []float64
	cursor := ""
	for page := 0; ; page++ {
		q := url.Values{"q": {"ramen"}, "limit": {"10"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		status, body := getJSON(t, srv, q)
		require.Equal(t, http.StatusOK, status, "%v", body)
		for _, it := range body["items"].([]any) {
			item := it.(map[string]any)
			for _, field := range []string{"event_id", "topic_id", "kind", "pubkey", "created_at", "snippet", "score"} {
				require.Contains(t, item, field)
			}
			require.Contains(t, strings.ToLower(item["snippet"].(string)), "ramen")
			got = append(got, item["event_id"].(string))
			scores = append(scores, item["score"].(float64))
		}
		if body["next_cursor"] == nil {
			break
		}
		cursor = body["next_cursor"].(string)
		require.Less(t, page, 5)
	}
	require.Len(t, got, 26)
	seen := map[string]bool{}
	for i, id := range got {
		require.False(t, seen[id], "duplicate %s", id)
		seen[id] = true
		if i > 0 {
			require.LessOrEqual(t, scores[i], scores[i-1], "score order")
		}
	}
	pos := map[string]int{}
	for i, id := range got {
		pos[id] = i
	}
	for i := 1; i < 5; i++ {
		require.Less(t, pos[evs[i-1].ID], pos[evs[i].ID], "more occurrences rank higher")
	}
	require.Less(t, pos[evs[4].ID], pos[evs[5].ID])
	for i := 6; i < 25; i++ {
		require.Less(t, pos[evs[i].ID], pos[evs[i-1].ID], "equal relevance: newest first")
	}

	// Filters.
	status, body := getJSON(t, srv, url.Values{"q": {"ramen"}, "topic": {"Travel"}})
	require.Equal(t, http.StatusOK, status)
	items := body["items"].([]any)
	require.Len(t, items, 1)
	require.Equal(t, other.ID, items[0].(map[string]any)["event_id"])
	require.Equal(t, "travel", items[0].(map[string]any)["topic_id"])
	_, body = getJSON(t, srv, url.Values{"q": {"ramen"}, "author": {other.PubKey}})
	require.Len(t, body["items"].([]any), 1)
	_, body = getJSON(t, srv, url.Values{"q": {"ramen"}, "kind": {"30023"}})
	require.Empty(t, body["items"].([]any))
	require.NotNil(t, body["items"], "an empty page is [] not null")
	_, body = getJSON(t, srv, url.Values{"q": {"ramen"}, "since": {fmt.Sprint(base + 20)}, "until": {fmt.Sprint(base + 22)}})
	require.Len(t, body["items"].([]any), 3)
	_, body = getJSON(t, srv, url.Values{"q": {"東京"}})
	require.Len(t, body["items"].([]any), 1)

	// Malformed parameters: 400 with a message naming the parameter.
	for _, tc := range []struct {
		query url.Values
		want  string
	}{
		{url.Values{}, "q: required"},
		{url.Values{"q": {"🎉 !!"}}, "q: "},
		{url.Values{"q": {"x"}, "limit": {"0"}}, "limit"},
		{url.Values{"q": {"x"}, "limit": {"101"}}, "limit"},
		{url.Values{"q": {"x"}, "limit": {"ten"}}, "limit"},
		{url.Values{"q": {"x"}, "kind": {"-1"}}, "kind"},
		{url.Values{"q": {"x"}, "author": {"npub1xyz"}}, "author"},
		{url.Values{"q": {"x"}, "since": {"yesterday"}}, "since"},
		{url.Values{"q": {"x"}, "since": {"10"}, "until": {"5"}}, "since"},
		{url.Values{"q": {"x"}, "cursor": {"not-a-cursor"}}, "cursor"},
		{url.Values{"q": {"x"}, "topic": {"   "}}, "topic"},
		{url.Values{"q": {"x"}, "sort": {"new"}}, "unknown parameter"},
		{url.Values{"q": {"x", "y"}}, "q: given 2 times"},
		{url.Values{"q": {strings.Repeat("a", 600)}}, "q: longer"},
	} {
		status, body := getJSON(t, srv, tc.query)
		require.Equal(t, http.StatusBadRequest, status, "%v", tc.query)
		require.Contains(t, body["error"], tc.want, "%v", tc.query)
	}

	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	resp, err = http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(metrics), `cn_index_search_invalid_total 14`)
	require.Regexp(t, `cn_index_search_seconds_count\{result="ok"\} [1-9]`, string(metrics))
}

// TestSearchAPIGroup: group= searches one NIP-29 group's events only.
func TestSearchAPIGroup(t *testing.T) {
	n := newNode(t)
	testkit.HostGroups(t, n.store, testkit.GroupOpts{})
	now := nostr.Now()
	n.publish(t, n.event(t, 0, groups.KindCreateGroup, now, nostr.Tags{{"h", "g1"}}, ""), n.event(t, 0, groups.KindCreateGroup, now, nostr.Tags{{"h", "g2"}}, ""))
	in1 := n.event(t, 1, 1, now, nostr.Tags{{"h", "g1"}}, "ramen in one")
	in2 := n.event(t, 1, 1, now, nostr.Tags{{"h", "g2"}}, "ramen in two")
	n.publish(t, in1, in2, n.event(t, 1, 1, now, nostr.Tags{{"t", "food"}}, "ramen in a topic"))
	n.sync(t)
	srv := httptest.NewServer((&API{Pool: n.db.Pool}).Handler())
	defer srv.Close()
	for g, want := range map[string]string{"g1": in1.ID, "g2": in2.ID} {
		status, body := getJSON(t, srv, url.Values{"q": {"ramen"}, "group": {g}})
		require.Equal(t, http.StatusOK, status, "%v", body)
		items := body["items"].([]any)
		require.Len(t, items, 1, g)
		require.Equal(t, want, items[0].(map[string]any)["event_id"])
		require.Equal(t, "GROUP:"+g, items[0].(map[string]any)["topic_id"])
	}
	_, body := getJSON(t, srv, url.Values{"q": {"ramen"}, "group": {"g3"}})
	require.Empty(t, body["items"])
	for _, tc := range []url.Values{
		{"q": {"x"}, "group": {"no spaces"}},
		{"q": {"x"}, "group": {"g1"}, "topic": {"food"}},
		{"q": {"x"}, "group": {"g1", "g2"}},
	} {
		status, body := getJSON(t, srv, tc)
		require.Equal(t, http.StatusBadRequest, status, "%v", tc)
		require.Contains(t, body["error"], "group", "%v", tc)
	}
}
