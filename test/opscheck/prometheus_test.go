//go:build ops

package opscheck

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kukuri/communitynode/internal/testkit"
)

// repoFile is a path under the repository root.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", rel)
}

// TestEveryExpressionAgainstLiveData starts a real Prometheus scraping a running
// relay and indexer, sends traffic, and evaluates every expression of the
// Grafana dashboard and of the alert rules through Prometheus's HTTP API: each
// must parse, and each dashboard panel must return data (a renamed metric would
// return none).
func TestEveryExpressionAgainstLiveData(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "prometheus is not installed (make test-ops installs Debian's prometheus)")
	n := startNode(t)

	dir := t.TempDir()
	alerts := repoFile(t, "ops/alerts.yml")
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: cn-relay
    static_configs: [{targets: [%q]}]
  - job_name: cn-indexer
    static_configs: [{targets: [%q]}]
`, alerts, n.metrics, n.indexer)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600))
	prom := testkit.FreeAddr(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+prom, "--log.level=warn")
	logs, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", data)
		}
	})

	// Both targets up, then traffic across several scrapes so that rates and
	// quantiles have two samples or more.
	require.Eventually(t, func() bool {
		status, _, results := promQuery(t, prom, `up == 1`)
		return status == "success" && results == 2
	}, 30*time.Second, 200*time.Millisecond, "prometheus scrapes the relay and the indexer")
	for i := range 16 {
		n.traffic(t, i)
		time.Sleep(500 * time.Millisecond) // traffic spread over scrapes (1 s apart): the rates need it
	}
	require.Positive(t, n.searchOK)

	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, err := os.ReadFile(repoFile(t, "ops/grafana/community-node.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &dash))
	require.GreaterOrEqual(t, len(dash.Panels), 10)
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			var results int
			require.Eventually(t, func() bool {
				status, errMsg, r := promQuery(t, prom, tg.Expr)
				require.Equal(t, "success", status, "panel %q: %s: %s", p.Title, oneLine(tg.Expr), errMsg)
				results = r
				return r > 0
			}, 20*time.Second, 500*time.Millisecond, "panel %q returns no data: %s", p.Title, oneLine(tg.Expr))
			t.Logf("panel %-45q %d series", p.Title, results)
		}
	}

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	data, err = os.ReadFile(alerts)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &rules))
	count := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			status, errMsg, _ := promQuery(t, prom, r.Expr)
			require.Equal(t, "success", status, "alert %s: %s", r.Alert, errMsg)
			count++
		}
	}
	require.GreaterOrEqual(t, count, 15)
	// Prometheus loaded the rule file itself, too.
	status, errMsg, groups := promQuery(t, prom, `count(ALERTS) or vector(0)`)
	require.Equal(t, "success", status, errMsg)
	require.Equal(t, 1, groups)
}
