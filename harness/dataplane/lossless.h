/* What fablab-lossless-dp (lossless_dp.c) and its tc programs (lossless.bpf.c) share: the
 * maps' keys and values and the events. Fixed-size types only: both sides read the same bytes. */
#ifndef FABLAB_LOSSLESS_H
#define FABLAB_LOSSLESS_H

#define LL_MAX_PORTS 8192
#define LL_QUEUES 8
#define LL_MAX_LOCAL 256 /* ports of one node that can feed a queue */
#define LL_FEEDER_WORDS (LL_MAX_LOCAL / 64)
#define LL_NO_PORT 0xffffffffu
#define LL_HTB_MAJOR 0xfb /* htb's handle on every BE port: fb: */
#define LL_HTB_MINOR0 0x10 /* queue q is class fb:(10+q), its pause tbf qdisc (20+q): */
#define LL_ROCE_PORT 4791
#define LL_OPCODE_CNP 0x81
#define LL_ETH_P_PFC 0x8808
#define LL_ETH_P_KICK 0x88b5 /* IEEE 802 local experimental: restarts a port's queues */

enum { LL_HOST = 1 };
enum { LL_EV_XOFF = 1, LL_EV_XON = 2, LL_EV_CE = 3 };

struct ll_port_key {
	__u64 netns; /* the namespace's cookie (SO_NETNS_COOKIE) */
	__u32 ifindex;
	__u32 pad;
};

struct ll_port_cfg {
	__u32 id, peer, local, flags;
	__u8 dscp_tc[64];
	__u8 tc_queue[8];
	__u8 pfc; /* priorities with PFC on this port: it sends and honours pause for them */
	__u8 ecn; /* queues that mark ECN by the WRED profile */
	__u8 wd_drop; /* queues the PFC watchdog drops (a storm) */
	__u8 pad[5];
	__u64 xoff; /* a lossless queue deeper than this pauses the ports that feed it */
	__u64 xon;  /* and releases them below this */
	__u64 lossless_limit; /* a lossless packet is dropped above this: xoff plus headroom */
	__u64 lossy_limit;    /* any other packet above this */
	__u64 wred_min, wred_max, wred_prob; /* bytes, bytes, percent at max */
	__u64 cnp_interval_ns; /* a GPU NIC sends at most one CNP per QP per this */
};

struct ll_queue {
	__u64 enq_pkts, enq_bytes, deq_pkts, deq_bytes, drop_pkts, drop_bytes, marked, peak, wd_drops;
	__u64 feeders[LL_FEEDER_WORDS]; /* local indexes of the ports that fed it since last read */
	__u64 seen[LL_FEEDER_WORDS]; /* every port that fed it since it last drained below XON */
	__u64 xoff; /* 1 while the queue holds its feeders paused */
	__u64 headroom; /* what the ports in `seen` bring: each its own ingress PG's headroom */
};

struct ll_port_stat {
	__u64 in_drops[8]; /* packets that came in here, per priority, dropped at an egress queue */
	__u64 ce_rx;       /* CE-marked RoCEv2 packets a GPU NIC received */
};

struct ll_cnp_key {
	__u32 port, saddr, qp, pad;
};

struct ll_event {
	__u32 type, port, queue, qp;
	__u32 saddr, daddr;
	__u8 smac[6], dmac[6];
	__u32 pad;
	__u64 ts; /* XOFF and XON: when the queue crossed its threshold (CLOCK_MONOTONIC, ns) */
};
#endif
