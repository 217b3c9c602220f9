package natsconn

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/schema"
)

// The connection attributes, declared once for every NATS node.
var (
	urlAttr = schema.Strings("url").
		Doc("NATS server URLs; the client fails over between them. Required unless the block has an embedded server, which it then defaults to.").
		Example(`["nats://nats-1.pipeline.svc:4222", "nats://nats-2.pipeline.svc:4222"]`)
	nameAttr = schema.String("name").Default("", `""`).
			Doc("Client name shown by the server (connz); the node's address when empty.")
	credsAttr = schema.String("credentials_file").Default("", `""`).
			Doc("NATS credentials (.creds) file, relative to the configuration directory. Its content is never printed or logged.")
	nkeyAttr = schema.String("nkey_seed_file").Default("", `""`).
			Doc("NKey seed file for nkey authentication. Its content is never printed or logged.")
	tokenAttr = schema.String("token").Default("", `""`).Sensitive().
			Doc("Authentication token; prefer credentials_file.")
	userAttr     = schema.String("user").Default("", `""`).Sensitive().Doc("User name for user/password authentication.")
	passwordAttr = schema.String("password").Default("", `""`).Sensitive().Doc("Password for user/password authentication.")
	caAttr       = schema.String("ca_file").Default("", `""`).Doc("PEM CA bundle that verifies the server's certificate (TLS).")
	certAttr     = schema.String("cert_file").Default("", `""`).Doc("PEM client certificate for mutual TLS; needs key_file.")
	keyAttr      = schema.String("key_file").Default("", `""`).Doc("PEM private key of cert_file.")
	timeoutAttr  = schema.Duration("connect_timeout").Default(5*time.Second, `"5s"`).
			Doc("Timeout of one dial; also bounds each request (KV read or write) the node makes.")
	waitAttr = schema.Duration("reconnect_wait").Default(250*time.Millisecond, `"250ms"`).
			Doc("Pause between reconnect attempts to the same server.")
	maxRecAttr = schema.Int("max_reconnects").Default(-1, "-1").
			Doc("Reconnect attempts before the client gives up; -1 retries for ever. When the client gives up the node dials again with backoff, reporting itself down meanwhile.")
	bufAttr = schema.Size("reconnect_buffer").Default(8<<20, `"8MiB"`).
		Doc("Bytes of publishes buffered while reconnecting. A buffered publish may be delivered after a reconnect or lost with the connection; the sinks treat both as an unknown outcome and re-check.")

	listenAttr = schema.String("listen").Default("127.0.0.1:4222", `"127.0.0.1:4222"`).
			Doc("host:port the embedded server listens on for other processes (agents). The node itself connects in process.")
	storeAttr = schema.String("store_dir").Required().
			Doc("JetStream storage directory of the embedded server, relative to the configuration directory. Buckets and streams survive restarts in it.").
			Example(`"/var/lib/pipeline/nats"`)
	serverNameAttr = schema.String("server_name").Default("", `""`).Doc("Server name; nats-server picks one when empty.")
	embeddedBlock  = schema.Nested("embedded", schema.Block{Attrs: []schema.Attribute{listenAttr, storeAttr, serverNameAttr}}).
			WithDoc("Runs a nats-server with JetStream inside `pipeline run`, so a single machine (or the hub of a hub/agent setup) needs no external NATS. Nodes of other processes connect to `listen`.")
)

// Attrs returns the connection attributes, for a node's schema.Block.
func Attrs() []schema.Attribute {
	return []schema.Attribute{urlAttr, nameAttr, credsAttr, nkeyAttr, tokenAttr, userAttr, passwordAttr,
		caAttr, certAttr, keyAttr, timeoutAttr, waitAttr, maxRecAttr, bufAttr}
}

// Blocks returns the nested blocks of the connection (the embedded server).
func Blocks() []*schema.BlockType { return []*schema.BlockType{embeddedBlock} }

// Config is a decoded connection. Token, User and Password are secrets:
// String redacts them, and nothing here logs them.
type Config struct {
	URLs            []string
	Name            string
	CredentialsFile string
	NKeySeedFile    string
	Token           string
	User, Password  string
	CAFile          string
	CertFile        string
	KeyFile         string
	ConnectTimeout  time.Duration
	ReconnectWait   time.Duration
	MaxReconnects   int
	ReconnectBuffer int
	// Embedded is set when the node runs the embedded server.
	Embedded *Embedded
}

// Embedded configures the in-process nats-server.
type Embedded struct {
	Listen     string
	StoreDir   string
	ServerName string
}

// String describes the connection without secrets.
func (c Config) String() string {
	auth := "none"
	switch {
	case c.CredentialsFile != "":
		auth = "credentials"
	case c.NKeySeedFile != "":
		auth = "nkey"
	case c.Token != "":
		auth = "token"
	case c.User != "":
		auth = "user"
	}
	return fmt.Sprintf("urls=%s auth=%s", c.safeURLs(), auth)
}

// safeURLs lists the URLs without user info (a URL may carry a password).
func (c Config) safeURLs() string {
	out := make([]string, len(c.URLs))
	for i, raw := range c.URLs {
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			out[i] = "(invalid url)"
		case u.User != nil:
			u.User = nil
			out[i] = u.String()
		default:
			out[i] = raw
		}
	}
	return strings.Join(out, ",")
}

// Decode reads the connection attributes and the embedded block from c.
// Relative file paths resolve from dir. Every diagnostic is returned with a
// partial Config.
func Decode(c *schema.Content, dir string) (Config, hcl.Diagnostics) {
	var cfg Config
	var diags hcl.Diagnostics
	cfg.URLs = urlAttr.Read(c, &diags)
	cfg.Name = nameAttr.Read(c, &diags)
	cfg.CredentialsFile = filePath(dir, credsAttr.Read(c, &diags))
	cfg.NKeySeedFile = filePath(dir, nkeyAttr.Read(c, &diags))
	cfg.Token = tokenAttr.Read(c, &diags)
	cfg.User = userAttr.Read(c, &diags)
	cfg.Password = passwordAttr.Read(c, &diags)
	cfg.CAFile = filePath(dir, caAttr.Read(c, &diags))
	cfg.CertFile = filePath(dir, certAttr.Read(c, &diags))
	cfg.KeyFile = filePath(dir, keyAttr.Read(c, &diags))
	cfg.ConnectTimeout = timeoutAttr.Read(c, &diags)
	cfg.ReconnectWait = waitAttr.Read(c, &diags)
	cfg.MaxReconnects = int(maxRecAttr.Read(c, &diags))
	cfg.ReconnectBuffer = int(bufAttr.Read(c, &diags))
	certRange := c.Range
	if a, ok := c.Attrs[certAttr.Name()]; ok {
		certRange = a.Range
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Incomplete client certificate",
			Detail: "Set both cert_file and key_file for mutual TLS, or neither.", Subject: certRange.Ptr()})
	}
	for _, sub := range embeddedBlock.Get(c) {
		e := &Embedded{Listen: listenAttr.Read(sub, &diags), StoreDir: filePath(dir, storeAttr.Read(sub, &diags)),
			ServerName: serverNameAttr.Read(sub, &diags)}
		diags = append(diags, checkListen(e.Listen, sub)...)
		cfg.Embedded = e
	}
	if len(cfg.URLs) == 0 && cfg.Embedded == nil && !urlAttr.Has(c) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing NATS server",
			Detail:  `Set url = ["nats://HOST:4222"], or add an embedded { store_dir = "..." } block to run a server in this process.`,
			Subject: c.Range.Ptr()})
	}
	if len(cfg.URLs) == 0 && cfg.Embedded != nil {
		cfg.URLs = []string{"nats://" + cfg.Embedded.Listen}
	}
	return cfg, diags
}

// filePath resolves a file path relative to the configuration directory.
func filePath(dir, path string) string {
	if path != "" && !filepath.IsAbs(path) {
		return filepath.Join(dir, path)
	}
	return path
}

func checkListen(listen string, sub *schema.Content) hcl.Diagnostics {
	host, port, err := net.SplitHostPort(listen)
	if err == nil {
		var n int
		if n, err = strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
			err = fmt.Errorf("port %d out of range", n)
		}
	}
	if err == nil && host == "" {
		err = fmt.Errorf("no host")
	}
	if err == nil {
		return nil
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid listen address",
		Detail:  fmt.Sprintf("listen must be host:port, such as \"127.0.0.1:4222\" or \"0.0.0.0:4222\" (%v).", err),
		Subject: listenAttr.Range(sub).Ptr()}}
}
