//! A leaf's search: how many of its range starts are `<=` the probe.
//!
//! A leaf lies inside one 64-byte line of u16 words; its starts are stored
//! as little-endian u16 halves at one of four widths ([`Bound`]), aligned
//! to their width. A search compares every start-sized lane of the whole
//! line with the probe at once and counts the qualifying lanes among the
//! leaf's own. SSE2 (part of the x86-64 baseline) compares 16- and 32-bit
//! lanes; 64- and 128-bit starts (under 1% of leaves on the real tables)
//! use a portable loop.

/// u16 words per leaf line: 64 bytes, one cache line.
pub(super) const LINE_WORDS: usize = 32;

/// A range start as a leaf stores it: the address bits after the leaf's
/// depth, at one of the four widths.
pub(super) trait Bound: Copy + Ord + std::fmt::Debug {
    /// Bits per start.
    const BITS: u32;
    /// u16 words per start.
    const WORDS: usize = Self::BITS as usize / 16;
    /// Starts (lanes) per line.
    const LANES: usize = LINE_WORDS / Self::WORDS;
    /// The width code a leaf entry records (`BITS = 16 << CODE`).
    const CODE: u32;

    /// Keeps the low `BITS` bits of `bits`.
    fn from_bits(bits: u128) -> Self;

    /// The start stored at `words[at..at + WORDS]`.
    fn read(words: &[u16], at: usize) -> Self;

    /// Stores the start in `words[..WORDS]`.
    fn write(self, words: &mut [u16]);

    /// Bit `i` set when lane `i` of `line` is `<= probe`.
    #[inline(always)]
    fn lanes_at_most(line: &[u16; LINE_WORDS], probe: Self) -> u64 {
        lanes_at_most_portable(line, probe)
    }
}

/// [`Bound::lanes_at_most`] as a plain loop: what 64- and 128-bit starts
/// use, and the reference the SSE2 versions are tested against.
#[inline(always)]
fn lanes_at_most_portable<B: Bound>(line: &[u16; LINE_WORDS], probe: B) -> u64 {
    let mut at_most = 0u64;
    for lane in 0..B::LANES {
        at_most |= ((B::read(line, lane * B::WORDS) <= probe) as u64) << lane;
    }
    at_most
}

impl Bound for u16 {
    const BITS: u32 = 16;
    const CODE: u32 = 0;

    #[inline(always)]
    fn from_bits(bits: u128) -> Self {
        bits as u16
    }
    #[inline(always)]
    fn read(words: &[u16], at: usize) -> Self {
        words[at]
    }
    fn write(self, words: &mut [u16]) {
        words[0] = self;
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn lanes_at_most(line: &[u16; LINE_WORDS], probe: Self) -> u64 {
        use std::arch::x86_64::{
            _mm_cmpgt_epi16, _mm_movemask_epi8, _mm_packs_epi16, _mm_set1_epi16, _mm_xor_si128,
        };
        let vectors = load_line(line);
        // SAFETY: SSE2 is part of the x86-64 baseline, so every x86-64 CPU
        // runs these intrinsics; they only compute on registers.
        // Exercised by `lane_counts_agree_with_the_portable_loop`.
        let above = unsafe {
            // SSE2 compares signed words; flipping the sign bit of both
            // sides turns it into the unsigned compare.
            let flip = _mm_set1_epi16(i16::MIN);
            let probe = _mm_xor_si128(_mm_set1_epi16(probe as i16), flip);
            let above = vectors.map(|v| _mm_cmpgt_epi16(_mm_xor_si128(v, flip), probe));
            // Words to bytes (0 and -1 saturate to themselves), one bit each.
            let low = _mm_movemask_epi8(_mm_packs_epi16(above[0], above[1])) as u32;
            let high = _mm_movemask_epi8(_mm_packs_epi16(above[2], above[3])) as u32;
            low | high << 16
        };
        (!above) as u64
    }
}

impl Bound for u32 {
    const BITS: u32 = 32;
    const CODE: u32 = 1;

    #[inline(always)]
    fn from_bits(bits: u128) -> Self {
        bits as u32
    }
    #[inline(always)]
    fn read(words: &[u16], at: usize) -> Self {
        words[at] as u32 | (words[at + 1] as u32) << 16
    }
    fn write(self, words: &mut [u16]) {
        words[..2].copy_from_slice(&[self as u16, (self >> 16) as u16]);
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn lanes_at_most(line: &[u16; LINE_WORDS], probe: Self) -> u64 {
        use std::arch::x86_64::{
            _mm_cmpgt_epi32, _mm_movemask_epi8, _mm_packs_epi16, _mm_packs_epi32, _mm_set1_epi32,
            _mm_xor_si128,
        };
        let vectors = load_line(line);
        // SAFETY: as for u16: SSE2 register arithmetic only. Exercised by
        // `lane_counts_agree_with_the_portable_loop`.
        let above = unsafe {
            let flip = _mm_set1_epi32(i32::MIN);
            let probe = _mm_xor_si128(_mm_set1_epi32(probe as i32), flip);
            let above = vectors.map(|v| _mm_cmpgt_epi32(_mm_xor_si128(v, flip), probe));
            // Dwords to words to bytes (0 and -1 saturate to themselves).
            let words_low = _mm_packs_epi32(above[0], above[1]);
            let words_high = _mm_packs_epi32(above[2], above[3]);
            _mm_movemask_epi8(_mm_packs_epi16(words_low, words_high)) as u32
        };
        (!above & 0xffff) as u64
    }
}

impl Bound for u64 {
    const BITS: u32 = 64;
    const CODE: u32 = 2;

    #[inline(always)]
    fn from_bits(bits: u128) -> Self {
        bits as u64
    }
    #[inline(always)]
    fn read(words: &[u16], at: usize) -> Self {
        u32::read(words, at) as u64 | (u32::read(words, at + 2) as u64) << 32
    }
    fn write(self, words: &mut [u16]) {
        (self as u32).write(words);
        ((self >> 32) as u32).write(&mut words[2..]);
    }
}

impl Bound for u128 {
    const BITS: u32 = 128;
    const CODE: u32 = 3;

    #[inline(always)]
    fn from_bits(bits: u128) -> Self {
        bits
    }
    #[inline(always)]
    fn read(words: &[u16], at: usize) -> Self {
        u64::read(words, at) as u128 | (u64::read(words, at + 4) as u128) << 64
    }
    fn write(self, words: &mut [u16]) {
        (self as u64).write(words);
        ((self >> 64) as u64).write(&mut words[4..]);
    }
}

/// The line as four 16-byte vectors.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn load_line(line: &[u16; LINE_WORDS]) -> [std::arch::x86_64::__m128i; 4] {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128};
    const _: () = assert!(LINE_WORDS * 2 == 4 * 16, "four 16-byte vectors");
    let ptr = line.as_ptr() as *const __m128i;
    // SAFETY: `line` is 32 u16 = 64 readable bytes, so the four unaligned
    // 16-byte loads (`_mm_loadu_si128` needs no alignment) stay inside it;
    // SSE2 is part of the x86-64 baseline.
    unsafe { [0, 1, 2, 3].map(|i| _mm_loadu_si128(ptr.add(i))) }
}

/// The index of the probe's range in a leaf whose `starts` ascending
/// starts begin at word `at` of `line` (a multiple of `B::WORDS`): how
/// many of them are `<= probe`. The leaf's first range (the one at the
/// chunk's own start) is not stored, so the count is the index.
#[inline(always)]
pub(super) fn range_in_line<B: Bound>(
    line: &[u16; LINE_WORDS],
    at: usize,
    starts: usize,
    probe: B,
) -> usize {
    debug_assert!(at.is_multiple_of(B::WORDS) && at / B::WORDS + starts <= B::LANES);
    let at_most = B::lanes_at_most(line, probe) >> (at / B::WORDS);
    (at_most & ((1u64 << starts) - 1)).trailing_ones() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn check_width<B: Bound>(rng: &mut SmallRng, random: impl Fn(&mut SmallRng) -> B) {
        // Lines of equal, extreme and random starts; probes on, beside and
        // between them.
        for _ in 0..2000 {
            let starts: Vec<B> = (0..B::LANES).map(|_| random(rng)).collect();
            let mut line = [0u16; LINE_WORDS];
            for (lane, &start) in starts.iter().enumerate() {
                start.write(&mut line[lane * B::WORDS..]);
            }
            for (lane, &start) in starts.iter().enumerate() {
                assert_eq!(B::read(&line, lane * B::WORDS), start);
            }
            for probe in [
                starts[0],
                random(rng),
                B::from_bits(0),
                B::from_bits(u128::MAX),
            ] {
                assert_eq!(
                    B::lanes_at_most(&line, probe),
                    lanes_at_most_portable(&line, probe),
                    "{starts:?} {probe:?}"
                );
            }
        }
    }

    /// The SSE2 overrides (16- and 32-bit starts) against the plain loop,
    /// around the sign bit the unsigned compare flips.
    #[test]
    fn lane_counts_agree_with_the_portable_loop() {
        let mut rng = SmallRng::seed_from_u64(3);
        let edges16 = [0, 1, 0x7fff, 0x8000, 0x8001, u16::MAX];
        check_width::<u16>(&mut rng, |r| edges16[r.random_range(0..6)]);
        check_width::<u16>(&mut rng, |r| r.random());
        let edges32 = [0, 1, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, u32::MAX];
        check_width::<u32>(&mut rng, |r| edges32[r.random_range(0..6)]);
        check_width::<u32>(&mut rng, |r| r.random());
    }

    /// Leaves of every size at every aligned place in a line, with noise
    /// in the lanes around them.
    fn check_counts<B: Bound>(rng: &mut SmallRng, random: impl Fn(&mut SmallRng) -> B) {
        for starts_len in 1..=B::LANES {
            for first_lane in 0..=B::LANES - starts_len {
                let mut starts: Vec<B> = (0..starts_len).map(|_| random(rng)).collect();
                starts.sort_unstable();
                let mut line = [0u16; LINE_WORDS];
                for lane in 0..B::LANES {
                    let start = match lane.checked_sub(first_lane) {
                        Some(i) if i < starts_len => starts[i],
                        _ => random(rng),
                    };
                    start.write(&mut line[lane * B::WORDS..]);
                }
                let mut probes: Vec<B> = starts.clone();
                probes.extend((0..50).map(|_| random(rng)));
                probes.extend([B::from_bits(0), B::from_bits(u128::MAX)]);
                for probe in probes {
                    let want = starts.iter().filter(|&&s| s <= probe).count();
                    let at = first_lane * B::WORDS;
                    assert_eq!(
                        range_in_line(&line, at, starts_len, probe),
                        want,
                        "{starts:?} at word {at}, probe {probe:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn counts_agree_with_a_linear_count() {
        let mut rng = SmallRng::seed_from_u64(5);
        // Few distinct values, so equal starts and probes are common.
        check_counts::<u16>(&mut rng, |r| r.random_range(0..64u16) * 1000);
        check_counts::<u16>(&mut rng, |r| r.random());
        check_counts::<u32>(&mut rng, |r| r.random_range(0..64u32) << 26);
        check_counts::<u64>(&mut rng, |r| r.random_range(0..64u64) << 58);
        check_counts::<u128>(&mut rng, |r| (r.random_range(0..64u128) << 122) | 1);
    }
}
