/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * svm-net-bench: the network probe of the test guest and of bench/, built
 * static into the guest (tests/guest/build.sh) and for the host
 * (build/bench/net_bench), so both ends of a measurement run the same code:
 *
 *   svm-net-bench udp-sink PORT SECONDS
 *       prints "udp-sink: got TEXT from ADDR" for every datagram to PORT
 *       (any address of the host) for SECONDS or until one says "stop",
 *       one line each, flushed; the isolation test counts where packets
 *       arrive with it
 *   svm-net-bench udp-send [-s SRC] ADDR PORT TEXT
 *       one datagram, from SRC when given (an address the sender has)
 *   svm-net-bench raw-udp DEV DSTMAC SRC ADDR PORT TEXT
 *       one Ethernet frame out of DEV (AF_PACKET, its own source MAC) to
 *       DSTMAC carrying a datagram from any SRC to ADDR:PORT, e.g. to the
 *       IEEE link-local group 01:80:c2:00:00:0e with a spoofed source
 *   svm-net-bench raw-vxlan DEV DSTMAC SRC ADDR VNI INNERDST PORT TEXT
 *       the same to ADDR's VXLAN port (4789), carrying into VNI a broadcast
 *       frame with a datagram to INNERDST:PORT
 *   svm-net-bench tcp-serve PORT SECONDS
 *       answers tcp-client's two connections (echo, then a count of what
 *       it read) until the second is done or SECONDS pass
 *   svm-net-bench tcp-client ADDR PORT ROUNDS MIB
 *       ROUNDS round trips of 64 bytes (TCP_NODELAY), then MIB MiB in bulk;
 *       prints "net-bench: rtt median U us p90 U us; bulk N MiB in S s: R
 *       MiB/s"
 *
 * IPv4 only, as the job network. Exit status 0 on success, 1 on an error
 * (said on stderr), 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG_BYTES     64
#define BULK_CHUNK    (64 * 1024)
#define CONNECT_TRIES 60 /* 0.5 s apart: the server may start later */

static const char *prog = "svm-net-bench";

static int die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	return 1;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: %s udp-sink PORT SECONDS\n"
		"       %s udp-send [-s SRC] ADDR PORT TEXT\n"
		"       %s raw-udp DEV DSTMAC SRC ADDR PORT TEXT\n"
		"       %s raw-vxlan DEV DSTMAC SRC ADDR VNI INNERDST PORT "
		"TEXT\n"
		"       %s tcp-serve PORT SECONDS\n"
		"       %s tcp-client ADDR PORT ROUNDS MIB\n",
		prog, prog, prog, prog, prog, prog);
	return 2;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A positive integer argument, or -1. */
static long number(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 1000000)
		return -1;
	return v;
}

static int addr_of(const char *ip, long port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (!ip)
		return 0;
	return inet_pton(AF_INET, ip, &sa->sin_addr) == 1 ? 0 : -1;
}

static int bound_socket(int type, long port)
{
	struct sockaddr_in sa;
	int one = 1, fd = socket(AF_INET, type, 0);

	if (fd < 0)
		return -1;
	addr_of(NULL, port, &sa);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits for @fd to be readable until @deadline: 1 readable, 0 timed out. */
static int wait_readable(int fd, double deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	double left = deadline - now();
	int r;

	if (left <= 0)
		return 0;
	r = poll(&p, 1, (int)(left * 1000) + 1);
	return r < 0 ? -1 : r;
}

static int udp_sink(long port, long secs)
{
	double deadline = now() + secs;
	char buf[1500], from[INET_ADDRSTRLEN];
	int fd = bound_socket(SOCK_DGRAM, port), r;

	if (fd < 0)
		return die("udp-sink: cannot bind the port");
	printf("udp-sink: listening on %ld\n", port);
	fflush(stdout);
	while ((r = wait_readable(fd, deadline)) > 0) {
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);
		ssize_t n = recvfrom(fd, buf, sizeof(buf) - 1, 0,
				     (struct sockaddr *)&sa, &len);

		if (n < 0)
			break;
		buf[n] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (!strcmp(buf, "stop"))
			break;
		inet_ntop(AF_INET, &sa.sin_addr, from, sizeof(from));
		printf("udp-sink: got %s from %s\n", buf, from);
		fflush(stdout);
	}
	close(fd);
	return r < 0 ? die("udp-sink: poll") : 0;
}

static int udp_send(const char *src, const char *dst, long port,
		    const char *text)
{
	struct sockaddr_in to, me;
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM, 0), r = 0;

	if (fd < 0)
		return die("udp-send: socket");
	if (addr_of(dst, port, &to) < 0 || (src && addr_of(src, 0, &me) < 0)) {
		close(fd);
		return usage();
	}
	/* Broadcast too: the test's "another job sees none of it" sends one. */
	if (setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one)) < 0 ||
	    (src && bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0) ||
	    sendto(fd, text, strlen(text), 0, (struct sockaddr *)&to,
		   sizeof(to)) < 0)
		r = die("udp-send");
	close(fd);
	return r;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads exactly @len bytes: 1 done, 0 end of stream first, -1 error. */
static int read_all(int fd, char *buf, size_t len)
{
	while (len) {
		ssize_t n = read(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? 0 : -1;
		buf += n;
		len -= (size_t)n;
	}
	return 1;
}

/* First connection: echo every message; second: count bytes to the end of
 * the stream and answer the count. */
static int serve_one(int c, int nth)
{
	static char buf[BULK_CHUNK];
	unsigned long long total = 0;
	ssize_t n;
	int r;

	if (nth == 0) {
		while ((r = read_all(c, buf, MSG_BYTES)) == 1)
			if (write_all(c, buf, MSG_BYTES) < 0)
				return -1;
		return r;
	}
	while ((n = read(c, buf, sizeof(buf))) > 0)
		total += (unsigned long long)n;
	if (n < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%llu\n", total);
	return write_all(c, buf, (size_t)n);
}

static int tcp_serve(long port, long secs)
{
	double deadline = now() + secs;
	int one = 1, fd = bound_socket(SOCK_STREAM, port), nth;

	if (fd < 0 || listen(fd, 2) < 0)
		return die("tcp-serve: cannot listen on the port");
	printf("tcp-serve: listening on %ld\n", port);
	fflush(stdout);
	for (nth = 0; nth < 2; nth++) {
		int c = -1;

		if (wait_readable(fd, deadline) <= 0 ||
		    (c = accept(fd, NULL, NULL)) < 0)
			break;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (serve_one(c, nth) < 0) {
			close(c);
			break;
		}
		close(c);
	}
	close(fd);
	if (nth == 2)
		return 0;
	fprintf(stderr,
		"%s: tcp-serve: connection %d of 2 not served in %ld s\n", prog,
		nth + 1, secs);
	return 1;
}

static int tcp_connect(const char *dst, long port)
{
	struct sockaddr_in sa;
	int one = 1;

	if (addr_of(dst, port, &sa) < 0) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < CONNECT_TRIES; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
			return fd;
		}
		close(fd);
		usleep(500000);
	}
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int tcp_client(const char *dst, long port, long rounds, long mib)
{
	static char buf[BULK_CHUNK];
	double *rtt = calloc((size_t)rounds, sizeof(*rtt)), t0, secs;
	unsigned long long want = (unsigned long long)mib << 20, got = 0;
	int fd = -1, r = 1;

	if (!rtt)
		return die("tcp-client");
	memset(buf, 'x', sizeof(buf));
	fd = tcp_connect(dst, port);
	if (fd < 0) {
		die("tcp-client: cannot connect (round trips)");
		goto out;
	}
	for (long i = 0; i < rounds; i++) {
		t0 = now();
		if (write_all(fd, buf, MSG_BYTES) < 0 ||
		    read_all(fd, buf, MSG_BYTES) != 1) {
			die("tcp-client: round trip");
			goto out;
		}
		rtt[i] = (now() - t0) * 1e6;
	}
	close(fd);
	qsort(rtt, (size_t)rounds, sizeof(*rtt), cmp_double);

	fd = tcp_connect(dst, port);
	if (fd < 0) {
		die("tcp-client: cannot connect (bulk)");
		goto out;
	}
	t0 = now();
	for (unsigned long long sent = 0; sent < want; sent += BULK_CHUNK) {
		if (write_all(fd, buf, BULK_CHUNK) < 0) {
			die("tcp-client: bulk");
			goto out;
		}
	}
	/* The server's count after our end of stream: all of it arrived. */
	if (shutdown(fd, SHUT_WR) < 0 || read(fd, buf, 32) <= 0) {
		die("tcp-client: no count from the server");
		goto out;
	}
	secs = now() - t0;
	got = strtoull(buf, NULL, 10);
	if (got != want) {
		fprintf(stderr, "%s: tcp-client: server read %llu of %llu\n",
			prog, got, want);
		goto out;
	}
	printf("net-bench: rtt median %.1f us p90 %.1f us; bulk %ld MiB in "
	       "%.3f s: %.1f MiB/s\n",
	       rtt[rounds / 2], rtt[rounds * 9 / 10], mib, secs, mib / secs);
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	free(rtt);
	return r;
}

static uint16_t ip_checksum(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* An IPv4 header and UDP datagram (no UDP checksum) at @buf; its length,
 * or 0 when an address does not parse. */
static size_t ipv4_udp(uint8_t *buf, const char *src, const char *dst,
		       long port, const void *data, size_t len)
{
	size_t total = 20 + 8 + len;
	uint16_t csum;

	memset(buf, 0, 28);
	buf[0] = 0x45;
	buf[2] = (uint8_t)(total >> 8);
	buf[3] = (uint8_t)total;
	buf[8] = 64;
	buf[9] = IPPROTO_UDP;
	if (inet_pton(AF_INET, src, buf + 12) != 1 ||
	    inet_pton(AF_INET, dst, buf + 16) != 1)
		return 0;
	csum = ip_checksum(buf, 20);
	buf[10] = (uint8_t)(csum >> 8);
	buf[11] = (uint8_t)csum;
	buf[20] = 0x9c; /* source port 40000 */
	buf[21] = 0x40;
	buf[22] = (uint8_t)(port >> 8);
	buf[23] = (uint8_t)port;
	buf[24] = (uint8_t)((8 + len) >> 8);
	buf[25] = (uint8_t)(8 + len);
	memcpy(buf + 28, data, len);
	return total;
}

/* One frame out of @dev to @dstmac: its own source MAC, EtherType IPv4. */
static int raw_send(const char *dev, const char *dstmac, const uint8_t *pkt,
		    size_t len)
{
	uint8_t frame[2048];
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_halen = 6 };
	struct ifreq ifr = { 0 };
	unsigned m[6];
	int fd, r = 1;

	if (len + 14 > sizeof(frame) ||
	    sscanf(dstmac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3],
		   &m[4], &m[5]) != 6)
		return usage();
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0)
		return die("raw: socket");
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		die("raw: no such device");
		goto out;
	}
	for (int i = 0; i < 6; i++)
		frame[i] = sll.sll_addr[i] = (uint8_t)m[i];
	memcpy(frame + 6, ifr.ifr_hwaddr.sa_data, 6);
	frame[12] = 0x08;
	frame[13] = 0x00;
	memcpy(frame + 14, pkt, len);
	sll.sll_ifindex = (int)if_nametoindex(dev);
	if (sendto(fd, frame, len + 14, 0, (struct sockaddr *)&sll,
		   sizeof(sll)) < 0) {
		die("raw: send");
		goto out;
	}
	r = 0;
out:
	close(fd);
	return r;
}

/* argv: DEV DSTMAC SRC ADDR PORT TEXT */
static int raw_udp(char **argv)
{
	uint8_t pkt[1500];
	size_t n, len = strlen(argv[5]);

	if (len > 1400 || number(argv[4]) <= 0 ||
	    !(n = ipv4_udp(pkt, argv[2], argv[3], number(argv[4]), argv[5],
			   len)))
		return usage();
	return raw_send(argv[0], argv[1], pkt, n);
}

/* argv: DEV DSTMAC SRC ADDR VNI INNERDST PORT TEXT */
static int raw_vxlan(char **argv)
{
	uint8_t inner[1400], pkt[1500];
	size_t n, len = strlen(argv[7]);
	long vni = number(argv[4]);

	if (len > 1000 || vni <= 0 || vni > 0xffffff || number(argv[6]) <= 0)
		return usage();
	/* VXLAN header, then the inner frame: broadcast, a made-up source */
	memset(inner, 0, 8);
	inner[0] = 0x08;
	inner[4] = (uint8_t)(vni >> 16);
	inner[5] = (uint8_t)(vni >> 8);
	inner[6] = (uint8_t)vni;
	memcpy(inner + 8,
	       "\xff\xff\xff\xff\xff\xff\x02\x00\x5e\x00\x53\x02"
	       "\x08\x00",
	       14);
	n = ipv4_udp(inner + 22, argv[2], argv[5], number(argv[6]), argv[7],
		     len);
	if (!n)
		return usage();
	n = ipv4_udp(pkt, argv[2], argv[3], 4789, inner, n + 22);
	if (!n)
		return usage();
	return raw_send(argv[0], argv[1], pkt, n);
}

int main(int argc, char **argv)
{
	const char *src = NULL;

	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "udp-sink") && argc == 4 && number(argv[2]) > 0 &&
	    number(argv[3]) > 0)
		return udp_sink(number(argv[2]), number(argv[3]));
	if (!strcmp(argv[1], "udp-send")) {
		argv += 2;
		argc -= 2;
		if (argc >= 2 && !strcmp(argv[0], "-s")) {
			src = argv[1];
			argv += 2;
			argc -= 2;
		}
		if (argc == 3 && number(argv[1]) > 0)
			return udp_send(src, argv[0], number(argv[1]), argv[2]);
		return usage();
	}
	if (!strcmp(argv[1], "raw-udp") && argc == 8)
		return raw_udp(argv + 2);
	if (!strcmp(argv[1], "raw-vxlan") && argc == 10)
		return raw_vxlan(argv + 2);
	if (!strcmp(argv[1], "tcp-serve") && argc == 4 && number(argv[2]) > 0 &&
	    number(argv[3]) > 0)
		return tcp_serve(number(argv[2]), number(argv[3]));
	if (!strcmp(argv[1], "tcp-client") && argc == 6 &&
	    number(argv[3]) > 0 && number(argv[4]) > 0 && number(argv[5]) > 0)
		return tcp_client(argv[2], number(argv[3]), number(argv[4]),
				  number(argv[5]));
	return usage();
}
