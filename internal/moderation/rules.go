package moderation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
)

// Actions a rule can take besides emitting its label.
const (
	ActionLabel = "label" // only the label
	ActionHold  = "hold"  // the label, and the event goes to the operator's queue
	ActionHide  = "hide"  // the label, and the event is hidden from readers
)

// ReportTypes are the NIP-56 report types. Label values that name one of them
// mean the same thing.
var ReportTypes = []string{"nudity", "malware", "profanity", "illegal", "spam", "impersonation", "other"}

// Rule is one moderation rule as written in a rules file (YAML) and kept in
// cn_moderation.rules (JSON). Every condition that is set must hold; a rule with
// min_reports is a report rule (it runs on the reported event whenever a report
// about it arrives), any other rule is a content rule (it runs on each stored
// event).
type Rule struct {
	Name string `yaml:"name" json:"name"`

	Kinds  []int    `yaml:"kinds,omitempty" json:"kinds,omitempty"`
	Topics []string `yaml:"topics,omitempty" json:"topics,omitempty"` // any of; normalised on load
	// Groups are NIP-29 group ids: the event was sent to one of them (its
	// scope is groups.Scope(id)). With Topics, the event is in one of the
	// topics or one of the groups: a group's events are in no topic.
	Groups  []string `yaml:"groups,omitempty" json:"groups,omitempty"`
	Authors []string `yaml:"authors,omitempty" json:"authors,omitempty"` // hex pubkeys, any of
	// ContentRegex is an RE2 expression (Go regexp syntax) searched in the content.
	ContentRegex string `yaml:"content_regex,omitempty" json:"content_regex,omitempty"`
	// Keywords: any of them occurs in the content, ignoring case.
	Keywords []string `yaml:"keywords,omitempty" json:"keywords,omitempty"`
	// Tags: for each tag name, the event has such a tag whose value is one of
	// the listed values ("*" accepts any value).
	Tags map[string][]string `yaml:"tags,omitempty" json:"tags,omitempty"`
	// ContentWarning: the event carries (true) or lacks (false) a NIP-36
	// content-warning tag.
	ContentWarning *bool `yaml:"content_warning,omitempty" json:"content_warning,omitempty"`
	// Classifier: the moderator's classifier (if one is configured) gave the
	// event this label with at least this confidence. Checked last, and only
	// for events that meet every other condition (content rules only).
	Classifier *ClassifierCondition `yaml:"classifier,omitempty" json:"classifier,omitempty"`

	// MinReports: at least this many distinct reporters reported the event
	// (NIP-56), counting only ReportTypes when set and, with ReportWindow, only
	// reports whose created_at fall within one window of that length.
	MinReports   int      `yaml:"min_reports,omitempty" json:"min_reports,omitempty"`
	ReportTypes  []string `yaml:"report_types,omitempty" json:"report_types,omitempty"`
	ReportWindow Duration `yaml:"report_window,omitempty" json:"report_window,omitempty"`
	// MinReporterRank counts only reporters whose trust-v1 rank (cmd/trust) was
	// at least this (1-100) when their report arrived, so that a ring of fresh
	// keys cannot reach the threshold. Without a trust daemon every reporter
	// ranks 0 and such a rule never fires.
	MinReporterRank int `yaml:"min_reporter_rank,omitempty" json:"min_reporter_rank,omitempty"`

	// Label is the NIP-32 `l` value in the node's namespace; use a NIP-56 report
	// type (spam, nudity, ...) where one fits.
	Label  string `yaml:"label" json:"label"`
	Action string `yaml:"action" json:"action"`
	// Expire gives the label an expiration (NIP-40) this long after the
	// labelled event's created_at.
	Expire Duration `yaml:"expire,omitempty" json:"expire,omitempty"`
}

// ClassifierCondition is a rule's condition on the classifier's answer.
type ClassifierCondition struct {
	Label         string  `yaml:"label" json:"label"`
	MinConfidence float64 `yaml:"min_confidence" json:"min_confidence"`
}

// Duration is a time.Duration written as "24h", "90m", ...
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads what MarshalJSON wrote.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// File is a rules file.
type File struct {
	Rules []Rule `yaml:"rules"`
}

var (
	namePattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	labelPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
)

// ParseFile reads a rules file: unknown fields, duplicate names and invalid
// rules are errors naming the rule and the reason. Nothing is returned unless
// every rule is valid.
func ParseFile(data []byte) ([]Rule, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("rules file: %w", err)
	}
	var errs []error
	seen := map[string]bool{}
	for i := range f.Rules {
		r := &f.Rules[i]
		r.normalise()
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen[r.Name] {
			errs = append(errs, fmt.Errorf("rule %q: defined twice", r.Name))
		}
		seen[r.Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f.Rules, nil
}

// normalise puts topics in normalised form and sorts the lists whose order
// does not matter, so that equal rules have equal specs.
func (r *Rule) normalise() {
	for i, t := range r.Topics {
		r.Topics[i] = protocol.NormalizeTopic(t)
	}
	slices.Sort(r.Topics)
	slices.Sort(r.Groups)
	slices.Sort(r.Kinds)
	slices.Sort(r.Authors)
	slices.Sort(r.ReportTypes)
	r.Action = strings.TrimSpace(r.Action)
}

// Validate reports what is wrong with the rule, naming it.
func (r Rule) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !namePattern.MatchString(r.Name) {
		bad("name must be 1-63 characters of a-z, 0-9, '.', '_', '-'")
	}
	if !labelPattern.MatchString(r.Label) {
		bad("label must be 1-63 characters of a-z, 0-9, '.', '_', '-'")
	}
	switch r.Action {
	case ActionLabel, ActionHold, ActionHide:
	default:
		bad("unknown action %q (label, hold or hide)", r.Action)
	}
	for _, k := range r.Kinds {
		if k < 0 || k > 65535 {
			bad("kind %d out of range", k)
		}
	}
	for _, t := range r.Topics {
		if t == "" {
			bad("empty topic")
		}
	}
	for _, g := range r.Groups {
		if !groups.ValidID(g) {
			bad("group %q is not a NIP-29 group id (1 to 64 of a-z, A-Z, 0-9, - and _)", g)
		}
	}
	for _, a := range r.Authors {
		if !protocol.IsHex64(a) {
			bad("author %q is not a 64-character hex pubkey", a)
		}
	}
	if r.ContentRegex != "" {
		if _, err := regexp.Compile(r.ContentRegex); err != nil {
			bad("content_regex: %v", err)
		}
	}
	for _, k := range r.Keywords {
		if strings.TrimSpace(k) == "" {
			bad("empty keyword")
		}
	}
	for name, values := range r.Tags {
		if name == "" || len(values) == 0 {
			bad("tags: %q needs a tag name and at least one value", name)
		}
	}
	if r.MinReports < 0 {
		bad("min_reports must not be negative")
	}
	if r.MinReports == 0 && (len(r.ReportTypes) > 0 || r.ReportWindow != 0 || r.MinReporterRank != 0) {
		bad("report_types, report_window and min_reporter_rank need min_reports")
	}
	if r.MinReporterRank < 0 || r.MinReporterRank > 100 {
		bad("min_reporter_rank must be 0-100")
	}
	for _, t := range r.ReportTypes {
		if !slices.Contains(ReportTypes, t) {
			bad("unknown report type %q (NIP-56: %s)", t, strings.Join(ReportTypes, ", "))
		}
	}
	if c := r.Classifier; c != nil {
		if c.Label == "" {
			bad("classifier: label is required")
		}
		if c.MinConfidence <= 0 || c.MinConfidence > 1 {
			bad("classifier: min_confidence must be above 0 and at most 1")
		}
		if r.MinReports > 0 {
			bad("classifier conditions apply to content rules, not report rules")
		}
	}
	if r.ReportWindow < 0 || r.Expire < 0 {
		bad("durations must not be negative")
	}
	if len(errs) > 0 {
		return fmt.Errorf("rule %q: %s", r.Name, strings.Join(errs, "; "))
	}
	return nil
}

// IsReportRule reports whether the rule runs on reports rather than on content.
func (r Rule) IsReportRule() bool { return r.MinReports > 0 }

// Spec is the rule's canonical JSON, compared to tell a changed rule.
func (r Rule) Spec() []byte {
	b, _ := json.Marshal(r) // a Rule always encodes
	return b
}

// compiled is a rule ready to evaluate, with its stored version.
type compiled struct {
	Rule
	version  int
	re       *regexp.Regexp
	literals []string // one of them is in every ASCII text re matches (lower case); nil: unknown
	keywords []string // lower case
	kinds    map[int]bool
}

func compile(r Rule, version int) (*compiled, error) {
	c := &compiled{Rule: r, version: version}
	if r.ContentRegex != "" {
		re, err := regexp.Compile(r.ContentRegex)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", r.Name, err)
		}
		c.re = re
		if lits, ok := prefilter(r.ContentRegex); ok {
			c.literals = lits
		}
	}
	for _, k := range r.Keywords {
		c.keywords = append(c.keywords, strings.ToLower(k))
	}
	if len(r.Kinds) > 0 {
		c.kinds = map[int]bool{}
		for _, k := range r.Kinds {
			c.kinds[k] = true
		}
	}
	return c, nil
}

// ref names the rule version in labels and decisions: "name@version".
func (c *compiled) ref() string { return fmt.Sprintf("%s@%d", c.Name, c.version) }

// text is an event's content with what the rules derive from it, computed at
// most once per event.
type text struct {
	content string
	lower   string
	ascii   bool
	done    bool
}

func (t *text) derive() {
	if !t.done {
		t.lower, t.ascii, t.done = strings.ToLower(t.content), isASCII(t.content), true
	}
}

// inScope reports whether the scope t (a topic, or a group's groups.Scope)
// is one the rule names.
func (c *compiled) inScope(t string) bool {
	if id, ok := groups.IDOfScope(t); ok {
		return slices.Contains(c.Groups, id)
	}
	return slices.Contains(c.Topics, t)
}

// matchesEvent checks every condition except the report threshold, cheapest
// first; txt is the event's content.
func (c *compiled) matchesEvent(ev *target, txt *text) bool {
	if c.kinds != nil && !c.kinds[ev.Kind] {
		return false
	}
	if len(c.Authors) > 0 && !slices.Contains(c.Authors, ev.PubKey) {
		return false
	}
	if (len(c.Topics) > 0 || len(c.Groups) > 0) && !slices.ContainsFunc(ev.topics, c.inScope) {
		return false
	}
	if c.ContentWarning != nil && hasTag(ev, "content-warning", nil) != *c.ContentWarning {
		return false
	}
	for name, values := range c.Tags {
		if !hasTag(ev, name, values) {
			return false
		}
	}
	if len(c.keywords) > 0 {
		txt.derive()
		if !slices.ContainsFunc(c.keywords, func(k string) bool { return strings.Contains(txt.lower, k) }) {
			return false
		}
	}
	if c.re != nil {
		if c.literals != nil {
			txt.derive()
			if txt.ascii && !slices.ContainsFunc(c.literals, func(l string) bool { return strings.Contains(txt.lower, l) }) {
				return false
			}
		}
		if !c.re.MatchString(ev.Content) {
			return false
		}
	}
	return true
}

// classified reports whether the classifier's outcome meets the rule's
// classifier condition.
func (c *compiled) classified(res Classification) bool {
	if !res.Classified {
		return false
	}
	for _, l := range res.Labels {
		if l.Label == c.Classifier.Label && l.Confidence >= c.Classifier.MinConfidence {
			return true
		}
	}
	return false
}

// hasTag reports whether ev has a tag name whose value is in values ("*" or a
// nil list: any value, or none).
func hasTag(ev *target, name string, values []string) bool {
	for _, t := range ev.Tags {
		if len(t) == 0 || t[0] != name {
			continue
		}
		if values == nil || slices.Contains(values, "*") {
			return true
		}
		if len(t) >= 2 && slices.Contains(values, t[1]) {
			return true
		}
	}
	return false
}
