package inspect

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// AdminURL turns --against (host:port or a URL) into the URL of path.
func AdminURL(against, path string, q url.Values) (string, error) {
	base := against
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("--against %q: give the address `pipeline run --listen` serves, such as 127.0.0.1:9464", against)
	}
	u.Path, u.RawQuery = strings.TrimSuffix(u.Path, "/")+path, q.Encode()
	return u.String(), nil
}

// get reads a whole admin response; /readyz answers 503 with a body.
func get(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	return body, nil
}
