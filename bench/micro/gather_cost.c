/*
 * The cost of one AVX-512 gather of eight 64-bit words from an array in
 * L1: how often one can issue (two independent gathers per iteration) and
 * how long one takes when each gather's indices come from the last
 * (a dependent chain), beside a dependent scalar load. docs/bench/poptrie.md
 * ("Where `poptrie` stands against `rte_fib6`'s AVX-512 lookup") uses
 * these to count a lookup's cost in dependent reads.
 *
 *   gcc -O2 -mavx512f -o /tmp/gather_cost bench/micro/gather_cost.c && /tmp/gather_cost
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    if (!__builtin_cpu_supports("avx512f")) {
        fprintf(stderr, "gather_cost: this CPU has no AVX-512 F\n");
        return 1;
    }
    /* 8 KiB: in L1. Every entry is an index into the array. */
    static int64_t words[1024];
    for (int i = 0; i < 1024; i++)
        words[i] = (i * 37 + 11) & 1023;
    const long rounds = 100000000;

    __m512i a = _mm512_setr_epi64(0, 8, 16, 24, 32, 40, 48, 56);
    __m512i b = _mm512_add_epi64(a, _mm512_set1_epi64(1));
    __m512i sum = _mm512_setzero_si512();
    double start = now();
    for (long i = 0; i < rounds; i++) {
        __m512i x = _mm512_i64gather_epi64(a, words, 8);
        __m512i y = _mm512_i64gather_epi64(b, words, 8);
        sum = _mm512_add_epi64(sum, _mm512_add_epi64(x, y));
        /* Keeps the indices in registers without letting the compiler
         * hoist the gathers out of the loop. */
        __asm__ volatile("" : "+v"(a), "+v"(b));
    }
    double issue = (now() - start) / (2.0 * rounds);

    __m512i chain = a;
    start = now();
    for (long i = 0; i < rounds / 4; i++)
        chain = _mm512_i64gather_epi64(chain, words, 8);
    double latency = (now() - start) / (rounds / 4);

    int64_t at = 0;
    start = now();
    for (long i = 0; i < rounds; i++)
        at = words[at];
    double scalar = (now() - start) / rounds;

    int64_t lanes[8];
    _mm512_storeu_si512(lanes, _mm512_add_epi64(sum, chain));
    printf("gather issue %.2f ns, dependent gather %.2f ns, dependent load %.2f ns (check %lld)\n",
           issue * 1e9, latency * 1e9, scalar * 1e9, (long long)(lanes[0] + at));
    return 0;
}
