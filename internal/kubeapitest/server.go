package kubeapitest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Version is the Kubernetes version the harness builds and runs.
const Version = "v1.37.2"

// Options configure Start.
type Options struct {
	// Dir holds certificates, etcd data and logs; a new temporary
	// directory (removed by Stop) when empty.
	Dir string
	// Assets is the folder holding kube-apiserver and etcd; Assets() when empty.
	Assets string
	// APIServerArgs are more kube-apiserver flags, such as
	// --feature-gates=WatchList=false.
	APIServerArgs []string
}

// Server is a running etcd + kube-apiserver pair.
type Server struct {
	URL               string
	CAPEM             []byte
	AdminToken        string
	UnprivilegedToken string

	dir, assets string
	ownDir      bool
	apiArgs     []string
	extraArgs   []string
	mu          sync.Mutex
	etcd, api   *proc
}

// proc is a child process and a channel closed when it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Assets finds the folder of the binaries: $PIPELINE_KUBE_ASSETS, else
// .cache/kube/<Version> in the working directory or one of its parents.
func Assets() (string, error) {
	if d := os.Getenv("PIPELINE_KUBE_ASSETS"); d != "" {
		return d, checkAssets(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		cand := filepath.Join(d, ".cache", "kube", Version)
		if checkAssets(cand) == nil {
			return cand, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no .cache/kube/%s with kube-apiserver and etcd above %s and PIPELINE_KUBE_ASSETS unset: run `make kube-assets`", Version, wd)
		}
	}
}

func checkAssets(d string) error {
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(d, b)); err != nil {
			return fmt.Errorf("kube-apiserver not built (%w): run `make kube-assets`", err)
		}
	}
	return nil
}

// Start runs etcd and kube-apiserver and waits until the API server is ready.
func Start(ctx context.Context, opts Options) (*Server, error) {
	s := &Server{dir: opts.Dir, assets: opts.Assets, extraArgs: opts.APIServerArgs, AdminToken: randomToken(), UnprivilegedToken: randomToken()}
	if s.assets == "" {
		a, err := Assets()
		if err != nil {
			return nil, err
		}
		s.assets = a
	}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "pipeline-kubeapi-")
		if err != nil {
			return nil, err
		}
		s.dir, s.ownDir = d, true
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	// A port from freePort can be taken by another process (tests of
	// other packages start servers in parallel) before ours binds it: such
	// a start is tried again on fresh ports, on a fresh etcd data dir.
	for attempt := 1; ; attempt++ {
		err := s.start(ctx)
		if err == nil {
			return s, nil
		}
		busy := s.logsSay("address already in use")
		err = fmt.Errorf("%w%s", err, s.logTails())
		s.stopProcesses()
		if !busy || attempt == 3 || ctx.Err() != nil {
			s.Stop()
			return nil, err
		}
		if rmErr := os.RemoveAll(filepath.Join(s.dir, "etcd")); rmErr != nil {
			s.Stop()
			return nil, errors.Join(err, rmErr)
		}
	}
}

var logNames = []string{"etcd.log", "kube-apiserver.log"}

// logsSay reports whether a process log of this server contains text.
func (s *Server) logsSay(text string) bool {
	for _, name := range logNames {
		if b, err := os.ReadFile(filepath.Join(s.dir, name)); err == nil && strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// logTails returns the last lines of each process log, for an error
// whose log file goes with the temporary directory.
func (s *Server) logTails() string {
	var b strings.Builder
	for _, name := range logNames {
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "\n%s (last lines):\n  %s", name, strings.Join(lines[max(0, len(lines)-8):], "\n  "))
	}
	return b.String()
}

// stopProcesses kills both processes, keeping the directory.
func (s *Server) stopProcesses() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.StopAPIServer(ctx)
	s.mu.Lock()
	if s.etcd != nil {
		_ = stopProcess(ctx, s.etcd)
		s.etcd = nil
	}
	s.mu.Unlock()
}

func (s *Server) start(ctx context.Context) error {
	ca, err := writeCerts(s.dir)
	if err != nil {
		return err
	}
	s.CAPEM = ca
	tokens := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n%s,nobody,nobody-uid\n", s.AdminToken, s.UnprivilegedToken)
	if err := os.WriteFile(filepath.Join(s.dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}
	etcdURL, err := s.startEtcd()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	f := func(name string) string { return filepath.Join(s.dir, name) }
	s.apiArgs = []string{
		"--etcd-servers=" + etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port), "--cert-dir=" + f("certs"),
		"--tls-cert-file=" + f("serving.crt"), "--tls-private-key-file=" + f("serving.key"),
		"--token-auth-file=" + f("tokens.csv"), "--authorization-mode=RBAC",
		"--service-account-issuer=https://pipeline.test", "--service-account-key-file=" + f("sa.key"),
		"--service-account-signing-key-file=" + f("sa.key"), "--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount", "--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false", "--profiling=false", "--allow-privileged=true",
		"--shutdown-watch-termination-grace-period=1s", // a stop with open watches is quick
	}
	s.apiArgs = append(s.apiArgs, s.extraArgs...)
	return s.StartAPIServer(ctx)
}

func (s *Server) startEtcd() (string, error) {
	cp, err := freePort()
	if err != nil {
		return "", err
	}
	pp, err := freePort()
	if err != nil {
		return "", err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", cp)
	peer := fmt.Sprintf("http://127.0.0.1:%d", pp)
	cmd, err := s.spawn("etcd", "etcd.log", "--name=default", "--data-dir="+filepath.Join(s.dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=default="+peer, "--unsafe-no-fsync", "--log-level=error")
	if err != nil {
		return "", err
	}
	s.etcd = cmd
	return client, nil
}

func (s *Server) spawn(bin, logName string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(filepath.Join(s.dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(s.assets, bin), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	return p, nil
}

// StartAPIServer starts the API server (again) on the same port and waits
// until it is ready.
func (s *Server) StartAPIServer(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.api != nil {
		return errors.New("kube-apiserver already running")
	}
	cmd, err := s.spawn("kube-apiserver", "kube-apiserver.log", s.apiArgs...)
	if err != nil {
		return err
	}
	s.api = cmd
	// A restart over a large etcd (100,000 pods) on a loaded machine
	// takes minutes before the watch caches are filled.
	if err := s.waitReady(ctx, 5*time.Minute); err != nil {
		return fmt.Errorf("%w (log: %s)", err, filepath.Join(s.dir, "kube-apiserver.log"))
	}
	return nil
}

// StopAPIServer stops only the API server; etcd and its data stay.
func (s *Server) StopAPIServer(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.api == nil {
		return nil
	}
	err := stopProcess(ctx, s.api)
	s.api = nil
	return err
}

// Stop kills both processes, waits for them and removes a temporary
// directory. It is idempotent.
func (s *Server) Stop() {
	s.stopProcesses()
	if s.ownDir {
		_ = os.RemoveAll(s.dir)
		s.ownDir = false
	}
}

func stopProcess(ctx context.Context, p *proc) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.done
		return ctx.Err()
	}
}

// waitReady polls /readyz and then waits for the default namespace.
func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CAPEM)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(limit)
	var last error
	for _, path := range []string{"/readyz", "/api/v1/namespaces/default"} {
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+s.AdminToken)
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
				last = fmt.Errorf("GET %s: %s", path, resp.Status)
			} else {
				last = err
			}
			select {
			case <-s.api.done:
				return fmt.Errorf("kube-apiserver exited: %s", s.api.cmd.ProcessState)
			default:
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("kube-apiserver not ready after %s: %w", limit, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// RESTConfig returns an admin client configuration (TLS verified).
func (s *Server) RESTConfig() *rest.Config {
	return &rest.Config{Host: s.URL, BearerToken: s.AdminToken, QPS: 200, Burst: 400,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CAPEM}}
}

// WriteKubeconfig writes a kubeconfig for the admin user.
func (s *Server) WriteKubeconfig(path, contextName string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthorityData: s.CAPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: s.AdminToken}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	cfg.CurrentContext = contextName
	return clientcmd.WriteToFile(*cfg, path)
}

// Dir is the server's directory (certificates, logs, etcd data).
func (s *Server) Dir() string { return s.dir }

// APIServerPID is the process id of the running API server, 0 when it is
// stopped: benchmarks read its memory.
func (s *Server) APIServerPID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.api == nil {
		return 0
	}
	return s.api.cmd.Process.Pid
}
