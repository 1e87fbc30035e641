package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/textsearch"
)

// API serves the search index over HTTP:
//
//	GET /v1/search?q=&topic=|group=&author=&kind=&since=&until=&limit=&cursor=
//	    200 {"items":[{event_id, topic_id, kind, pubkey, created_at, snippet, score}], "next_cursor": string|null}
//	    group=<id> searches one NIP-29 group (its scope, groups.Scope; topic_id
//	    of its hits is "GROUP:<id>"); it excludes topic=, since a group's
//	    events are in no topic
//	    400 {"error": "..."} for a missing or malformed parameter
//	GET /healthz   200 "ok" when the database answers, else 503 with the reason
//	GET /metrics   the injected Gatherer, if any
type API struct {
	Pool       *pgxpool.Pool
	Gatherer   prometheus.Gatherer   // may be nil
	Registerer prometheus.Registerer // may be nil; where the search metrics go
	Logger     *slog.Logger          // may be nil
	Timeout    time.Duration         // per search; 5s when zero
	Now        func() time.Time

	m *apiMetrics
}

// DefaultSearchLimit is the page size when limit is absent.
const DefaultSearchLimit = 20

// apiMetrics are the search API's metrics.
type apiMetrics struct {
	seconds *prometheus.HistogramVec // by result: ok, error
	invalid prometheus.Counter
}

func newAPIMetrics(reg prometheus.Registerer) *apiMetrics {
	m := &apiMetrics{
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cn_index_search_seconds",
			Help:    "Search API requests that reached the database, by result (ok, error).",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"result"}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_index_search_invalid_total",
			Help: "Search API requests refused with 400 (bad parameters).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.seconds, m.invalid)
	}
	return m
}

// Handler returns the HTTP handler. Call it once per API (it registers metrics).
func (a *API) Handler() http.Handler {
	a.m = newAPIMetrics(a.Registerer)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/search", a.serveSearch)
	mux.HandleFunc("GET /healthz", a.serveHealth)
	if a.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(a.Gatherer, promhttp.HandlerOpts{}))
	}
	return mux
}

type searchResponse struct {
	Items      []Hit   `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

func (a *API) serveSearch(w http.ResponseWriter, r *http.Request) {
	p, err := parseSearchParams(r)
	if err != nil {
		a.m.invalid.Inc()
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	timeout := a.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := contextWithTimeout(r, timeout)
	defer cancel()
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	start := time.Now()
	hits, next, err := Search(ctx, a.Pool, p, now())
	result := "ok"
	if err != nil {
		result = "error"
	}
	a.m.seconds.WithLabelValues(result).Observe(time.Since(start).Seconds())
	if err != nil {
		orDiscard(a.Logger).Warn("search failed", "query", p.Query.String(), "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "search failed; try again"})
		return
	}
	resp := searchResponse{Items: hits}
	if next != nil {
		s := next.String()
		resp.NextCursor = &s
	}
	writeJSON(w, http.StatusOK, resp)
}

// parseSearchParams validates the query string; every error names the parameter.
func parseSearchParams(r *http.Request) (SearchParams, error) {
	v := r.URL.Query()
	for name, values := range v {
		switch name {
		case "q", "topic", "group", "author", "kind", "since", "until", "limit", "cursor":
			if len(values) > 1 {
				return SearchParams{}, fmt.Errorf("%s: given %d times", name, len(values))
			}
		default:
			return SearchParams{}, fmt.Errorf("unknown parameter %q", name)
		}
	}
	var p SearchParams
	q := v.Get("q")
	if q == "" {
		return p, errors.New("q: required")
	}
	if len(q) > 512 {
		return p, errors.New("q: longer than 512 bytes")
	}
	query, err := textsearch.ParseQuery(q)
	if err != nil {
		return p, fmt.Errorf("q: %w", err)
	}
	p.Query = query
	if t := v.Get("topic"); t != "" {
		if p.Topic = protocol.NormalizeTopic(t); p.Topic == "" {
			return p, errors.New("topic: empty after normalisation")
		}
	}
	if g := v.Get("group"); g != "" {
		switch {
		case !groups.ValidID(g):
			return p, errors.New("group: a group id is 1 to 64 of a-z, A-Z, 0-9, - and _")
		case p.Topic != "":
			return p, errors.New("group: a group's events are in no topic; give topic or group, not both")
		}
		p.Group = g
	}
	if a := v.Get("author"); a != "" {
		if !protocol.IsHex64(a) {
			return p, errors.New("author: want 64 lower-case hex characters")
		}
		p.Author = a
	}
	if s := v.Get("kind"); s != "" {
		k, err := strconv.Atoi(s)
		if err != nil || k < 0 || k > 65535 {
			return p, errors.New("kind: want an integer 0-65535")
		}
		p.Kind = &k
	}
	for _, f := range []struct {
		name string
		dst  **int64
	}{{"since", &p.Since}, {"until", &p.Until}} {
		if s := v.Get(f.name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return p, fmt.Errorf("%s: want unix seconds", f.name)
			}
			*f.dst = &n
		}
	}
	if p.Since != nil && p.Until != nil && *p.Since > *p.Until {
		return p, errors.New("since: later than until")
	}
	p.Limit = DefaultSearchLimit
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return p, fmt.Errorf("limit: want an integer 1-%d", MaxLimit)
		}
		p.Limit = n
	}
	if s := v.Get("cursor"); s != "" {
		c, err := ParseCursor(s)
		if err != nil {
			return p, fmt.Errorf("cursor: %w", err)
		}
		p.After = &c
	}
	return p, nil
}

func (a *API) serveHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := contextWithTimeout(r, time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := a.Pool.Ping(ctx); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "database unreachable: %v\n", err)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func contextWithTimeout(r *http.Request, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), d)
}
