package testkit

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Get GETs url with client (http.DefaultClient if nil), with token as its
// bearer token (none if ""). fresh asks for a new connection for the
// request: behind a Service, each such request may reach another backend.
func Get(ctx context.Context, client *http.Client, url, token string, fresh bool) (status int, body []byte, err error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Close = fresh
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// HTTPGet returns the status code and body of a plain GET of url, or 0 and
// the error's text: for the probe and metrics endpoints a test polls.
func HTTPGet(url string) (int, string) {
	code, body, err := Get(context.Background(), nil, url, "", false)
	if err != nil {
		return 0, err.Error()
	}
	return code, string(body)
}
