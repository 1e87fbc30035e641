package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/pkg/consumer"
)

//go:embed assets
var assets embed.FS

var page = template.Must(template.ParseFS(assets, "assets/console.html"))

// Pages are the console's pages, in the order of its navigation.
var Pages = []struct{ Path, Title string }{
	{"groups", "Groups"},
	{"members", "Members"},
	{"reports", "Reports"},
	{"policy", "Bans and policy"},
	{"media", "Media"},
	{"backlog", "Backlog"},
}

// Config configures a Console.
type Config struct {
	Pool *pgxpool.Pool
	// RelayURL is the relay's URL as the browser reaches it (ws:// or wss://):
	// the page publishes group events there and POSTs NIP-86 calls to its
	// http(s) form.
	RelayURL string
	Logger   *slog.Logger
}

// Console serves the console. Its methods are safe for concurrent use.
type Console struct {
	cfg Config
	csp string
}

// New returns a Console.
func New(cfg Config) *Console {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Console{cfg: cfg, csp: contentSecurityPolicy(cfg.RelayURL)}
}

// contentSecurityPolicy is the console's Content-Security-Policy: the status
// page's (no framing, frame-ancestors 'none'; scripts from the console's own
// files only, no inline script or handler), with connections to the relay's
// HTTP origin (NIP-86 calls) and to any ws: or wss: URL. The WebSocket
// sources cannot be narrower than that: a NIP-46 sign-in talks to the relay
// the admin's bunker URL names (bunker://…?relay=wss://…), which can be any
// relay, and the page's own relay URL is one of them.
func contentSecurityPolicy(relayURL string) string {
	connect := "'self' ws: wss:"
	if u, err := url.Parse(relayURL); err == nil && u.Host != "" && (u.Scheme == "ws" || u.Scheme == "wss") {
		scheme := "http"
		if u.Scheme == "wss" {
			scheme = "https"
		}
		connect += " " + scheme + "://" + u.Host
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src " + connect + "; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// Handler serves, under prefix (e.g. "/console/"), read-only:
//
//	GET {prefix}                 redirects to the groups page
//	GET {prefix}{page}           a page: groups, members, reports, policy, media, backlog
//	GET {prefix}assets/...       its script and styles
//	GET {prefix}api/groups       a page of groups by id (?limit=, ?after=, ?q=): metadata, flags, the first
//	                             members, pending joins and invites (codes masked), with their counts;
//	                             ?group=ID: that group with a page of its members (?members_after=, ?limit=)
//	GET {prefix}api/members      a page of the community's members (cn_relay.members), newest first (?limit=,
//	                             ?after=, ?q= a pubkey's start), with trust ranks and admin status
//	GET {prefix}api/nip43        NIP-43 roles, and the counts of members, pending join requests, open invites
//	GET {prefix}api/nip43/members, api/nip43/pending, api/nip43/invites
//	                             a page of each NIP-43 list (?limit=, ?after=); never a claim
//	GET {prefix}api/reports      a page of the moderation queue (?limit=, ?after=; ?group=ID: that group's;
//	                             ?group=node: outside groups), each with its event, reporters and their
//	                             ranks, and the node's labels
//	GET {prefix}api/policy       the NIP-86 lists: banned and allowed pubkeys and events, kinds, blocked addresses
//	GET {prefix}api/media        Blossom media: the keys holding the most bytes, and the blobs hidden or
//	                             named by open reports (most reports first), each a top list of ?limit=
//	                             (hide and unhide are the relay's NIP-86 hideblob and unhideblob)
//	GET {prefix}api/backlog      consumers and their dead letters
//	GET {prefix}api/reset-plan   ?consumer=NAME&seq=N: what reset-offset would replay or skip (changes nothing)
//
// A paged list answers {"items": [...], "next": CURSOR}: ?after=CURSOR reads
// the next page ("" when none). ?limit= is 1 to MaxLimit (DefaultLimit when
// absent); a bad limit, cursor or search is answered 400 with a JSON error.
//
// Every answer carries X-Frame-Options: DENY and the console's
// Content-Security-Policy (frame-ancestors 'none', script-src 'self').
// The caller protects it as it protects the status page.
func (c *Console) Handler(prefix string) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET "+prefix+"assets/", http.StripPrefix(prefix+"assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET "+prefix+"{$}", func(w http.ResponseWriter, r *http.Request) {
		target := "groups"
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
	})
	for _, p := range Pages {
		mux.HandleFunc("GET "+prefix+p.Path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			_ = page.Execute(w, map[string]any{"Page": p.Path, "Title": p.Title, "Pages": Pages, "Relay": c.cfg.RelayURL})
		})
	}
	api := func(name string, read func(ctx context.Context, r *http.Request) (any, error)) {
		mux.HandleFunc("GET "+prefix+"api/"+name, func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			v, err := read(ctx, r)
			var bad badRequest
			var missing notFound
			switch {
			case errors.As(err, &bad):
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": bad.Error()})
			case errors.As(err, &missing):
				writeJSON(w, http.StatusNotFound, map[string]string{"error": missing.Error()})
			case err != nil:
				c.cfg.Logger.Error("console read failed", "api", name, "err", err)
				writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "error: " + name + " could not be read: " + err.Error()})
			default:
				writeJSON(w, http.StatusOK, v)
			}
		})
	}
	api("groups", func(ctx context.Context, r *http.Request) (any, error) {
		p, err := parsePage(r)
		if err != nil {
			return nil, err
		}
		if id := r.URL.Query().Get("group"); id != "" {
			return c.GroupMembers(ctx, id, r.URL.Query().Get("members_after"), p.Limit)
		}
		return c.Groups(ctx, p)
	})
	paged := func(name string, read func(ctx context.Context, p PageQuery) (any, error)) {
		api(name, func(ctx context.Context, r *http.Request) (any, error) {
			p, err := parsePage(r)
			if err != nil {
				return nil, err
			}
			return read(ctx, p)
		})
	}
	paged("members", func(ctx context.Context, p PageQuery) (any, error) { return c.Members(ctx, p) })
	api("nip43", func(ctx context.Context, r *http.Request) (any, error) { return c.NIP43(ctx) })
	paged("nip43/members", func(ctx context.Context, p PageQuery) (any, error) { return c.NIP43Members(ctx, p) })
	paged("nip43/pending", func(ctx context.Context, p PageQuery) (any, error) { return c.NIP43Pending(ctx, p) })
	paged("nip43/invites", func(ctx context.Context, p PageQuery) (any, error) { return c.NIP43Invites(ctx, p) })
	api("reports", func(ctx context.Context, r *http.Request) (any, error) {
		p, err := parsePage(r)
		if err != nil {
			return nil, err
		}
		return c.Reports(ctx, r.URL.Query().Get("group"), p)
	})
	api("policy", func(ctx context.Context, r *http.Request) (any, error) { return c.Policy(ctx) })
	api("backlog", func(ctx context.Context, r *http.Request) (any, error) { return c.Backlog(ctx) })
	api("media", func(ctx context.Context, r *http.Request) (any, error) {
		p, err := parsePage(r)
		if err != nil {
			return nil, err
		}
		if p.After != "" || p.Q != "" {
			return nil, badRequest("the media lists are top lists: ?limit= only")
		}
		return c.Media(ctx, p.Limit)
	})
	api("reset-plan", func(ctx context.Context, r *http.Request) (any, error) {
		seq, err := strconv.ParseInt(r.URL.Query().Get("seq"), 10, 64)
		if err != nil || seq < 0 {
			return nil, badRequest("seq must be a non-negative outbox seq")
		}
		plan, err := consumer.PlanReset(ctx, c.cfg.Pool, r.URL.Query().Get("consumer"), consumer.ResetTarget{Seq: &seq})
		if errors.Is(err, consumer.ErrUnknownConsumer) {
			return nil, badRequest(err.Error())
		}
		return plan, err
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", c.csp)
		mux.ServeHTTP(w, r)
	})
}

// LocalRelayURL is the ws:// URL of a relay listening on listen, as a browser
// on the same machine reaches it: an unspecified host (":7777", "0.0.0.0",
// "[::]") becomes 127.0.0.1.
func LocalRelayURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "ws://" + listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "ws://" + net.JoinHostPort(host, port)
}

// badRequest is a read refused for its parameters (HTTP 400).
type badRequest string

func (b badRequest) Error() string { return string(b) }

// notFound is a read of something that does not exist (HTTP 404).
type notFound string

func (n notFound) Error() string { return string(n) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
