/*
 * A pointer chase (one pointer per 64-byte line, in one random cycle, so
 * every load waits for the one before) through MiB of anonymous memory
 * advised MADV_HUGEPAGE or MADV_NOHUGEPAGE: whether the step in the
 * latency curve that `fibkit model calibrate` measures is the data
 * cache's or the TLB's. With 4 KiB pages a TLB of 2048 entries reaches
 * 8 MiB, where this machine's curve turns; with 2 MiB pages it reaches
 * 4 GiB. Prints the best of seven timings of 2^22 loads and the huge
 * pages the process holds (AnonHugePages), which says whether the kernel
 * honoured the advice. docs/bench/model.md ("The machine's own spread")
 * quotes it.
 *
 *   gcc -O2 -o /tmp/chase_hugepages bench/micro/chase_hugepages.c
 *   for mib in 2 4 8 16 32 64 128; do for huge in 0 1; do
 *       taskset -c 0 /tmp/chase_hugepages $mib $huge; done; done
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64
#define HUGE_PAGE (2u << 20)

static uint64_t state = 88172645463325252ull;

/* Where the chase's end is stored: the compiler must assume it is read, so
 * the timed loads are not optimised away. */
volatile size_t chase_end;

/* xorshift64: a fixed, seeded order, the same in every run. */
static uint64_t next_random(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* AnonHugePages of this process, in KiB (0 where the kernel lists none). */
static long huge_kib(void) {
    FILE *smaps = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kib = 0;
    if (!smaps)
        return 0;
    while (fgets(line, sizeof line, smaps))
        if (!strncmp(line, "AnonHugePages:", 14))
            kib = atol(line + 14);
    fclose(smaps);
    return kib;
}

int main(int argc, char **argv) {
    if (argc != 3 || atoi(argv[1]) < 1 || (strcmp(argv[2], "0") && strcmp(argv[2], "1"))) {
        fprintf(stderr, "usage: chase_hugepages MIB 0|1   (1: advise huge pages)\n");
        return 2;
    }
    size_t bytes = (size_t)atoi(argv[1]) << 20;
    int huge = argv[2][0] == '1';
    size_t lines = bytes / LINE;
    /* Aligned to a huge page, so that every 2 MiB of the range can be one. */
    char *mapped = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) {
        perror("chase_hugepages: mmap");
        return 1;
    }
    char *memory = (char *)(((uintptr_t)mapped + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (madvise(memory, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) {
        perror("chase_hugepages: madvise");
        return 1;
    }
    memset(memory, 0, bytes);
    size_t *order = malloc(lines * sizeof *order);
    if (!order) {
        fprintf(stderr, "chase_hugepages: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < lines; i++)
        order[i] = i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = next_random() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        *(size_t *)(memory + order[i] * LINE) = order[(i + 1) % lines] * LINE;
    size_t at = order[0] * LINE;
    /* One lap warms the caches and the TLB. */
    for (size_t i = 0; i < lines; i++)
        at = *(size_t *)(memory + at);
    double best = 1e18;
    for (int round = 0; round < 7; round++) {
        double begun = now_ns();
        for (int i = 0; i < (1 << 22); i++)
            at = *(size_t *)(memory + at);
        double ns = (now_ns() - begun) / (1 << 22);
        if (ns < best)
            best = ns;
    }
    chase_end = at;
    printf("%zu MiB, huge pages %s: %.1f ns per load (AnonHugePages %ld KiB)\n", bytes >> 20,
           huge ? "advised" : "refused", best, huge_kib());
    return 0;
}
