/*
 * The lossless BE's per-packet half, as a switch ASIC's buffer manager does it: attached to
 * tc's clsact egress and ingress of every BE port (switch ports and GPU NICs) by
 * fablab-lossless-dp, which owns the maps and does the rest (PFC frames, pausing a queue,
 * CNPs, the watchdog).
 *
 * egress (a packet enters a port's egress queue):
 *   DSCP -> TC -> queue by the port's maps; htb puts it in the queue's class (skb->priority);
 *   buffer admission: above the queue's limit it is dropped and counted, on the queue and
 *   on the port it came in by (a lossless packet, PFC on at its ingress, has the headroom
 *   above xoff; any other packet has not); ECN: CE on ECT packets with WRED's probability
 *   between its min and max thresholds, always above max; PFC: a lossless queue past xoff
 *   posts XOFF once, and every port that fed it is remembered (the control pauses those).
 * ingress (a packet left the peer's egress queue and arrived here):
 *   the peer's queue drains by it (so a queue's depth is what entered minus what arrived at
 *   the far end, whatever tc did in between); below xon a queue in XOFF posts XON; on a GPU
 *   NIC, a CE-marked RoCEv2 packet posts a CNP request, at most one per QP per interval.
 * PFC frames are not read here: tc ingress runs before netfilter's, and a gray link (an
 * nftables netdev drop) must drop them like any frame; the control reads them after it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "lossless.h"

/* Let the next filter of the hook run (a microVM's splice mirrors a NIC to its tap), then pass. */
#define LL_PASS TC_ACT_UNSPEC

/* The namespace a packet is in, for forwarded ones too: bpf_get_netns_cookie() on a tc
 * program reads the socket's, and a forwarded packet has none. So the device's, through the
 * kernel's sk_buff (CO-RE: only these fields, relocated against the running kernel's BTF). */
struct net {
	__u64 net_cookie;
} __attribute__((preserve_access_index));
typedef struct {
	struct net *net;
} possible_net_t;
struct net_device {
	possible_net_t nd_net;
} __attribute__((preserve_access_index));
struct sk_buff {
	struct net_device *dev;
} __attribute__((preserve_access_index));
extern void *bpf_cast_to_kern_ctx(void *) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LL_MAX_PORTS);
	__type(key, struct ll_port_key);
	__type(value, __u32);
} ll_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LL_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct ll_port_cfg);
} ll_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LL_MAX_PORTS * LL_QUEUES);
	__type(key, __u32);
	__type(value, struct ll_queue);
} ll_queues SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LL_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct ll_port_stat);
} ll_pstats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct ll_cnp_key);
	__type(value, __u64);
} ll_cnp_last SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} ll_events SEC(".maps");

static __always_inline __u32 *port_of(struct __sk_buff *skb, __u32 ifindex)
{
	struct sk_buff *kskb = bpf_cast_to_kern_ctx(skb);
	struct ll_port_key k = {.netns = BPF_CORE_READ(kskb, dev, nd_net.net, net_cookie), .ifindex = ifindex};
	return bpf_map_lookup_elem(&ll_ports, &k);
}

struct parsed {
	__u16 proto; /* the EtherType, network order */
	__u8 dscp, ecn, ipv4, roce;
	__u32 saddr, daddr;
	__u32 dqp;
	__u8 opcode;
	__u8 smac[6], dmac[6];
};

/* -1: not IP (queue 0, the lossy default, as a switch classifies untagged control frames). */
static __always_inline int parse(struct __sk_buff *skb, struct parsed *p)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return -1;
	__builtin_memcpy(p->smac, eth->h_source, 6);
	__builtin_memcpy(p->dmac, eth->h_dest, 6);
	p->proto = eth->h_proto;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end)
			return -1;
		p->dscp = ip->tos >> 2;
		p->ecn = ip->tos & 3;
		p->ipv4 = 1;
		p->saddr = ip->saddr;
		p->daddr = ip->daddr;
		if (ip->protocol == IPPROTO_UDP && ip->ihl == 5) {
			struct udphdr *udp = (void *)(ip + 1);
			__u8 *bth = (void *)(udp + 1);
			if ((void *)(bth + 12) <= end && udp->dest == bpf_htons(LL_ROCE_PORT)) {
				p->roce = 1;
				p->opcode = bth[0];
				p->dqp = ((__u32)bth[5] << 16) | ((__u32)bth[6] << 8) | bth[7];
			}
		}
		return 0;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end)
			return -1;
		__u8 tclass = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
		p->dscp = tclass >> 2;
		p->ecn = tclass & 3;
		return 0;
	}
	return -1;
}

static __always_inline int is_ours(const struct parsed *p)
{
	return p->proto == bpf_htons(LL_ETH_P_PFC) || p->proto == bpf_htons(LL_ETH_P_KICK);
}

static __always_inline __u32 queue_of(struct ll_port_cfg *c, struct parsed *p, int ip)
{
	__u32 tc = ip < 0 ? 0 : c->dscp_tc[p->dscp & 63] & 7;
	return c->tc_queue[tc] & 7;
}

static __always_inline __u32 tc_of(struct ll_port_cfg *c, struct parsed *p, int ip)
{
	return ip < 0 ? 0 : c->dscp_tc[p->dscp & 63] & 7;
}

static __always_inline void post(__u32 type, __u32 port, __u32 queue)
{
	struct ll_event e = {.type = type, .port = port, .queue = queue, .ts = bpf_ktime_get_ns()};
	bpf_ringbuf_output(&ll_events, &e, sizeof(e), 0);
}

SEC("tc")
int ll_egress(struct __sk_buff *skb)
{
	__u32 *id = port_of(skb, skb->ifindex);
	if (!id)
		return LL_PASS;
	__u32 port = *id;
	struct ll_port_cfg *c = bpf_map_lookup_elem(&ll_cfg, &port);
	if (!c)
		return LL_PASS;
	struct parsed p = {};
	int ip = parse(skb, &p);
	__u32 q = queue_of(c, &p, ip), tc = tc_of(c, &p, ip);
	skb->priority = LL_HTB_MAJOR << 16 | (LL_HTB_MINOR0 + q);
	if (ip < 0 && is_ours(&p))
		return LL_PASS; /* a kick: it restarts the port's queues and is not in them */
	__u32 qi = port * LL_QUEUES + q;
	struct ll_queue *s = bpf_map_lookup_elem(&ll_queues, &qi);
	if (!s)
		return LL_PASS;
	__u64 len = skb->len;
	if ((c->wd_drop >> q) & 1) {
		__sync_fetch_and_add(&s->wd_drops, 1);
		return TC_ACT_SHOT;
	}
	__s64 depth = (__s64)(s->enq_bytes - s->deq_bytes);
	if (depth < 0)
		depth = 0;

	/* Which port fed it, and is that port lossless for this priority? A packet a host
	 * itself sends has no ingress port: a NIC never drops its own (the socket waits). */
	__u32 feeder = LL_NO_PORT;
	int lossless = 0;
	struct ll_port_cfg *fc = NULL;
	if (skb->ingress_ifindex) {
		__u32 *f = port_of(skb, skb->ingress_ifindex);
		if (f) {
			feeder = *f;
			fc = bpf_map_lookup_elem(&ll_cfg, &feeder);
			if (fc)
				lossless = (fc->pfc >> tc) & 1 && (c->pfc >> tc) & 1;
		}
	}
	__u32 flocal = LL_MAX_LOCAL;
	if (fc && fc->local < LL_MAX_LOCAL) {
		flocal = fc->local;
		__u64 bit = 1ULL << (flocal & 63);
		__u32 w = (flocal >> 6) & (LL_FEEDER_WORDS - 1);
		if (!(s->seen[w] & bit) && !(__sync_fetch_and_or(&s->seen[w], bit) & bit) && fc->lossless_limit > fc->xoff)
			__sync_fetch_and_add(&s->headroom, fc->lossless_limit - fc->xoff);
	}
	if (!(c->flags & LL_HOST) || skb->ingress_ifindex) {
		__u64 limit = c->lossy_limit;
		if (lossless) {
			/* each port that feeds a lossless queue brings its own headroom, as each
			 * ingress priority group has its own on a switch: an 800G uplink's is twice a
			 * 400G host port's (what is in flight after a pause grows with the speed) */
			__u64 room = s->headroom;
			limit = c->xoff + (room ? room : c->lossless_limit - c->xoff);
		}
		if ((__u64)depth + len > limit) {
			__sync_fetch_and_add(&s->drop_pkts, 1);
			__sync_fetch_and_add(&s->drop_bytes, len);
			if (feeder != LL_NO_PORT) {
				struct ll_port_stat *fs = bpf_map_lookup_elem(&ll_pstats, &feeder);
				if (fs)
					__sync_fetch_and_add(&fs->in_drops[tc], 1);
			}
			return TC_ACT_SHOT;
		}
	}
	__sync_fetch_and_add(&s->enq_pkts, 1);
	__sync_fetch_and_add(&s->enq_bytes, len);
	depth += len;
	if ((__u64)depth > s->peak)
		s->peak = depth; /* a high-water mark: a lost race only makes it a little low */

	if (flocal < LL_MAX_LOCAL)
		__sync_fetch_and_or(&s->feeders[(flocal >> 6) & (LL_FEEDER_WORDS - 1)], 1ULL << (flocal & 63));
	if (((c->pfc >> tc) & 1) && (__u64)depth > c->xoff && !s->xoff) {
		if (__sync_val_compare_and_swap(&s->xoff, 0, 1) == 0)
			post(LL_EV_XOFF, port, q);
	}
	if (((c->ecn >> q) & 1) && p.ecn && (__u64)depth > c->wred_min) {
		int mark = (__u64)depth >= c->wred_max;
		if (!mark && c->wred_max > c->wred_min) {
			/* WRED: the probability grows linearly from 0 at min to wred_prob % at max */
			__u64 span = c->wred_max - c->wred_min;
			__u64 scaled = ((__u64)depth - c->wred_min) * c->wred_prob * 100 / span; /* in 1/10000 */
			mark = (bpf_get_prandom_u32() % 10000) < scaled;
		}
		if (mark && p.ecn != 3) {
			bpf_skb_ecn_set_ce(skb);
			__sync_fetch_and_add(&s->marked, 1);
		}
	}
	return LL_PASS;
}

SEC("tc")
int ll_ingress(struct __sk_buff *skb)
{
	__u32 *id = port_of(skb, skb->ifindex);
	if (!id)
		return LL_PASS;
	__u32 port = *id;
	struct ll_port_cfg *c = bpf_map_lookup_elem(&ll_cfg, &port);
	if (!c)
		return LL_PASS;
	struct parsed p = {};
	int ip = parse(skb, &p);
	if (ip < 0 && is_ours(&p)) {
		/* MAC control frames and kicks never sat in the peer's queues; a kick ends here */
		return p.proto == bpf_htons(LL_ETH_P_KICK) ? TC_ACT_SHOT : LL_PASS;
	}
	__u32 peer = c->peer;
	struct ll_port_cfg *pc = bpf_map_lookup_elem(&ll_cfg, &peer);
	if (pc) {
		__u32 q = queue_of(pc, &p, ip);
		__u32 qi = peer * LL_QUEUES + q;
		struct ll_queue *s = bpf_map_lookup_elem(&ll_queues, &qi);
		if (s) {
			__sync_fetch_and_add(&s->deq_pkts, 1);
			__sync_fetch_and_add(&s->deq_bytes, skb->len);
			if (s->xoff) {
				__s64 depth = (__s64)(s->enq_bytes - s->deq_bytes);
				if (depth < (__s64)pc->xon && __sync_val_compare_and_swap(&s->xoff, 1, 0) == 1)
					post(LL_EV_XON, peer, q);
			}
		}
	}
	if ((c->flags & LL_HOST) && p.roce && p.ecn == 3 && p.opcode != LL_OPCODE_CNP) {
		struct ll_port_stat *ps = bpf_map_lookup_elem(&ll_pstats, &port);
		if (ps)
			__sync_fetch_and_add(&ps->ce_rx, 1);
		struct ll_cnp_key k = {.port = port, .saddr = p.saddr, .qp = p.dqp};
		__u64 now = bpf_ktime_get_ns();
		__u64 *last = bpf_map_lookup_elem(&ll_cnp_last, &k);
		if (!last || now - *last >= c->cnp_interval_ns) {
			bpf_map_update_elem(&ll_cnp_last, &k, &now, BPF_ANY);
			struct ll_event e = {.type = LL_EV_CE, .port = port, .saddr = p.saddr, .daddr = p.daddr, .qp = p.dqp};
			__builtin_memcpy(e.smac, p.smac, 6);
			__builtin_memcpy(e.dmac, p.dmac, 6);
			bpf_ringbuf_output(&ll_events, &e, sizeof(e), 0);
		}
	}
	return LL_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
