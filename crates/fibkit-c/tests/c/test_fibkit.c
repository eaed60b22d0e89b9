/*
 * The fibkit C library tested from C; built and run by tests/c_programs.rs.
 *
 *   test_fibkit lookup TABLE|IMAGE SPEC FAMILY KEYS RESULTS
 *       builds SPEC (or opens the image when SPEC is "image") over FAMILY
 *       (4 or 6) of TABLE, reads addresses from KEYS (IPv4: uint32_t host
 *       order; IPv6: 16 bytes network order), writes the bulk results
 *       (uint64_t) to RESULTS, and checks every single-address lookup
 *       agrees with its bulk result.
 *   test_fibkit errors DATA_DIR SCRATCH_DIR
 *       every error path: NULL and misaligned pointers, wrong families, bad
 *       specs, bad files, damaged images, bad changes, read-only images.
 *   test_fibkit threads
 *       readers look up while the writer applies changes; every reader must
 *       see the versions in order.
 *
 * Exit status 0 when every check holds; each failure is printed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fibkit.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, " (last error: %s)\n", fibkit_last_error());     \
        }                                                                    \
    } while (0)

/* Whether the last error message contains `text`. */
static int said(const char *text) { return strstr(fibkit_last_error(), text) != NULL; }

static void *read_file(const char *path, size_t *len) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    void *data = malloc(size > 0 ? (size_t)size : 1);
    *len = fread(data, 1, (size_t)size, file);
    fclose(file);
    return data;
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *file = fopen(path, "wb");
    if (!file) return 0;
    size_t n = fwrite(data, 1, len, file);
    fclose(file);
    return n == len;
}

static int lookup_mode(const char *path, const char *spec, int family, const char *keys_path,
                       const char *results_path) {
    fibkit_fib *fib = NULL;
    if (strcmp(spec, "image") == 0) {
        CHECK(fibkit_fib_open_image(path, &fib) == FIBKIT_OK, "open image %s", path);
    } else {
        fibkit_table *table = NULL;
        CHECK(fibkit_table_load(path, &table) == FIBKIT_OK, "load %s", path);
        if (!table) return 1;
        CHECK(fibkit_fib_build(table, family, spec, &fib) == FIBKIT_OK, "build %s", spec);
        fibkit_table_free(table);
    }
    if (!fib) return 1;
    fibkit_stats stats;
    CHECK(fibkit_fib_stats(fib, &stats) == FIBKIT_OK, "stats");
    CHECK(stats.family == family, "family %d", stats.family);
    CHECK(stats.memory_bytes > 0, "memory bytes");

    size_t bytes = 0;
    void *keys = read_file(keys_path, &bytes);
    CHECK(keys != NULL, "read %s", keys_path);
    if (!keys) return 1;
    size_t width = family == FIBKIT_IPV4 ? 4 : 16;
    size_t n = bytes / width;
    uint64_t *results = malloc((n ? n : 1) * sizeof *results);
    int rc = family == FIBKIT_IPV4
                 ? fibkit_lookup_v4_bulk(fib, (const uint32_t *)keys, results, n)
                 : fibkit_lookup_v6_bulk(fib, (const uint8_t(*)[16])keys, results, n);
    CHECK(rc == FIBKIT_OK, "bulk lookup of %zu keys", n);
    size_t disagree = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t label = 0;
        int found = family == FIBKIT_IPV4
                        ? fibkit_lookup_v4(fib, ((const uint32_t *)keys)[i], &label)
                        : fibkit_lookup_v6(fib, (const uint8_t(*)[16])keys + i, &label);
        uint64_t single = found == FIBKIT_OK ? label : FIBKIT_NO_ROUTE;
        if (found < 0 || single != results[i]) disagree++;
    }
    CHECK(disagree == 0, "%zu of %zu single lookups disagree with the bulk lookup", disagree, n);

    /* The same through a reader: bulk and per key, equal to the table's. */
    fibkit_reader *reader = NULL;
    CHECK(fibkit_reader_new(fib, &reader) == FIBKIT_OK, "reader");
    uint64_t *via_reader = malloc((n ? n : 1) * sizeof *via_reader);
    rc = family == FIBKIT_IPV4
             ? fibkit_reader_lookup_v4_bulk(reader, (const uint32_t *)keys, via_reader, n)
             : fibkit_reader_lookup_v6_bulk(reader, (const uint8_t(*)[16])keys, via_reader, n);
    CHECK(rc == FIBKIT_OK, "reader bulk lookup of %zu keys", n);
    disagree = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t label = 0;
        int found = family == FIBKIT_IPV4
                        ? fibkit_reader_lookup_v4(reader, ((const uint32_t *)keys)[i], &label)
                        : fibkit_reader_lookup_v6(reader, (const uint8_t(*)[16])keys + i, &label);
        uint64_t single = found == FIBKIT_OK ? label : FIBKIT_NO_ROUTE;
        if (found < 0 || single != results[i] || via_reader[i] != results[i]) disagree++;
    }
    CHECK(disagree == 0, "%zu of %zu reader lookups disagree with the table's bulk lookup", disagree, n);
    free(via_reader);
    fibkit_reader_free(reader);
    CHECK(write_file(results_path, results, n * sizeof *results), "write %s", results_path);
    printf("lookup: %zu keys, %d checks, %d failures\n", n, checks, failures);
    free(keys);
    free(results);
    fibkit_fib_free(fib);
    return failures != 0;
}

static int errors_mode(const char *data_dir, const char *scratch) {
    char path[4096];
    fibkit_table *table = NULL;
    fibkit_fib *fib = NULL;
    uint32_t label = 0;
    uint64_t result = 0;
    uint32_t addr = 0x0a010203;
    uint8_t addr6[16] = {0x20, 0x01, 0x0d, 0xb8};

    /* NULL pointers everywhere are errors, never crashes. */
    CHECK(fibkit_table_load(NULL, &table) == FIBKIT_ERR_NULL && said("`path` is NULL"), "null path");
    CHECK(fibkit_fib_open_image(NULL, &fib) == FIBKIT_ERR_NULL, "null image path");
    CHECK(fibkit_fib_build(NULL, 0, NULL, &fib) == FIBKIT_ERR_NULL && said("`table`"), "null table");
    CHECK(fibkit_lookup_v4(NULL, addr, &label) == FIBKIT_ERR_NULL && said("`fib`"), "null fib");
    CHECK(fibkit_lookup_v6(NULL, &addr6, &label) == FIBKIT_ERR_NULL, "null fib v6");
    CHECK(fibkit_fib_stats(NULL, NULL) == FIBKIT_ERR_NULL, "null stats");
    CHECK(fibkit_fib_new(FIBKIT_IPV4, "dir24-8", NULL) == FIBKIT_ERR_NULL && said("`out`"), "null out");
    fibkit_fib_free(NULL);
    fibkit_table_free(NULL);

    /* Bad families and specs. */
    CHECK(fibkit_fib_new(5, NULL, &fib) == FIBKIT_ERR_ARGUMENT && said("family 5"), "family 5");
    CHECK(fibkit_fib_new(FIBKIT_ANY_FAMILY, NULL, &fib) == FIBKIT_ERR_ARGUMENT, "any family, empty");
    CHECK(fibkit_fib_new(FIBKIT_IPV4, "nosuch", &fib) == FIBKIT_ERR_BUILD &&
              said("unknown engine `nosuch`"), "unknown engine");
    CHECK(fibkit_fib_new(FIBKIT_IPV6, "dir24-8", &fib) == FIBKIT_ERR_BUILD &&
              said("does not support IPv6"), "dir24-8 for IPv6");
    CHECK(fibkit_fib_new(FIBKIT_IPV4, "dxr:k=99", &fib) == FIBKIT_ERR_BUILD, "dxr:k=99");

    /* Files: missing, and a bad line named by file:line. */
    snprintf(path, sizeof path, "%s/no-such-table.txt", scratch);
    CHECK(fibkit_table_load(path, &table) == FIBKIT_ERR_LOAD && said("no-such-table.txt"), "missing");
    snprintf(path, sizeof path, "%s/bad-table.txt", scratch);
    const char *bad = "10.0.0.0/8 1\n10.1.0.0/16 2\n10.2.0.1/16 3\n";
    CHECK(write_file(path, bad, strlen(bad)), "write bad table");
    CHECK(fibkit_table_load(path, &table) == FIBKIT_ERR_LOAD && said("bad-table.txt:3") &&
              said("host bits"), "bad line");

    /* Load options: an MRT dump by origin AS or by next hop (with the next
     * hops' addresses), a peer it does not have, bad options. */
    {
        char dump[4096], hop[FIBKIT_PREFIX_TEXT_BYTES];
        snprintf(dump, sizeof dump, "%s/mrt/openbgpd_rib_table-v2", data_dir);
        const uint32_t lan = 0xc0a80001; /* 192.168.0.1 */
        fibkit_load_options options = {0};
        fibkit_table *mrt = NULL;
        fibkit_fib *by_mrt = NULL;
        options.label = FIBKIT_LABEL_ORIGIN_AS;
        CHECK(fibkit_table_load_with(dump, &options, &mrt) == FIBKIT_OK, "load %s by origin AS", dump);
        CHECK(fibkit_fib_build(mrt, FIBKIT_IPV4, NULL, &by_mrt) == FIBKIT_OK, "build by origin AS");
        CHECK(fibkit_lookup_v4(by_mrt, lan, &label) == FIBKIT_OK && label == 65015, "origin AS %u", label);
        CHECK(fibkit_table_nexthop(mrt, 0, hop, sizeof hop) == FIBKIT_NOT_FOUND, "origin-AS labels name no next hop");
        fibkit_fib_free(by_mrt);
        fibkit_table_free(mrt);
        CHECK(fibkit_table_load_with(dump, NULL, &mrt) == FIBKIT_OK, "load %s by next hop", dump);
        CHECK(fibkit_fib_build(mrt, FIBKIT_IPV4, NULL, &by_mrt) == FIBKIT_OK, "build by next hop");
        CHECK(fibkit_lookup_v4(by_mrt, lan, &label) == FIBKIT_OK, "next-hop lookup");
        CHECK(fibkit_table_nexthop(mrt, label, hop, sizeof hop) == 12 && strcmp(hop, "192.168.0.15") == 0,
              "next hop %s", hop);
        CHECK(fibkit_table_nexthop(mrt, label, NULL, 0) == 12, "next hop length only");
        CHECK(fibkit_table_nexthop(mrt, label, hop, 4) == 12 && strcmp(hop, "192") == 0, "cut next hop %s", hop);
        CHECK(fibkit_table_nexthop(mrt, 999999, hop, sizeof hop) == FIBKIT_NOT_FOUND, "label past the next hops");
        CHECK(fibkit_table_nexthop(NULL, 0, hop, sizeof hop) == FIBKIT_ERR_NULL, "null table");
        fibkit_fib_free(by_mrt);
        fibkit_table_free(mrt);
        mrt = NULL;
        options.label = FIBKIT_LABEL_NEXTHOP;
        options.peer = "AS1";
        CHECK(fibkit_table_load_with(dump, &options, &mrt) == FIBKIT_ERR_LOAD && said("no peer of AS1") &&
                  said("its 3 peers"), "missing peer");
        options.peer = "nonsense";
        CHECK(fibkit_table_load_with(dump, &options, &mrt) == FIBKIT_ERR_ARGUMENT && said("options->peer"),
              "bad peer");
        options.peer = NULL;
        options.format = "csv";
        CHECK(fibkit_table_load_with(dump, &options, &mrt) == FIBKIT_ERR_ARGUMENT &&
                  said("unknown format `csv`"), "bad format");
        options.format = "table";
        CHECK(fibkit_table_load_with(dump, &options, &mrt) == FIBKIT_ERR_LOAD && said("not UTF-8"),
              "MRT read as text");
        options.format = NULL;
        options.label = 7;
        CHECK(fibkit_table_load_with(dump, &options, &mrt) == FIBKIT_ERR_ARGUMENT && said("options->label 7"),
              "bad label");
        CHECK(mrt == NULL, "no table after a failed load");
        options.label = FIBKIT_LABEL_NEXTHOP;
        snprintf(path, sizeof path, "%s/bad-table.txt", scratch);
        options.skip_bad = 1;
        uint64_t kept = 0;
        CHECK(fibkit_table_load_with(path, &options, &mrt) == FIBKIT_OK &&
                  fibkit_table_prefixes(mrt, &kept, NULL) == FIBKIT_OK && kept == 2, "skip_bad kept %llu",
              (unsigned long long)kept);
        fibkit_table_free(mrt);
        options.skip_bad = 0;
        options.lenient = 1;
        CHECK(fibkit_table_load_with(path, &options, &mrt) == FIBKIT_OK &&
                  fibkit_table_prefixes(mrt, &kept, NULL) == FIBKIT_OK && kept == 3, "lenient kept %llu",
              (unsigned long long)kept);
        fibkit_table_free(mrt);
    }

    /* A live IPv4 table. */
    snprintf(path, sizeof path, "%s/good-table.txt", scratch);
    const char *good = "10.0.0.0/8 1\n10.1.0.0/16 4294967295\n2001:db8::/32 6\n";
    CHECK(write_file(path, good, strlen(good)), "write good table");
    CHECK(fibkit_table_load(path, &table) == FIBKIT_OK, "load good table");
    uint64_t v4_count = 0, v6_count = 0;
    CHECK(fibkit_table_prefixes(table, &v4_count, &v6_count) == FIBKIT_OK && v4_count == 2 &&
              v6_count == 1, "prefix counts %llu %llu", (unsigned long long)v4_count,
          (unsigned long long)v6_count);
    CHECK(fibkit_fib_build(table, 7, NULL, &fib) == FIBKIT_ERR_ARGUMENT, "family 7");
    CHECK(fibkit_fib_build(table, FIBKIT_IPV4, "dir24-8", &fib) == FIBKIT_OK, "build");
    fibkit_fib *fib6 = NULL;
    CHECK(fibkit_fib_build(table, FIBKIT_IPV6, NULL, &fib6) == FIBKIT_OK, "build v6");
    fibkit_table_free(table);

    CHECK(fibkit_lookup_v4(fib, addr, &label) == FIBKIT_OK && label == 4294967295u, "full label");
    CHECK(fibkit_lookup_v4(fib, 0x0b000000, &label) == FIBKIT_NOT_FOUND && label == 0, "no route writes 0");
    CHECK(fibkit_lookup_v4(fib, addr, NULL) == FIBKIT_ERR_NULL && said("`label`"), "null label");
    uint32_t keys[3] = {0x0a010203, 0x0b000000, 0x0a020000};
    uint64_t results[3];
    CHECK(fibkit_lookup_v4_bulk(fib, keys, results, 3) == FIBKIT_OK && results[0] == 4294967295u &&
              results[1] == FIBKIT_NO_ROUTE && results[2] == 1, "bulk");
    CHECK(fibkit_lookup_v4_bulk(fib, NULL, results, 3) == FIBKIT_ERR_NULL && said("`addrs`"), "null keys");
    CHECK(fibkit_lookup_v4_bulk(fib, keys, NULL, 3) == FIBKIT_ERR_NULL && said("`results`"), "null results");
    CHECK(fibkit_lookup_v4_bulk(fib, NULL, NULL, 0) == FIBKIT_OK, "empty bulk");
    CHECK(fibkit_lookup_v4_bulk(fib, (const uint32_t *)((const char *)keys + 1), results, 2) ==
              FIBKIT_ERR_NULL && said("aligned"), "misaligned keys");

    /* Wrong family: IPv6 addresses and changes for an IPv4 table, and back. */
    uint8_t keys6[2][16] = {{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, {0}};
    CHECK(fibkit_lookup_v6(fib, &addr6, &label) == FIBKIT_ERR_FAMILY && said("IPv6 addresses"), "v6 on v4");
    CHECK(fibkit_lookup_v6_bulk(fib, keys6, results, 2) == FIBKIT_ERR_FAMILY, "v6 bulk on v4");
    CHECK(fibkit_lookup_v4(fib6, addr, &label) == FIBKIT_ERR_FAMILY && said("IPv4 addresses"), "v4 on v6");
    CHECK(fibkit_lookup_v6_bulk(fib6, keys6, results, 2) == FIBKIT_OK && results[0] == 6 &&
              results[1] == FIBKIT_NO_ROUTE, "v6 bulk");
    fibkit_change_v4 c4 = {0x0c000000, 8, 0, 12};
    CHECK(fibkit_apply_v4(fib6, &c4, 1, NULL) == FIBKIT_ERR_FAMILY, "v4 change on v6");

    /* Readers: NULLs and families are checked like the table's calls. */
    fibkit_reader *reader = NULL, *reader6 = NULL;
    CHECK(fibkit_reader_new(NULL, &reader) == FIBKIT_ERR_NULL && said("`fib`"), "reader of null");
    CHECK(fibkit_reader_new(fib, NULL) == FIBKIT_ERR_NULL && said("`out`"), "reader to null");
    CHECK(fibkit_reader_new(fib, &reader) == FIBKIT_OK && fibkit_reader_new(fib6, &reader6) == FIBKIT_OK,
          "readers");
    CHECK(fibkit_reader_lookup_v4(NULL, addr, &label) == FIBKIT_ERR_NULL && said("`reader`"), "null reader");
    CHECK(fibkit_reader_lookup_v4(reader, addr, &label) == FIBKIT_OK && label == 4294967295u, "reader key");
    label = 7;
    CHECK(fibkit_reader_lookup_v4(reader, 0x0b000000, &label) == FIBKIT_NOT_FOUND && label == 0,
          "reader no route writes 0");
    CHECK(fibkit_reader_lookup_v4_bulk(reader, keys, results, 3) == FIBKIT_OK && results[0] == 4294967295u &&
              results[1] == FIBKIT_NO_ROUTE && results[2] == 1, "reader bulk");
    CHECK(fibkit_reader_lookup_v4_bulk(reader, keys, NULL, 3) == FIBKIT_ERR_NULL && said("`results`"),
          "reader null results");
    CHECK(fibkit_reader_lookup_v6(reader, &addr6, &label) == FIBKIT_ERR_FAMILY && said("IPv6 addresses"),
          "reader v6 on v4");
    CHECK(fibkit_reader_lookup_v6_bulk(reader, keys6, results, 2) == FIBKIT_ERR_FAMILY, "reader v6 bulk on v4");
    CHECK(fibkit_reader_lookup_v4_bulk(reader6, keys, results, 3) == FIBKIT_ERR_FAMILY &&
              said("IPv4 addresses"), "reader v4 bulk on v6");
    CHECK(fibkit_reader_lookup_v6_bulk(reader6, keys6, results, 2) == FIBKIT_OK && results[0] == 6 &&
              results[1] == FIBKIT_NO_ROUTE, "reader v6 bulk");
    CHECK(fibkit_reader_lookup_v6(reader6, &addr6, &label) == FIBKIT_OK && label == 6, "reader v6 key");
    fibkit_reader_free(reader);
    fibkit_reader_free(reader6);
    fibkit_reader_free(NULL);
    /* A reader sees the changes applied after it was made, and answers
       from the last snapshot once its table is freed. */
    fibkit_fib *growing = NULL;
    CHECK(fibkit_fib_new(FIBKIT_IPV4, "dxr", &growing) == FIBKIT_OK &&
              fibkit_reader_new(growing, &reader) == FIBKIT_OK, "reader of a new table");
    CHECK(fibkit_reader_lookup_v4(reader, 0x0b000001, &label) == FIBKIT_NOT_FOUND, "empty");
    fibkit_change_v4 add = {0x0b000000, 8, 0, 11}, undo = {0x0b000000, 8, 1, 0};
    CHECK(fibkit_apply_v4(growing, &add, 1, NULL) == FIBKIT_OK &&
              fibkit_reader_lookup_v4(reader, 0x0b000001, &label) == FIBKIT_OK && label == 11,
          "reader sees a change");
    CHECK(fibkit_apply_v4(growing, &undo, 1, NULL) == FIBKIT_OK &&
              fibkit_reader_lookup_v4(reader, 0x0b000001, &label) == FIBKIT_NOT_FOUND,
          "reader sees the withdrawal");
    CHECK(fibkit_apply_v4(growing, &add, 1, NULL) == FIBKIT_OK, "announce again");
    fibkit_fib_free(growing);
    CHECK(fibkit_reader_lookup_v4(reader, 0x0b000001, &label) == FIBKIT_OK && label == 11,
          "reader after its table is freed");
    fibkit_reader_free(reader);

    /* Text lookups: prefix text, malformed addresses quoted. */
    char prefix[FIBKIT_PREFIX_TEXT_BYTES];
    CHECK(fibkit_lookup_text(fib, "10.1.2.3", &label, prefix, sizeof prefix) == FIBKIT_OK &&
              strcmp(prefix, "10.1.0.0/16") == 0, "text lookup %s", prefix);
    CHECK(fibkit_lookup_text(fib, "10.1.2.300", &label, prefix, sizeof prefix) == FIBKIT_ERR_ARGUMENT &&
              said("`10.1.2.300` is not an IPv4 address"), "bad text");
    CHECK(fibkit_lookup_text(fib, "2001:db8::1", &label, NULL, 0) == FIBKIT_ERR_ARGUMENT, "v6 text on v4");
    CHECK(fibkit_lookup_text(fib, "10.1.2.3", &label, prefix, 4) == FIBKIT_ERR_ARGUMENT &&
              said("too small"), "small prefix buffer");
    CHECK(fibkit_lookup_text(fib6, "2001:db8::5", &label, prefix, sizeof prefix) == FIBKIT_OK &&
              label == 6 && strcmp(prefix, "2001:db8::/32") == 0, "v6 text");

    /* Changes: one batch, all or nothing; a bad one is named by index. */
    fibkit_change_v4 changes[3] = {{0x0c000000, 8, 0, 12}, {0x0a010000, 16, 1, 0}, {0x0d000001, 8, 0, 13}};
    CHECK(fibkit_apply_v4(fib, changes, 3, NULL) == FIBKIT_ERR_ARGUMENT && said("change 2") &&
              said("host bits"), "host bits in change 2");
    CHECK(fibkit_lookup_v4(fib, 0x0c000001, &label) == FIBKIT_NOT_FOUND, "bad batch left no trace");
    changes[2].addr = 0x0d000000;
    changes[2].withdraw = 2;
    CHECK(fibkit_apply_v4(fib, changes, 3, NULL) == FIBKIT_ERR_ARGUMENT && said("`withdraw` is 2"), "withdraw 2");
    changes[2].withdraw = 0;
    changes[2].plen = 33;
    CHECK(fibkit_apply_v4(fib, changes, 3, NULL) == FIBKIT_ERR_ARGUMENT && said("change 2"), "plen 33");
    changes[2].plen = 8;
    fibkit_summary summary;
    CHECK(fibkit_apply_v4(fib, changes, 3, &summary) == FIBKIT_OK && summary.effective == 3 &&
              summary.version == 1, "apply");
    CHECK(fibkit_lookup_v4(fib, 0x0c000001, &label) == FIBKIT_OK && label == 12, "announced");
    CHECK(fibkit_lookup_v4(fib, addr, &label) == FIBKIT_OK && label == 1, "withdrawn /16");
    fibkit_change_v6 c6 = {{0x20, 0x01, 0x0d, 0xb8}, 16, 0, 9};
    CHECK(fibkit_apply_v6(fib6, &c6, 1, NULL) == FIBKIT_ERR_ARGUMENT && said("change 0"), "v6 host bits");
    CHECK(fibkit_apply_v4(fib, NULL, 1, NULL) == FIBKIT_ERR_NULL && said("`changes`"), "null changes");
    fibkit_stats stats;
    CHECK(fibkit_fib_stats(fib, &stats) == FIBKIT_OK && stats.prefixes == 3 && stats.version == 1 &&
              stats.is_image == 0 && stats.family == FIBKIT_IPV4, "stats");
    char spec[4];
    CHECK(fibkit_fib_spec(fib, spec, sizeof spec) == 7 && strcmp(spec, "dir") == 0, "cut spec");
    CHECK(fibkit_fib_spec(fib, NULL, 0) == 7, "spec length");
    CHECK(fibkit_fib_spec(fib, NULL, 8) == FIBKIT_ERR_NULL, "null spec buffer");
    fibkit_fib_free(fib6);
    fibkit_fib_free(fib);

    /* Images: damaged ones are errors; a good one cannot change. */
    snprintf(path, sizeof path, "%s/v4.fib", scratch);
    size_t len = 0;
    unsigned char *image = read_file(path, &len);
    CHECK(image != NULL && len > 64, "read %s (written by the Rust test)", path);
    if (image) {
        char damaged[4096];
        snprintf(damaged, sizeof damaged, "%s/truncated.fib", scratch);
        CHECK(write_file(damaged, image, len - 1), "write truncated image");
        CHECK(fibkit_fib_open_image(damaged, &fib) == FIBKIT_ERR_IMAGE && said("truncated"), "truncated");
        image[len - 5] ^= 0x40;
        snprintf(damaged, sizeof damaged, "%s/flipped.fib", scratch);
        CHECK(write_file(damaged, image, len), "write flipped image");
        CHECK(fibkit_fib_open_image(damaged, &fib) == FIBKIT_ERR_IMAGE && said("checksum"), "flipped");
        free(image);
    }
    snprintf(path, sizeof path, "%s/no-such.fib", scratch);
    CHECK(fibkit_fib_open_image(path, &fib) == FIBKIT_ERR_IMAGE, "missing image");
    snprintf(path, sizeof path, "%s/good-table.txt", scratch);
    CHECK(fibkit_fib_open_image(path, &fib) == FIBKIT_ERR_IMAGE && said("not a fibkit image"), "text as image");
    snprintf(path, sizeof path, "%s/v4.fib", scratch);
    CHECK(fibkit_fib_open_image(path, &fib) == FIBKIT_OK, "open image");
    CHECK(fibkit_apply_v4(fib, changes, 1, NULL) == FIBKIT_ERR_READ_ONLY && said("cannot change"), "image apply");
    CHECK(fibkit_fib_stats(fib, &stats) == FIBKIT_OK && stats.is_image == 1 && stats.prefixes == 0, "image stats");
    CHECK(fibkit_lookup_text(fib, "8.8.8.8", &label, prefix, sizeof prefix) == FIBKIT_OK && prefix[0] == 0,
          "image answers without a prefix");
    fibkit_fib_free(fib);
    (void)result;
    (void)data_dir;

    printf("errors: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}

/* Readers look up 10.1.2.3 while the writer relabels 10.0.0.0/8 with 1, 2,
 * ... ROUNDS: each reader must see labels that never go back. */
enum { READERS = 3, ROUNDS = 300 };

static fibkit_fib *shared;
static int writer_done;

static void *reader(void *arg) {
    long *backwards = arg;
    uint32_t last = 0, label = 0;
    while (last < ROUNDS && !__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE)) {
        int rc = fibkit_lookup_v4(shared, 0x0a010203, &label);
        if (rc != FIBKIT_OK || label < last) {
            (*backwards)++;
            if (rc != FIBKIT_OK) break;
        }
        last = label;
    }
    return NULL;
}

static int threads_mode(void) {
    CHECK(fibkit_fib_new(FIBKIT_IPV4, "lctrie", &shared) == FIBKIT_OK, "new");
    fibkit_change_v4 change = {0x0a000000, 8, 0, 1};
    CHECK(fibkit_apply_v4(shared, &change, 1, NULL) == FIBKIT_OK, "first label");
    pthread_t threads[READERS];
    long backwards[READERS] = {0};
    for (int i = 0; i < READERS; i++) pthread_create(&threads[i], NULL, reader, &backwards[i]);
    for (uint32_t round = 2; round <= ROUNDS; round++) {
        change.label = round;
        CHECK(fibkit_apply_v4(shared, &change, 1, NULL) == FIBKIT_OK, "round %u", round);
    }
    __atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < READERS; i++) {
        pthread_join(threads[i], NULL);
        CHECK(backwards[i] == 0, "reader %d saw %ld answers go back", i, backwards[i]);
    }
    fibkit_stats stats;
    CHECK(fibkit_fib_stats(shared, &stats) == FIBKIT_OK && stats.version == ROUNDS, "version");
    fibkit_fib_free(shared);
    printf("threads: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}

int main(int argc, char **argv) {
    if (argc == 7 && strcmp(argv[1], "lookup") == 0)
        return lookup_mode(argv[2], argv[3], atoi(argv[4]), argv[5], argv[6]);
    if (argc == 4 && strcmp(argv[1], "errors") == 0) return errors_mode(argv[2], argv[3]);
    if (argc == 2 && strcmp(argv[1], "threads") == 0) return threads_mode();
    fprintf(stderr, "usage: test_fibkit lookup|errors|threads ...\n");
    return 2;
}
