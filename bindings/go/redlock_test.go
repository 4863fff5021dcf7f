package redlock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ---- masters: redis-server on free loopback ports, stopped by PID ------------

type master struct {
	port   int
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait returned
}

var masters []*master

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// redisCmd sends one command in RESP and returns the first reply line (bulk
// strings: their content; nil: "(nil)").
func redisCmd(port int, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "(nil)", nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return line, nil
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func onAll(t *testing.T, args ...string) []string {
	t.Helper()
	out := make([]string, len(masters))
	for i, m := range masters {
		v, err := redisCmd(m.port, args...)
		if err != nil {
			t.Fatalf("%v on %d: %v", args, m.port, err)
		}
		out[i] = v
	}
	return out
}

func uris() []string {
	var u []string
	for _, m := range masters {
		u = append(u, fmt.Sprintf("redis://127.0.0.1:%d", m.port))
	}
	return u
}

func startMasters(n int) error {
	dir, err := os.MkdirTemp("", "redlock-go-")
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		m, err := startMaster(dir)
		if err != nil {
			return err
		}
		masters = append(masters, m)
	}
	return nil
}

// startMaster runs redis-server on a fresh free port and waits until the
// server answering there is ours (INFO's process_id is our child's PID). A
// free port can be taken by another process before redis-server binds it: the
// child then exits, and another port is tried.
func startMaster(dir string) (*master, error) {
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		inUse := false
		for _, m := range masters {
			inUse = inUse || m.port == port
		}
		if inUse {
			continue
		}
		cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir)
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		want := fmt.Sprintf("process_id:%d", cmd.Process.Pid)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if info, err := redisCmd(port, "INFO", "server"); err == nil && strings.Contains(info, want+"\r\n") {
				return &master{port, cmd, exited}, nil
			}
			select {
			case <-exited:
			default:
				if time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				cmd.Process.Kill()
				<-exited
			}
			break
		}
	}
	return nil, errors.New("could not start redis-server on a free port (5 attempts)")
}

func stopMasters() {
	for _, m := range masters {
		m.cmd.Process.Signal(syscall.SIGCONT)
		m.cmd.Process.Kill() // by PID: the process we started
		<-m.exited
	}
}

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Println("redis-server not found")
		os.Exit(1)
	}
	if err := startMasters(3); err != nil {
		fmt.Println(err)
		stopMasters()
		os.Exit(1)
	}
	code := m.Run()
	stopMasters()
	os.Exit(code)
}

func pause(i int)  { masters[i].cmd.Process.Signal(syscall.SIGSTOP) }
func resume(i int) { masters[i].cmd.Process.Signal(syscall.SIGCONT) }

func open(t *testing.T, opts ...Option) *Client {
	t.Helper()
	base := []Option{WithQuarantine(false), WithRetry(2, 20*time.Millisecond, 20*time.Millisecond)}
	c, err := Open(uris(), append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var bg = context.Background()

// ---- tests -----------------------------------------------------------------------

func TestLockUnlock(t *testing.T) {
	c := open(t)
	l, err := c.Lock(bg, "go:basic", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Resource != "go:basic" || len(l.Value) != 32 {
		t.Fatalf("resource %q value %q", l.Resource, l.Value)
	}
	if v := l.Validity(); v < 4*time.Second || v > 5*time.Second {
		t.Fatalf("validity %v", v)
	}
	for _, v := range onAll(t, "GET", "go:basic") {
		if v != l.Value {
			t.Fatalf("value on a master: %q", v)
		}
	}
	if err := l.Unlock(bg); err != nil {
		t.Fatal(err)
	}
	if !l.Released() || l.Validity() != 0 {
		t.Fatal("not released")
	}
	if err := l.Unlock(bg); err != nil { // second unlock: no-op
		t.Fatal(err)
	}
	for _, v := range onAll(t, "EXISTS", "go:basic") {
		if v != "0" {
			t.Fatal("key still there")
		}
	}
}

func TestTryLockContention(t *testing.T) {
	a, b := open(t), open(t)
	l, err := a.TryLock(bg, "go:try", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.TryLock(bg, "go:try", 5*time.Second)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("want ErrLocked, got %v", err)
	}
	var re *Error
	if !errors.As(err, &re) || re.Errno != ELOCKED || re.Op != "trylock" || re.Resource != "go:try" {
		t.Fatalf("error detail: %#v", err)
	}
	if re.Errno.Name() != "REDLOCK_ELOCKED" || !re.Temporary() || re.Timeout() {
		t.Fatalf("errno methods: %s", re.Errno.Name())
	}
	// The blocking call's votes, read on its OS thread; the message stays
	// short (nothing quarantined).
	if !strings.Contains(re.Votes, "=refused") || strings.Contains(err.Error(), "refused") {
		t.Fatalf("votes %q in %q", re.Votes, err.Error())
	}
	_, err = b.Lock(bg, "go:try", 5*time.Second)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock after retries: %v", err)
	}
	// This call's own votes, whichever OS thread the goroutine is on now.
	if !errors.As(err, &re) || !strings.HasPrefix(re.Votes, "lost (held):") {
		t.Fatalf("votes of the failed Lock: %#v", err)
	}
	l.Unlock(bg)
	l2, err := b.TryLock(bg, "go:try", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l2.Unlock(bg)
}

func TestLockWait(t *testing.T) {
	a, b := open(t), open(t)
	l, err := a.Lock(bg, "go:wait", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.AfterFunc(300*time.Millisecond, func() { l.Unlock(bg) })
	l2, err := b.LockWait(bg, "go:wait", 5*time.Second, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if w := time.Since(t0); w < 250*time.Millisecond || w > 3*time.Second {
		t.Fatalf("waited %v", w)
	}
	_, err = a.LockWait(bg, "go:wait", 5*time.Second, 300*time.Millisecond)
	var re *Error
	if !errors.Is(err, ErrTimeout) || !errors.As(err, &re) || !re.Timeout() {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
	l2.Unlock(bg)
}

func TestContextCancelsWait(t *testing.T) {
	a, b := open(t), open(t)
	l, err := a.Lock(bg, "go:ctx", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = b.LockWait(ctx, "go:ctx", 5*time.Second, 3*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if time.Since(t0) > 1500*time.Millisecond {
		t.Fatalf("took %v", time.Since(t0))
	}
	// The wait was canceled in the library: the release is not taken by it.
	l.Unlock(bg)
	l3, err := a.TryLock(bg, "go:ctx", 2*time.Second)
	if err != nil {
		t.Fatalf("the canceled wait took the release: %v", err)
	}
	l3.Unlock(bg)
	done, cancel2 := context.WithCancel(bg)
	cancel2()
	if _, err := b.Lock(done, "go:ctx", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled ctx: %v", err)
	}
}

func TestLockMany(t *testing.T) {
	a, b := open(t), open(t)
	held, err := a.Lock(bg, "go:many:b", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.LockMany(bg, []string{"go:many:a", "go:many:b"}, 5*time.Second); !errors.Is(err, ErrLocked) {
		t.Fatalf("want ErrLocked, got %v", err)
	}
	for _, v := range onAll(t, "EXISTS", "go:many:a") {
		if v != "0" {
			t.Fatal("partial lock left behind")
		}
	}
	held.Unlock(bg)
	l, err := b.LockMany(bg, []string{"go:many:a", "go:many:b"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range onAll(t, "EXISTS", "go:many:a", "go:many:b") {
		if v != "2" {
			t.Fatal("not both keys")
		}
	}
	if len(l.Resources) != 2 {
		t.Fatal(l.Resources)
	}
	l.Unlock(bg)
	if _, err := b.LockMany(bg, []string{"x", "x"}, time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("duplicates: %v", err)
	}
}

func TestExtend(t *testing.T) {
	c := open(t)
	l, err := c.Lock(bg, "go:extend", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := l.Extend(bg, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if l.Validity() < 4*time.Second {
		t.Fatalf("validity %v", l.Validity())
	}
	for _, v := range onAll(t, "PTTL", "go:extend") {
		if n, _ := strconv.Atoi(v); n < 4000 {
			t.Fatalf("pttl %s", v)
		}
	}
	onAll(t, "SET", "go:extend", "intruder", "PX", "60000") // taken over on every master
	err = l.Extend(bg, 5*time.Second)
	if !errors.Is(err, ErrLost) && !errors.Is(err, ErrLocked) {
		t.Fatalf("extend of a lock taken over: %v", err)
	}
	var re *Error
	if !errors.As(err, &re) || !strings.Contains(re.Votes, "=refused") {
		t.Fatalf("votes of the refused extension: %#v", err)
	}
	// Lost before the call: no round, so no votes.
	if err = l.Extend(bg, 5*time.Second); !errors.As(err, &re) || re.Errno != ELOST || re.Votes != "" {
		t.Fatalf("extend of a lost lock: %#v", err)
	}
	err = l.Unlock(bg)
	if !errors.Is(err, ErrLost) || !errors.As(err, &re) || !strings.Contains(re.Votes, "=refused") {
		t.Fatalf("unlock of a lock taken over: %#v", err)
	}
}

// Freshly started masters with the restart quarantine on (the default):
// acquisitions fail with ErrNoQuorum, and the error says it is the
// quarantine and how long it has left, whichever form the call took.
func TestQuarantinedErrorSaysSo(t *testing.T) {
	dir := t.TempDir()
	var fresh []*master
	t.Cleanup(func() {
		for _, m := range fresh {
			m.cmd.Process.Kill() // by PID: the process we started
			<-m.exited
		}
	})
	var us []string
	for i := 0; i < 3; i++ {
		m, err := startMaster(dir)
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, m)
		us = append(us, fmt.Sprintf("redis://127.0.0.1:%d", m.port))
	}
	// Quarantine left on; a max TTL of 10 minutes makes it outlast the test
	// however slow the machine.
	c, err := Open(us, WithRetry(0, 0, 0), WithMaxTTL(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	check := func(err error, op string) {
		t.Helper()
		var re *Error
		if !errors.Is(err, ErrNoQuorum) || !errors.As(err, &re) {
			t.Fatalf("%s: want ErrNoQuorum, got %v", op, err)
		}
		if !strings.Contains(re.Votes, "=quarantined (restart quarantine: ") {
			t.Fatalf("%s: votes %q", op, re.Votes)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "redlock: "+op+` "go:fresh": `) ||
			!strings.Contains(msg, "quarantined") || !strings.Contains(msg, "ms left") {
			t.Fatalf("%s: message %q", op, msg)
		}
	}
	_, err = c.TryLock(bg, "go:fresh", time.Second) // blocking: read on its OS thread
	check(err, "trylock")
	_, err = c.Lock(bg, "go:fresh", time.Second) // callback form: read on the I/O thread
	check(err, "lock")
	_, err = c.LockMany(bg, []string{"go:fresh", "go:fresh2"}, time.Second)
	check(err, "lock_many")
}

func TestWatchLostByTakeover(t *testing.T) {
	c := open(t)
	l, err := c.Lock(bg, "go:watch", 1000*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	lost, err := l.Watch()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2200 * time.Millisecond) // two TTLs: extended by the watch
	if l.Lost() {
		t.Fatal("lost while watched")
	}
	for _, v := range onAll(t, "GET", "go:watch") {
		if v != l.Value {
			t.Fatal("not held")
		}
	}
	onAll(t, "SET", "go:watch", "intruder", "PX", "60000") // taken over on every master
	select {
	case err := <-lost:
		if !errors.Is(err, ErrLost) {
			t.Fatalf("lost with %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no lost notification")
	}
	if _, ok := <-lost; ok {
		t.Fatal("channel not closed after the notification")
	}
	if !l.Lost() {
		t.Fatal("Lost() false")
	}
	l.Unlock(bg)
}

func TestWatchLostBySIGSTOP(t *testing.T) {
	c := open(t, WithTimeouts(time.Second, 50*time.Millisecond))
	l, err := c.Lock(bg, "go:watch:stop", 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	lost, _ := l.Watch()
	pause(0)
	pause(1)
	defer resume(0)
	defer resume(1)
	select {
	case err := <-lost:
		if !errors.Is(err, ErrLost) {
			t.Fatalf("lost with %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no lost notification")
	}
	resume(0)
	resume(1)
	l.Unlock(bg)
}

func TestWatchChannelClosedByUnlock(t *testing.T) {
	c := open(t)
	l, _ := c.Lock(bg, "go:watch:unlock", time.Second)
	lost, _ := l.Watch()
	if err := l.Unlock(bg); err != nil {
		t.Fatal(err)
	}
	select {
	case err, ok := <-lost:
		if ok {
			t.Fatalf("got %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("channel not closed by Unlock")
	}
}

func TestFencing(t *testing.T) {
	a, b := open(t, WithFencing(true)), open(t, WithFencing(true))
	var last uint64
	for i := 0; i < 6; i++ {
		c := a
		if i%2 == 1 {
			c = b
		}
		l, err := c.Lock(bg, "go:fence", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence <= last {
			t.Fatalf("fence %d after %d", l.Fence, last)
		}
		last = l.Fence
		l.Unlock(bg)
	}
	nf := open(t)
	l, _ := nf.Lock(bg, "go:nofence", time.Second)
	if l.Fence != 0 {
		t.Fatalf("fence without fencing: %d", l.Fence)
	}
	l.Unlock(bg)
}

func TestKeyPrefixAndClose(t *testing.T) {
	c, err := Open(uris(), WithQuarantine(false), WithKeyPrefix("pfx:"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Lock(bg, "go:prefixed", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v := onAll(t, "GET", "pfx:go:prefixed"); v[0] != l.Value {
		t.Fatalf("key %v", v)
	}
	c.Close()
	c.Close() // idempotent
	if !l.Released() {
		t.Fatal("close did not release the lock object")
	}
	if v := onAll(t, "EXISTS", "pfx:go:prefixed"); v[0] != "0" {
		t.Fatal("close did not release the key")
	}
	if _, err := c.Lock(bg, "go:prefixed", time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if err := l.Extend(bg, time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("extend after close: %v", err)
	}
}

func TestErrors(t *testing.T) {
	c := open(t)
	if _, err := c.Lock(bg, "go:bad", 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ttl 0: %v", err)
	}
	if _, err := c.Lock(bg, "go:bad", time.Hour); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ttl > max: %v", err)
	}
	if _, err := c.TryLock(bg, "", time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty resource: %v", err)
	}
	if _, err := Open([]string{"http://x"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad uri: %v", err)
	}
	if _, err := Open(nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no nodes: %v", err)
	}
	if !strings.Contains(ELOCKED.Error(), "locked") || EINVAL.Name() != "REDLOCK_EINVAL" {
		t.Fatal("strerror")
	}
	if !strings.HasPrefix(Version(), "0.") {
		t.Fatal(Version())
	}
}

// Sentinel voters and durability acks are taken at Open (masters that do not
// answer are retried in the background); a sentinel URI without the master's
// name is refused, saying so; cluster voters are accepted too.
func TestVoterURIs(t *testing.T) {
	for _, uri := range []string{
		"redis-sentinel://127.0.0.1:26379/mymaster?wait=1&sentinel_user=u&sentinel_password=p",
		"redis-cluster://127.0.0.1:7000,127.0.0.1:7001?wait=1",
		"redis://127.0.0.1:6379/0?waitaof=1,0&wait_ms=100",
	} {
		c, err := Open([]string{uri}, WithQuarantine(false),
			WithTimeouts(50*time.Millisecond, 50*time.Millisecond))
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		c.Close()
	}
	_, err := Open([]string{"redis-sentinel://h/"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "needs the master's name") {
		t.Fatalf("no master name: %v", err)
	}
	_, err = Open([]string{"redis-sentinel://u:secret-pw@h/"})
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "secret-pw") {
		t.Fatalf("password shown: %v", err)
	}
}

// A refused URI's error shows it as the C library redacts it: the whole
// password, whatever it holds ('/', '@'), and any sentinel_password.
func TestRefusedURIRedacted(t *testing.T) {
	for _, c := range []struct{ uri, secret, shown string }{
		{"redis://u:se/cr@et@h:1?bogus=1", "se/cr", `redis://u:***@h:1`},
		{"redis://:p@ss/w0rd@h:1?bogus=1", "ss/w0rd", `redis://:***@h:1`},
		{"redis-sentinel://h:26379?sentinel_password=s3cr/t@x", "s3cr", "sentinel_password=***"},
	} {
		_, err := Open([]string{c.uri})
		if err == nil {
			t.Fatalf("%s: accepted", c.shown)
		}
		if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), c.secret) ||
			!strings.Contains(err.Error(), c.shown) {
			t.Fatalf("%s: %v", c.shown, err)
		}
	}
	if got := redact("redis://u:p/w@d@host:1"); got != "redis://u:***@host:1" {
		t.Fatal(got)
	}
}

func TestNoQuorumAndCloseCancels(t *testing.T) {
	a := open(t)
	c, err := Open(uris(), WithQuarantine(false), WithTimeouts(time.Second, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	pause(0)
	pause(1)
	_, err = c.TryLock(bg, "go:nq", time.Second)
	resume(0)
	resume(1)
	if !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("want ErrNoQuorum, got %v", err)
	}
	holder, err := a.Lock(bg, "go:cancel", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := c.LockWait(bg, "go:cancel", time.Second, 10*time.Second)
		res <- err
	}()
	time.Sleep(200 * time.Millisecond)
	c.Close()
	select {
	case err := <-res:
		if !errors.Is(err, ErrCanceled) {
			t.Fatalf("want ErrCanceled, got %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("close did not cancel the wait")
	}
	holder.Unlock(bg)
}

func TestLogger(t *testing.T) {
	var mu sync.Mutex
	var msgs []string
	c := open(t, WithLogger(LogWarn, func(level int, msg string) {
		mu.Lock()
		msgs = append(msgs, msg)
		mu.Unlock()
	}))
	l, _ := c.Lock(bg, "go:log", 400*time.Millisecond)
	lost, _ := l.Watch()
	onAll(t, "SET", "go:log", "intruder", "PX", "60000") // taken over on every master
	<-lost
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, m := range msgs {
		if strings.Contains(m, "lost") {
			return
		}
	}
	t.Fatalf("no lost message in %q", msgs)
}

func TestConcurrentMutualExclusion(t *testing.T) {
	clients := []*Client{open(t), open(t), open(t)}
	var mu sync.Mutex
	inside, max, total := 0, 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(c *Client) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				l, err := c.LockWait(bg, "go:mutex", 2*time.Second, 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				total++
				if inside > max {
					max = inside
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				l.Unlock(bg)
			}
		}(clients[g%3])
	}
	wg.Wait()
	if max != 1 || total != 30 {
		t.Fatalf("max holders %d, total %d", max, total)
	}
}

func TestLockManyContextCanceled(t *testing.T) {
	a := open(t)
	b := open(t, WithRetry(-1, 50*time.Millisecond, 10*time.Millisecond))
	held, err := a.Lock(bg, "go:manyctx:b", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	_, err = b.LockMany(ctx, []string{"go:manyctx:a", "go:manyctx:b"}, 5*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	// Canceled in the library, not left retrying: the holder's release is
	// not taken by it.
	held.Unlock(bg)
	l, err := a.TryLock(bg, "go:manyctx:a", time.Second)
	if err != nil {
		t.Fatalf("the canceled LockMany holds its lock: %v", err)
	}
	l.Unlock(bg)
}

// A TTL above the max TTL is refused saying the limit and the option that
// raises it, for every call that takes a TTL.
func TestMaxTTLRefusalSaysLimit(t *testing.T) {
	c := open(t, WithMaxTTL(10*time.Second))
	check := func(op string, err error) {
		t.Helper()
		var re *Error
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &re) || re.Op != op {
			t.Fatalf("%s: %v", op, err)
		}
		for _, want := range []string{"20s", "max TTL (10s)", "WithMaxTTL"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %q lacks %q", op, err, want)
			}
		}
	}
	_, err := c.Lock(bg, "go:maxttl", 20*time.Second)
	check("lock", err)
	_, err = c.TryLock(bg, "go:maxttl", 20*time.Second)
	check("trylock", err)
	_, err = c.LockWait(bg, "go:maxttl", 20*time.Second, time.Second)
	check("lock_wait", err)
	_, err = c.LockMany(bg, []string{"go:maxttl"}, 20*time.Second)
	check("lock_many", err)
	l, err := c.Lock(bg, "go:maxttl", 10*time.Second) // the limit itself is taken
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(bg)
	check("extend", l.Extend(bg, 20*time.Second))
	// The default max TTL (60 s) is named as well.
	d := open(t)
	_, err = d.Lock(bg, "go:maxttl", 2*time.Minute)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "max TTL (1m0s)") {
		t.Fatalf("default: %v", err)
	}
}
