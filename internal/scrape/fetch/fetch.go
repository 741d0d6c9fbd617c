// Package fetch reads metrics endpoints (a component's /metrics, through the API server's
// credentials or directly) into scrape series. It is the half of scraping that talks to a
// cluster; package scrape, which parses and subtracts series, stays free of client-go.
package fetch

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/scrape"
)

// All reads every family of a plain-HTTP endpoint (a foreign exporter).
func All(ctx context.Context, url string) ([]scrape.Series, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return scrape.ParseEvery(resp.Body)
}

// Target is an endpoint to scrape.
type Target struct {
	Component    string
	URL          string
	ViaAPIServer bool
	Insecure     bool
	BearerToken  string
}

// Metrics scrapes one target. Apiserver targets go through rc's credentials.
func Metrics(ctx context.Context, rc *rest.Config, t Target) ([]scrape.Series, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var body io.ReadCloser
	if t.ViaAPIServer {
		hc, err := rest.HTTPClientFor(rc)
		if err != nil {
			return nil, err
		}
		req, _ := http.NewRequestWithContext(cctx, http.MethodGet, strings.TrimSuffix(rc.Host, "/")+t.URL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("scrape %s: %w", t.Component, err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("scrape %s: HTTP %d", t.Component, resp.StatusCode)
		}
		body = resp.Body
	} else {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: t.Insecure}}} //nolint:gosec // loopback lab components with self-signed certs
		req, _ := http.NewRequestWithContext(cctx, http.MethodGet, t.URL, nil)
		if t.BearerToken != "" {
			req.Header.Set("Authorization", "Bearer "+t.BearerToken)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("scrape %s: %w", t.Component, err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("scrape %s (%s): HTTP %d", t.Component, t.URL, resp.StatusCode)
		}
		body = resp.Body
	}
	defer body.Close()
	return scrape.Parse(body)
}
