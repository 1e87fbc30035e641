package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/platform/ratelimit"
	"github.com/kukuri/communitynode/internal/relay"
)

// BlossomOptions turn on the relay's Blossom media server (package blossom,
// docs/media.md).
type BlossomOptions struct {
	// Dir holds the blob files; required.
	Dir string
	// Listen, if set, serves Blossom on its own address; "" serves it on the
	// relay's.
	Listen string
	// PublicURL is the server's base URL as clients see it (descriptors'
	// urls, NIP-11); "": each request's host.
	PublicURL     string
	MaxBlobBytes  int64
	QuotaBytes    int64
	QuotaBlobs    int
	UploadTimeout time.Duration
	// Types are the media types accepted (blossom.Config.Types); none: any.
	Types []string
	// UploadRatePerIP and RequestRatePerIP are the per-address rates
	// (blossom.Config): zero, the defaults; a negative PerSecond, none.
	UploadRatePerIP  ratelimit.Rate
	RequestRatePerIP ratelimit.Rate
	// MirrorPrivate lets PUT /mirror fetch from private and loopback
	// addresses (blossom.Config.MirrorPrivate).
	MirrorPrivate bool
}

// The Blossom defaults (relay --blossom-*).
const (
	DefaultBlossomMaxBlobBytes  = blossom.DefaultMaxBlobBytes
	DefaultBlossomQuotaBytes    = blossom.DefaultQuotaBytes
	DefaultBlossomQuotaBlobs    = blossom.DefaultQuotaBlobs
	DefaultBlossomUploadTimeout = blossom.DefaultUploadTimeout
	// DefaultDevBlossomDir is where cnctl dev keeps blobs, beside its
	// database's data directory.
	DefaultDevBlossomDir = "blobs"
)

// The default per-address Blossom rates (relay --blossom-*-rate-ip).
var (
	DefaultBlossomUploadRatePerIP  = blossom.DefaultUploadRatePerIP
	DefaultBlossomRequestRatePerIP = blossom.DefaultRequestRatePerIP
)

// openBlossom builds the Blossom server. Who may upload is the node's one
// notion of a relay member (membership.Service.IsMember: the node, an admin,
// a NIP-43 member, or with no NIP-43 register a community member), with no
// exception for invite or open mode: in open mode a key becomes a member by
// its first accepted post. Banned keys (NIP-86) may not upload and their
// blobs are not served. A request's client address is the relay's
// (relay.ClientIP with its RealIPHeader), on the relay's address or
// Blossom's own: NIP-86 blockip refuses it, and the per-address rates count
// it as the relay's limits do.
func openBlossom(o BlossomOptions, pool *pgxpool.Pool, self string, admins map[string]bool, policy relay.Policy,
	realIPHeader string, logger *slog.Logger, reg prometheus.Registerer) (*blossom.Server, error) {
	rule := &membership.Service{Self: self, Admins: admins}
	return blossom.New(blossom.Config{Dir: o.Dir, PublicURL: o.PublicURL, MaxBlobBytes: o.MaxBlobBytes,
		QuotaBytes: o.QuotaBytes, QuotaBlobs: o.QuotaBlobs, UploadTimeout: o.UploadTimeout, Types: o.Types,
		UploadRatePerIP: o.UploadRatePerIP, RequestRatePerIP: o.RequestRatePerIP, MirrorPrivate: o.MirrorPrivate},
		blossom.Deps{Pool: pool, Logger: logger.With("part", "blossom"), Registerer: reg, Banned: policy.PubkeyBanned,
			IPBlocked: policy.IPBlocked,
			ClientIP:  func(req *http.Request) string { ip, _ := relay.ClientIP(req, realIPHeader); return ip },
			MayUpload: func(ctx context.Context, pk string) (bool, error) { return rule.IsMember(ctx, pool, pk) }})
}

// blossomInfo is what NIP-11 says of the Blossom server: its URL is
// PublicURL, else its own address, else the relay's URL over http(s).
func blossomInfo(o BlossomOptions, cfg relay.Config) *relay.MediaInfo {
	url := o.PublicURL
	switch {
	case url != "":
	case o.Listen != "":
		url = "http://" + o.Listen
	case len(cfg.PublicURLs) > 0:
		url = strings.Replace(strings.Replace(cfg.PublicURLs[0], "wss://", "https://", 1), "ws://", "http://", 1)
	default:
		url = "http://" + cfg.Listen
	}
	pos := func(v int64, d int64) int64 {
		if v == 0 {
			return d
		}
		return max(v, 0)
	}
	return &relay.MediaInfo{URL: strings.TrimRight(url, "/"), Uploaders: "members",
		MaxBlobBytes: pos(o.MaxBlobBytes, DefaultBlossomMaxBlobBytes), QuotaBytes: pos(o.QuotaBytes, DefaultBlossomQuotaBytes),
		QuotaBlobs: int(pos(int64(o.QuotaBlobs), DefaultBlossomQuotaBlobs)), Types: o.Types}
}

// listenBlossom opens Blossom's own listener.
func listenBlossom(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("blossom listener: %w", err)
	}
	return ln, nil
}
