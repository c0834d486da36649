package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// procKiB reads a field such as VmHWM (peak RSS) from /proc/PID/status.
func procKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestBrokerSizeBombRSS: issue 35's attack on `forestd broker` — six rounds
// of four connections each declaring 2 GiB − 16 and sending 4 KiB, then
// sixteen connections declaring the largest allowed size (100 MiB) — leaves
// the broker's peak RSS under 512 MiB, every hostile connection closed by
// the broker, and the broker answering a producer and a consumer.
func TestBrokerSizeBombRSS(t *testing.T) {
	b := startBroker(t, "", t.TempDir())
	addr := b.logField("broker listening", "addr", 20*time.Second)
	pid := b.cmd.Process.Pid
	attack := func(size uint32, n int) {
		var cs []net.Conn
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _ = c.Write(append(binary.BigEndian.AppendUint32(nil, size), make([]byte, 4096)...))
			cs = append(cs, c)
		}
		if size <= 100<<20 { // an allowed size: the clients give up, the broker must let go
			for _, c := range cs {
				c.(*net.TCPConn).CloseWrite()
			}
		}
		for _, c := range cs {
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err := io.Copy(io.Discard, c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("a connection declaring %d bytes was not closed by the broker", size)
			}
		}
	}
	for range 6 {
		attack(0x7ffffff0, 4)
	}
	attack(100<<20, 16)
	hwm := procKiB(t, pid, "VmHWM")
	t.Logf("broker peak RSS %d MiB, now %d MiB", hwm>>10, procKiB(t, pid, "VmRSS")>>10)
	if hwm > 512<<10 {
		t.Errorf("broker peak RSS %d MiB, want under 512 MiB", hwm>>10)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("bomb.after"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bomb.after", Value: []byte("still here")}).FirstErr(); err != nil {
		t.Fatalf("produce after the attack: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume after the attack: %v", ctx.Err())
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || bytes.Equal(r.Value, []byte("still here")) })
		if found {
			break
		}
	}
	if code := b.stop(30 * time.Second); code != 0 {
		t.Errorf("broker exited %d", code)
	}
}
