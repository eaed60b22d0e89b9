//! A measurement probe for a design that is not an engine yet: a
//! Poptrie-style trie for IPv6 (Asai and Ohara, SIGCOMM 2015), timed
//! against `dxr6` on the same keys in one process.
//!
//! Layout: a direct root on the top `S` bits (`S` = 14 or 20, so that
//! 6-bit strides end at bit 128), then nodes of 64 children, each node
//! four u64s (one 32-byte slot): a bitmap of the children that are nodes,
//! a bitmap of where a run of equal leaves starts, and the index of its
//! first child node and of its first leaf. A child's index is the popcount
//! of the bitmap below it, so a step is one node read, a shift and a
//! popcount, with no search. The AVX-512 batch walks four vectors of eight
//! keys, one masked gather per vector and level for the bitmap and one for
//! the bases, and reads the leaf bitmap once, at the end.
//!
//! Why a probe: on announced keys `dxr6`'s vector walk is bound by its
//! chain of dependent gathers (a node or two, then a four-step binary
//! search in the leaf, then the label), not by misses; this layout has
//! more levels but no search. Every answer is checked against the
//! reference table (every seventh key).
//!
//! ```text
//! cargo run --release -p fibkit --example poptrie_probe -- [S] [TABLE]
//! ```

use std::arch::x86_64::*;
use std::collections::{HashMap, VecDeque};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use fibkit::bench::{generate_keys, Pattern};
use fibkit::load::{load_table, LoadOptions};
use fibkit::{build, Label, Rib};

/// A root entry's flag: a label index, not a node.
const LEAF: u32 = 1 << 31;
/// Address bits per node level.
const STRIDE: u32 = 6;
/// u64 words per node: child bitmap, leaf bitmap, bases, padding.
const NODE_WORDS: usize = 4;
/// Vectors of eight keys walking together.
const VECTORS: usize = 4;

/// The answer word of a label: 0 for no route.
fn word(label: Option<Label>) -> u64 {
    label.map_or(0, |l| 1 << 32 | l as u64)
}

struct Poptrie {
    root_bits: u32,
    root: Vec<u32>,
    nodes: Vec<u64>,
    /// Label indices of the leaf runs, plus one spare (the batch reads
    /// 32-bit words at any leaf index).
    leaves: Vec<u32>,
    /// Answer words by label index; 0 = no route.
    slots: Vec<u64>,
}

impl Poptrie {
    fn build(rib: &Rib<u128>, root_bits: u32) -> Poptrie {
        assert!(
            root_bits <= 24 && (128 - root_bits).is_multiple_of(STRIDE),
            "the root takes 8, 14 or 20 bits"
        );
        let ranges = rib.ranges();
        let starts: Vec<u128> = ranges.iter().map(|r| r.first).collect();
        let mut slots = vec![0u64];
        let mut index = HashMap::new();
        let labels: Vec<u32> = ranges
            .iter()
            .map(|r| {
                *index.entry(r.label).or_insert_with(|| {
                    if r.label.is_none() {
                        0
                    } else {
                        slots.push(word(r.label));
                        slots.len() as u32 - 1
                    }
                })
            })
            .collect();
        // The label of `lo..=hi` if one range covers it.
        let single = |lo: u128, hi: u128| -> Option<u32> {
            let i = starts.partition_point(|&x| x <= lo) - 1;
            (i + 1 == starts.len() || starts[i + 1] > hi).then_some(labels[i])
        };
        let mut trie = Poptrie {
            root_bits,
            root: vec![0; 1 << root_bits],
            nodes: Vec::new(),
            leaves: Vec::new(),
            slots,
        };
        let mut queue = VecDeque::new();
        let span = 128 - root_bits;
        for c in 0..(1u128 << root_bits) {
            let lo = c << span;
            trie.root[c as usize] = match single(lo, lo | ((1u128 << span) - 1)) {
                Some(label) => LEAF | label,
                None => {
                    queue.push_back((trie.nodes.len() / NODE_WORDS, lo, root_bits));
                    trie.nodes.extend([0; NODE_WORDS]);
                    (trie.nodes.len() / NODE_WORDS - 1) as u32
                }
            };
        }
        // Breadth first, so a node's child nodes are consecutive.
        while let Some((node, lo, depth)) = queue.pop_front() {
            let child_bits = 128 - depth - STRIDE;
            let (mut children, mut runs) = (0u64, 0u64);
            let first_node = (trie.nodes.len() / NODE_WORDS) as u64;
            let first_leaf = trie.leaves.len() as u64;
            let mut previous = None;
            for c in 0..64u128 {
                let clo = lo + (c << child_bits);
                match single(clo, clo + ((1u128 << child_bits) - 1)) {
                    Some(label) => {
                        if previous != Some(label) {
                            runs |= 1 << c;
                            trie.leaves.push(label);
                            previous = Some(label);
                        }
                    }
                    None => {
                        children |= 1 << c;
                        queue.push_back((trie.nodes.len() / NODE_WORDS, clo, depth + STRIDE));
                        trie.nodes.extend([0; NODE_WORDS]);
                    }
                }
            }
            let at = node * NODE_WORDS;
            trie.nodes[at..at + 3].copy_from_slice(&[
                children,
                runs,
                first_node | first_leaf << 32,
            ]);
        }
        assert!(trie.nodes.len() / NODE_WORDS < 1 << 31 && trie.leaves.len() < 1 << 31);
        trie.leaves.push(0);
        trie
    }

    fn bytes(&self) -> usize {
        self.root.len() * 4 + self.nodes.len() * 8 + self.leaves.len() * 4 + self.slots.len() * 8
    }

    fn lookup(&self, addr: u128) -> u64 {
        let entry = self.root[(addr >> (128 - self.root_bits)) as usize];
        if entry & LEAF != 0 {
            return self.slots[(entry & !LEAF) as usize];
        }
        let mut node = entry as usize;
        let mut rest = addr << self.root_bits;
        loop {
            let child = (rest >> (128 - STRIDE)) as u32;
            let below = (2u64 << child).wrapping_sub(1);
            let words = &self.nodes[node * NODE_WORDS..node * NODE_WORDS + 3];
            if words[0] >> child & 1 != 0 {
                node = (words[2] as u32) as usize + (words[0] & below).count_ones() as usize - 1;
                rest <<= STRIDE;
            } else {
                let leaf = (words[2] >> 32) as usize + (words[1] & below).count_ones() as usize - 1;
                return self.slots[self.leaves[leaf] as usize];
            }
        }
    }

    /// Answer words of `keys` into `out`, [`VECTORS`] vectors of eight
    /// keys at a time (the tail per key).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F, BW and VPOPCNTDQ.
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq")]
    unsafe fn lookup_batch(&self, keys: &[u128], out: &mut [u64]) {
        const GROUP: usize = 8 * VECTORS;
        let root = self.root.as_ptr() as *const i32;
        let nodes = self.nodes.as_ptr() as *const i64;
        let (one, two) = (_mm512_set1_epi64(1), _mm512_set1_epi64(2));
        let low32 = _mm512_set1_epi64(u32::MAX as i64);
        let back = _mm512_set1_epi64(64 - self.root_bits as i64);
        let root_bits = _mm512_set1_epi64(self.root_bits as i64);
        let mut groups = keys.chunks_exact(GROUP);
        let mut outs = out.chunks_exact_mut(GROUP);
        for (keys, out) in (&mut groups).zip(&mut outs) {
            let zero = _mm512_setzero_si512();
            let (mut hi, mut lo, mut node, mut fin) = (
                [zero; VECTORS],
                [zero; VECTORS],
                [zero; VECTORS],
                [zero; VECTORS],
            );
            let (mut at_node, mut at_leaf) = ([0u8; VECTORS], [0u8; VECTORS]);
            for v in 0..VECTORS {
                // SAFETY: the group holds 32 keys: words 16v..16v+16 exist.
                let (a, b) = unsafe {
                    let words = keys.as_ptr().add(8 * v) as *const __m512i;
                    (_mm512_loadu_si512(words), _mm512_loadu_si512(words.add(1)))
                };
                let h =
                    _mm512_permutex2var_epi64(a, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), b);
                let l =
                    _mm512_permutex2var_epi64(a, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), b);
                // SAFETY: the index is the top root_bits bits: inside the root.
                let entry = _mm512_cvtepu32_epi64(unsafe {
                    _mm512_i64gather_epi32::<4>(_mm512_srlv_epi64(h, back), root)
                });
                at_node[v] = !_mm512_test_epi64_mask(entry, _mm512_set1_epi64(LEAF as i64));
                node[v] = entry;
                fin[v] =
                    _mm512_and_si512(entry, _mm512_set1_epi64((!LEAF) as i64 & u32::MAX as i64));
                hi[v] =
                    _mm512_or_si512(_mm512_sllv_epi64(h, root_bits), _mm512_srlv_epi64(l, back));
                lo[v] = _mm512_sllv_epi64(l, root_bits);
            }
            while at_node.iter().any(|&m| m != 0) {
                for v in 0..VECTORS {
                    let lanes = at_node[v];
                    if lanes == 0 {
                        continue;
                    }
                    let at = _mm512_slli_epi64::<2>(node[v]);
                    // SAFETY: lanes at a node hold a node index the build
                    // made (every base points inside `nodes`).
                    let (children, bases) = unsafe {
                        (
                            _mm512_mask_i64gather_epi64::<8>(zero, lanes, at, nodes),
                            _mm512_mask_i64gather_epi64::<8>(zero, lanes, at, nodes.add(2)),
                        )
                    };
                    let child = _mm512_srli_epi64::<58>(hi[v]);
                    let below = _mm512_sub_epi64(_mm512_sllv_epi64(two, child), one);
                    let deeper =
                        lanes & _mm512_test_epi64_mask(children, _mm512_sllv_epi64(one, child));
                    let next = _mm512_sub_epi64(
                        _mm512_add_epi64(
                            _mm512_and_si512(bases, low32),
                            _mm512_popcnt_epi64(_mm512_and_si512(children, below)),
                        ),
                        one,
                    );
                    node[v] = _mm512_mask_mov_epi64(node[v], deeper, next);
                    let ended = lanes & !deeper;
                    // An ended lane keeps its node and the mask of the
                    // children up to its own; its leaf is found after the walk.
                    fin[v] = _mm512_mask_mov_epi64(fin[v], ended, below);
                    at_leaf[v] |= ended;
                    at_node[v] = deeper;
                    hi[v] = _mm512_or_si512(
                        _mm512_slli_epi64::<6>(hi[v]),
                        _mm512_srli_epi64::<58>(lo[v]),
                    );
                    lo[v] = _mm512_slli_epi64::<6>(lo[v]);
                }
            }
            for v in 0..VECTORS {
                let lanes = at_leaf[v];
                let at = _mm512_slli_epi64::<2>(node[v]);
                // SAFETY: as in the walk; the leaf index is inside
                // `leaves` (a run starts at or before every leaf child),
                // and `leaves` has a spare element past the last run; a
                // label index is inside `slots`.
                unsafe {
                    let runs = _mm512_mask_i64gather_epi64::<8>(zero, lanes, at, nodes.add(1));
                    let bases = _mm512_mask_i64gather_epi64::<8>(zero, lanes, at, nodes.add(2));
                    let leaf = _mm512_sub_epi64(
                        _mm512_add_epi64(
                            _mm512_srli_epi64::<32>(bases),
                            _mm512_popcnt_epi64(_mm512_and_si512(runs, fin[v])),
                        ),
                        one,
                    );
                    let label = _mm512_cvtepu32_epi64(_mm512_mask_i64gather_epi32::<4>(
                        _mm512_cvtepi64_epi32(fin[v]),
                        lanes,
                        leaf,
                        self.leaves.as_ptr() as *const i32,
                    ));
                    let answer =
                        _mm512_i64gather_epi64::<8>(label, self.slots.as_ptr() as *const i64);
                    _mm512_storeu_si512(out.as_mut_ptr().add(8 * v) as *mut __m512i, answer);
                }
            }
        }
        for (key, out) in groups.remainder().iter().zip(outs.into_remainder()) {
            *out = self.lookup(*key);
        }
    }
}

/// Lookups per second, in millions, of `pass` over `keys` keys (at least
/// 0.3 s).
fn mlps(keys: usize, mut pass: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut passes = 0;
    while start.elapsed().as_secs_f64() < 0.3 {
        pass();
        passes += 1;
    }
    (passes * keys) as f64 / start.elapsed().as_secs_f64() / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root_bits: u32 = args
        .first()
        .map_or(14, |a| a.parse().expect("S: 8, 14 or 20"));
    let table = args.get(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/dfz-v6-nh.txt.gz"),
        PathBuf::from,
    );
    assert!(
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq"),
        "the probe's batch needs AVX-512 F, BW and VPOPCNTDQ"
    );
    let rib = load_table(&table, &LoadOptions::default())
        .expect("the table loads")
        .v6;
    let started = Instant::now();
    let trie = Poptrie::build(&rib, root_bits);
    println!(
        "{}: {} IPv6 prefixes; poptrie S={root_bits}: {} nodes, {} leaf runs, {} bytes ({:.1} per prefix), built in {:.0} ms",
        table.display(),
        rib.len(),
        trie.nodes.len() / NODE_WORDS,
        trie.leaves.len() - 1,
        trie.bytes(),
        trie.bytes() as f64 / rib.len() as f64,
        started.elapsed().as_secs_f64() * 1e3
    );
    let dxr6 = build("dxr6", &rib).expect("dxr6 builds");
    for name in ["announced", "rnd-public"] {
        let pattern: Pattern = name.parse().expect("a pattern");
        let keys: Vec<u128> = generate_keys(&pattern, 1 << 22, 1, &rib).expect("keys");
        let mut words = vec![0u64; keys.len()];
        let mut labels = vec![None; keys.len()];
        // SAFETY: the features were checked above.
        unsafe { trie.lookup_batch(&keys, &mut words) };
        for (key, &got) in keys.iter().zip(&words).step_by(7) {
            let expected = word(rib.lookup(*key));
            assert_eq!(got, expected, "batch at {key:#x}");
            assert_eq!(trie.lookup(*key), expected, "per key at {key:#x}");
        }
        let mut rounds = Vec::new();
        for _ in 0..7 {
            let d = mlps(keys.len(), || {
                dxr6.lookup_batch(&keys, &mut labels);
                black_box(&labels);
            });
            // SAFETY: the features were checked above.
            let p = mlps(keys.len(), || {
                unsafe { trie.lookup_batch(&keys, &mut words) };
                black_box(&words);
            });
            let k = mlps(keys.len(), || {
                for (key, out) in keys.iter().zip(words.iter_mut()) {
                    *out = trie.lookup(*key);
                }
                black_box(&words);
            });
            rounds.push((d, p, k));
        }
        let mut ratios: Vec<f64> = rounds.iter().map(|(d, p, _)| p / d).collect();
        ratios.sort_by(f64::total_cmp);
        let shown: Vec<String> = rounds
            .iter()
            .map(|(d, p, k)| format!("{d:.1}/{p:.1}/{k:.1}"))
            .collect();
        println!(
            "{name} keys, Mlps per round (dxr6 batch / poptrie batch / poptrie per key): {}",
            shown.join(", ")
        );
        println!(
            "{name} keys: poptrie batch ÷ dxr6 batch, median of rounds {:.2} (min {:.2}, max {:.2})",
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
}
