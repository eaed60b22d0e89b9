/*
 * peers-dpdk: DPDK's rte_lpm, rte_fib (DIR24_8), rte_lpm6 and rte_fib6 (TRIE) on the
 * table and keys that `fibkit-peers prep` wrote, by the same method as
 * fibkit's benchmark: keys precomputed (converted to DPDK's key types before
 * timing), every result stored, runs of at least MIN_SECONDS, RUNS runs.
 *
 *   peers-dpdk [EAL args] -- FAMILY DIR MIN_SECONDS RUNS
 *
 * FAMILY is 4 or 6. Reads DIR/table.txt (`prefix/len label` lines) and
 * DIR/keys.bin (a fibkit binary trace: 8-byte header, then big-endian
 * addresses); writes DIR/results/NAME.res (u32 label per key, UINT32_MAX
 * for no match) and DIR/results/NAME.timing (`peer NAME keys build_s
 * mlps,...`). File formats: bench/peers/README.md.
 *
 * Lookups go through DPDK's bulk functions in bursts of 64 keys, as DPDK
 * applications call them per burst of received packets (rte_lpm's bulk
 * function keeps a variable-length array of n entries on the stack, so one
 * call over all keys is not possible anyway). IPv4 is timed three ways:
 * rte_lpm_lookup_bulk, rte_lpm_lookupx4 (the SSE path DPDK's l3fwd uses) and
 * rte_fib_lookup_bulk; IPv6 two ways: rte_lpm6_lookup_bulk_func and
 * rte_fib6_lookup_bulk; rte_fib and rte_fib6 are also timed with their AVX-512
 * lookup where the CPU and the DPDK build have it.
 *
 * Next hops: rte_lpm stores 24 bits, rte_lpm6 21 bits and rte_fib/rte_fib6 with 4-byte entries
 * 31 bits (minus the value used for "no route"). When a table's labels do
 * not fit, they are stored as indices into a table of the distinct labels
 * and mapped back after timing (the mapping is outside the timed loop).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_fib.h>
#include <rte_fib6.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#define BURST 64
#define NO_MATCH UINT32_MAX

struct route {
	uint8_t addr[16]; /* network order; IPv4 in the first 4 bytes */
	uint8_t plen;
	uint32_t label;
};

static void die(const char *what)
{
	fprintf(stderr, "peers-dpdk: %s\n", what);
	exit(2);
}

static void die_route(const char *what, int family, const struct route *r, int err)
{
	char text[INET6_ADDRSTRLEN];
	inet_ntop(family == 4 ? AF_INET : AF_INET6, r->addr, text, sizeof text);
	fprintf(stderr, "peers-dpdk: %s %s/%u label %" PRIu32 ": %s\n", what, text, r->plen,
		r->label, rte_strerror(err < 0 ? -err : err));
	exit(2);
}

static void *xmalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);
	if (p == NULL)
		die("out of memory");
	return p;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct route *read_table(const char *path, int family, size_t *count)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		perror(path);
		exit(2);
	}
	size_t cap = 1 << 16, n = 0;
	struct route *routes = xmalloc(cap * sizeof *routes);
	char line[256];
	unsigned long lineno = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		lineno++;
		char prefix[128];
		unsigned plen;
		uint32_t label;
		char *slash;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (sscanf(line, "%127s %" SCNu32, prefix, &label) != 2 ||
		    (slash = strchr(prefix, '/')) == NULL ||
		    sscanf(slash + 1, "%u", &plen) != 1 ||
		    plen > (family == 4 ? 32u : 128u)) {
			fprintf(stderr, "peers-dpdk: %s:%lu: expected `prefix/len label`\n",
				path, lineno);
			exit(2);
		}
		*slash = '\0';
		if (n == cap) {
			cap *= 2;
			routes = realloc(routes, cap * sizeof *routes);
			if (routes == NULL)
				die("out of memory");
		}
		memset(&routes[n], 0, sizeof routes[n]);
		if (inet_pton(family == 4 ? AF_INET : AF_INET6, prefix, routes[n].addr) != 1) {
			fprintf(stderr, "peers-dpdk: %s:%lu: `%s` is not an IPv%d address\n",
				path, lineno, prefix, family);
			exit(2);
		}
		routes[n].plen = plen;
		routes[n].label = label;
		n++;
	}
	fclose(f);
	*count = n;
	return routes;
}

static uint32_t v4_of(const struct route *r)
{
	uint32_t net;
	memcpy(&net, r->addr, 4);
	return ntohl(net);
}

/* keys.bin is a fibkit binary trace: "FKTR" 0x01, the family (4 or 6), two
 * zero bytes, then the addresses big-endian (network order). */
#define KEYS_HEADER 8

static void *read_keys(const char *path, int family, size_t *count)
{
	size_t key_bytes = family == 4 ? 4 : 16;
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		exit(2);
	}
	uint8_t header[KEYS_HEADER];
	if (fread(header, 1, KEYS_HEADER, f) != KEYS_HEADER ||
	    memcmp(header, "FKTR\x01", 5) != 0 || header[5] != family)
		die("key file is not a fibkit binary trace of the family asked for");
	fseek(f, 0, SEEK_END);
	long bytes = ftell(f) - KEYS_HEADER;
	fseek(f, KEYS_HEADER, SEEK_SET);
	if (bytes < 0 || bytes % key_bytes != 0)
		die("key file is not a whole number of keys");
	void *keys = xmalloc(bytes);
	if (fread(keys, 1, bytes, f) != (size_t)bytes)
		die("short read of the key file");
	fclose(f);
	*count = bytes / key_bytes;
	return keys;
}

/*
 * Labels as stored in the structure: the labels themselves when all are at
 * most `max`, else indices into `labels` (the distinct labels, sorted).
 */
struct labels {
	uint32_t *distinct;
	size_t count;
	int mapped;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static struct labels label_map(const struct route *routes, size_t n, uint64_t max)
{
	struct labels l = {0};
	l.distinct = xmalloc(n * sizeof *l.distinct);
	for (size_t i = 0; i < n; i++)
		l.distinct[i] = routes[i].label;
	qsort(l.distinct, n, sizeof *l.distinct, cmp_u32);
	for (size_t i = 0; i < n; i++)
		if (l.count == 0 || l.distinct[l.count - 1] != l.distinct[i])
			l.distinct[l.count++] = l.distinct[i];
	l.mapped = l.count > 0 && l.distinct[l.count - 1] > max;
	if (l.mapped && l.count - 1 > max)
		die("more distinct labels than the next-hop field can index");
	return l;
}

static uint64_t stored(const struct labels *l, uint32_t label)
{
	if (!l->mapped)
		return label;
	uint32_t *hit = bsearch(&label, l->distinct, l->count, sizeof label, cmp_u32);
	return hit - l->distinct;
}

static uint32_t loaded(const struct labels *l, uint64_t value)
{
	return l->mapped ? l->distinct[value] : (uint32_t)value;
}

/* tbl8 groups a DIR24_8-style layout needs: for each level boundary
 * b = 24, 32, ..., the distinct b-bit heads of routes longer than b. */
static int cmp_u128(const void *a, const void *b)
{
	unsigned __int128 x = *(const unsigned __int128 *)a, y = *(const unsigned __int128 *)b;
	return x < y ? -1 : x > y;
}

static unsigned __int128 as_u128(const uint8_t *addr)
{
	unsigned __int128 v = 0;
	for (int i = 0; i < 16; i++)
		v = v << 8 | addr[i];
	return v;
}

static size_t tbl8_groups(const struct route *routes, size_t n, int bits)
{
	unsigned __int128 *heads = xmalloc(n * sizeof *heads);
	size_t total = 0;
	for (int b = 24; b < bits; b += 8) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (routes[i].plen > b)
				heads[m++] = as_u128(routes[i].addr) >> (128 - b);
		qsort(heads, m, sizeof *heads, cmp_u128);
		for (size_t i = 0; i < m; i++)
			if (i == 0 || heads[i] != heads[i - 1])
				total++;
	}
	free(heads);
	return total;
}

struct timing {
	double build_s;
	double *mlps;
};

static void write_results(const char *dir, const char *stem, const char *engine, size_t nkeys,
			  double build_s, const double *mlps, int runs, const uint32_t *labels)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/results/%s.res", dir, stem);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(labels, sizeof *labels, nkeys, f) != nkeys || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
	snprintf(path, sizeof path, "%s/results/%s.timing", dir, stem);
	f = fopen(path, "w");
	if (f == NULL) {
		perror(path);
		exit(2);
	}
	fprintf(f, "peer\t%s\t%zu\t%.4f\t", engine, nkeys, build_s);
	for (int r = 0; r < runs; r++)
		fprintf(f, "%s%.4f", r ? "," : "", mlps[r]);
	fprintf(f, "\n");
	fclose(f);
	double sorted[64];
	memcpy(sorted, mlps, runs * sizeof *mlps);
	for (int i = 1; i < runs; i++)
		for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
			double t = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	printf("  %-24s %8.2f Mlps (%.2f-%.2f), build %.2f s\n", engine, sorted[runs / 2],
	       sorted[0], sorted[runs - 1], build_s);
}

/* The timing loop of fibkit's benchmark: whole passes over the keys until
 * at least `min_s` has elapsed; Mlps of each of `runs` runs into `mlps`. */
#define TIME_RUNS(nkeys, min_s, runs, mlps, PASS)                              \
	do {                                                                       \
		for (int run_ = 0; run_ < (runs); run_++) {                            \
			double start_ = now(), elapsed_;                                   \
			uint64_t lookups_ = 0;                                             \
			do {                                                               \
				PASS;                                                          \
				lookups_ += (nkeys);                                           \
				elapsed_ = now() - start_;                                     \
			} while (elapsed_ < (min_s));                                      \
			(mlps)[run_] = lookups_ / elapsed_ / 1e6;                          \
		}                                                                      \
	} while (0)

/*
 * Builders. tbl8 groups are allocated up front; `groups` is what the routes
 * need at the least (tbl8_groups), and a build that runs out (ENOSPC) is
 * thrown away and redone with twice as many: rte_fib6's trie needs several
 * times the route-head count, as it also splits tbl8 groups at the edges of
 * each route's range. The build time reported is the successful build's.
 */
static struct rte_lpm *build_lpm(const struct route *routes, size_t n, const struct labels *l,
				 size_t groups, double *build_s)
{
	for (size_t tbl8 = groups + groups / 4 + 256;; tbl8 *= 2) {
		struct rte_lpm_config conf = {.max_rules = n + 1, .number_tbl8s = tbl8};
		double t0 = now();
		struct rte_lpm *lpm = rte_lpm_create("peers_lpm", SOCKET_ID_ANY, &conf);
		if (lpm == NULL)
			die("rte_lpm_create failed (more memory: raise PEERS_EAL_MEM)");
		int err = 0;
		size_t i;
		for (i = 0; i < n && err == 0; i++)
			err = rte_lpm_add(lpm, v4_of(&routes[i]), routes[i].plen,
					  stored(l, routes[i].label));
		*build_s = now() - t0;
		if (err == 0)
			return lpm;
		rte_lpm_free(lpm);
		if (err != -ENOSPC || tbl8 >= RTE_LPM_MAX_TBL8_NUM_GROUPS)
			die_route("rte_lpm_add", 4, &routes[i - 1], err);
	}
}

static struct rte_fib *build_fib(const struct route *routes, size_t n, const struct labels *l,
				 uint64_t miss, size_t groups, double *build_s)
{
	for (size_t tbl8 = groups + groups / 4 + 256;; tbl8 *= 2) {
		struct rte_fib_conf conf = {
			.type = RTE_FIB_DIR24_8,
			.default_nh = miss,
			.max_routes = 2 * n + 16, /* the RIB inside also needs branching nodes */
			.dir24_8 = {.nh_sz = RTE_FIB_DIR24_8_4B, .num_tbl8 = tbl8},
		};
		double t0 = now();
		struct rte_fib *fib = rte_fib_create("peers_fib", SOCKET_ID_ANY, &conf);
		if (fib == NULL)
			die("rte_fib_create failed (more memory: raise PEERS_EAL_MEM)");
		int err = 0;
		size_t i;
		for (i = 0; i < n && err == 0; i++)
			err = rte_fib_add(fib, v4_of(&routes[i]), routes[i].plen,
					  stored(l, routes[i].label));
		*build_s = now() - t0;
		if (err == 0)
			return fib;
		rte_fib_free(fib);
		if (err != -ENOSPC || tbl8 >= (1u << 24))
			die_route("rte_fib_add", 4, &routes[i - 1], err);
	}
}

static struct rte_fib6 *build_fib6(const struct route *routes, size_t n, const struct labels *l,
				   uint64_t miss, size_t groups, double *build_s)
{
	for (size_t tbl8 = 4 * groups + 256;; tbl8 *= 2) {
		struct rte_fib6_conf conf = {
			.type = RTE_FIB6_TRIE,
			.default_nh = miss,
			.max_routes = 2 * n + 16, /* the RIB inside also needs branching nodes */
			.trie = {.nh_sz = RTE_FIB6_TRIE_4B, .num_tbl8 = tbl8},
		};
		double t0 = now();
		struct rte_fib6 *fib = rte_fib6_create("peers_fib6", SOCKET_ID_ANY, &conf);
		if (fib == NULL)
			die("rte_fib6_create failed (more memory: raise PEERS_EAL_MEM)");
		int err = 0;
		size_t i;
		for (i = 0; i < n && err == 0; i++)
			err = rte_fib6_add(fib, routes[i].addr, routes[i].plen,
					   stored(l, routes[i].label));
		*build_s = now() - t0;
		if (err == 0)
			return fib;
		rte_fib6_free(fib);
		if (err != -ENOSPC || tbl8 >= (1u << 24))
			die_route("rte_fib6_add", 6, &routes[i - 1], err);
	}
}

static struct rte_lpm6 *build_lpm6(const struct route *routes, size_t n, const struct labels *l,
				   size_t groups, double *build_s)
{
	for (size_t tbl8 = groups + groups / 4 + 256;; tbl8 *= 2) {
		struct rte_lpm6_config conf = {.max_rules = n + 1, .number_tbl8s = tbl8};
		double t0 = now();
		struct rte_lpm6 *lpm = rte_lpm6_create("peers_lpm6", SOCKET_ID_ANY, &conf);
		if (lpm == NULL)
			die("rte_lpm6_create failed (more memory: raise PEERS_EAL_MEM)");
		int err = 0;
		size_t i;
		for (i = 0; i < n && err == 0; i++)
			err = rte_lpm6_add(lpm, routes[i].addr, routes[i].plen,
					   stored(l, routes[i].label));
		*build_s = now() - t0;
		if (err == 0)
			return lpm;
		rte_lpm6_free(lpm);
		if (err != -ENOSPC || tbl8 >= (1u << 24))
			die_route("rte_lpm6_add", 6, &routes[i - 1], err);
	}
}

static void run_v4(const char *dir, const struct route *routes, size_t n, double min_s, int runs)
{
	size_t nkeys;
	char path[4096];
	snprintf(path, sizeof path, "%s/keys.bin", dir);
	uint32_t *keys = read_keys(path, 4, &nkeys);
	for (size_t i = 0; i < nkeys; i++) /* rte_lpm and rte_fib take host order */
		keys[i] = ntohl(keys[i]);
	uint32_t *labels = xmalloc(nkeys * sizeof *labels);
	double mlps[64];
	size_t groups = tbl8_groups(routes, n, 32);
	printf("peers-dpdk: IPv4 %zu keys, %zu prefixes, %zu tbl8 groups\n", nkeys, n, groups);

	/* rte_lpm: 24-bit next hops, lookups flagged with RTE_LPM_LOOKUP_SUCCESS. */
	struct labels lpm_labels = label_map(routes, n, (1u << 24) - 1);
	double build_s;
	struct rte_lpm *lpm = build_lpm(routes, n, &lpm_labels, groups, &build_s);
	uint32_t *hops = xmalloc(nkeys * sizeof *hops);
	TIME_RUNS(nkeys, min_s, runs, mlps, {
		size_t i_ = 0;
		for (; i_ + BURST <= nkeys; i_ += BURST)
			rte_lpm_lookup_bulk(lpm, keys + i_, hops + i_, BURST);
		if (i_ < nkeys)
			rte_lpm_lookup_bulk(lpm, keys + i_, hops + i_, nkeys - i_);
	});
	for (size_t i = 0; i < nkeys; i++)
		labels[i] = (hops[i] & RTE_LPM_LOOKUP_SUCCESS)
				    ? loaded(&lpm_labels, hops[i] & 0x00ffffff)
				    : NO_MATCH;
	write_results(dir, "rte_lpm", "rte_lpm", nkeys, build_s, mlps, runs, labels);

	/* The x4 SSE lookup; "no route" is a value no stored next hop has. */
	const uint32_t lpm_miss = 1u << 24;
	TIME_RUNS(nkeys, min_s, runs, mlps, {
		size_t i_ = 0;
		for (; i_ + 4 <= nkeys; i_ += 4)
			rte_lpm_lookupx4(lpm, _mm_loadu_si128((const __m128i *)(keys + i_)),
					 hops + i_, lpm_miss);
		for (; i_ < nkeys; i_++)
			if (rte_lpm_lookup(lpm, keys[i_], hops + i_) != 0)
				hops[i_] = lpm_miss;
	});
	for (size_t i = 0; i < nkeys; i++)
		labels[i] = hops[i] == lpm_miss ? NO_MATCH : loaded(&lpm_labels, hops[i]);
	write_results(dir, "rte_lpm-x4", "rte_lpm/x4", nkeys, build_s, mlps, runs, labels);
	rte_lpm_free(lpm);
	free(hops);

	/* rte_fib DIR24_8 with 4-byte entries: next hops up to 2^31 - 1; the
	 * largest one is kept for "no route". */
	const uint64_t fib_miss = (1ull << 31) - 1;
	struct labels fib_labels = label_map(routes, n, fib_miss - 1);
	struct rte_fib *fib = build_fib(routes, n, &fib_labels, fib_miss, groups, &build_s);
	uint64_t *nh = xmalloc(nkeys * sizeof *nh);
	for (int avx512 = 0; avx512 < 2; avx512++) {
		/* Chosen explicitly: with --force-max-simd-bitwidth=512 DPDK's
		 * default would already be the AVX-512 lookup. */
		if (!avx512 &&
		    rte_fib_select_lookup(fib, RTE_FIB_LOOKUP_DIR24_8_SCALAR_INLINE) != 0)
			die("rte_fib_select_lookup(SCALAR_INLINE) failed");
		if (avx512 &&
		    rte_fib_select_lookup(fib, RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512) != 0) {
			printf("  %-24s skipped: no AVX-512 lookup here (needs the CPU flag and "
			       "EAL --force-max-simd-bitwidth=512)\n", "rte_fib/avx512");
			break;
		}
		TIME_RUNS(nkeys, min_s, runs, mlps, {
			size_t i_ = 0;
			for (; i_ + BURST <= nkeys; i_ += BURST)
				rte_fib_lookup_bulk(fib, keys + i_, nh + i_, BURST);
			if (i_ < nkeys)
				rte_fib_lookup_bulk(fib, keys + i_, nh + i_, nkeys - i_);
		});
		for (size_t i = 0; i < nkeys; i++)
			labels[i] = nh[i] == fib_miss ? NO_MATCH : loaded(&fib_labels, nh[i]);
		write_results(dir, avx512 ? "rte_fib-avx512" : "rte_fib",
			      avx512 ? "rte_fib/avx512" : "rte_fib", nkeys, build_s, mlps, runs,
			      labels);
	}
	rte_fib_free(fib);
	free(nh);
	free(keys);
	free(labels);
}

static void run_v6(const char *dir, const struct route *routes, size_t n, double min_s, int runs)
{
	size_t nkeys;
	char path[4096];
	snprintf(path, sizeof path, "%s/keys.bin", dir);
	/* Network-order bytes: already rte_fib6's key type. */
	uint8_t (*keys)[16] = read_keys(path, 6, &nkeys);
	uint32_t *labels = xmalloc(nkeys * sizeof *labels);
	double mlps[64];
	size_t groups = tbl8_groups(routes, n, 128);
	printf("peers-dpdk: IPv6 %zu keys, %zu prefixes, %zu tbl8 groups\n", nkeys, n, groups);

	/* rte_lpm6: 21-bit next hops, -1 for no match. */
	struct labels lpm_labels = label_map(routes, n, (1u << 21) - 1);
	double build_s;
	struct rte_lpm6 *lpm = build_lpm6(routes, n, &lpm_labels, groups, &build_s);
	int32_t *lpm_nh = xmalloc(nkeys * sizeof *lpm_nh);
	TIME_RUNS(nkeys, min_s, runs, mlps, {
		size_t i_ = 0;
		for (; i_ + BURST <= nkeys; i_ += BURST)
			rte_lpm6_lookup_bulk_func(lpm, keys + i_, lpm_nh + i_, BURST);
		if (i_ < nkeys)
			rte_lpm6_lookup_bulk_func(lpm, keys + i_, lpm_nh + i_, nkeys - i_);
	});
	for (size_t i = 0; i < nkeys; i++)
		labels[i] = lpm_nh[i] < 0 ? NO_MATCH : loaded(&lpm_labels, (uint32_t)lpm_nh[i]);
	write_results(dir, "rte_lpm6", "rte_lpm6", nkeys, build_s, mlps, runs, labels);
	rte_lpm6_free(lpm);
	free(lpm_nh);

	const uint64_t fib_miss = (1ull << 31) - 1;
	struct labels fib_labels = label_map(routes, n, fib_miss - 1);
	struct rte_fib6 *fib = build_fib6(routes, n, &fib_labels, fib_miss, groups, &build_s);
	uint64_t *nh = xmalloc(nkeys * sizeof *nh);
	for (int avx512 = 0; avx512 < 2; avx512++) {
		if (!avx512 && rte_fib6_select_lookup(fib, RTE_FIB6_LOOKUP_TRIE_SCALAR) != 0)
			die("rte_fib6_select_lookup(TRIE_SCALAR) failed");
		if (avx512 &&
		    rte_fib6_select_lookup(fib, RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512) != 0) {
			printf("  %-24s skipped: no AVX-512 lookup here (needs the CPU flag and "
			       "EAL --force-max-simd-bitwidth=512)\n", "rte_fib6/avx512");
			break;
		}
		TIME_RUNS(nkeys, min_s, runs, mlps, {
			size_t i_ = 0;
			for (; i_ + BURST <= nkeys; i_ += BURST)
				rte_fib6_lookup_bulk(fib, keys + i_, nh + i_, BURST);
			if (i_ < nkeys)
				rte_fib6_lookup_bulk(fib, keys + i_, nh + i_, nkeys - i_);
		});
		for (size_t i = 0; i < nkeys; i++)
			labels[i] = nh[i] == fib_miss ? NO_MATCH : loaded(&fib_labels, nh[i]);
		write_results(dir, avx512 ? "rte_fib6-avx512" : "rte_fib6",
			      avx512 ? "rte_fib6/avx512" : "rte_fib6", nkeys, build_s, mlps, runs,
			      labels);
	}
	rte_fib6_free(fib);
	free(nh);
	free(keys);
	free(labels);
}

int main(int argc, char **argv)
{
	int eal_args = rte_eal_init(argc, argv);
	if (eal_args < 0) {
		fprintf(stderr, "peers-dpdk: rte_eal_init failed: %s\n", rte_strerror(rte_errno));
		return 2;
	}
	argc -= eal_args;
	argv += eal_args;
	if (argc != 5)
		die("usage: peers-dpdk [EAL args] -- FAMILY DIR MIN_SECONDS RUNS");
	int family = atoi(argv[1]);
	const char *dir = argv[2];
	double min_s = atof(argv[3]);
	int runs = atoi(argv[4]);
	if ((family != 4 && family != 6) || runs < 1 || runs > 64)
		die("FAMILY must be 4 or 6 and RUNS 1..64");
	char path[4096];
	snprintf(path, sizeof path, "%s/table.txt", dir);
	size_t n;
	struct route *routes = read_table(path, family, &n);
	if (family == 4)
		run_v4(dir, routes, n, min_s, runs);
	else
		run_v6(dir, routes, n, min_s, runs);
	free(routes);
	rte_eal_cleanup();
	return 0;
}
