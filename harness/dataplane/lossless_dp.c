/*
 * fablab-lossless-dp: a lab's lossless BE data plane, what a switch ASIC and a RoCE NIC do
 * about PFC, ECN and CNPs, on the netns runtime's veth links.
 *
 * One process serves every BE port of a lab (switch ports and GPU NICs). It loads
 * lossless.bpf.o, attaches its two programs to tc's clsact egress and ingress of every port,
 * and owns their maps (see lossless.bpf.c for the per-packet half: classification, buffer
 * admission, WRED/ECN, queue depth, XOFF/XON and CE events). This process does the rest:
 *  - PFC out: a lossless queue past xoff pauses every port that fed it, with a real 802.1Qbb
 *    frame (01:80:c2:00:00:01, MAC control 0x8808, opcode 0x0101, class-enable vector, eight
 *    quanta) sent out of that port, refreshed at half the quanta while the queue stays past
 *    xon, and XON (quanta 0) once it drains below;
 *  - PFC in: a port that receives one stops that priority's queue (its tbf to a trickle, so
 *    the queue holds its packets) for quanta x 512 bit times at the port's speed, scaled, or
 *    until XON, then restarts it (a kick frame wakes the port's qdisc);
 *  - CNPs: a GPU NIC that receives CE-marked RoCEv2 answers with a CNP (BTH opcode 0x81, the
 *    CNP DSCP), at most one per QP per interval (the tc program rate-limits);
 *  - the PFC watchdog (SONiC's PFC_WD, action drop): a queue paused without a break for its
 *    detection time is a storm: its pause is ignored and its packets dropped, until no pause
 *    came for the restoration time.
 * It knows nothing of faults: a gray link drops PFC frames like any other (they are read
 * after netfilter's ingress hook), a changed config reaches it as a reload.
 *
 * Usage: fablab-lossless-dp -N TAG -c CONFIG -o BPF_OBJECT -s STATUS_SOCKET [-p RT_PRIORITY]
 *   CONFIG (lines, re-read on SIGHUP for port settings):
 *     node NAME NETNS_PATH
 *     port ID NODE IFNAME PEER_ID LOCAL FLAGS SPEED_GBPS key=value ...
 *   STATUS_SOCKET: each connection gets one JSON document: every port's counters and state.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/types.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lossless.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif
#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif

#define MAX_NODES 4096
#define PFC_OPCODE 0x0101
#define PAUSED_BPS 8000ull /* a paused queue's trickle: 1 kB/s, nothing leaves within a pause */

static void logf_(const char *fmt, ...)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char when[32];
	strftime(when, sizeof(when), "%H:%M:%S", gmtime(&ts.tv_sec));
	fprintf(stderr, "%s.%03ld ", when, ts.tv_nsec / 1000000);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct node;

struct port {
	int used;
	uint32_t id, peer, local, flags;
	struct node *node;
	char ifname[IF_NAMESIZE];
	int ifindex;
	uint8_t mac[6];
	double gbps;
	/* settings (config) */
	struct ll_port_cfg cfg;
	uint64_t quanta;        /* PFC quanta this port sends */
	double scale;           /* time scale */
	int64_t wd_detect_ns, wd_restore_ns;
	uint8_t wd_prios;       /* priorities the watchdog watches */
	uint8_t cnp_dscp;
	uint64_t rate_bps;      /* the port's scaled rate */
	uint64_t burst;
	/* PFC received: per queue, paused until (0: running) */
	int64_t paused_until[8], paused_since[8], paused_ns[8];
	uint64_t pfc_rx[8], pfc_tx[8], pfc_rx_ignored[8];
	int64_t last_rx[8];
	/* PFC sent: per priority, how many congested queues hold this port's peer paused */
	int holders[8];
	/* and how long the pause took to stop the peer: from the XOFF that began the hold (0: not
	 * timing one) to the peer's queue paused; late: longer than this port's headroom lasts at
	 * the peer's rate, so what was in flight meanwhile could overrun it */
	int64_t pause_cause[8], pause_sent[8];
	uint64_t pauses_timed[8], pauses_late[8];
	int64_t pause_lag_sum_ns[8], pause_lag_max_ns[8];
	/* a pause that ran out at the peer while this port still held it (its refresh was late):
	 * the peer sent meanwhile, into a queue past XOFF */
	uint64_t pauses_expired[8];
	int64_t refresh_at[8];
	int hot;                /* on the tick's list */
	/* the queues of this port in XOFF, and the feeders each paused (local indexes) */
	uint64_t held[8][LL_FEEDER_WORDS];
	int xoff[8];
	/* watchdog, per queue */
	int storm[8];
	uint64_t storms[8], restores[8];
	uint64_t cnp_tx;
	uint64_t tc_errors;
	/* a NIC gone wrong (fablab break LAB pfc-storm): it sends pause for these priorities
	 * without end, as a stuck NIC does */
	uint8_t storm_tx;
	int64_t storm_next;
	/* a queue's depth is what entered it minus what reached the far end: packets a qdisc
	 * purges (a carrier lost, a device moved) never arrive, so a depth that stops draining
	 * while the port is not paused is stale and set right */
	uint64_t last_deq[8];
	int64_t last_move[8];
	int64_t readopt_at; /* its interface came back (re-cabled): schedulers and programs again */
	uint64_t resyncs, readopts;
};

struct node {
	char name[128];
	char nspath[512];
	int nsfd;
	uint64_t cookie;
	int rx, txb, txq, nl, links; /* links: the namespace's interface events */
	uint32_t nl_seq;
	struct port **by_local;
	int nlocal;
};

static struct port *ports;
static uint32_t nports_max;
static struct node nodes[MAX_NODES];
static int nnodes;
static struct ll_port_cfg *cfg_map;   /* mmapped arrays */
static struct ll_queue *queue_map;
static struct ll_port_stat *pstat_map;
static int cfg_fd, queue_fd, pstat_fd, ports_fd;
static int home_ns;
static const char *config_path;
static uint64_t generation;
/* The ports the tick must look at (paused, pausing, in XOFF, storming; the tick runs while there
 * is one, and drops a port once it is none of these): on large (1,536 ports)
 * a tick over every port took 0.7-1.9 ms of each 1 ms, and a pause frame waited behind it
 * (measured: up to 5 ms from a leaf's XOFF to its spine pausing, past an 800G uplink's
 * headroom). */
static uint32_t *hot_ids;
static uint32_t nhot;

static void heat(struct port *p)
{
	if (!p->hot) {
		p->hot = 1;
		hot_ids[nhot++] = p->id;
	}
}

static int cold(const struct port *p)
{
	if (p->storm_tx)
		return 0;
	for (int i = 0; i < 8; i++)
		if (p->xoff[i] || p->paused_until[i] || p->storm[i] || p->holders[i])
			return 0;
	return 1;
}

static struct node *node_named(const char *name)
{
	for (int i = 0; i < nnodes; i++)
		if (strcmp(nodes[i].name, name) == 0)
			return &nodes[i];
	return NULL;
}

static uint64_t kv(const char *line, const char *key, uint64_t dflt)
{
	char pat[64];
	snprintf(pat, sizeof(pat), " %s=", key);
	const char *p = strstr(line, pat);
	return p ? strtoull(p + strlen(pat), NULL, 0) : dflt;
}

static double kvf(const char *line, const char *key, double dflt)
{
	char pat[64];
	snprintf(pat, sizeof(pat), " %s=", key);
	const char *p = strstr(line, pat);
	return p ? strtod(p + strlen(pat), NULL) : dflt;
}

static void digits(const char *line, const char *key, uint8_t *out, int n)
{
	char pat[64];
	snprintf(pat, sizeof(pat), " %s=", key);
	const char *p = strstr(line, pat);
	if (!p)
		return;
	p += strlen(pat);
	for (int i = 0; i < n && p[i] >= '0' && p[i] <= '7'; i++)
		out[i] = (uint8_t)(p[i] - '0');
}

/* Port settings from one config line (also on reload). */
static void settings(struct port *p, const char *line)
{
	struct ll_port_cfg c = {0};
	c.id = p->id;
	c.peer = p->peer;
	c.local = p->local;
	c.flags = p->flags;
	digits(line, "dscp", c.dscp_tc, 64);
	for (int i = 0; i < 8; i++)
		c.tc_queue[i] = (uint8_t)i;
	digits(line, "tcq", c.tc_queue, 8);
	c.pfc = (uint8_t)kv(line, "pfc", 0);
	c.ecn = (uint8_t)kv(line, "ecn", 0);
	c.xoff = kv(line, "xoff", 1 << 20);
	c.xon = kv(line, "xon", 1 << 19);
	c.lossless_limit = kv(line, "lossless_limit", 2 << 20);
	c.lossy_limit = kv(line, "lossy_limit", 1 << 20);
	c.wred_min = kv(line, "wred_min", 0);
	c.wred_max = kv(line, "wred_max", 0);
	c.wred_prob = kv(line, "wred_prob", 0);
	c.cnp_interval_ns = kv(line, "cnp_interval_ns", 0);
	c.wd_drop = 0;
	for (int q = 0; q < 8; q++)
		if (p->storm[q])
			c.wd_drop |= (uint8_t)(1 << q);
	p->cfg = c;
	p->quanta = kv(line, "quanta", 0xffff);
	p->scale = kvf(line, "scale", 1.0);
	p->wd_detect_ns = (int64_t)kv(line, "wd_detect_ms", 0) * 1000000;
	p->wd_restore_ns = (int64_t)kv(line, "wd_restore_ms", 0) * 1000000;
	p->wd_prios = (uint8_t)kv(line, "wd", 0);
	p->cnp_dscp = (uint8_t)kv(line, "cnp_dscp", 48);
	p->rate_bps = (uint64_t)(p->gbps * 1e9 / p->scale);
	p->burst = kv(line, "burst", 65536);
	uint8_t storm = (uint8_t)kv(line, "storm", 0);
	if (!p->storm_tx && storm)
		p->storm_next = 0;
	p->storm_tx = storm;
	if (storm)
		heat(p);
	cfg_map[p->id] = c;
}

/* ---- netlink: a queue's tbf changed, to pause or restart it ---- */
static double tick_in_usec = 15.625;

static void psched_init(void)
{
	FILE *f = fopen("/proc/net/psched", "r");
	unsigned t2us, us2t, res;
	if (f && fscanf(f, "%08x%08x%08x", &t2us, &us2t, &res) == 3) {
		if (res == 1000000000)
			t2us = us2t;
		tick_in_usec = (double)t2us / us2t * ((double)res / 1000000);
	}
	if (f)
		fclose(f);
}

static void put_attr(char *buf, size_t *len, unsigned short type, const void *data, size_t n)
{
	struct rtattr *a = (struct rtattr *)(buf + *len);
	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(n);
	if (n)
		memcpy(RTA_DATA(a), data, n);
	*len += RTA_ALIGN(a->rta_len);
}

static void tbf_set(struct port *p, int q, int paused)
{
	char buf[512] = {0};
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct tcmsg *t = NLMSG_DATA(h);
	size_t len = NLMSG_LENGTH(sizeof(*t));
	h->nlmsg_type = RTM_NEWQDISC;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = ++p->node->nl_seq;
	t->tcm_family = AF_UNSPEC;
	t->tcm_ifindex = p->ifindex;
	t->tcm_handle = (uint32_t)(LL_HTB_MINOR0 + 0x10 + q) << 16;
	t->tcm_parent = (uint32_t)LL_HTB_MAJOR << 16 | (uint32_t)(LL_HTB_MINOR0 + q);
	put_attr(buf, &len, TCA_KIND, "tbf", 4);
	struct rtattr *opts = (struct rtattr *)(buf + len);
	size_t opts_at = len;
	put_attr(buf, &len, TCA_OPTIONS, NULL, 0);
	/* running: well above the port's rate (htb shapes it); paused: a trickle, one frame of burst */
	uint64_t bps = paused ? PAUSED_BPS : p->rate_bps * 4;
	uint64_t Bps = bps / 8;
	uint32_t burst = paused ? 10240 : (uint32_t)p->burst;
	struct tc_tbf_qopt o = {0};
	o.rate.rate = Bps >= (1ull << 32) ? ~0u : (uint32_t)Bps;
	o.limit = 1 << 26;
	o.buffer = (uint32_t)((double)burst / (double)Bps * 1e6 * tick_in_usec);
	put_attr(buf, &len, TCA_TBF_PARMS, &o, sizeof(o));
	put_attr(buf, &len, TCA_TBF_BURST, &burst, sizeof(burst));
	if (Bps >= (1ull << 32))
		put_attr(buf, &len, TCA_TBF_RATE64, &Bps, sizeof(Bps));
	opts->rta_len = (unsigned short)(len - opts_at);
	h->nlmsg_len = (uint32_t)len;
	if (send(p->node->nl, buf, len, 0) < 0) {
		p->tc_errors++;
		logf_("%s %s: tbf change failed: %s", p->node->name, p->ifname, strerror(errno));
	}
}

static void nl_drain(struct node *n)
{
	char buf[8192];
	ssize_t r;
	while ((r = recv(n->nl, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)r); h = NLMSG_NEXT(h, r)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);
				if (e->error)
					logf_("%s: tc change (seq %u) refused: %s", n->name, h->nlmsg_seq, strerror(-e->error));
			}
		}
	}
}

/* ---- frames ---- */
static void send_frame(int fd, int ifindex, const void *frame, size_t len)
{
	struct sockaddr_ll sa = {.sll_family = AF_PACKET, .sll_ifindex = ifindex, .sll_halen = 6};
	sendto(fd, frame, len, MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof(sa));
}

static void send_pfc(struct port *p, uint8_t vector, uint16_t quanta)
{
	uint8_t f[60] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
	memcpy(f + 6, p->mac, 6);
	f[12] = 0x88, f[13] = 0x08;
	f[14] = PFC_OPCODE >> 8, f[15] = PFC_OPCODE & 0xff;
	f[16] = 0, f[17] = vector;
	for (int i = 0; i < 8; i++)
		if (vector >> i & 1) {
			f[18 + 2 * i] = quanta >> 8, f[19 + 2 * i] = quanta & 0xff;
			p->pfc_tx[i]++;
		}
	send_frame(p->node->txb, p->ifindex, f, sizeof(f));
}

static void kick(struct port *p)
{
	uint8_t f[60] = {0};
	memcpy(f, p->mac, 6); /* to itself: the peer's tc program drops it */
	memcpy(f + 6, p->mac, 6);
	f[12] = LL_ETH_P_KICK >> 8, f[13] = LL_ETH_P_KICK & 0xff;
	send_frame(p->node->txq, p->ifindex, f, sizeof(f));
}

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32_update(uint32_t crc, const uint8_t *b, size_t n)
{
	crc = ~crc;
	while (n--)
		crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint16_t ip_checksum(const uint8_t *h, int n)
{
	uint32_t s = 0;
	for (int i = 0; i < n; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* A CNP as a RoCE NIC sends it: IPv4/UDP 4791, BTH opcode 0x81 to the flow's QP, 16 reserved
 * bytes, ICRC; DSCP the CNP's, not ECN-capable. */
static void send_cnp(struct port *p, const struct ll_event *e)
{
	uint8_t f[14 + 20 + 8 + 12 + 16 + 4] = {0};
	memcpy(f, e->smac, 6);
	memcpy(f + 6, e->dmac, 6);
	f[12] = 0x08, f[13] = 0x00;
	uint8_t *ip = f + 14, *udp = ip + 20, *bth = udp + 8;
	uint16_t iplen = 20 + 8 + 12 + 16 + 4, udplen = 8 + 12 + 16 + 4;
	ip[0] = 0x45, ip[1] = (uint8_t)(p->cnp_dscp << 2);
	ip[2] = iplen >> 8, ip[3] = iplen & 0xff;
	ip[4] = 0, ip[5] = 1, ip[6] = 0x40, ip[8] = 64, ip[9] = 17;
	memcpy(ip + 12, &e->daddr, 4);
	memcpy(ip + 16, &e->saddr, 4);
	uint16_t sport = (uint16_t)(0xc000 | (e->qp & 0x3fff));
	udp[0] = sport >> 8, udp[1] = sport & 0xff, udp[2] = LL_ROCE_PORT >> 8, udp[3] = LL_ROCE_PORT & 0xff;
	udp[4] = udplen >> 8, udp[5] = udplen & 0xff;
	bth[0] = LL_OPCODE_CNP, bth[1] = 0, bth[2] = 0xff, bth[3] = 0xff;
	bth[4] = 0x40; /* BECN */
	bth[5] = (uint8_t)(e->qp >> 16), bth[6] = (uint8_t)(e->qp >> 8), bth[7] = (uint8_t)e->qp;
	uint16_t sum = ip_checksum(ip, 20);
	ip[10] = sum >> 8, ip[11] = sum & 0xff;
	/* ICRC: over 8 bytes of ones and the packet with its variant fields as ones */
	uint8_t m[8 + 20 + 8 + 12 + 16];
	memset(m, 0xff, 8);
	memcpy(m + 8, ip, sizeof(m) - 8);
	m[8 + 1] = 0xff, m[8 + 8] = 0xff, m[8 + 10] = 0xff, m[8 + 11] = 0xff;
	m[8 + 20 + 6] = 0xff, m[8 + 20 + 7] = 0xff, m[8 + 28 + 4] = 0xff;
	uint32_t crc = crc32_update(0, m, sizeof(m));
	uint8_t *icrc = bth + 12 + 16;
	icrc[0] = crc & 0xff, icrc[1] = (crc >> 8) & 0xff, icrc[2] = (crc >> 16) & 0xff, icrc[3] = crc >> 24;
	send_frame(p->node->txq, p->ifindex, f, sizeof(f));
	p->cnp_tx++;
}

/* ---- pausing a queue (PFC received) ---- */
static int64_t pause_ns(struct port *p, uint16_t quanta)
{
	return (int64_t)((double)quanta * 512.0 / (p->gbps * 1e9) * p->scale * 1e9);
}

/* Restarting a queue runs its qdisc at once in the caller (the kick), and with it the next hop's
 * forwarding: 75 us a queue on average, and a 63->1 incast on large restarts dozens at each XON.
 * A thread of its own does it, so that the loop answers the next XOFF meanwhile (measured:
 * 2-20 ms from a leaf's XOFF to its feeders pausing with the restarts inline). tc_mu orders
 * every tbf change: a restart the loop has overtaken with a new pause is skipped. */
#define RESUME_JOBS 65536
static pthread_mutex_t tc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t job_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_cv = PTHREAD_COND_INITIALIZER;
static uint32_t jobs[RESUME_JOBS];
static uint32_t job_head, job_tail;
static int resumer_running;

static void restart(struct port *p, int q)
{
	pthread_mutex_lock(&tc_mu);
	int run = !__atomic_load_n(&p->paused_until[q], __ATOMIC_ACQUIRE);
	if (run)
		tbf_set(p, q, 0);
	pthread_mutex_unlock(&tc_mu);
	if (run)
		kick(p);
}

static void *resumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&job_mu);
		while (job_head == job_tail)
			pthread_cond_wait(&job_cv, &job_mu);
		uint32_t job = jobs[job_tail++ % RESUME_JOBS];
		pthread_mutex_unlock(&job_mu);
		struct port *p = &ports[job >> 3];
		restart(p, (int)(job & 7));
	}
	return NULL;
}

static void queue_pause(struct port *p, int q, int64_t until, int64_t now)
{
	if (!p->paused_until[q]) {
		pthread_mutex_lock(&tc_mu);
		__atomic_store_n(&p->paused_until[q], until, __ATOMIC_RELEASE);
		tbf_set(p, q, 1);
		pthread_mutex_unlock(&tc_mu);
		p->paused_since[q] = now;
		heat(p);
	} else {
		__atomic_store_n(&p->paused_until[q], until, __ATOMIC_RELEASE);
	}
}

static void queue_resume(struct port *p, int q, int64_t now)
{
	if (!p->paused_until[q])
		return;
	__atomic_store_n(&p->paused_until[q], 0, __ATOMIC_RELEASE);
	p->paused_ns[q] += now - p->paused_since[q];
	int queued = 0;
	if (resumer_running) {
		pthread_mutex_lock(&job_mu);
		if (job_head - job_tail < RESUME_JOBS) {
			jobs[job_head++ % RESUME_JOBS] = p->id << 3 | (uint32_t)q;
			queued = 1;
			pthread_cond_signal(&job_cv);
		}
		pthread_mutex_unlock(&job_mu);
	}
	if (!queued)
		restart(p, q);
}

static struct port *port_by_id(uint32_t id);

/* A pause p received from its peer took effect: time the hold that sent it, once per hold. */
static void pause_timed(struct port *p, int prio)
{
	struct port *f = port_by_id(p->peer);
	if (!f || !f->pause_cause[prio])
		return;
	int64_t now = now_ns(), lag = now - f->pause_cause[prio];
	/* the frame's own way here, from the port's send to this read: what the peer sent before
	 * it paused took as long the other way, so it still arrives after the pause (a real cable's
	 * delay counts twice in a headroom, 802.3 Annex 31B) */
	int64_t transit = f->pause_sent[prio] && f->pause_sent[prio] <= now ? now - f->pause_sent[prio] : 0;
	f->pause_cause[prio] = 0;
	if (lag < 0)
		lag = 0;
	f->pauses_timed[prio]++;
	f->pause_lag_sum_ns[prio] += lag;
	if (lag > f->pause_lag_max_ns[prio])
		f->pause_lag_max_ns[prio] = lag;
	uint64_t room = f->cfg.lossless_limit > f->cfg.xoff ? f->cfg.lossless_limit - f->cfg.xoff : 0;
	if (p->rate_bps && (double)(lag + transit) > (double)room * 8e9 / (double)p->rate_bps)
		f->pauses_late[prio]++;
}

static void pfc_received(struct port *p, const uint8_t *f, size_t len, int64_t now)
{
	if (len < 34 || f[14] != (PFC_OPCODE >> 8) || f[15] != (PFC_OPCODE & 0xff))
		return;
	uint8_t vector = f[17];
	for (int prio = 0; prio < 8; prio++) {
		if (!(vector >> prio & 1))
			continue;
		p->pfc_rx[prio]++;
		p->last_rx[prio] = now;
		int q = p->cfg.tc_queue[prio] & 7;
		if (!(p->cfg.pfc >> prio & 1) || p->storm[q]) {
			p->pfc_rx_ignored[prio]++;
			continue;
		}
		uint16_t quanta = (uint16_t)(f[18 + 2 * prio] << 8 | f[19 + 2 * prio]);
		if (quanta == 0) {
			queue_resume(p, q, now);
		} else {
			queue_pause(p, q, now + pause_ns(p, quanta), now);
			pause_timed(p, prio);
		}
	}
}

/* ---- pausing the feeders of a congested queue (PFC sent) ---- */
static int prio_of_queue(struct port *p, int q)
{
	for (int prio = 0; prio < 8; prio++)
		if ((p->cfg.tc_queue[prio] & 7) == q && (p->cfg.pfc >> prio & 1))
			return prio;
	return -1;
}

static void hold(struct port *f, int prio, int64_t now, int64_t cause)
{
	if (f->holders[prio]++ == 0) {
		f->pause_cause[prio] = cause;
		f->pause_sent[prio] = now_ns();
		send_pfc(f, (uint8_t)(1 << prio), (uint16_t)f->quanta);
		f->refresh_at[prio] = now + pause_ns(f, (uint16_t)f->quanta) / 2;
		heat(f);
	}
}

static void release(struct port *f, int prio)
{
	if (f->holders[prio] > 0 && --f->holders[prio] == 0) {
		send_pfc(f, (uint8_t)(1 << prio), 0);
	}
}

/* Pause the ports that fed queue q of port e since the last look; `cause`: when the queue
 * crossed XOFF (a feeder found later: when it was found). */
static void take_feeders(struct port *e, int q, int64_t now, int64_t cause)
{
	int prio = prio_of_queue(e, q);
	struct ll_queue *s = &queue_map[e->id * LL_QUEUES + q];
	for (int w = 0; w < LL_FEEDER_WORDS; w++) {
		uint64_t bits = __atomic_exchange_n(&s->feeders[w], 0, __ATOMIC_RELAXED);
		bits &= ~e->held[q][w];
		while (bits) {
			int b = __builtin_ctzll(bits);
			bits &= bits - 1;
			int local = w * 64 + b;
			if (local >= e->node->nlocal || prio < 0)
				continue;
			struct port *f = e->node->by_local[local];
			if (!f || !(f->cfg.pfc >> prio & 1))
				continue; /* PFC off there: it is not paused, and its packets meet the lossy limit */
			e->held[q][w] |= 1ull << b;
			hold(f, prio, now, cause);
		}
	}
}

static void on_xoff(struct port *e, int q, int64_t now, int64_t crossed)
{
	if (e->xoff[q])
		return;
	e->xoff[q] = 1;
	heat(e);
	take_feeders(e, q, now, crossed > 0 && crossed <= now ? crossed : now);
}

static void on_xon(struct port *e, int q)
{
	if (!e->xoff[q])
		return;
	e->xoff[q] = 0;
	struct ll_queue *s = &queue_map[e->id * LL_QUEUES + q];
	/* drained: the headroom is back. The sum first: a feeder the program sees in between is
	 * then counted twice until the next XON (a little more room), never not at all. */
	__atomic_store_n(&s->headroom, 0, __ATOMIC_RELAXED);
	for (int w = 0; w < LL_FEEDER_WORDS; w++)
		__atomic_store_n(&s->seen[w], 0, __ATOMIC_RELAXED);
	int prio = prio_of_queue(e, q);
	for (int w = 0; w < LL_FEEDER_WORDS; w++) {
		uint64_t bits = e->held[q][w];
		e->held[q][w] = 0;
		while (bits) {
			int b = __builtin_ctzll(bits);
			bits &= bits - 1;
			struct port *f = e->node->by_local[w * 64 + b];
			if (f && prio >= 0)
				release(f, prio);
		}
	}
}

static struct port *port_by_id(uint32_t id)
{
	return id < nports_max && ports[id].used ? &ports[id] : NULL;
}

static int on_event(void *ctx, void *data, size_t size)
{
	(void)ctx;
	if (size < sizeof(struct ll_event))
		return 0;
	const struct ll_event *e = data;
	struct port *p = port_by_id(e->port);
	if (!p)
		return 0;
	int64_t now = now_ns();
	switch (e->type) {
	case LL_EV_XOFF:
		on_xoff(p, (int)e->queue & 7, now, (int64_t)e->ts);
		break;
	case LL_EV_XON:
		on_xon(p, (int)e->queue & 7);
		break;
	case LL_EV_CE:
		send_cnp(p, e);
		break;
	}
	return 0;
}

/* ---- the periodic part: refreshes, expiries, the watchdog ---- */
static void set_wd_drop(struct port *p)
{
	uint8_t m = 0;
	for (int q = 0; q < 8; q++)
		if (p->storm[q])
			m |= (uint8_t)(1 << q);
	p->cfg.wd_drop = m;
	__atomic_store_n(&cfg_map[p->id].wd_drop, m, __ATOMIC_RELAXED);
}

/* p's pause on queue q ran out: if its peer still holds it, the refresh came too late. */
static void expired_held(struct port *p, int q)
{
	struct port *f = port_by_id(p->peer);
	for (int prio = 0; f && prio < 8; prio++)
		if ((p->cfg.tc_queue[prio] & 7) == q && (p->cfg.pfc >> prio & 1) && f->holders[prio] > 0) {
			f->pauses_expired[prio]++;
			f->pauses_late[prio]++;
		}
}

static void tick(int64_t now)
{
	for (uint32_t i = 0; i < nhot;) {
		struct port *p = &ports[hot_ids[i]];
		if (!p->used || cold(p)) {
			p->hot = 0;
			hot_ids[i] = hot_ids[--nhot];
			continue;
		}
		i++;
		for (int q = 0; q < 8; q++) {
			if (p->xoff[q]) {
				struct ll_queue *s = &queue_map[p->id * LL_QUEUES + q];
				if (!__atomic_load_n(&s->xoff, __ATOMIC_RELAXED))
					on_xon(p, q); /* its XON event was lost (ring full) */
				else
					take_feeders(p, q, now, now);
			}
			if (p->paused_until[q]) {
				if (now >= p->paused_until[q]) {
					expired_held(p, q);
					queue_resume(p, q, now);
				}
				else if (p->wd_detect_ns && (p->wd_prios >> q & 1) &&
				         now - p->paused_since[q] >= p->wd_detect_ns) {
					p->storm[q] = 1;
					p->storms[q]++;
					set_wd_drop(p);
					logf_("%s %s: PFC storm on queue %d (paused %.0f ms without a break): watchdog drops",
					      p->node->name, p->ifname, q, (now - p->paused_since[q]) / 1e6);
					queue_resume(p, q, now);
					/* the storm itself keeps the port on the tick's list until restored */
				}
			}
			if (p->storm[q] && now - p->last_rx[q] >= p->wd_restore_ns) {
				p->storm[q] = 0;
				p->restores[q]++;
				set_wd_drop(p);
				logf_("%s %s: PFC storm on queue %d over: restored", p->node->name, p->ifname, q);
			}
		}
		if (p->storm_tx && now >= p->storm_next) {
			send_pfc(p, p->storm_tx, 0xffff);
			p->storm_next = now + pause_ns(p, 0xffff) / 4;
		}
		for (int prio = 0; prio < 8; prio++)
			if (p->holders[prio] && now >= p->refresh_at[prio]) {
				send_pfc(p, (uint8_t)(1 << prio), (uint16_t)p->quanta);
				p->refresh_at[prio] = now + pause_ns(p, (uint16_t)p->quanta) / 2;
			}
	}
}

static void resync(struct port *p, int q, const char *why)
{
	struct ll_queue *s = &queue_map[p->id * LL_QUEUES + q];
	uint64_t enq = __atomic_load_n(&s->enq_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&s->deq_bytes, enq, __ATOMIC_RELAXED);
	__atomic_store_n(&s->deq_pkts, __atomic_load_n(&s->enq_pkts, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	if (__atomic_exchange_n(&s->xoff, 0, __ATOMIC_RELAXED) || p->xoff[q])
		on_xon(p, q);
	p->resyncs++;
	if (why)
		logf_("%s %s: queue %d's depth set to 0 (%s)", p->node->name, p->ifname, q, why);
}

/* Depths that cannot be (a purge), over an eighth of the ports each call (every 2.5 ms, every
 * port each 20 ms): at once, large's 1,536 ports held the loop 1.3 ms. */
#define AUDIT_SLICES 8
static void audit(int64_t now)
{
	static uint32_t from;
	uint32_t n = (nports_max + AUDIT_SLICES - 1) / AUDIT_SLICES, to = from + n < nports_max ? from + n : nports_max;
	uint32_t start = from;
	from = to >= nports_max ? 0 : to;
	for (uint32_t i = start; i < to; i++) {
		struct port *p = &ports[i];
		if (!p->used)
			continue;
		for (int q = 0; q < 8; q++) {
			struct ll_queue *s = &queue_map[p->id * LL_QUEUES + q];
			uint64_t deq = __atomic_load_n(&s->deq_bytes, __ATOMIC_RELAXED);
			int64_t depth = (int64_t)(__atomic_load_n(&s->enq_bytes, __ATOMIC_RELAXED) - deq);
			if (depth <= 0 || p->paused_until[q] || deq != p->last_deq[q]) {
				p->last_deq[q] = deq;
				p->last_move[q] = now;
				if (depth < 0)
					resync(p, q, "more arrived than entered: sent before the data plane started");
				continue;
			}
			/* not paused, not draining: longer than twice the time its depth needs at the rate */
			int64_t needs = p->rate_bps ? (int64_t)((double)depth * 8 / (double)p->rate_bps * 2e9) : 0;
			if (now - p->last_move[q] > needs + 50000000)
				resync(p, q, "it stopped draining: a purge or a drop after the queue");
		}
	}
}

static int attach_port(struct bpf_program *eg, struct bpf_program *in, struct port *p);
static struct bpf_program *prog_egress, *prog_ingress;
static const char *run_dir_path;

/* Schedulers again (the batch the set-up wrote for this port), programs again, depths from 0. */
static void readopt(struct port *p)
{
	p->readopt_at = 0;
	char batch[1024], ns[512];
	snprintf(batch, sizeof(batch), "%s/lossless-tc.%s.%s", run_dir_path, p->node->name, p->ifname);
	const char *base = strrchr(p->node->nspath, '/');
	snprintf(ns, sizeof(ns), "%s", base ? base + 1 : p->node->nspath);
	pid_t pid = fork();
	if (pid == 0) {
		execlp("tc", "tc", "-n", ns, "-batch", batch, (char *)NULL);
		_exit(127);
	}
	int status = 0;
	if (pid > 0)
		waitpid(pid, &status, 0);
	struct ll_port_key old = {.netns = p->node->cookie, .ifindex = (uint32_t)p->ifindex};
	bpf_map_delete_elem(ports_fd, &old);
	for (int q = 0; q < 8; q++)
		__atomic_store_n(&p->paused_until[q], 0, __ATOMIC_RELEASE);
	if (attach_port(prog_egress, prog_ingress, p) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		logf_("%s %s: could not take the port back (tc %d)", p->node->name, p->ifname, WEXITSTATUS(status));
		return;
	}
	for (int q = 0; q < 8; q++)
		resync(p, q, NULL);
	p->readopts++;
	logf_("%s %s: taken back (ifindex %d)", p->node->name, p->ifname, p->ifindex);
}

static void link_events(struct node *n, int64_t now)
{
	char buf[16384];
	ssize_t r;
	while ((r = recv(n->links, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)r); h = NLMSG_NEXT(h, r)) {
			if (h->nlmsg_type != RTM_NEWLINK)
				continue;
			struct ifinfomsg *ifi = NLMSG_DATA(h);
			int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));
			for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
				if (a->rta_type != IFLA_IFNAME)
					continue;
				for (int j = 0; j < n->nlocal; j++) {
					struct port *p = n->by_local[j];
					if (p && strcmp(p->ifname, RTA_DATA(a)) == 0 && p->ifindex != ifi->ifi_index)
						p->readopt_at = now + 200000000; /* when its mover is done with it */
				}
			}
		}
	}
}

/* ---- set-up ---- */
static int open_node(struct node *n)
{
	n->nsfd = open(n->nspath, O_RDONLY | O_CLOEXEC);
	if (n->nsfd < 0 || setns(n->nsfd, CLONE_NEWNET) < 0) {
		logf_("%s: cannot enter %s: %s", n->name, n->nspath, strerror(errno));
		return -1;
	}
	n->rx = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(LL_ETH_P_PFC));
	n->txb = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	n->txq = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	n->nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	n->links = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
	struct sockaddr_nl groups = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK};
	if (n->links >= 0)
		bind(n->links, (struct sockaddr *)&groups, sizeof(groups));
	int one = 1;
	if (n->txb >= 0)
		setsockopt(n->txb, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	socklen_t cl = sizeof(n->cookie);
	int err = 0;
	if (n->rx < 0 || n->txb < 0 || n->txq < 0 || n->nl < 0 || n->links < 0 ||
	    getsockopt(n->rx, SOL_SOCKET, SO_NETNS_COOKIE, &n->cookie, &cl) < 0)
		err = errno;
	setns(home_ns, CLONE_NEWNET);
	if (err) {
		logf_("%s: sockets: %s", n->name, strerror(err));
		return -1;
	}
	return 0;
}

static int attach_port(struct bpf_program *eg, struct bpf_program *in, struct port *p)
{
	struct node *n = p->node;
	if (setns(n->nsfd, CLONE_NEWNET) < 0)
		return -1;
	int rc = -1;
	p->ifindex = (int)if_nametoindex(p->ifname);
	if (!p->ifindex) {
		logf_("%s: no interface %s", n->name, p->ifname);
		goto out;
	}
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", p->ifname);
	if (ioctl(n->rx, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(p->mac, ifr.ifr_hwaddr.sa_data, 6);
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = p->ifindex, .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	int e = bpf_tc_hook_create(&hook);
	if (e && e != -EEXIST) {
		logf_("%s %s: clsact: %s", n->name, p->ifname, strerror(-e));
		goto out;
	}
	hook.attach_point = BPF_TC_EGRESS;
	LIBBPF_OPTS(bpf_tc_opts, eo, .prog_fd = bpf_program__fd(eg), .handle = 1, .priority = 1, .flags = BPF_TC_F_REPLACE);
	if ((e = bpf_tc_attach(&hook, &eo))) {
		logf_("%s %s: egress program: %s", n->name, p->ifname, strerror(-e));
		goto out;
	}
	hook.attach_point = BPF_TC_INGRESS;
	LIBBPF_OPTS(bpf_tc_opts, io, .prog_fd = bpf_program__fd(in), .handle = 1, .priority = 1, .flags = BPF_TC_F_REPLACE);
	if ((e = bpf_tc_attach(&hook, &io))) {
		logf_("%s %s: ingress program: %s", n->name, p->ifname, strerror(-e));
		goto out;
	}
	struct ll_port_key k = {.netns = n->cookie, .ifindex = (uint32_t)p->ifindex};
	if (bpf_map_update_elem(ports_fd, &k, &p->id, BPF_ANY) < 0) {
		logf_("%s %s: port map: %s", n->name, p->ifname, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	setns(home_ns, CLONE_NEWNET);
	return rc;
}

static int read_config(int first)
{
	FILE *f = fopen(config_path, "r");
	if (!f) {
		logf_("cannot read %s: %s", config_path, strerror(errno));
		return -1;
	}
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char a[128], b[512], c[16];
		unsigned id, peer, local, flags;
		double gbps;
		if (first && sscanf(line, "node %127s %511s", a, b) == 2) {
			if (nnodes == MAX_NODES) {
				logf_("more than %d nodes", MAX_NODES);
				fclose(f);
				return -1;
			}
			struct node *n = &nodes[nnodes++];
			snprintf(n->name, sizeof(n->name), "%s", a);
			snprintf(n->nspath, sizeof(n->nspath), "%s", b);
		} else if (sscanf(line, "port %u %127s %15s %u %u %u %lf", &id, a, c, &peer, &local, &flags, &gbps) == 7) {
			if (id >= nports_max) {
				logf_("port id %u out of range", id);
				continue;
			}
			struct port *p = &ports[id];
			if (first) {
				p->node = node_named(a);
				if (!p->node) {
					logf_("port %u: no node %s", id, a);
					continue;
				}
				p->used = 1;
				p->id = id, p->peer = peer, p->local = local, p->flags = flags, p->gbps = gbps;
				snprintf(p->ifname, sizeof(p->ifname), "%s", c);
			}
			if (p->used)
				settings(p, line);
		}
	}
	fclose(f);
	return 0;
}

static uint32_t count_ports(void)
{
	FILE *f = fopen(config_path, "r");
	if (!f)
		return 0;
	char line[4096];
	uint32_t max = 0;
	unsigned id;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "port %u", &id) == 1 && id + 1 > max)
			max = id + 1;
	fclose(f);
	return max;
}

/* ---- status: one JSON document per reader ---- */
static void status(int fd)
{
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);
	int64_t now = now_ns();
#define EMIT(...)                                                                  \
	do {                                                                           \
		int need = snprintf(NULL, 0, __VA_ARGS__);                                 \
		while (len + (size_t)need + 1 > cap)                                       \
			out = realloc(out, cap *= 2);                                          \
		len += (size_t)snprintf(out + len, cap - len, __VA_ARGS__);                \
	} while (0)
	EMIT("{\"generation\": %llu, \"ports\": [", (unsigned long long)generation);
	int first = 1;
	for (uint32_t i = 0; i < nports_max; i++) {
		struct port *p = &ports[i];
		if (!p->used)
			continue;
		struct ll_port_stat *ps = &pstat_map[p->id];
		EMIT("%s{\"node\": \"%s\", \"port\": \"%s\", \"rate_bps\": %llu, \"pfc\": %u, \"storm_tx\": %u, "
		     "\"cnp_tx\": %llu, \"ce_rx\": %llu, \"tc_errors\": %llu, \"resyncs\": %llu, \"readopts\": %llu, "
		     "\"priorities\": [",
		     first ? "" : ", ", p->node->name, p->ifname, (unsigned long long)p->rate_bps, p->cfg.pfc, p->storm_tx,
		     (unsigned long long)p->cnp_tx, (unsigned long long)ps->ce_rx, (unsigned long long)p->tc_errors,
		     (unsigned long long)p->resyncs, (unsigned long long)p->readopts);
		first = 0;
		for (int prio = 0; prio < 8; prio++)
			EMIT("%s{\"pfc_rx\": %llu, \"pfc_tx\": %llu, \"pfc_rx_ignored\": %llu, \"in_drops\": %llu, "
			     "\"holding_peer\": %d, \"pauses_timed\": %llu, \"pauses_late\": %llu, "
			     "\"pauses_expired\": %llu, \"pause_lag_ms\": %.3f, \"pause_lag_max_ms\": %.3f}",
			     prio ? ", " : "", (unsigned long long)p->pfc_rx[prio], (unsigned long long)p->pfc_tx[prio],
			     (unsigned long long)p->pfc_rx_ignored[prio], (unsigned long long)ps->in_drops[prio],
			     p->holders[prio] > 0, (unsigned long long)p->pauses_timed[prio],
			     (unsigned long long)p->pauses_late[prio], (unsigned long long)p->pauses_expired[prio],
			     p->pause_lag_sum_ns[prio] / 1e6,
			     p->pause_lag_max_ns[prio] / 1e6);
		EMIT("], \"queues\": [");
		for (int q = 0; q < 8; q++) {
			struct ll_queue *s = &queue_map[p->id * LL_QUEUES + q];
			int64_t paused = p->paused_ns[q] + (p->paused_until[q] ? now - p->paused_since[q] : 0);
			long long depth = (long long)(s->enq_bytes - s->deq_bytes);
			EMIT("%s{\"enq_pkts\": %llu, \"enq_bytes\": %llu, \"deq_pkts\": %llu, \"drop_pkts\": %llu, "
			     "\"drop_bytes\": %llu, \"wd_drops\": %llu, \"marked\": %llu, \"peak_bytes\": %llu, "
			     "\"depth_bytes\": %lld, \"xoff\": %d, \"paused\": %d, \"paused_ms\": %.3f, \"storm\": %d, "
			     "\"storms\": %llu, \"restores\": %llu}",
			     q ? ", " : "", (unsigned long long)s->enq_pkts, (unsigned long long)s->enq_bytes,
			     (unsigned long long)s->deq_pkts, (unsigned long long)s->drop_pkts,
			     (unsigned long long)s->drop_bytes, (unsigned long long)s->wd_drops,
			     (unsigned long long)s->marked, (unsigned long long)s->peak, depth < 0 ? 0 : depth,
			     p->xoff[q], p->paused_until[q] != 0, paused / 1e6, p->storm[q],
			     (unsigned long long)p->storms[q], (unsigned long long)p->restores[q]);
		}
		EMIT("]}");
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	EMIT("], \"cpu_s\": %.3f}\n", ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, out + off, len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(out);
}

static int listen_status(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
		return -1;
	return fd;
}

static void *map_array(struct bpf_map *m, int *fd)
{
	*fd = bpf_map__fd(m);
	size_t size = (size_t)bpf_map__value_size(m) * bpf_map__max_entries(m);
	size = (size + 4095) & ~(size_t)4095;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	const char *object = NULL, *status_path = NULL;
	int prio = 0, opt;
	while ((opt = getopt(argc, argv, "N:c:o:s:p:r:")) != -1) {
		switch (opt) {
		case 'N':
			break; /* the lab's tag: names this process in ps */
		case 'c':
			config_path = optarg;
			break;
		case 'o':
			object = optarg;
			break;
		case 's':
			status_path = optarg;
			break;
		case 'p':
			prio = atoi(optarg);
			break;
		case 'r':
			run_dir_path = optarg; /* where the set-up left each port's scheduler batch */
			break;
		default:
			return 2;
		}
	}
	if (!config_path || !object || !status_path) {
		fprintf(stderr, "usage: fablab-lossless-dp -N TAG -c CONFIG -o BPF_OBJECT -s STATUS_SOCKET [-p PRIO]\n");
		return 2;
	}
	libbpf_set_print(libbpf_quiet);
	psched_init();
	crc_init();
	home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	nports_max = count_ports();
	if (!nports_max) {
		logf_("%s: no ports", config_path);
		return 1;
	}
	ports = calloc(nports_max, sizeof(*ports));
	hot_ids = calloc(nports_max, sizeof(*hot_ids));
	if (!ports || !hot_ids) {
		logf_("out of memory for %u ports", nports_max);
		return 1;
	}
	struct bpf_object *obj = bpf_object__open_file(object, NULL);
	if (!obj) {
		logf_("cannot open %s: %s", object, strerror(errno));
		return 1;
	}
	struct bpf_map *m;
	bpf_object__for_each_map(m, obj) {
		const char *name = bpf_map__name(m);
		if (!strcmp(name, "ll_cfg") || !strcmp(name, "ll_pstats")) {
			bpf_map__set_max_entries(m, nports_max);
			bpf_map__set_map_flags(m, BPF_F_MMAPABLE);
		} else if (!strcmp(name, "ll_queues")) {
			bpf_map__set_max_entries(m, nports_max * LL_QUEUES);
			bpf_map__set_map_flags(m, BPF_F_MMAPABLE);
		} else if (!strcmp(name, "ll_ports")) {
			bpf_map__set_max_entries(m, nports_max);
		}
	}
	int err = bpf_object__load(obj);
	if (err) {
		logf_("loading %s failed: %s", object, strerror(-err));
		return 1;
	}
	cfg_map = map_array(bpf_object__find_map_by_name(obj, "ll_cfg"), &cfg_fd);
	queue_map = map_array(bpf_object__find_map_by_name(obj, "ll_queues"), &queue_fd);
	pstat_map = map_array(bpf_object__find_map_by_name(obj, "ll_pstats"), &pstat_fd);
	ports_fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "ll_ports"));
	if (!cfg_map || !queue_map || !pstat_map) {
		logf_("cannot map the arrays: %s", strerror(errno));
		return 1;
	}
	if (read_config(1) < 0)
		return 1;
	for (int i = 0; i < nnodes; i++)
		if (open_node(&nodes[i]) < 0)
			return 1;
	/* each node's ports by local index, for the feeders a queue names */
	for (uint32_t i = 0; i < nports_max; i++) {
		struct port *p = &ports[i];
		if (!p->used)
			continue;
		if ((int)p->local + 1 > p->node->nlocal)
			p->node->nlocal = (int)p->local + 1;
	}
	for (int i = 0; i < nnodes; i++)
		nodes[i].by_local = calloc((size_t)nodes[i].nlocal + 1, sizeof(struct port *));
	struct bpf_program *eg = bpf_object__find_program_by_name(obj, "ll_egress");
	struct bpf_program *in = bpf_object__find_program_by_name(obj, "ll_ingress");
	prog_egress = eg, prog_ingress = in;
	int nattached = 0;
	for (uint32_t i = 0; i < nports_max; i++) {
		struct port *p = &ports[i];
		if (!p->used)
			continue;
		p->node->by_local[p->local] = p;
		if (attach_port(eg, in, p) < 0)
			return 1;
		nattached++;
	}
	if (prio > 0) {
		struct sched_param sp = {.sched_priority = prio};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			logf_("SCHED_FIFO %d refused (%s): running as an ordinary process", prio, strerror(errno));
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct ring_buffer *rb = ring_buffer__new(bpf_map__fd(bpf_object__find_map_by_name(obj, "ll_events")),
	                                          on_event, NULL, NULL);
	if (!rb) {
		logf_("ring buffer: %s", strerror(errno));
		return 1;
	}
	enum { K_RING = 1, K_STATUS, K_SIGNAL, K_LINKS = 1 << 20, K_NODE = 1 << 21 };
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = K_RING};
	epoll_ctl(ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(rb), &ev);
	for (int i = 0; i < nnodes; i++) {
		ev.data.u64 = K_NODE + (uint64_t)i * 2;
		epoll_ctl(ep, EPOLL_CTL_ADD, nodes[i].rx, &ev);
		ev.data.u64 = K_NODE + (uint64_t)i * 2 + 1;
		epoll_ctl(ep, EPOLL_CTL_ADD, nodes[i].nl, &ev);
		ev.data.u64 = K_LINKS + (uint64_t)i;
		epoll_ctl(ep, EPOLL_CTL_ADD, nodes[i].links, &ev);
	}
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	/* a status reader that hangs up before the end (a timeout, `head`) must not end the data
	 * plane: measured, one did, silently (SIGPIPE's default) */
	signal(SIGPIPE, SIG_IGN);
	pthread_t resumer_thread;
	int terr = pthread_create(&resumer_thread, NULL, resumer, NULL);
	if (!terr)
		resumer_running = 1;
	else
		logf_("no thread for restarts (%s): the loop does them itself", strerror(terr));
	int sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	ev.data.u64 = K_SIGNAL;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	int lfd = listen_status(status_path);
	if (lfd < 0) {
		logf_("status socket %s: %s", status_path, strerror(errno));
		return 1;
	}
	ev.data.u64 = K_STATUS;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	logf_("serving %d ports of %d nodes", nattached, nnodes);
	int64_t next_tick = 0, next_audit = 0;
	for (;;) {
		int64_t now = now_ns();
		if (now >= next_audit) {
			audit(now);
			for (uint32_t i = 0; i < nports_max; i++)
				if (ports[i].used && ports[i].readopt_at && now >= ports[i].readopt_at)
					readopt(&ports[i]);
			next_audit = now + 20000000 / AUDIT_SLICES;
		}
		int64_t next = next_audit;
		if (nhot > 0) {
			if (now >= next_tick) {
				tick(now);
				next_tick = now + 1000000; /* 1 ms */
			}
			next = next_tick < next ? next_tick : next;
		}
		int timeout = (int)((next - now + 999999) / 1000000);
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, timeout < 0 ? 0 : timeout);
		for (int i = 0; i < n; i++) {
			uint64_t k = evs[i].data.u64;
			if (k == K_RING) {
				ring_buffer__consume(rb);
			} else if (k == K_STATUS) {
				int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
				if (c >= 0) {
					/* nor may one that stops reading hold every port's PFC */
					struct timeval tv = {.tv_sec = 2, .tv_usec = 0};
					setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
					status(c);
					close(c);
				}
			} else if (k == K_SIGNAL) {
				struct signalfd_siginfo si;
				if (read(sfd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (si.ssi_signo == SIGHUP) {
					read_config(0);
					generation++;
					logf_("settings reloaded (generation %llu)", (unsigned long long)generation);
				} else {
					logf_("stopping: signal %u from pid %u", si.ssi_signo, si.ssi_pid);
					unlink(status_path);
					return 0;
				}
			} else if (k >= K_LINKS && k < K_NODE) {
				link_events(&nodes[k - K_LINKS], now_ns());
			} else if (k >= K_NODE) {
				struct node *nd = &nodes[(k - K_NODE) / 2];
				if ((k - K_NODE) % 2) {
					nl_drain(nd);
					continue;
				}
				uint8_t buf[256];
				struct sockaddr_ll from;
				socklen_t fl = sizeof(from);
				ssize_t r;
				while ((r = recvfrom(nd->rx, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl)) > 0) {
					if (from.sll_pkttype == PACKET_OUTGOING)
						continue;
					for (int j = 0; j < nd->nlocal; j++) {
						struct port *p = nd->by_local[j];
						if (p && p->ifindex == from.sll_ifindex) {
							pfc_received(p, buf, (size_t)r, now_ns());
							break;
						}
					}
					fl = sizeof(from);
				}
			}
		}
	}
}
