package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Session expiry of consumer-group members (sessions.go).
//
// kfake arms a classic group member's session timer only when a JoinGroup
// or SyncGroup reply actually reaches the member: (*group).reply starts the
// heartbeat timer after a successful send and returns early when the
// member's connection is gone. A consumer killed while its JoinGroup or
// SyncGroup is parked in a rebalance — a daemon killed again a few seconds
// after a restart, while the group still waits for the previous one's
// session to lapse — thus becomes a member without a timer: nothing ever
// expires it. When another member leads the rebalance, that leader assigns
// it partitions, the group turns Stable, and those partitions are read by
// nobody for as long as the broker runs. (When the dead member happens to
// lead, kfake's pending-sync timer removes it after the rebalance timeout.)
// Kafka schedules the heartbeat expiry of every member when it completes a
// join, whether or not the reply is delivered, so a dead member always
// leaves the group one session timeout after its last sign of life.
//
// kfake is a module forestd depends on, not code it carries, so the fix
// lives here, outside it: sessionWatch observes the group requests kfake
// handles (through its control hooks, without handling them), and expires a
// member that has shown no sign of life for its session timeout by sending
// the LeaveGroup the member would have sent, as an administrator does with
// `kafka-consumer-groups --delete`. kfake's LeaveGroup removes the member
// and starts a rebalance, in which the live members take its partitions.
// A member awaiting a reply — a JoinGroup while the group prepares the
// rebalance it joined, a SyncGroup of the current generation while the
// group completes it — is alive by Kafka's rules (it cannot heartbeat meanwhile) and is left
// alone, as Kafka leaves it; kfake bounds those waits by the rebalance
// timeout itself.
type sessionWatch struct {
	c     *kfake.Cluster
	cl    *kgo.Client
	log   *slog.Logger
	every time.Duration

	mu      sync.Mutex
	members map[memberKey]*memberActivity
	phases  map[string]groupPhase
	// sessions is the longest session timeout of a group's JoinGroup
	// requests: the timeout of a member first seen in the group listing,
	// whose first JoinGroup carried no member ID (JoinGroup v0–v3 assign
	// the ID in the response, which the watch does not see)
	sessions map[string]time.Duration

	expired  atomic.Int64
	perGroup map[string]int // expiries by live group (for tests)
	stop     chan struct{}
	done     chan struct{}
}

type memberKey struct{ group, member string }

// memberActivity is what the watch knows of one member.
type memberActivity struct {
	last    time.Time     // the member's last group request
	session time.Duration // from its latest JoinGroup; 0: never seen joining (not expired by the watch)
	waiting int16         // kmsg.JoinGroup or kmsg.SyncGroup when that was its last request, else -1
	joinGen int32         // the group's generation when its last JoinGroup arrived
	syncGen int32         // generation of its last SyncGroup
	retryAt time.Time     // after a failed expiry, when to try again
}

// groupPhase is a group's state and generation, and when the watch first
// saw them.
type groupPhase struct {
	state string
	epoch int32
	since time.Time
}

// Group states as kfake's GroupInfo names them.
const (
	statePreparing  = "PreparingRebalance"
	stateCompleting = "CompletingRebalance"
)

// newSessionWatch hooks the group requests of c and starts the sweep. The
// watch talks to the broker as an ordinary client (with its TLS and the
// first SASL user) to send LeaveGroup requests.
func newSessionWatch(c *kfake.Cluster, addr string, tlsCfg *tls.Config, users []User, log *slog.Logger) (*sessionWatch, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("forestd-broker-sessions"), kgo.RequestRetries(2)}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(selfTrust(tlsCfg)))
	}
	if len(users) > 0 {
		u := users[0]
		switch u.Mechanism {
		case MechanismPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: u.Name, Pass: u.Password}.AsMechanism()))
		case MechanismScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: u.Name, Pass: u.Password}.AsSha256Mechanism()))
		case MechanismScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: u.Name, Pass: u.Password}.AsSha512Mechanism()))
		}
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("broker: session watch client: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &sessionWatch{c: c, cl: cl, log: log, every: 250 * time.Millisecond,
		members: map[memberKey]*memberActivity{}, phases: map[string]groupPhase{}, perGroup: map[string]int{},
		sessions: map[string]time.Duration{},
		stop:     make(chan struct{}), done: make(chan struct{})}
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.LeaveGroup} {
		c.ControlKey(k.Int16(), w.observe)
	}
	go w.run()
	return w, nil
}

// selfTrust is a client config that accepts exactly the broker's own
// certificates (the watch dials the listener it runs beside).
func selfTrust(srv *tls.Config) *tls.Config {
	var own [][]byte
	for _, c := range srv.Certificates {
		if len(c.Certificate) > 0 {
			own = append(own, c.Certificate[0])
		}
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by the exact match below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(own) == 0 { // certificates chosen per connection: nothing to pin
				return nil
			}
			for _, o := range own {
				if len(raw) > 0 && string(raw[0]) == string(o) {
					return nil
				}
			}
			return errors.New("broker: the listener presented a certificate that is not its own")
		},
	}
}

// observe records a group request; it never handles it.
func (w *sessionWatch) observe(req kmsg.Request) (kmsg.Response, error, bool) {
	now := time.Now()
	var gen int32
	if r, ok := req.(*kmsg.JoinGroupRequest); ok && r.MemberID != "" {
		// the generation the JoinGroup waits to complete (kfake serves
		// GroupInfo while a control function runs)
		if gi := w.c.GroupInfo(r.Group); gi != nil {
			gen = gi.Epoch
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		w.sessions[r.Group] = max(w.sessions[r.Group], time.Duration(r.SessionTimeoutMillis)*time.Millisecond)
		if r.MemberID != "" && r.InstanceID == nil {
			a := w.touch(r.Group, r.MemberID, now)
			a.session = time.Duration(r.SessionTimeoutMillis) * time.Millisecond
			a.waiting, a.joinGen = kmsg.JoinGroup.Int16(), gen
		}
	case *kmsg.SyncGroupRequest:
		a := w.touch(r.Group, r.MemberID, now)
		a.waiting, a.syncGen = kmsg.SyncGroup.Int16(), r.Generation
	case *kmsg.HeartbeatRequest:
		w.touch(r.Group, r.MemberID, now).waiting = -1
	case *kmsg.OffsetCommitRequest:
		if r.MemberID != "" {
			w.touch(r.Group, r.MemberID, now)
		}
	case *kmsg.LeaveGroupRequest:
		delete(w.members, memberKey{r.Group, r.MemberID})
		for _, m := range r.Members {
			delete(w.members, memberKey{r.Group, m.MemberID})
		}
	}
	return nil, nil, false
}

// touch returns the member's record, created if new, with its last sign of
// life at now. w.mu is held.
func (w *sessionWatch) touch(group, member string, now time.Time) *memberActivity {
	k := memberKey{group, member}
	a := w.members[k]
	if a == nil {
		a = &memberActivity{waiting: -1}
		w.members[k] = a
	}
	a.last = now
	return a
}

func (w *sessionWatch) run() {
	defer close(w.done)
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case now := <-t.C:
			for _, e := range w.sweep(now) {
				w.expire(e)
			}
		}
	}
}

// expiry is a member to expire.
type expiry struct {
	group, member string
	silent        time.Duration
	session       time.Duration
	state         string
}

// sweep compares every watched group's members with their activity and
// returns the members whose session lapsed.
func (w *sessionWatch) sweep(now time.Time) []expiry {
	w.mu.Lock()
	groups := map[string]bool{}
	for g := range w.sessions {
		groups[g] = true
	}
	w.mu.Unlock()
	var out []expiry
	for g := range groups {
		gi := w.c.GroupInfo(g) // through kfake's run loop: not under w.mu
		w.mu.Lock()
		out = append(out, w.sweepGroup(g, gi, now)...)
		w.mu.Unlock()
	}
	return out
}

// sweepGroup is sweep for one group. w.mu is held.
func (w *sessionWatch) sweepGroup(g string, gi *kfake.GroupInfo, now time.Time) []expiry {
	if gi == nil {
		for k := range w.members {
			if k.group == g {
				delete(w.members, k)
			}
		}
		delete(w.phases, g)
		delete(w.perGroup, g)
		delete(w.sessions, g)
		return nil
	}
	ph := w.phases[g]
	if ph.state != gi.State || ph.epoch != gi.Epoch || ph.since.IsZero() {
		ph = groupPhase{state: gi.State, epoch: gi.Epoch, since: now}
		w.phases[g] = ph
	}
	present := map[string]bool{}
	var out []expiry
	for _, m := range gi.Members {
		present[m.MemberID] = true
		if m.InstanceID != nil {
			continue // static: its own rules, kfake's timers only
		}
		a := w.members[memberKey{g, m.MemberID}]
		if a == nil {
			// a member whose JoinGroup carried no ID: it joined the
			// rebalance in preparation, or one that completed since
			a = &memberActivity{last: now, session: w.sessions[g], waiting: kmsg.JoinGroup.Int16(), joinGen: gi.Epoch}
			if gi.State != statePreparing {
				a.joinGen--
			}
			w.members[memberKey{g, m.MemberID}] = a
		}
		if a.session <= 0 {
			continue
		}
		awaiting := (gi.State == statePreparing && a.waiting == kmsg.JoinGroup.Int16() && a.joinGen == gi.Epoch) ||
			(gi.State == stateCompleting && a.waiting == kmsg.SyncGroup.Int16() && a.syncGen == gi.Epoch)
		if awaiting || now.Before(a.retryAt) {
			continue
		}
		base := a.last
		if ph.since.After(base) {
			base = ph.since
		}
		if silent := now.Sub(base); silent > a.session {
			out = append(out, expiry{group: g, member: m.MemberID, silent: now.Sub(a.last), session: a.session, state: gi.State})
		}
	}
	// forget members that left the group, once they could no longer be
	// between a JoinGroup and the group listing them
	for k, a := range w.members {
		if k.group == g && !present[k.member] && now.Sub(a.last) > max(a.session, time.Minute) {
			delete(w.members, k)
		}
	}
	return out
}

// expire sends the LeaveGroup the dead member would have sent.
func (w *sessionWatch) expire(e expiry) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reason := "forestd embedded broker: session timeout"
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.Reason = e.member, &reason
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID, req.Members = e.group, e.member, []kmsg.LeaveGroupRequestMember{m}
	resp, err := req.RequestWith(ctx, w.cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
		if err == nil && len(resp.Members) > 0 {
			err = kerr.ErrorForCode(resp.Members[0].ErrorCode)
		}
	}
	w.mu.Lock()
	k := memberKey{e.group, e.member}
	if errors.Is(err, kerr.UnknownMemberID) { // gone meanwhile (kfake's own timer)
		delete(w.members, k)
		w.mu.Unlock()
		return
	}
	if err != nil {
		if a := w.members[k]; a != nil {
			a.retryAt = time.Now().Add(5 * time.Second)
		}
		w.mu.Unlock()
		w.log.Error("consumer group: expiring a member whose session lapsed failed; its partitions stay assigned (retrying)",
			"component", "broker", "group", e.group, "member", e.member, "err", err)
		return
	}
	delete(w.members, k)
	w.perGroup[e.group]++
	w.mu.Unlock()
	w.expired.Add(1)
	w.log.Warn("consumer group: expired a member whose session lapsed (no heartbeat); its partitions are reassigned",
		"component", "broker", "group", e.group, "member", e.member, "silent", e.silent.Round(time.Millisecond).String(),
		"session_timeout", e.session.String(), "group_state", e.state)
}

// close stops the sweep and the client.
func (w *sessionWatch) close() {
	close(w.stop)
	w.cl.Close()
	<-w.done
}

// expiredIn is the number of members the watch expired in group.
func (w *sessionWatch) expiredIn(group string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.perGroup[group]
}
