package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/brakebench/brakebench/internal/images"
)

// validateNames checks the keys that hold free text with a grammar (image references, object
// names, namespaces, label keys and values, URLs) with the parsers of those grammars: a tab, a
// newline or 100000 characters in one of them was accepted and failed only at the cluster or
// the registry, or never (a pod that cannot pull waits). Empty values the key may not have are
// the required-key checks' business.
func (r *Resolved) validateNames() error {
	c := r.Config
	for _, im := range []struct{ key, val string }{
		{"workload.image", c.Workload.Image},
		{"loadgen.runnerImage", c.Loadgen.RunnerImage},
		{"cluster.kindImage", c.Cluster.KindImage},
	} {
		if im.val == "" {
			continue
		}
		if err := images.CheckRef(im.val); err != nil {
			return r.fail(im.key, "expected an image reference like registry.k8s.io/pause:3.10 (%v), got %s", err, QuoteShort(im.val))
		}
	}
	for _, n := range []struct {
		key, val, want string
		check          func(string) []string
	}{
		{"lab.name", c.Lab.Name, "a lower-case DNS label", validation.IsDNS1123Label},
		{"cluster.kindName", c.Cluster.KindName, "a kind cluster name (a lower-case DNS-1123 subdomain)", validation.IsDNS1123Subdomain},
		{"controller.namespace", c.Controller.Namespace, "a namespace (a lower-case DNS-1123 label)", validation.IsDNS1123Label},
		{"controller.deployment", c.Controller.Deployment, "a Deployment name (a lower-case DNS-1123 subdomain)", validation.IsDNS1123Subdomain},
		{"gangQuota.kueueNamespace", c.GangQuota.KueueNamespace, "a namespace (a lower-case DNS-1123 label)", validation.IsDNS1123Label},
		{"gangQuota.kueueDeployment", c.GangQuota.KueueDeployment, "a Deployment name (a lower-case DNS-1123 subdomain)", validation.IsDNS1123Subdomain},
	} {
		if errs := n.check(n.val); len(errs) > 0 {
			return r.fail(n.key, "expected %s (%s), got %s", n.want, strings.Join(errs, "; "), QuoteShort(n.val))
		}
	}
	for _, l := range c.Lab.Nodes.Labels {
		k, v, _ := strings.Cut(l, "=")
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			return r.fail("lab.nodes.labels", "expected key=value items with a Kubernetes label key and value (%s), got %s", strings.Join(errs, "; "), QuoteShort(l))
		}
	}
	for _, a := range c.Lab.APIServerArgs {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !flagName.MatchString(k) || strings.ContainsFunc(v, unicode.IsControl) {
			return r.fail("lab.apiserverArgs", "expected kube-apiserver flags like max-requests-inflight=800 (a lower-case flag name, = and a value without control characters), got %s", QuoteShort(a))
		}
	}
	if u := c.Autoscale.ExporterURL; u != "" {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return r.fail("poolAutoscaling.exporterURL", "expected an http(s) URL like http://brakebench-demand.brakebench.svc:8080/demand, got %s", QuoteShort(u))
		}
	}
	return nil
}

// flagName is a command-line flag's name without its dashes (max-requests-inflight).
var flagName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// QuoteShort quotes a value for a one-line message, cut when it is long (a 100000-character
// value made a 100000-character error).
func QuoteShort(v string) string {
	const max = 80
	if len(v) <= max {
		return strconv.Quote(v)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(v[:max]), len(v))
}
