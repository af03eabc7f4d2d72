/*
 * fablab-bfd-dp: a lab's BFD data plane, "the ASIC" to which every switch's bfdd offloads
 * its sessions (FRR's distributed BFD, bfdd --dplaneaddr unix:PATH).
 *
 * One process serves every switch of a lab. bfdd keeps the configuration and tells zebra
 * and bgpd about state changes; this process sends and receives the BFD control packets
 * (RFC 5880, single hop as in RFC 5881: UDP 3784, TTL 255) from inside each switch's
 * network namespace, through the switch's own interfaces, runs the state machine, jitter
 * and detection, and reports each session's state to its bfdd.
 *
 * The protocol to bfdd is FRR's bfddp (bfdd/bfddp_packet.h): an 8-byte header (version 1,
 * type, id, length including the header, network order) and fixed payloads. Written from
 * the wire format alone. What FRR 8.4's side needs from us, learnt from its source:
 *  - bfdd queues a DP_ADD_SESSION for every session it has when a data plane connects, into
 *    an 8 KiB buffer: past 58 sessions the rest are silently dropped and stay unattached.
 *    So a node's first connection is followed by an ECHO_REQUEST (its reply comes after the
 *    burst), and when the burst was near full, another connection picks up the sessions left
 *    unattached, until one gets few.
 *  - a counters request makes bfdd wait for our answer in a busy loop: answer at once; it
 *    does not compact its input buffer on that path, so an ECHO_REQUEST follows shortly
 *    after (its normal read path compacts).
 *  - every BFD_STATE_CHANGE becomes a notification to zebra: sent on a change only.
 *
 * Usage: fablab-bfd-dp -N TAG -c CONFIG -s STATUS_SOCKET [-p RT_PRIORITY]
 *   CONFIG: one line per node: NAME NETNS_PATH BFDD_DPLANE_SOCKET
 *   STATUS_SOCKET: a unix socket; each connection gets one JSON document of every session.
 *   RT_PRIORITY: SCHED_FIFO priority. An ASIC does not wait for the switch's CPU: on a machine
 *   that a booting fabric keeps busy (a load of 100 on 2 cores) an ordinary process is woken
 *   hundreds of ms late, its packets leave late and the peers detect failures that are not.
 * Logs (connections, every state change) go to stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---- bfddp, FRR's data plane protocol ---- */
enum { DP_VERSION = 1 };
enum {
	ECHO_REQUEST = 0, ECHO_REPLY = 1, DP_ADD_SESSION = 2, DP_DELETE_SESSION = 3,
	BFD_STATE_CHANGE = 4, DP_REQUEST_SESSION_COUNTERS = 5, BFD_SESSION_COUNTERS = 6,
};
enum { SESSION_MULTIHOP = 1, SESSION_DEMAND = 2, SESSION_CBIT = 4, SESSION_ECHO = 8,
       SESSION_IPV6 = 0x10, SESSION_PASSIVE = 0x20, SESSION_SHUTDOWN = 0x40 };
enum { RBIT_CPI = 1, RBIT_DEMAND = 2, RBIT_MP = 4 };
#define HDR 8
#define SESSION_MSG (HDR + 132)
#define STATE_MSG (HDR + 28)
#define ECHO_MSG (HDR + 16)
#define COUNTERS_REQ_MSG (HDR + 4)
#define COUNTERS_MSG (HDR + 72)
#define MAX_MSG 4096

/* ---- RFC 5880 ---- */
enum { ST_ADMINDOWN = 0, ST_DOWN = 1, ST_INIT = 2, ST_UP = 3 };
enum { DIAG_NONE = 0, DIAG_DETECT = 1, DIAG_NEIGHBOR_DOWN = 3, DIAG_ADMIN_DOWN = 7 };
#define BFD_PORT 3784
#define SLOW_TX_US 1000000u
#define PKT_LEN 24
static const char *STATE_NAME[] = {"admin-down", "down", "init", "up"};
static const char *DIAG_NAME[] = {
	"none", "control detection time expired", "echo function failed",
	"neighbor signaled session down", "forwarding plane reset", "path down",
	"concatenated path down", "administratively down", "reverse concatenated path down"};

#define BURST_FULL 50 /* a burst this long may have been cut at bfdd's 8 KiB: connect again */
#define MAX_CONNS 16
#define COALESCE_NS 1000000 /* timers due within 1 ms run together: fewer wake-ups */
/* A state change is told to the peer at once, but not twice within this: with both ends in one
 * process a packet arrives before the next wait, and packets a flapped link left in flight
 * (Down, Init, Down, Init) then drove the two sessions round Up-Down-Init-Up for ever, each
 * change answered at once: 11,854 changes in 3 s, and once, at SCHED_FIFO beside other labs,
 * RLIMIT_RTTIME's end of the process. Held back, the change goes with the next packet. */
#define TELL_GAP_NS (5 * COALESCE_NS)

struct node;

struct conn {
	int fd;
	struct node *node;
	int is_status; /* a status reader, not a bfdd */
	uint8_t *in;
	size_t inlen, incap;
	uint8_t *out;
	size_t outlen, outcap;
	uint64_t echo_token; /* the ECHO_REQUEST whose reply ends the connect burst; 0: none */
	int burst_adds;
	int64_t nudge_at; /* after a counters answer: an ECHO_REQUEST, so bfdd compacts its buffer */
	int watching_out;
	struct conn *next_dead;
};

struct session {
	struct node *node;
	struct conn *conn;
	int alive;
	uint32_t lid, rid;
	uint32_t flags;
	int v6;
	uint8_t dst[16]; /* IPv6, or IPv4 in the first 4 bytes */
	uint32_t ifindex;
	char ifname[64];
	int fd; /* UDP socket connected to the peer, from a port of its own (RFC 5881), or -1 */
	uint8_t state, local_diag, remote_state, remote_diag, detect_mult, remote_mult;
	uint32_t cfg_tx, cfg_rx, cfg_echo_rx; /* µs, from bfdd */
	uint32_t remote_desired_tx, remote_min_rx, remote_echo_rx; /* µs, from the peer */
	uint32_t remote_flags;
	uint32_t adv_tx, adv_rx; /* what our packets advertise */
	uint32_t old_tx, old_rx; /* in force until a poll sequence ends (RFC 5880 6.8.3) */
	int polling, tx_armed;
	int64_t next_tx, last_rx, detect_at; /* detect_at: the one detection timer that counts */
	uint64_t rx_pkts, tx_pkts, rx_bytes, tx_bytes, up_events, down_events;
	int64_t changed_at; /* monotonic ns of the last state change */
	int64_t told_at; /* monotonic ns of the last change sent at once (TELL_GAP_NS) */
};

struct node {
	char name[64];
	char nspath[256];
	char sock_path[108];
	int nsfd;  /* the node's network namespace */
	int sock6; /* UDP [::]:3784, dual stack: receives */
	int tx6;   /* UDP [::]:49152-65535: sends for a session without a socket of its own */
	struct conn *conns[MAX_CONNS];
	int nconns;
	int want_more;      /* the last burst was near full: connect once more */
	int64_t retry_at;   /* next connect attempt while none is up */
	struct session **sess;
	int nsess, capsess;
};

static struct node *nodes;
static int nnodes;
static int epfd;
static int home_ns; /* this process's own network namespace */
static const char *tag = "";
static volatile sig_atomic_t stopping;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* ---- timers: a min-heap of (when, session, kind); stale entries are skipped ---- */
enum { T_TX = 0, T_DETECT = 1 };
struct tentry { int64_t when; struct session *s; int kind; };
static struct tentry *heap;
static size_t hlen, hcap;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void logf_(const char *fmt, ...)
{
	struct timespec ts;
	va_list ap;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "%lld.%03ld %s: ", (long long)ts.tv_sec, ts.tv_nsec / 1000000, tag);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		logf_("out of memory");
		exit(2);
	}
	return q;
}

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static void heap_push(int64_t when, struct session *s, int kind)
{
	size_t i;
	if (hlen == hcap) {
		hcap = hcap ? hcap * 2 : 1024;
		heap = xrealloc(heap, hcap * sizeof(*heap));
	}
	i = hlen++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (heap[p].when <= when)
			break;
		heap[i] = heap[p];
		i = p;
	}
	heap[i] = (struct tentry){when, s, kind};
}

static struct tentry heap_pop(void)
{
	struct tentry top = heap[0], last = heap[--hlen];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= hlen)
			break;
		if (c + 1 < hlen && heap[c + 1].when < heap[c].when)
			c++;
		if (last.when <= heap[c].when)
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (hlen)
		heap[i] = last;
	return top;
}

/* ---- output to bfdd (and to status readers) ---- */
static void conn_watch(struct conn *c)
{
	int want = c->outlen > 0;
	if (c->fd < 0 || want == c->watching_out)
		return;
	struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
	epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
	c->watching_out = want;
}

static void conn_close(struct conn *c);

static void conn_flush(struct conn *c)
{
	size_t done = 0;
	while (done < c->outlen) {
		ssize_t n = write(c->fd, c->out + done, c->outlen - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			conn_close(c);
			return;
		}
		done += (size_t)n;
	}
	memmove(c->out, c->out + done, c->outlen - done);
	c->outlen -= done;
	if (c->is_status && c->outlen == 0)
		conn_close(c);
	else
		conn_watch(c);
}

static void conn_put(struct conn *c, const void *data, size_t n)
{
	if (c->fd < 0)
		return;
	if (c->outlen + n > c->outcap) {
		c->outcap = (c->outlen + n) * 2;
		c->out = xrealloc(c->out, c->outcap);
	}
	memcpy(c->out + c->outlen, data, n);
	c->outlen += n;
}

static void put_header(uint8_t *m, uint16_t type, uint16_t id, uint16_t len)
{
	m[0] = DP_VERSION;
	m[1] = 0;
	*(uint16_t *)(m + 2) = htons(type);
	*(uint16_t *)(m + 4) = htons(id);
	*(uint16_t *)(m + 6) = htons(len);
}

static void send_echo_request(struct conn *c, uint64_t token)
{
	uint8_t m[ECHO_MSG] = {0};
	put_header(m, ECHO_REQUEST, 0, ECHO_MSG);
	uint64_t be = htobe64(token);
	memcpy(m + HDR, &be, 8);
	conn_put(c, m, sizeof(m));
}

static void report_state(struct session *s)
{
	uint8_t m[STATE_MSG] = {0};
	uint32_t v[6] = {htonl(s->lid), htonl(s->rid), htonl(s->remote_flags),
	                 htonl(s->remote_desired_tx), htonl(s->remote_min_rx), htonl(s->remote_echo_rx)};
	if (!s->conn)
		return;
	put_header(m, BFD_STATE_CHANGE, 0, STATE_MSG);
	memcpy(m + HDR, v, sizeof(v));
	m[HDR + 24] = s->state;
	m[HDR + 25] = s->remote_diag;
	m[HDR + 26] = s->remote_mult;
	conn_put(s->conn, m, sizeof(m));
}

/* ---- BFD control packets ---- */
static uint32_t desired_tx(const struct session *s)
{
	/* RFC 5880 6.8.3: not less than one second while the session is not Up. */
	return s->state == ST_UP ? s->cfg_tx : (s->cfg_tx > SLOW_TX_US ? s->cfg_tx : SLOW_TX_US);
}

static void send_packet(struct session *s, int final)
{
	uint8_t p[PKT_LEN];
	struct sockaddr_in6 to = {.sin6_family = AF_INET6, .sin6_port = htons(BFD_PORT)};
	uint32_t v[5] = {htonl(s->lid), htonl(s->rid), htonl(s->adv_tx), htonl(s->adv_rx), htonl(0)};

	if (s->node->tx6 < 0)
		return;
	p[0] = (uint8_t)((1 << 5) | (s->local_diag & 0x1f));
	p[1] = (uint8_t)((s->state << 6) | (s->polling && !final ? 0x20 : 0) | (final ? 0x10 : 0)
	                 | (s->flags & SESSION_CBIT ? 0x08 : 0));
	p[2] = s->detect_mult;
	p[3] = PKT_LEN;
	memcpy(p + 4, v, sizeof(v));
	if (s->v6) {
		memcpy(&to.sin6_addr, s->dst, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&to.sin6_addr))
			to.sin6_scope_id = s->ifindex;
	} else {
		to.sin6_addr.s6_addr[10] = 0xff;
		to.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&to.sin6_addr.s6_addr[12], s->dst, 4);
	}
	if ((s->fd >= 0 ? send(s->fd, p, sizeof(p), MSG_DONTWAIT)
	                : sendto(s->node->tx6, p, sizeof(p), MSG_DONTWAIT, (struct sockaddr *)&to, sizeof(to))) == PKT_LEN) {
		s->tx_pkts++;
		s->tx_bytes += PKT_LEN;
	}
}

static void schedule_tx(struct session *s, int64_t now)
{
	uint32_t interval = s->old_tx < s->adv_tx && s->polling ? s->old_tx : s->adv_tx;
	uint64_t us;
	if (s->remote_min_rx > interval)
		interval = s->remote_min_rx;
	/* RFC 5880 6.8.7: 0-25 % less each time (10-25 % with a detection multiplier of 1). */
	us = (uint64_t)interval * (75 + rnd() % (s->detect_mult == 1 ? 16 : 26)) / 100;
	if (us < 2 * COALESCE_NS / 1000)
		us = 2 * COALESCE_NS / 1000; /* always past the timers run in this round */
	s->next_tx = now + (int64_t)us * 1000;
	s->tx_armed = 1;
	heap_push(s->next_tx, s, T_TX);
}

static int64_t detect_ns(const struct session *s)
{
	uint32_t rx = s->polling && s->old_rx > s->adv_rx ? s->old_rx : s->adv_rx;
	uint32_t t = rx > s->remote_desired_tx ? rx : s->remote_desired_tx;
	return (int64_t)s->remote_mult * t * 1000;
}

/* What the packets advertise follows the state: a change starts a poll sequence. */
static void refresh_timers(struct session *s)
{
	uint32_t tx = desired_tx(s), rx = s->cfg_rx;
	if (tx == s->adv_tx && rx == s->adv_rx)
		return;
	if (!s->polling) {
		s->old_tx = s->adv_tx;
		s->old_rx = s->adv_rx;
	}
	s->adv_tx = tx;
	s->adv_rx = rx;
	s->polling = s->state != ST_ADMINDOWN;
}

static void set_state(struct session *s, uint8_t state, uint8_t diag, int64_t now)
{
	uint8_t old = s->state;
	if (old == state)
		return;
	s->state = state;
	/* LocalDiag says why the session last went down: kept through Init, cleared when Up. */
	if (state == ST_UP)
		s->local_diag = DIAG_NONE;
	else if (state != ST_INIT)
		s->local_diag = diag;
	s->changed_at = now;
	if (state == ST_UP)
		s->up_events++;
	if (old == ST_UP)
		s->down_events++;
	logf_("%s %s %s: %s -> %s (diag: %s)", s->node->name, s->ifname[0] ? s->ifname : "-",
	      s->v6 ? "ipv6" : "ipv4", STATE_NAME[old], STATE_NAME[state], DIAG_NAME[diag]);
	refresh_timers(s);
	report_state(s);
	if (s->flags & SESSION_PASSIVE && s->rid == 0 && state != ST_ADMINDOWN)
		return;
	if (s->told_at && now - s->told_at < TELL_GAP_NS) {
		/* told a moment ago: this change goes with the packet due when the gap ends */
		if (!s->tx_armed || s->next_tx > s->told_at + TELL_GAP_NS) {
			s->next_tx = s->told_at + TELL_GAP_NS;
			s->tx_armed = 1;
			heap_push(s->next_tx, s, T_TX);
		}
		return;
	}
	s->told_at = now;
	send_packet(s, 0); /* the peer learns at once, not an interval later */
	schedule_tx(s, now);
}

static void arm_detect(struct session *s, int64_t at)
{
	s->detect_at = at;
	heap_push(at, s, T_DETECT);
}

static void on_detect(struct session *s, int64_t when, int64_t now)
{
	if (when != s->detect_at || !s->last_rx)
		return; /* superseded */
	/* Against the entry's own time, not `now`: timers up to COALESCE_NS ahead run early, and a
	 * deadline re-armed at or before `when` would be run again at once, for ever. */
	if (s->last_rx + detect_ns(s) > when) {
		arm_detect(s, s->last_rx + detect_ns(s));
		return;
	}
	s->last_rx = 0;
	s->detect_at = 0;
	s->rid = 0; /* RFC 5880 6.8.1 */
	s->remote_state = ST_DOWN;
	s->remote_min_rx = 1;
	s->polling = 0;
	if (s->state == ST_INIT || s->state == ST_UP)
		set_state(s, ST_DOWN, DIAG_DETECT, now);
}

static void on_tx(struct session *s, int64_t when, int64_t now)
{
	if (when != s->next_tx)
		return; /* rescheduled since */
	s->tx_armed = 0;
	if (s->remote_min_rx == 0 || (s->flags & SESSION_PASSIVE && s->rid == 0))
		return; /* the peer asked for none; passive: wait to hear from it (on_packet re-arms) */
	send_packet(s, 0);
	schedule_tx(s, now);
}

static struct session *find_by_lid(struct node *n, uint32_t lid)
{
	for (int i = 0; i < n->nsess; i++)
		if (n->sess[i]->lid == lid)
			return n->sess[i];
	return NULL;
}

static struct session *find_by_peer(struct node *n, uint32_t ifindex, const uint8_t *addr, int v6)
{
	for (int i = 0; i < n->nsess; i++) {
		struct session *s = n->sess[i];
		if (s->v6 == v6 && (!s->ifindex || s->ifindex == ifindex) && !memcmp(s->dst, addr, v6 ? 16 : 4))
			return s;
	}
	return NULL;
}

/* RFC 5880 6.8.6, one packet. */
static void on_packet(struct node *n, const uint8_t *p, size_t len, uint32_t ifindex, const uint8_t *src,
                      int v6, int ttl, int64_t now)
{
	uint8_t vers = p[0] >> 5, diag = p[0] & 0x1f, state = p[1] >> 6, bits = p[1] & 0x3f, mult = p[2];
	uint32_t v[5];
	struct session *s;

	if (len < PKT_LEN || vers != 1 || p[3] < PKT_LEN || p[3] > len || mult == 0 || bits & 0x01 || ttl != 255)
		return;
	if (bits & 0x04)
		return; /* authentication: none configured here */
	memcpy(v, p + 4, sizeof(v));
	uint32_t my = ntohl(v[0]), your = ntohl(v[1]);
	if (my == 0)
		return;
	if (your) {
		s = find_by_lid(n, your);
	} else {
		if (state != ST_DOWN && state != ST_ADMINDOWN)
			return;
		s = find_by_peer(n, ifindex, src, v6);
	}
	if (!s || (s->ifindex && s->ifindex != ifindex))
		return;
	s->rx_pkts++;
	s->rx_bytes += len;
	uint32_t old_rid = s->rid, old_dtx = s->remote_desired_tx, old_rrx = s->remote_min_rx;
	s->rid = my;
	s->remote_state = state;
	s->remote_diag = diag;
	s->remote_mult = mult;
	s->remote_desired_tx = ntohl(v[2]);
	s->remote_min_rx = ntohl(v[3]);
	s->remote_echo_rx = ntohl(v[4]);
	s->remote_flags = (bits & 0x08 ? RBIT_CPI : 0) | (bits & 0x02 ? RBIT_DEMAND : 0);
	if (bits & 0x10 && s->polling)
		s->polling = 0; /* Final: the new timers are in force both ways */
	s->last_rx = now;
	if (!s->detect_at || now + detect_ns(s) < s->detect_at)
		arm_detect(s, now + detect_ns(s)); /* first packet, or a shorter detection time */
	if (s->state == ST_ADMINDOWN)
		return;
	if (state == ST_ADMINDOWN) {
		if (s->state != ST_DOWN)
			set_state(s, ST_DOWN, DIAG_NEIGHBOR_DOWN, now);
	} else if (s->state == ST_DOWN) {
		if (state == ST_DOWN)
			set_state(s, ST_INIT, DIAG_NONE, now);
		else if (state == ST_INIT)
			set_state(s, ST_UP, DIAG_NONE, now);
	} else if (s->state == ST_INIT) {
		if (state == ST_INIT || state == ST_UP)
			set_state(s, ST_UP, DIAG_NONE, now);
	} else if (state == ST_DOWN) {
		set_state(s, ST_DOWN, DIAG_NEIGHBOR_DOWN, now);
	}
	if (s->state == ST_UP && (old_dtx != s->remote_desired_tx || old_rrx != s->remote_min_rx || old_rid != my))
		report_state(s); /* bfdd shows the peer's timers */
	if (bits & 0x20)
		send_packet(s, 1); /* Poll: answer with Final at once */
	if (!s->tx_armed || (old_rrx > s->remote_min_rx && s->next_tx - now > (int64_t)s->remote_min_rx * 1000))
		if (s->remote_min_rx)
			schedule_tx(s, now); /* not sending (passive, or asked for none), or the peer wants them sooner */
}

static void read_udp(struct node *n)
{
	enum { BATCH = 32 };
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	uint8_t bufs[BATCH][64];
	struct sockaddr_in6 from[BATCH];
	uint8_t ctl[BATCH][128];
	int64_t now;

	for (;;) {
		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){bufs[i], sizeof(bufs[i])};
			msgs[i].msg_hdr = (struct msghdr){.msg_name = &from[i], .msg_namelen = sizeof(from[i]),
			                                  .msg_iov = &iov[i], .msg_iovlen = 1,
			                                  .msg_control = ctl[i], .msg_controllen = sizeof(ctl[i])};
		}
		int got = recvmmsg(n->sock6, msgs, BATCH, MSG_DONTWAIT, NULL);
		if (got <= 0)
			return;
		now = now_ns();
		for (int i = 0; i < got; i++) {
			uint32_t ifindex = 0;
			int ttl = -1, v6 = 1;
			const uint8_t *src = from[i].sin6_addr.s6_addr;
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
				if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO)
					ifindex = ((struct in6_pktinfo *)CMSG_DATA(c))->ipi6_ifindex;
				else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT)
					ttl = *(int *)CMSG_DATA(c);
				else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
					ifindex = (uint32_t)((struct in_pktinfo *)CMSG_DATA(c))->ipi_ifindex;
				else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL)
					ttl = *(int *)CMSG_DATA(c);
			}
			if (IN6_IS_ADDR_V4MAPPED(&from[i].sin6_addr)) {
				v6 = 0;
				src += 12;
			}
			on_packet(n, bufs[i], msgs[i].msg_len, ifindex, src, v6, ttl, now);
		}
		if (got < BATCH)
			return;
	}
}

/* ---- sessions from bfdd ---- */
static void session_remove(struct session *s)
{
	struct node *n = s->node;
	for (int i = 0; i < n->nsess; i++)
		if (n->sess[i] == s) {
			n->sess[i] = n->sess[--n->nsess];
			break;
		}
	s->alive = 0;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->next_tx = -1;
	s->last_rx = 0;
	/* Timer entries may still point here: freed once the heap holds none (see reap). */
}

static struct session **graveyard;
static size_t ngrave, capgrave;

static void bury(struct session *s)
{
	session_remove(s);
	if (ngrave == capgrave) {
		capgrave = capgrave ? capgrave * 2 : 64;
		graveyard = xrealloc(graveyard, capgrave * sizeof(*graveyard));
	}
	graveyard[ngrave++] = s;
}

static void reap(void)
{
	/* Dead sessions' timer entries are dropped lazily; free them when the heap is rebuilt. */
	if (ngrave < 256)
		return;
	size_t j = 0;
	for (size_t i = 0; i < hlen; i++)
		if (heap[i].s->alive)
			heap[j++] = heap[i];
	hlen = j;
	for (size_t i = hlen / 2 + 1; i-- > 0;) { /* re-heapify */
		size_t k = i;
		struct tentry e = heap[k];
		for (;;) {
			size_t c = 2 * k + 1;
			if (c >= hlen)
				break;
			if (c + 1 < hlen && heap[c + 1].when < heap[c].when)
				c++;
			if (e.when <= heap[c].when)
				break;
			heap[k] = heap[c];
			k = c;
		}
		if (k < hlen)
			heap[k] = e;
	}
	for (size_t i = 0; i < ngrave; i++)
		free(graveyard[i]);
	ngrave = 0;
}

static int open_udp(int port_lo, int port_hi);

/* A socket connected to the peer keeps its route and source address: unconnected, every packet
 * to a link-local peer looked up fe80::/64 among all of the switch's interfaces, a third of
 * the process's time at 2,064 sessions. */
static void open_session_socket(struct session *s)
{
	struct sockaddr_in6 to = {.sin6_family = AF_INET6, .sin6_port = htons(BFD_PORT)};
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (setns(s->node->nsfd, CLONE_NEWNET) < 0)
		return;
	s->fd = open_udp(49152, 65535);
	setns(home_ns, CLONE_NEWNET);
	if (s->fd < 0)
		return;
	if (s->v6) {
		memcpy(&to.sin6_addr, s->dst, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&to.sin6_addr))
			to.sin6_scope_id = s->ifindex;
	} else {
		to.sin6_addr.s6_addr[10] = 0xff;
		to.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&to.sin6_addr.s6_addr[12], s->dst, 4);
	}
	if (connect(s->fd, (struct sockaddr *)&to, sizeof(to)) < 0) {
		close(s->fd);
		s->fd = -1; /* the node's shared socket sends for it */
	}
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return ntohl(v);
}

static void on_add(struct conn *c, const uint8_t *m, int64_t now)
{
	const uint8_t *d = m + HDR;
	struct node *n = c->node;
	uint32_t flags = get32(d), lid = get32(d + 36);
	struct session *s = find_by_lid(n, lid);
	int created = 0;

	if (flags & SESSION_MULTIHOP) {
		logf_("%s: session %u is multihop: not offloaded here (single hop only); it stays down", n->name, lid);
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			exit(2);
		s->node = n;
		s->fd = -1;
		s->alive = 1;
		s->lid = lid;
		s->state = ST_DOWN;
		s->remote_state = ST_DOWN;
		s->remote_min_rx = 1;
		s->remote_mult = d[61];
		s->changed_at = now;
		if (n->nsess == n->capsess) {
			n->capsess = n->capsess ? n->capsess * 2 : 16;
			n->sess = xrealloc(n->sess, (size_t)n->capsess * sizeof(*n->sess));
		}
		n->sess[n->nsess++] = s;
		created = 1;
	}
	int moved = created || memcmp(s->dst, d + 20, 16) || s->ifindex != get32(d + 64);
	s->conn = c;
	s->flags = flags;
	s->v6 = !!(flags & SESSION_IPV6);
	memcpy(s->dst, d + 20, 16);
	s->detect_mult = d[61] ? d[61] : 3;
	s->ifindex = get32(d + 64);
	if (moved && !(flags & SESSION_MULTIHOP))
		open_session_socket(s);
	memcpy(s->ifname, d + 68, 63);
	s->ifname[63] = 0;
	s->cfg_tx = get32(d + 40);
	s->cfg_rx = get32(d + 44);
	s->cfg_echo_rx = get32(d + 52);
	if (created) {
		s->adv_tx = s->old_tx = desired_tx(s);
		s->adv_rx = s->old_rx = s->cfg_rx;
		c->burst_adds++;
		logf_("%s %s: session %u added (peer on %s, tx %u ms, rx %u ms, x%u)", n->name,
		      s->ifname[0] ? s->ifname : "-", lid, s->ifname, s->cfg_tx / 1000, s->cfg_rx / 1000, s->detect_mult);
	}
	if (flags & SESSION_MULTIHOP)
		return;
	if (flags & SESSION_SHUTDOWN) {
		if (s->state != ST_ADMINDOWN)
			set_state(s, ST_ADMINDOWN, DIAG_ADMIN_DOWN, now);
		return;
	}
	if (s->state == ST_ADMINDOWN) {
		set_state(s, ST_DOWN, DIAG_NONE, now);
		return;
	}
	refresh_timers(s);
	if (created) {
		/* bfdd set the session Down itself on handing it over (and told bgpd if it was Up). */
		if (!(flags & SESSION_PASSIVE)) {
			send_packet(s, 0);
			schedule_tx(s, now);
		}
	}
}

static void on_delete(struct conn *c, const uint8_t *m)
{
	struct session *s = find_by_lid(c->node, get32(m + HDR + 36));
	if (!s)
		return;
	logf_("%s %s: session %u deleted", c->node->name, s->ifname[0] ? s->ifname : "-", s->lid);
	bury(s);
}

static void on_counters(struct conn *c, const uint8_t *m, int64_t now)
{
	uint8_t r[COUNTERS_MSG] = {0};
	uint32_t lid = get32(m + HDR);
	struct session *s = find_by_lid(c->node, lid);
	uint64_t v[8] = {0};
	put_header(r, BFD_SESSION_COUNTERS, ntohs(*(uint16_t *)(m + 4)), COUNTERS_MSG);
	*(uint32_t *)(r + HDR) = htonl(lid);
	if (s) {
		v[0] = htobe64(s->rx_bytes);
		v[1] = htobe64(s->rx_pkts);
		v[2] = htobe64(s->tx_bytes);
		v[3] = htobe64(s->tx_pkts);
	}
	memcpy(r + HDR + 8, v, sizeof(v));
	conn_put(c, r, sizeof(r));
	c->nudge_at = now + 20 * 1000000;
}

static void connect_node(struct node *n, int64_t now);

static void on_message(struct conn *c, const uint8_t *m, uint16_t type, uint16_t len, int64_t now)
{
	switch (type) {
	case DP_ADD_SESSION:
		if (len >= SESSION_MSG)
			on_add(c, m, now);
		break;
	case DP_DELETE_SESSION:
		if (len >= SESSION_MSG)
			on_delete(c, m);
		break;
	case DP_REQUEST_SESSION_COUNTERS:
		if (len >= COUNTERS_REQ_MSG)
			on_counters(c, m, now);
		break;
	case ECHO_REQUEST: {
		uint8_t r[ECHO_MSG];
		memcpy(r, m, ECHO_MSG);
		put_header(r, ECHO_REPLY, ntohs(*(uint16_t *)(m + 4)), ECHO_MSG);
		conn_put(c, r, sizeof(r));
		break;
	}
	case ECHO_REPLY: {
		uint64_t token;
		memcpy(&token, m + HDR, 8);
		if (c->echo_token && be64toh(token) == c->echo_token) {
			struct node *n = c->node;
			logf_("%s: data plane connection %d took %d sessions", n->name, n->nconns, c->burst_adds);
			c->echo_token = 0;
			n->want_more = c->burst_adds >= BURST_FULL;
			if (n->want_more)
				connect_node(n, now);
		}
		break;
	}
	default:
		break;
	}
}

static void on_readable(struct conn *c, int64_t now)
{
	for (;;) {
		if (c->incap - c->inlen < MAX_MSG) {
			c->incap = c->incap ? c->incap * 2 : 16384;
			c->in = xrealloc(c->in, c->incap);
		}
		ssize_t got = read(c->fd, c->in + c->inlen, c->incap - c->inlen);
		if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
			conn_close(c);
			return;
		}
		if (got < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		c->inlen += (size_t)got;
		size_t off = 0;
		while (c->inlen - off >= HDR) {
			const uint8_t *m = c->in + off;
			uint16_t type = ntohs(*(const uint16_t *)(m + 2)), len = ntohs(*(const uint16_t *)(m + 6));
			if (m[0] != DP_VERSION || len < HDR || len > MAX_MSG) {
				logf_("%s: bfdd sent an unreadable message (version %u, length %u): closing", c->node->name,
				      m[0], len);
				conn_close(c);
				return;
			}
			if (c->inlen - off < len)
				break;
			on_message(c, m, type, len, now);
			if (c->fd < 0)
				return;
			off += len;
		}
		memmove(c->in, c->in + off, c->inlen - off);
		c->inlen -= off;
	}
	conn_flush(c);
}

static struct conn *dead_conns;

static void conn_close(struct conn *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	if (!c->is_status) {
		struct node *n = c->node;
		int kept = 0;
		for (int i = 0; i < n->nsess;) {
			if (n->sess[i]->conn == c) {
				bury(n->sess[i]); /* bfdd takes them back (to software) */
				kept++;
			} else {
				i++;
			}
		}
		for (int i = 0; i < n->nconns; i++)
			if (n->conns[i] == c) {
				n->conns[i] = n->conns[--n->nconns];
				break;
			}
		logf_("%s: bfdd closed a data plane connection (%d sessions returned to it)", n->name, kept);
		n->retry_at = now_ns() + 200 * 1000000LL;
	}
	c->next_dead = dead_conns;
	dead_conns = c;
}

static void free_dead_conns(void)
{
	while (dead_conns) {
		struct conn *c = dead_conns;
		dead_conns = c->next_dead;
		free(c->in);
		free(c->out);
		free(c);
	}
}

static struct conn *conn_new(int fd, struct node *n, int is_status)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	if (!c)
		exit(2);
	c->fd = fd;
	c->node = n;
	c->is_status = is_status;
	epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
	return c;
}

static void connect_node(struct node *n, int64_t now)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;
	if (n->nconns >= MAX_CONNS) {
		logf_("%s: %d data plane connections and bfdd still hands over full bursts: giving up on more",
		      n->name, n->nconns);
		return;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	memcpy(sa.sun_path, n->sock_path, strlen(n->sock_path) + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		n->retry_at = now + 100 * 1000000LL;
		return;
	}
	struct conn *c = conn_new(fd, n, 0);
	n->conns[n->nconns++] = c;
	n->retry_at = 0;
	c->echo_token = ((uint64_t)(n - nodes) << 32) | (uint64_t)(rnd() | 1);
	send_echo_request(c, c->echo_token);
	conn_flush(c);
	logf_("%s: connected to bfdd (connection %d)", n->name, n->nconns);
}

/* ---- the status socket: one JSON document per reader ---- */
static void jput(struct conn *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		conn_put(c, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static void write_status(struct conn *c, int64_t now)
{
	char addr[INET6_ADDRSTRLEN];
	jput(c, "{\"tag\": \"%s\", \"pid\": %d, \"nodes\": [", tag, (int)getpid());
	for (int i = 0; i < nnodes; i++) {
		struct node *n = &nodes[i];
		jput(c, "%s{\"name\": \"%s\", \"connections\": %d, \"sessions\": [", i ? ", " : "", n->name, n->nconns);
		for (int k = 0; k < n->nsess; k++) {
			struct session *s = n->sess[k];
			inet_ntop(s->v6 ? AF_INET6 : AF_INET, s->dst, addr, sizeof(addr));
			jput(c, "%s{\"lid\": %u, \"rid\": %u, \"ifname\": \"%s\", \"peer\": \"%s\", \"state\": \"%s\", "
			        "\"diag\": \"%s\", \"remote_state\": \"%s\", \"remote_diag\": \"%s\", "
			        "\"tx_ms\": %u, \"rx_ms\": %u, \"multiplier\": %u, \"remote_tx_ms\": %u, \"remote_rx_ms\": %u, "
			        "\"detect_ms\": %lld, \"tx_packets\": %llu, \"rx_packets\": %llu, \"up_events\": %llu, "
			        "\"down_events\": %llu, \"since_ms\": %lld}",
			     k ? ", " : "", s->lid, s->rid, s->ifname, addr, STATE_NAME[s->state & 3],
			     DIAG_NAME[s->local_diag <= 8 ? s->local_diag : 0], STATE_NAME[s->remote_state & 3],
			     DIAG_NAME[s->remote_diag <= 8 ? s->remote_diag : 0], s->adv_tx / 1000, s->adv_rx / 1000,
			     s->detect_mult, s->remote_desired_tx / 1000, s->remote_min_rx / 1000,
			     (long long)(detect_ns(s) / 1000000), (unsigned long long)s->tx_pkts,
			     (unsigned long long)s->rx_pkts, (unsigned long long)s->up_events,
			     (unsigned long long)s->down_events, (long long)((now - s->changed_at) / 1000000));
		}
		jput(c, "]}");
	}
	jput(c, "]}\n");
}

/* ---- set-up ---- */
static int open_udp(int port_lo, int port_hi)
{
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), zero = 0, one = 1, ttl = 255,
	    tos = 0xc0;
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof(ttl));
	setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl));
	setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos));
	setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one));
	for (int port = port_hi; port >= port_lo; port--) {
		struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
		                          .sin6_addr = IN6ADDR_ANY_INIT};
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
	}
	close(fd);
	return -1;
}

static int open_node_sockets(struct node *n, int home)
{
	int ns = open(n->nspath, O_RDONLY | O_CLOEXEC);
	n->nsfd = ns;
	if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
		fprintf(stderr, "%s: cannot enter %s: %s\n", n->name, n->nspath, strerror(errno));
		if (ns >= 0)
			close(ns);
		return -1;
	}
	n->sock6 = open_udp(BFD_PORT, BFD_PORT);
	/* Downward from the top of RFC 5881's range: bfdd counts up from 49152 for the
	 * sessions it runs itself while no data plane is attached. */
	n->tx6 = open_udp(49152, 65535);
	int err = errno;
	setns(home, CLONE_NEWNET);
	if (n->sock6 < 0 || n->tx6 < 0) {
		fprintf(stderr, "%s: cannot bind BFD sockets in %s: %s\n", n->name, n->nspath, strerror(err));
		return -1;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = n};
	epoll_ctl(epfd, EPOLL_CTL_ADD, n->sock6, &ev);
	return 0;
}

static int read_config(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int cap = 0;
	if (!f) {
		fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct node n = {.sock6 = -1, .tx6 = -1};
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%63s %255s %107s", n.name, n.nspath, n.sock_path) != 3) {
			fprintf(stderr, "%s: unreadable line (NAME NETNS_PATH SOCKET): %s", path, line);
			fclose(f);
			return -1;
		}
		if (nnodes == cap) {
			cap = cap ? cap * 2 : 64;
			nodes = xrealloc(nodes, (size_t)cap * sizeof(*nodes));
		}
		nodes[nnodes++] = n;
	}
	fclose(f);
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void on_xcpu(int sig)
{
	/* The kernel ends a realtime process that ran RLIMIT_RTTIME without sleeping: the log says
	 * so, where the process would otherwise just be gone. */
	static const char msg[] = "fablab-bfd-dp: 1 s on the CPU at SCHED_FIFO without sleeping (RLIMIT_RTTIME): "
	                          "the kernel ends this process\n";
	ssize_t ignored = write(2, msg, sizeof(msg) - 1);
	(void)ignored;
	signal(sig, SIG_DFL);
	raise(sig);
}

static int listen_status(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "status socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		fprintf(stderr, "cannot listen on %s: %s\n", path, strerror(errno));
		return -1;
	}
	return fd;
}

static int status_marker; /* epoll data for the status listener */

int main(int argc, char **argv)
{
	const char *config = NULL, *status = NULL;
	int opt, home, sfd, prio = 0;

	while ((opt = getopt(argc, argv, "N:c:s:p:")) != -1) {
		if (opt == 'N')
			tag = optarg;
		else if (opt == 'c')
			config = optarg;
		else if (opt == 's')
			status = optarg;
		else if (opt == 'p')
			prio = atoi(optarg);
		else
			return 64;
	}
	if (!config || !status) {
		fprintf(stderr, "usage: %s -N TAG -c CONFIG -s STATUS_SOCKET\n", argv[0]);
		return 64;
	}
	rng ^= (uint64_t)getpid() << 17 ^ (uint64_t)now_ns();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGXCPU, on_xcpu);
	/* Timers 1 ms apart may expire together: one wake-up for many sessions. */
	prctl(PR_SET_TIMERSLACK, 1000000UL, 0, 0, 0);
	if (prio > 0) {
		/* A real-time process that spun would take a core: past 1 s on the CPU without
		 * sleeping the kernel ends it (SIGXCPU, then SIGKILL), and the runtime reports it. */
		struct rlimit rt = {.rlim_cur = 1000000, .rlim_max = 2000000};
		setrlimit(RLIMIT_RTTIME, &rt);
		struct sched_param sp = {.sched_priority = prio};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			logf_("SCHED_FIFO %d refused (%s): running as an ordinary process", prio, strerror(errno));
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (read_config(config) < 0)
		return 2;
	home = home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	/* a socket per session, a namespace per node: thousands of descriptors at xlarge */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	for (int i = 0; i < nnodes; i++)
		if (open_node_sockets(&nodes[i], home) < 0)
			return 2;
	if ((sfd = listen_status(status)) < 0)
		return 2;
	struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &status_marker};
	epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &sev);
	logf_("serving %d nodes", nnodes);

	while (!stopping) {
		int64_t now = now_ns(), next = now + 1000000000LL;
		for (int i = 0; i < nnodes; i++) {
			struct node *n = &nodes[i];
			if (n->nconns == 0 && n->retry_at <= now)
				connect_node(n, now);
			if (n->nconns == 0 && n->retry_at && n->retry_at < next)
				next = n->retry_at;
			for (int k = 0; k < n->nconns; k++) {
				struct conn *c = n->conns[k];
				if (c->nudge_at && c->nudge_at <= now) {
					c->nudge_at = 0;
					send_echo_request(c, 0);
				}
				if (c->nudge_at && c->nudge_at < next)
					next = c->nudge_at;
			}
		}
		size_t budget = hlen; /* each entry due once per round: a bug cannot spin here */
		while (hlen && heap[0].when <= now + COALESCE_NS && budget-- > 0) {
			struct tentry e = heap_pop();
			if (!e.s->alive)
				continue;
			if (e.kind == T_TX)
				on_tx(e.s, e.when, now);
			else
				on_detect(e.s, e.when, now);
		}
		if (hlen && heap[0].when < next)
			next = heap[0].when;
		for (int i = 0; i < nnodes; i++)
			for (int k = 0; k < nodes[i].nconns; k++)
				if (nodes[i].conns[k]->outlen)
					conn_flush(nodes[i].conns[k]);
		free_dead_conns();
		reap();

		struct epoll_event evs[64];
		int64_t wait_ns = next - now_ns();
		int timeout = wait_ns <= 0 ? 0 : (int)((wait_ns + 999999) / 1000000);
		int got = epoll_wait(epfd, evs, 64, timeout);
		now = now_ns();
		for (int i = 0; i < got; i++) {
			void *p = evs[i].data.ptr;
			if (p == &status_marker) {
				int fd = accept4(sfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd >= 0) {
					struct conn *c = conn_new(fd, NULL, 1);
					write_status(c, now);
					conn_flush(c);
					if (c->fd >= 0)
						conn_watch(c);
				}
			} else if (p >= (void *)nodes && p < (void *)(nodes + nnodes)) {
				read_udp((struct node *)p);
			} else {
				struct conn *c = p;
				if (c->fd < 0)
					continue;
				if (c->is_status) {
					if (evs[i].events & (EPOLLERR | EPOLLHUP))
						conn_close(c);
					else
						conn_flush(c);
				} else if (evs[i].events & EPOLLOUT && !(evs[i].events & EPOLLIN)) {
					conn_flush(c);
				} else {
					on_readable(c, now);
				}
			}
		}
	}
	logf_("stopping (signal)");
	unlink(status);
	return 0;
}
