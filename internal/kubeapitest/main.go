package kubeapitest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Main runs a test package against one API server (call it from TestMain:
// os.Exit(kubeapitest.Main(m, &srv))). When the binaries are missing it
// says how to build them and skips the package, except under CI (env CI
// set), where a missing harness is a failure.
func Main(m *testing.M, srv **Server) int {
	if _, err := Assets(); err != nil {
		fmt.Fprintf(os.Stderr, "kubeapitest: %v\n", err)
		if os.Getenv("CI") != "" {
			return 1
		}
		fmt.Fprintln(os.Stderr, "kubeapitest: skipping this package's tests (not in CI)")
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := Start(ctx, Options{})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeapitest: start: %v\n", err)
		return 1
	}
	*srv = s
	code := m.Run()
	s.Stop()
	return code
}

// NewNamespace creates a namespace with a name unique to the test and
// deletes it when the test ends.
func NewNamespace(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim(name, "-") + "-" + randomToken()[:6]
	ctx := context.Background()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}
