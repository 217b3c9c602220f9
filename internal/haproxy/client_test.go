package haproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeSocket answers each command on a unix socket with answer(cmd);
// hang makes it never answer.
func fakeSocket(t *testing.T, answer func(cmd string) (string, bool)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 4096)
				n, _ := c.Read(b)
				a, ok := answer(strings.TrimSpace(string(b[:n])))
				if !ok {
					_, _ = io.Copy(io.Discard, c) // hang until the client gives up
					return
				}
				_, _ = io.WriteString(c, a)
			}()
		}
	}()
	return path
}

func TestApplyStopsAtAnError(t *testing.T) {
	var got []string
	sock := fakeSocket(t, func(cmd string) (string, bool) {
		got = append(got, cmd)
		if strings.HasPrefix(cmd, "add server") {
			return "Already exists a server with the same name in backend.\n\n", true
		}
		return "\n", true
	})
	ops := []Op{{Action: SetWeight, Backend: "be", Server: "a", Weight: 2},
		{Action: AddServer, Backend: "be", Server: "c", Addr: ap("10.0.0.3:80")},
		{Action: SetWeight, Backend: "be", Server: "b", Weight: 3}}
	err := Client{Socket: sock}.Apply(context.Background(), ops)
	var ae *AnswerError
	if !errors.As(err, &ae) || ae.Command != "add server be/c 10.0.0.3:80" {
		t.Fatalf("Apply = %v, want the add server's answer", err)
	}
	if diff := cmp.Diff([]string{"set server be/a weight 2", "add server be/c 10.0.0.3:80"}, got); diff != "" {
		t.Errorf("commands sent (-want +got):\n%s", diff)
	}
}

func TestApplyAnswers(t *testing.T) {
	tests := []struct {
		name   string
		op     Op
		answer string
		ok     bool
	}{
		{"addr changed", Op{Action: SetAddr, Backend: "be", Server: "a", Addr: ap("10.0.0.1:81")}, "IP changed from '10.0.0.2' to '10.0.0.1', no need to change the port by 'stats socket command'", true},
		{"port changed", Op{Action: SetAddr, Backend: "be", Server: "a", Addr: ap("10.0.0.1:81")}, "no need to change the addr, port changed from '80' to '81' by 'stats socket command'", true},
		{"no such server", Op{Action: SetAddr, Backend: "be", Server: "a", Addr: ap("10.0.0.1:81")}, "No such server.", false},
		{"static weight", Op{Action: SetWeight, Backend: "st", Server: "x", Weight: 3}, "Backend is using a static LB algorithm and only accepts weights '0%' and '100%'.", false},
		{"unknown command", Op{Action: SetState, Backend: "be", Server: "a"}, "Unknown command, but maybe one of the following ones is a better match:", false},
		{"permission", Op{Action: SetState, Backend: "be", Server: "a"}, "Permission denied", false},
		{"deleted", Op{Action: DelServer, Backend: "be", Server: "a"}, "Server deleted.", true},
		{"kept in maintenance", Op{Action: DelServer, Backend: "be", Server: "a"}, "Server still has connections attached to it, cannot remove it.", true},
		{"not deleted", Op{Action: DelServer, Backend: "be", Server: "a"}, "Only servers in maintenance mode can be deleted.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := fakeSocket(t, func(cmd string) (string, bool) {
				if strings.HasSuffix(cmd, "state maint") && tt.op.Action == DelServer {
					return "\n", true
				}
				return tt.answer + "\n\n", true
			})
			err := Client{Socket: sock}.Apply(context.Background(), []Op{tt.op})
			if (err == nil) != tt.ok {
				t.Errorf("Apply = %v, want success %v", err, tt.ok)
			}
		})
	}
}

func TestCommandBounded(t *testing.T) {
	sock := fakeSocket(t, func(string) (string, bool) { return "", false })
	start := time.Now()
	_, err := Client{Socket: sock, Timeout: 100 * time.Millisecond}.Command(context.Background(), "show servers state")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Command = %v, want the timeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = Client{Socket: sock, Timeout: time.Minute}.Command(ctx, "show servers state")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Command = %v, want the cancellation", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the two commands took %s", d)
	}
	if _, err := (Client{Socket: filepath.Join(t.TempDir(), "none")}).Command(context.Background(), "x"); err == nil {
		t.Error("Command on a missing socket succeeded")
	}
	if _, err := (Client{Socket: sock}).Command(context.Background(), "set server be/a weight 1; shutdown sessions"); err == nil {
		t.Error("a command with a separator was sent")
	}
}

const stateAnswer = `1
# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port
3 be 1 a 10.0.0.1 2 0 1 1 9 1 0 2 0 0 0 0 - 81 - 0 0 - - 0
3 be 2 b 10.0.0.2 2 4 5 5 9 1 0 2 0 0 0 0 - 80 - 0 0 - - 0
3 be 3 c 10.0.0.3 0 1 1 1 9 1 0 2 0 0 0 0 - 80 - 0 0 - - 0
4 st 1 x 10.0.1.1 2 0 1 1 9 1 0 2 0 0 0 0 - 80 - 0 0 - - 0
`

func TestVerify(t *testing.T) {
	sock := fakeSocket(t, func(string) (string, bool) { return stateAnswer, true })
	c := Client{Socket: sock}
	cfg := edit(t, "10.0.0.1:80", "10.0.0.1:81")
	tests := []struct {
		name string
		cfg  string
		ops  []Op
		err  string
	}{
		{"as the file says", cfg, []Op{{Action: SetAddr, Backend: "be", Server: "a"}}, ""},
		{"a config-disabled server enabled at run time", cfg, []Op{{Action: SetWeight, Backend: "be", Server: "b"}}, ""},
		{"removed, in maintenance", cfg, []Op{{Action: DelServer, Backend: "be", Server: "c"}}, ""},
		{"removed, gone", cfg, []Op{{Action: DelServer, Backend: "be", Server: "z"}}, ""},
		{"removed but serving", edit(t, "  server a 10.0.0.1:80\n", ""), []Op{{Action: DelServer, Backend: "st", Server: "y"}, {Action: DelServer, Backend: "be", Server: "a"}}, "be/a: not in the file but serving"},
		{"port", base, []Op{{Action: SetAddr, Backend: "be", Server: "a"}}, "be/a: HAProxy has 10.0.0.1:81, the file 10.0.0.1:80"},
		{"weight", edit(t, "10.0.0.1:80", "10.0.0.1:81 weight 4"), []Op{{Action: SetWeight, Backend: "be", Server: "a"}}, "HAProxy has weight 1, the file 4"},
		{"state", edit(t, "10.0.0.1:80", "10.0.0.1:81 disabled"), []Op{{Action: SetState, Backend: "be", Server: "a"}}, "HAProxy has state ready, the file maint"},
		{"added but missing", edit(t, "weight 5\n", "weight 5\n  server d 10.0.0.4:80\n"), []Op{{Action: AddServer, Backend: "be", Server: "d"}}, "be/d: in the file but not in HAProxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Verify(context.Background(), Parse([]byte(tt.cfg)), tt.ops)
			if got := errText(err); !strings.Contains(got, tt.err) || (tt.err == "") != (err == nil) {
				t.Errorf("Verify = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	sock := fakeSocket(t, func(string) (string, bool) { return stateAnswer, true })
	c := Client{Socket: sock}
	runs := `backend be
  server a 10.0.0.1:81
  server b 10.0.0.2:80 weight 5
backend st
  balance source
  server x 10.0.1.1:80
`
	both := []Op{{Backend: "be"}, {Backend: "st"}}
	left, err := c.Check(context.Background(), Parse([]byte(runs)), both)
	if err != nil {
		t.Errorf("Check of the file HAProxy runs (c in maintenance, not in it): %v", err)
	}
	if diff := cmp.Diff([]Op{{Action: DelServer, Backend: "be", Server: "c"}}, left, equateAddr); diff != "" {
		t.Errorf("leftovers (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ cfg, err string }{
		{strings.Replace(runs, "10.0.0.1:81", "10.0.0.1:80", 1), "be/a: HAProxy has 10.0.0.1:81, the file 10.0.0.1:80"},
		{strings.Replace(runs, "  server a 10.0.0.1:81\n", "", 1), "be/a: not in the file but serving"},
		{runs + "  server w 10.0.1.2:80\n", "st/w: in the file but not in HAProxy"},
	} {
		if _, err := c.Check(context.Background(), Parse([]byte(tt.cfg)), both); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Check = %v, want %q", err, tt.err)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParseServersStateRefuses(t *testing.T) {
	for _, a := range []string{"", "Unknown command", "2\n# be_name\n", "1\n# be_name srv_name\nbe a\n", "1\n# be_name srv_name srv_addr srv_port srv_uweight srv_admin_state\nbe a nope 1 1 0\n",
		"1\n# be_name srv_name srv_addr srv_port srv_uweight srv_admin_state\nbe a 10.0.0.1 x 1 0\n", "1\nbe a 10.0.0.1 80 1 0\n"} {
		if _, err := parseServersState(a); err == nil {
			t.Errorf("parseServersState(%q) succeeded", a)
		}
	}
	got, err := parseServersState(stateAnswer)
	if err != nil || len(got) != 4 || got[1].Maint() || !got[2].Maint() || got[0].Port != 81 {
		t.Errorf("parseServersState = %+v, %v", got, err)
	}
}
