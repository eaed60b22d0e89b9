/*
 * lookup: the longest matching prefix of addresses, from a table file or an
 * image, through the fibkit C library.
 *
 *   cc -I crates/fibkit-c/include crates/fibkit-c/examples/lookup.c \
 *      target/release/libfibkit.a -lpthread -ldl -lm -o lookup
 *   ./lookup ../shared/data/dfz-v4-nh.txt.gz 8.8.8.8 1.1.1.1
 *   ./lookup --engine dir24-8 ../shared/data/dfz-v4-nh.txt.gz 8.8.8.8
 *   ./lookup table.fib 8.8.8.8          (an image from `fibkit build`)
 *
 * Prints `address prefix label` or `address - none` per address (an image
 * holds no prefixes: `?` stands for the prefix), then looks the same
 * addresses up again as one bulk array, the way a datapath would, and
 * checks both agree. Exit status 1 on any error, with fibkit's message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "fibkit.h"

static int failed(const char *what) {
    fprintf(stderr, "lookup: %s: %s\n", what, fibkit_last_error());
    return 1;
}

static int is_image(const char *path) {
    char magic[8] = {0};
    FILE *file = fopen(path, "rb");
    if (!file) return 0;
    size_t n = fread(magic, 1, sizeof magic, file);
    fclose(file);
    return n == sizeof magic && memcmp(magic, "FIBKITIM", 8) == 0;
}

int main(int argc, char **argv) {
    const char *spec = NULL; /* the family's default engine */
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--engine") == 0) {
        spec = argv[2];
        first = 3;
    }
    if (argc - first < 1) {
        fprintf(stderr, "usage: lookup [--engine SPEC] TABLE|IMAGE ADDRESS...\n");
        return 2;
    }
    const char *path = argv[first];
    fibkit_fib *fib = NULL;
    if (is_image(path)) {
        if (fibkit_fib_open_image(path, &fib) != FIBKIT_OK) return failed("opening the image");
    } else {
        fibkit_table *table = NULL;
        if (fibkit_table_load(path, &table) != FIBKIT_OK) return failed("loading the table");
        int rc = fibkit_fib_build(table, FIBKIT_ANY_FAMILY, spec, &fib);
        fibkit_table_free(table); /* the fib keeps its own copy */
        if (rc != FIBKIT_OK) return failed("building the engine");
    }

    fibkit_stats stats;
    char engine[64];
    if (fibkit_fib_stats(fib, &stats) != FIBKIT_OK ||
        fibkit_fib_spec(fib, engine, sizeof engine) < 0)
        return failed("reading statistics");
    fprintf(stderr, "%s %s, %llu prefixes, %llu bytes\n", engine,
            stats.family == FIBKIT_IPV4 ? "IPv4" : "IPv6",
            (unsigned long long)stats.prefixes, (unsigned long long)stats.memory_bytes);

    int count = argc - first - 1;
    uint32_t *v4 = calloc(count ? count : 1, sizeof *v4);
    uint8_t (*v6)[16] = calloc(count ? count : 1, sizeof *v6);
    uint64_t *labels = calloc(count ? count : 1, sizeof *labels);
    uint64_t *bulk = calloc(count ? count : 1, sizeof *bulk);
    int status = 0;
    for (int i = 0; i < count; i++) {
        const char *text = argv[first + 1 + i];
        uint32_t label;
        char prefix[FIBKIT_PREFIX_TEXT_BYTES];
        int rc = fibkit_lookup_text(fib, text, &label, prefix, sizeof prefix);
        if (rc < 0) {
            status = failed("looking up");
            labels[i] = FIBKIT_NO_ROUTE;
        } else if (rc == FIBKIT_NOT_FOUND) {
            printf("%s - none\n", text);
            labels[i] = FIBKIT_NO_ROUTE;
        } else {
            printf("%s %s %u\n", text, prefix[0] ? prefix : "?", label);
            labels[i] = label;
        }
        /* The binary forms for the bulk lookup below (0 if unparsable). */
        struct in_addr a4;
        if (inet_pton(AF_INET, text, &a4) == 1) v4[i] = ntohl(a4.s_addr);
        if (inet_pton(AF_INET6, text, v6[i]) != 1) memset(v6[i], 0, 16);
    }

    int rc = stats.family == FIBKIT_IPV4 ? fibkit_lookup_v4_bulk(fib, v4, bulk, (size_t)count)
                                         : fibkit_lookup_v6_bulk(fib, v6, bulk, (size_t)count);
    if (rc != FIBKIT_OK) {
        status = failed("bulk lookup");
    } else {
        for (int i = 0; i < count; i++) {
            if (labels[i] != FIBKIT_NO_ROUTE && bulk[i] != labels[i]) {
                fprintf(stderr, "lookup: bulk lookup of %s disagrees\n", argv[first + 1 + i]);
                status = 1;
            }
        }
    }
    free(v4);
    free(v6);
    free(labels);
    free(bulk);
    fibkit_fib_free(fib);
    return status;
}
