/*
 * peers-dpdk: DPDK's rte_lpm, rte_fib (DIR24_8) and rte_fib6 (TRIE) on the
 * table and keys that `fibkit-peers prep` wrote, by the same method as
 * fibkit's benchmark: keys precomputed (converted to DPDK's key types before
 * timing), every result stored, runs of at least MIN_SECONDS.
 *
 *   peers-dpdk [EAL args] -- FAMILY DIR MIN_SECONDS [FIBKIT_SPEC]
 *
 * FAMILY is 4 or 6. Reads DIR/table.txt (`prefix/len label` lines) and
 * DIR/keys.bin (a fibkit binary trace: 8-byte header, then big-endian
 * addresses), builds the structures, then speaks the rounds protocol of
 * `fibkit-peers rounds` on standard input and output (bench/peers/rust/
 * src/rounds.rs): it announces its configurations (`config NAME KIND SHAPE
 * BUILD_S` lines, then `ready`), and for each `run NAME FILE` line times one
 * run of NAME, answers `mlps VALUE` and, when FILE is given, writes the
 * run's results there (u32 label per key, UINT32_MAX for no match). Other
 * output goes to standard error (EAL's own log lines may reach standard
 * output; the driver passes them on).
 *
 * The shapes a datapath calls, per structure:
 * - rte_lpm: rte_lpm_lookup, one key per call, inline (`rte_lpm/key`);
 *   rte_lpm_lookupx4, the SSE path of DPDK's l3fwd (`rte_lpm/x4`);
 *   rte_lpm_lookup_bulk in bursts of 8, 32 and 64 (`rte_lpm/burstN`; its
 *   variable-length array of n entries on the stack rules out longer calls);
 * - rte_fib (IPv4) and rte_fib6 (IPv6): the bulk lookup in bursts of 8 and
 *   32 and on the whole key array in one call (`/burst8`, `/burst32`,
 *   `/batch`), scalar, and with the AVX-512 lookup (`/avx512/...`) where the
 *   CPU and the DPDK build have it;
 * - with FIBKIT_SPEC, fibkit's C library (libfibkit.a, include/fibkit.h)
 *   in the same process: the engine FIBKIT_SPEC (`default`: the family's
 *   default engine) built from DIR/table.txt, one key per call
 *   (`c:SPEC/key`, fibkit_lookup_v4/_v6) and fibkit_lookup_v4_bulk/_v6_bulk
 *   in bursts of 8 and 32 and on the whole key array; reported with kind
 *   `fibkit`, so the driver gives their ratios to DPDK's calls.
 *
 * On `seq` and `seq-announced` keys (DIR/info.txt says which) every lookup depends on
 * the one before, as in fibkit's `Lookup::lookup_chained`: the key is the
 * stored key XORed with the label found for the previous one (0 for none
 * and at the start of each pass; IPv6: into the address's low 32 bits).
 * Only one key per call makes sense then: `rte_lpm/key`, `rte_fib/burst1`
 * and `rte_fib6/burst1` (the bulk call on one key: these have no per-key
 * call) and `c:SPEC/key`; the label of a DPDK result is mapped back inside
 * the loop, as the chain needs it.
 *
 * Next hops: rte_lpm stores 24 bits and rte_fib/rte_fib6 with 4-byte entries
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

#include "fibkit.h"

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

/* Whether the `info.txt` at `path` (written by `fibkit-peers prep`) names
 * a chained pattern (`seq`, `seq-announced`). */
static int is_chained(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		perror(path);
		exit(2);
	}
	char line[512];
	int chained = 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (strcmp(line, "pattern seq\n") == 0 || strcmp(line, "pattern seq-announced\n") == 0)
			chained = 1;
	fclose(f);
	return chained;
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

/* The timing loop of fibkit's benchmark: whole passes over the keys until
 * at least `min_s` has elapsed; Mlps into `mlps`. */
#define TIME_RUN(nkeys, min_s, mlps, PASS)                                     \
	do {                                                                       \
		double start_ = now(), elapsed_;                                       \
		uint64_t lookups_ = 0;                                                 \
		do {                                                                   \
			PASS;                                                              \
			lookups_ += (nkeys);                                               \
			elapsed_ = now() - start_;                                         \
		} while (elapsed_ < (min_s));                                          \
		(mlps) = lookups_ / elapsed_ / 1e6;                                    \
	} while (0)

/* How a configuration calls DPDK. */
enum call { LPM_KEY, LPM_X4, LPM_BULK, FIB_BULK, FIB6_BULK, FIBKIT_KEY, FIBKIT_BULK };

struct config {
	char name[48];
	char kind[8]; /* "peer", or "fibkit" for fibkit's C library */
	char shape[16];
	enum call call;
	size_t burst; /* keys per call; 0: the whole key array in one call */
	int avx512;
	double build_s;
};

#define MAX_CONFIGS 24

/* Everything the runs need: keys, structures, result buffers. */
struct bench {
	double min_s;
	size_t nkeys;
	uint32_t *keys4;        /* host order */
	uint8_t (*keys6)[16];   /* network order */
	struct rte_lpm *lpm;
	struct labels lpm_labels;
	struct rte_fib *fib;
	struct rte_fib6 *fib6;
	struct labels fib_labels;
	uint32_t *hops; /* rte_lpm's results */
	uint64_t *nh;   /* rte_fib's and rte_fib6's results */
	uint32_t *labels;
	fibkit_fib *fibkit; /* fibkit's C library, NULL unless asked for */
	int family;
	int chained; /* `seq` keys: each key XORed with the previous label */
	struct config configs[MAX_CONFIGS];
	int nconfigs;
};

/* "no route" for rte_lpm's per-key and x4 lookups: a value no stored next
 * hop has (they are 24 bits). */
#define LPM_MISS (1u << 24)
/* rte_fib and rte_fib6 with 4-byte entries keep 31 bits; the largest value
 * is the default next hop, "no route". */
#define FIB_MISS ((1ull << 31) - 1)

static void offer(struct bench *b, const char *structure, const char *variant, const char *shape,
		  enum call call, size_t burst, int avx512, double build_s)
{
	if (b->nconfigs == MAX_CONFIGS)
		die("too many configurations");
	struct config *c = &b->configs[b->nconfigs++];
	snprintf(c->name, sizeof c->name, "%s%s/%s", structure, variant, shape);
	snprintf(c->kind, sizeof c->kind, "%s", call >= FIBKIT_KEY ? "fibkit" : "peer");
	snprintf(c->shape, sizeof c->shape, "%s", shape);
	c->call = call;
	c->burst = burst;
	c->avx512 = avx512;
	c->build_s = build_s;
}

/* Offers the bulk lookup of rte_fib or rte_fib6 in bursts of 8 and 32 and
 * on the whole key array. */
static void offer_bulk(struct bench *b, const char *structure, int avx512, enum call call,
		       double build_s)
{
	const char *variant = avx512 ? "/avx512" : "";
	offer(b, structure, variant, "burst8", call, 8, avx512, build_s);
	offer(b, structure, variant, "burst32", call, 32, avx512, build_s);
	offer(b, structure, variant, "batch", call, 0, avx512, build_s);
}

static void prepare_v4(struct bench *b, const struct route *routes, size_t n)
{
	for (size_t i = 0; i < b->nkeys; i++) /* rte_lpm and rte_fib take host order */
		b->keys4[i] = ntohl(b->keys4[i]);
	size_t groups = tbl8_groups(routes, n, 32);
	fprintf(stderr, "peers-dpdk: IPv4 %zu keys, %zu prefixes, %zu tbl8 groups\n", b->nkeys,
		n, groups);
	double build_s;
	b->lpm_labels = label_map(routes, n, (1u << 24) - 1);
	b->lpm = build_lpm(routes, n, &b->lpm_labels, groups, &build_s);
	offer(b, "rte_lpm", "", "key", LPM_KEY, 1, 0, build_s);
	b->hops = xmalloc(b->nkeys * sizeof *b->hops);
	b->fib_labels = label_map(routes, n, FIB_MISS - 1);
	if (b->chained) {
		b->fib = build_fib(routes, n, &b->fib_labels, FIB_MISS, groups, &build_s);
		offer(b, "rte_fib", "", "burst1", FIB_BULK, 1, 0, build_s);
		return;
	}
	offer(b, "rte_lpm", "", "x4", LPM_X4, 4, 0, build_s);
	offer(b, "rte_lpm", "", "burst8", LPM_BULK, 8, 0, build_s);
	offer(b, "rte_lpm", "", "burst32", LPM_BULK, 32, 0, build_s);
	offer(b, "rte_lpm", "", "burst64", LPM_BULK, 64, 0, build_s);
	b->fib = build_fib(routes, n, &b->fib_labels, FIB_MISS, groups, &build_s);
	offer_bulk(b, "rte_fib", 0, FIB_BULK, build_s);
	/* Chosen explicitly per run: with --force-max-simd-bitwidth=512 DPDK's
	 * default would already be the AVX-512 lookup. */
	if (rte_fib_select_lookup(b->fib, RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512) == 0)
		offer_bulk(b, "rte_fib", 1, FIB_BULK, build_s);
	else
		fprintf(stderr, "  %-24s skipped: no AVX-512 lookup here (needs the CPU flag and "
				"EAL --force-max-simd-bitwidth=512)\n", "rte_fib/avx512");
}

static void prepare_v6(struct bench *b, const struct route *routes, size_t n)
{
	size_t groups = tbl8_groups(routes, n, 128);
	fprintf(stderr, "peers-dpdk: IPv6 %zu keys, %zu prefixes, %zu tbl8 groups\n", b->nkeys,
		n, groups);
	double build_s;
	b->fib_labels = label_map(routes, n, FIB_MISS - 1);
	b->fib6 = build_fib6(routes, n, &b->fib_labels, FIB_MISS, groups, &build_s);
	if (b->chained) {
		offer(b, "rte_fib6", "", "burst1", FIB6_BULK, 1, 0, build_s);
		return;
	}
	offer_bulk(b, "rte_fib6", 0, FIB6_BULK, build_s);
	if (rte_fib6_select_lookup(b->fib6, RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512) == 0)
		offer_bulk(b, "rte_fib6", 1, FIB6_BULK, build_s);
	else
		fprintf(stderr, "  %-24s skipped: no AVX-512 lookup here (needs the CPU flag and "
				"EAL --force-max-simd-bitwidth=512)\n", "rte_fib6/avx512");
}

/* fibkit's C library in this process, beside DPDK: the engine `spec`
 * built from the same table file, offered one key per call
 * (`fibkit_lookup_v4` / `_v6`) and in bulk calls of 8, 32 and all keys
 * (`fibkit_lookup_v4_bulk` / `_v6_bulk`), so its runs alternate with
 * DPDK's in the same process and every ratio pairs neighbours in time. */
static void prepare_fibkit(struct bench *b, const char *table_path, int family, const char *spec)
{
	double start = now();
	fibkit_table *table;
	if (fibkit_table_load(table_path, &table) != FIBKIT_OK ||
	    fibkit_fib_build(table, family, spec, &b->fibkit) != FIBKIT_OK) {
		fprintf(stderr, "peers-dpdk: fibkit `%s`: %s\n", spec, fibkit_last_error());
		exit(2);
	}
	fibkit_table_free(table);
	double build_s = now() - start;
	char canonical[32], structure[48];
	if (fibkit_fib_spec(b->fibkit, canonical, sizeof canonical) < 0)
		die(fibkit_last_error());
	snprintf(structure, sizeof structure, "c:%s", canonical);
	offer(b, structure, "", "key", FIBKIT_KEY, 1, 0, build_s);
	if (b->chained)
		return;
	offer(b, structure, "", "burst8", FIBKIT_BULK, 8, 0, build_s);
	offer(b, structure, "", "burst32", FIBKIT_BULK, 32, 0, build_s);
	offer(b, structure, "", "batch", FIBKIT_BULK, 0, 0, build_s);
}

/* `key` (network order) XORed with `label` in its low 32 bits, into `out`:
 * fibkit's chain for 128-bit keys. */
static inline void chain6(const uint8_t key[16], uint32_t label, uint8_t out[16])
{
	memcpy(out, key, 16);
	out[12] ^= label >> 24;
	out[13] ^= label >> 16;
	out[14] ^= label >> 8;
	out[15] ^= label;
}

/* The label the chain XORs into the next key: that of the stored value
 * `value` when `hit` (1), else 0 (`value` is then 0). Masks, not a branch:
 * a predicted branch would let the processor start the next lookup before
 * this one ends whenever it guessed "no route", which a chain of lookups is
 * meant to prevent (fibkit's chain has no branch either). */
static inline uint32_t chain_label(const struct labels *l, uint64_t value, uint32_t hit)
{
	return loaded(l, value) & -hit;
}

/* One run of `c` on `seq` keys: each lookup's key depends on the label
 * found by the one before (see the header); Mlps. */
static double run_chained(struct bench *b, const struct config *c)
{
	const size_t nkeys = b->nkeys;
	double mlps = 0;
	switch (c->call) {
	case LPM_KEY:
		TIME_RUN(nkeys, b->min_s, mlps, {
			uint32_t previous_ = 0;
			for (size_t i_ = 0; i_ < nkeys; i_++) {
				uint32_t hop_ = 0;
				uint32_t hit_ = rte_lpm_lookup(b->lpm, b->keys4[i_] ^ previous_, &hop_) == 0;
				hop_ &= -hit_;
				b->hops[i_] = hit_ ? hop_ : LPM_MISS;
				previous_ = chain_label(&b->lpm_labels, hop_, hit_);
			}
		});
		break;
	case FIB_BULK:
		if (rte_fib_select_lookup(b->fib, RTE_FIB_LOOKUP_DIR24_8_SCALAR_INLINE) != 0)
			die("rte_fib_select_lookup failed");
		TIME_RUN(nkeys, b->min_s, mlps, {
			uint32_t previous_ = 0;
			for (size_t i_ = 0; i_ < nkeys; i_++) {
				uint32_t key_ = b->keys4[i_] ^ previous_;
				rte_fib_lookup_bulk(b->fib, &key_, b->nh + i_, 1);
				uint32_t hit_ = b->nh[i_] != FIB_MISS;
				previous_ = chain_label(&b->fib_labels, b->nh[i_] & -(uint64_t)hit_, hit_);
			}
		});
		break;
	case FIB6_BULK:
		if (rte_fib6_select_lookup(b->fib6, RTE_FIB6_LOOKUP_TRIE_SCALAR) != 0)
			die("rte_fib6_select_lookup failed");
		TIME_RUN(nkeys, b->min_s, mlps, {
			uint32_t previous_ = 0;
			for (size_t i_ = 0; i_ < nkeys; i_++) {
				uint8_t key_[1][16];
				chain6(b->keys6[i_], previous_, key_[0]);
				rte_fib6_lookup_bulk(b->fib6, key_, b->nh + i_, 1);
				uint32_t hit_ = b->nh[i_] != FIB_MISS;
				previous_ = chain_label(&b->fib_labels, b->nh[i_] & -(uint64_t)hit_, hit_);
			}
		});
		break;
	case FIBKIT_KEY:
		TIME_RUN(nkeys, b->min_s, mlps, {
			uint32_t previous_ = 0;
			for (size_t i_ = 0; i_ < nkeys; i_++) {
				uint32_t label_ = 0;
				int found_;
				if (b->family == 4) {
					found_ = fibkit_lookup_v4(b->fibkit, b->keys4[i_] ^ previous_, &label_);
				} else {
					uint8_t key_[16];
					chain6(b->keys6[i_], previous_, key_);
					found_ = fibkit_lookup_v6(b->fibkit, (const uint8_t(*)[16])key_, &label_);
				}
				uint32_t hit_ = found_ == FIBKIT_OK;
				b->nh[i_] = hit_ ? label_ : FIBKIT_NO_ROUTE;
				previous_ = label_ & -hit_;
			}
		});
		break;
	default:
		die("no chained loop for this configuration");
	}
	return mlps;
}

/* One run of `c`; Mlps. */
static double run_config(struct bench *b, const struct config *c)
{
	const size_t nkeys = b->nkeys;
	const size_t step = c->burst ? c->burst : nkeys;
	double mlps = 0;
	if (b->chained)
		return run_chained(b, c);
	switch (c->call) {
	case LPM_KEY:
		TIME_RUN(nkeys, b->min_s, mlps, {
			for (size_t i_ = 0; i_ < nkeys; i_++) {
				uint32_t hop_;
				b->hops[i_] = rte_lpm_lookup(b->lpm, b->keys4[i_], &hop_) == 0
						      ? hop_
						      : LPM_MISS;
			}
		});
		break;
	case LPM_X4:
		TIME_RUN(nkeys, b->min_s, mlps, {
			size_t i_ = 0;
			for (; i_ + 4 <= nkeys; i_ += 4)
				rte_lpm_lookupx4(b->lpm,
						 _mm_loadu_si128((const __m128i *)(b->keys4 + i_)),
						 b->hops + i_, LPM_MISS);
			for (; i_ < nkeys; i_++)
				if (rte_lpm_lookup(b->lpm, b->keys4[i_], b->hops + i_) != 0)
					b->hops[i_] = LPM_MISS;
		});
		break;
	case LPM_BULK:
		TIME_RUN(nkeys, b->min_s, mlps, {
			for (size_t i_ = 0; i_ < nkeys; i_ += step)
				rte_lpm_lookup_bulk(b->lpm, b->keys4 + i_, b->hops + i_,
						    nkeys - i_ < step ? nkeys - i_ : step);
		});
		break;
	case FIB_BULK:
		if (rte_fib_select_lookup(b->fib, c->avx512 ? RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512
							    : RTE_FIB_LOOKUP_DIR24_8_SCALAR_INLINE) != 0)
			die("rte_fib_select_lookup failed");
		TIME_RUN(nkeys, b->min_s, mlps, {
			for (size_t i_ = 0; i_ < nkeys; i_ += step)
				rte_fib_lookup_bulk(b->fib, b->keys4 + i_, b->nh + i_,
						    nkeys - i_ < step ? nkeys - i_ : step);
		});
		break;
	case FIB6_BULK:
		if (rte_fib6_select_lookup(b->fib6, c->avx512 ? RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512
							      : RTE_FIB6_LOOKUP_TRIE_SCALAR) != 0)
			die("rte_fib6_select_lookup failed");
		TIME_RUN(nkeys, b->min_s, mlps, {
			for (size_t i_ = 0; i_ < nkeys; i_ += step)
				rte_fib6_lookup_bulk(b->fib6, b->keys6 + i_, b->nh + i_,
						     nkeys - i_ < step ? nkeys - i_ : step);
		});
		break;
	case FIBKIT_KEY:
		TIME_RUN(nkeys, b->min_s, mlps, {
			for (size_t i_ = 0; i_ < nkeys; i_++) {
				uint32_t label_;
				int found_ = b->family == 4
						     ? fibkit_lookup_v4(b->fibkit, b->keys4[i_], &label_)
						     : fibkit_lookup_v6(b->fibkit, &b->keys6[i_], &label_);
				b->nh[i_] = found_ == FIBKIT_OK ? label_ : FIBKIT_NO_ROUTE;
			}
		});
		break;
	case FIBKIT_BULK:
		TIME_RUN(nkeys, b->min_s, mlps, {
			for (size_t i_ = 0; i_ < nkeys; i_ += step) {
				size_t n_ = nkeys - i_ < step ? nkeys - i_ : step;
				if (b->family == 4)
					fibkit_lookup_v4_bulk(b->fibkit, b->keys4 + i_, b->nh + i_, n_);
				else
					fibkit_lookup_v6_bulk(b->fibkit, b->keys6 + i_, b->nh + i_, n_);
			}
		});
		break;
	}
	return mlps;
}

/* The last run of `c`, mapped back to labels, into b->labels. */
static void labels_of(struct bench *b, const struct config *c)
{
	for (size_t i = 0; i < b->nkeys; i++) {
		switch (c->call) {
		case LPM_KEY:
		case LPM_X4:
			b->labels[i] = b->hops[i] == LPM_MISS ? NO_MATCH
							      : loaded(&b->lpm_labels, b->hops[i]);
			break;
		case LPM_BULK: /* results flagged with RTE_LPM_LOOKUP_SUCCESS */
			b->labels[i] = (b->hops[i] & RTE_LPM_LOOKUP_SUCCESS)
					       ? loaded(&b->lpm_labels, b->hops[i] & 0x00ffffff)
					       : NO_MATCH;
			break;
		case FIB_BULK:
		case FIB6_BULK:
			b->labels[i] = b->nh[i] == FIB_MISS ? NO_MATCH : loaded(&b->fib_labels, b->nh[i]);
			break;
		case FIBKIT_KEY:
		case FIBKIT_BULK:
			b->labels[i] = b->nh[i] == FIBKIT_NO_ROUTE ? NO_MATCH : (uint32_t)b->nh[i];
			break;
		}
	}
}

static void write_labels(const char *path, const uint32_t *labels, size_t nkeys)
{
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(labels, sizeof *labels, nkeys, f) != nkeys || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

/* The rounds protocol (bench/peers/rust/src/rounds.rs). */
static void serve(struct bench *b)
{
	for (int i = 0; i < b->nconfigs; i++)
		printf("config\t%s\t%s\t%s\t%.4f\n", b->configs[i].name, b->configs[i].kind,
		       b->configs[i].shape, b->configs[i].build_s);
	printf("ready\n");
	fflush(stdout);
	char line[8192];
	while (fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (strcmp(line, "quit") == 0)
			return;
		if (strncmp(line, "run\t", 4) != 0) {
			fprintf(stderr, "peers-dpdk: unknown command `%s`\n", line);
			exit(2);
		}
		char *name = line + 4;
		char *file = strchr(name, '\t');
		if (file != NULL)
			*file++ = '\0';
		const struct config *c = NULL;
		for (int i = 0; i < b->nconfigs; i++)
			if (strcmp(b->configs[i].name, name) == 0)
				c = &b->configs[i];
		if (c == NULL) {
			fprintf(stderr, "peers-dpdk: no configuration `%s`\n", name);
			exit(2);
		}
		double mlps = run_config(b, c);
		if (file != NULL && *file != '\0') {
			labels_of(b, c);
			write_labels(file, b->labels, b->nkeys);
		}
		printf("mlps\t%.4f\n", mlps);
		fflush(stdout);
	}
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
	if (argc != 4 && argc != 5)
		die("usage: peers-dpdk [EAL args] -- FAMILY DIR MIN_SECONDS [FIBKIT_SPEC]");
	int family = atoi(argv[1]);
	const char *dir = argv[2];
	if (family != 4 && family != 6)
		die("FAMILY must be 4 or 6");
	struct bench b = {.min_s = atof(argv[3]), .family = family};
	char path[4096];
	snprintf(path, sizeof path, "%s/info.txt", dir);
	b.chained = is_chained(path);
	snprintf(path, sizeof path, "%s/table.txt", dir);
	size_t n;
	struct route *routes = read_table(path, family, &n);
	snprintf(path, sizeof path, "%s/keys.bin", dir);
	if (family == 4) {
		b.keys4 = read_keys(path, 4, &b.nkeys);
		prepare_v4(&b, routes, n);
	} else {
		b.keys6 = read_keys(path, 6, &b.nkeys);
		prepare_v6(&b, routes, n);
	}
	free(routes);
	if (argc == 5) {
		snprintf(path, sizeof path, "%s/table.txt", dir);
		const char *spec = strcmp(argv[4], "default") == 0 ? NULL : argv[4];
		prepare_fibkit(&b, path, family == 4 ? FIBKIT_IPV4 : FIBKIT_IPV6, spec);
	}
	b.nh = xmalloc(b.nkeys * sizeof *b.nh);
	b.labels = xmalloc(b.nkeys * sizeof *b.labels);
	serve(&b);
	rte_lpm_free(b.lpm);
	rte_fib_free(b.fib);
	rte_fib6_free(b.fib6);
	fibkit_fib_free(b.fibkit);
	rte_eal_cleanup();
	return 0;
}
