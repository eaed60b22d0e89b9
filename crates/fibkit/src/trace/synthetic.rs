//! Seeded synthetic workloads: traces, tables, route-change streams and
//! adversarial update streams.
//!
//! The trace generators follow the synthetic traces of \[NZ01\] (performance
//! modelling) and \[Yeg18\] (Bloom-filter search); [`TraceKind`] lists them.
//! All are seeded, so a trace is reproducible from its kind, count and seed.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::addr::Addr;
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::trace::check_address_count;

/// A synthetic trace distribution.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceKind {
    /// Uniform over the addresses some prefix covers.
    RandIp,
    /// A uniformly chosen prefix, then a uniform address in it.
    RandNet,
    /// A prefix length chosen in proportion to the address space its prefixes
    /// cover, then a uniform prefix of that length, then a uniform address.
    BySpace,
    /// A prefix length chosen in proportion to its share of the prefixes,
    /// then a uniform prefix of that length, then a uniform address.
    ByCount,
    /// Prefix popularity Zipf-distributed with exponent `s` over a seeded
    /// random ranking of the prefixes; uniform address within.
    Zipf(f64),
    /// An equal mixture of `randip`, `randnet`, `by-space` and `zipf:1`.
    Mix,
}

impl std::str::FromStr for TraceKind {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Ok(match text {
            "randip" => TraceKind::RandIp,
            "randnet" => TraceKind::RandNet,
            "by-space" => TraceKind::BySpace,
            "by-count" => TraceKind::ByCount,
            "mix" => TraceKind::Mix,
            _ => match text.strip_prefix("zipf:").map(str::parse::<f64>) {
                Some(Ok(s)) if s.is_finite() && s >= 0.0 => TraceKind::Zipf(s),
                Some(_) => return Err(format!("`{text}`: the Zipf exponent must be a number >= 0 (zipf:1.1)")),
                None => {
                    return Err(format!(
                        "unknown trace kind `{text}` (known: randip, randnet, by-space, by-count, zipf:S, mix)"
                    ))
                }
            },
        })
    }
}

/// A uniform address inside `prefix`.
fn address_in<A: Addr>(prefix: Prefix<A>, rng: &mut SmallRng) -> A {
    let host = rng.random::<u128>() & !A::mask(prefix.plen()).to_u128();
    A::from_u128(prefix.addr().to_u128() | host)
}

/// Picks an index by cumulative weights (last entry = total).
fn pick(cumulative: &[f64], rng: &mut SmallRng) -> usize {
    let total = cumulative.last().copied().unwrap_or(0.0);
    let target = rng.random::<f64>() * total;
    cumulative
        .partition_point(|&c| c <= target)
        .min(cumulative.len() - 1)
}

fn cumulate(weights: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut sum = 0.0;
    weights
        .map(|w| {
            sum += w;
            sum
        })
        .collect()
}

/// Generates `count` addresses of `kind` from `rib` (which must not be
/// empty); `count` is at most [`MAX_ADDRESSES`](crate::trace::MAX_ADDRESSES).
pub fn generate<A: Addr>(
    rib: &Rib<A>,
    kind: &TraceKind,
    count: usize,
    seed: u64,
) -> Result<Vec<A>, String> {
    check_address_count(count)?;
    let prefixes: Vec<Prefix<A>> = rib.iter().map(|(prefix, _)| prefix).collect();
    if prefixes.is_empty() {
        return Err(format!(
            "the table has no {} prefix to draw a trace from",
            A::FAMILY
        ));
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let sampler = Sampler::new(rib, &prefixes, kind, seed);
    Ok((0..count)
        .map(|i| sampler.sample(&prefixes, i, &mut rng))
        .collect())
}

/// Generates a seeded stream of `count` route changes against `rib`, for
/// update tests and benchmarks: a mix of announcements of new prefixes
/// (fresh ones, ones nested inside or covering existing prefixes, the
/// default route and full-length host routes), relabels and withdrawals of
/// prefixes the table holds at that point, and a few withdrawals of absent
/// prefixes (no-ops a router must tolerate). The stream is applied to a
/// copy of `rib` as it is generated, so every withdrawal of "a held prefix"
/// is valid when its turn comes.
pub fn generate_changes<A: Addr>(rib: &Rib<A>, count: usize, seed: u64) -> Vec<crate::Change<A>> {
    use crate::Change;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut table = rib.clone();
    // The prefixes the copy holds, for picking existing ones; entries may
    // go stale (withdrawn) and are then skipped.
    let mut held: Vec<Prefix<A>> = table.iter().map(|(prefix, _)| prefix).collect();
    let label = |rng: &mut SmallRng| rng.random_range(0..64u32);
    let mut changes = Vec::with_capacity(count);
    while changes.len() < count {
        let existing = (!held.is_empty()).then(|| held[rng.random_range(0..held.len())]);
        let change = match (rng.random_range(0..100u32), existing) {
            // A prefix nested inside an existing one (more specific).
            (0..=24, Some(parent)) if parent.plen() < A::BITS => {
                let plen = rng.random_range(parent.plen() + 1..=A::BITS);
                Change::Announce(
                    Prefix::new_masked(address_in(parent, &mut rng), plen),
                    label(&mut rng),
                )
            }
            // A prefix covering an existing one (less specific).
            (25..=34, Some(child)) => {
                let plen = rng.random_range(0..=child.plen());
                Change::Announce(Prefix::new_masked(child.addr(), plen), label(&mut rng))
            }
            // The extremes: the default route and a host route.
            (35..=36, _) => Change::Announce(Prefix::default_route(), label(&mut rng)),
            (37..=38, _) => Change::Withdraw(Prefix::default_route()),
            (39..=40, _) => Change::Announce(
                Prefix::new_masked(A::from_u128(rng.random()), A::BITS),
                label(&mut rng),
            ),
            // Relabel or withdraw a held prefix.
            (41..=64, Some(prefix)) => Change::Announce(prefix, label(&mut rng)),
            (65..=89, Some(prefix)) => Change::Withdraw(prefix),
            // A withdrawal of a prefix that is (almost surely) absent.
            (90..=92, _) => {
                let plen = rng.random_range(0..=A::BITS);
                Change::Withdraw(Prefix::new_masked(A::from_u128(rng.random()), plen))
            }
            // A fresh random prefix.
            _ => {
                let plen = rng.random_range(0..=A::BITS);
                Change::Announce(
                    Prefix::new_masked(A::from_u128(rng.random()), plen),
                    label(&mut rng),
                )
            }
        };
        let prefix = change.prefix();
        let was_held = table.get(prefix).is_some();
        table.apply(change);
        if !was_held && table.get(prefix).is_some() {
            held.push(prefix);
        }
        changes.push(change);
    }
    changes
}

/// `count` seeded random prefixes (fewer when two coincide), of lengths
/// 1 to the full length drawn evenly, with labels 0..64: a base table for
/// update benchmarks that needs no file.
pub fn random_table<A: Addr>(count: usize, seed: u64) -> Rib<A> {
    let mut rng = SmallRng::seed_from_u64(seed);
    Rib::from_pairs((0..count).map(|_| {
        let plen = rng.random_range(1..=A::BITS);
        let prefix = Prefix::new_masked(A::from_u128(rng.random()), plen);
        (prefix, rng.random_range(0..64u32))
    }))
}

/// Seeded batches of many changes each against `rib`, for measuring what
/// a large batch costs an engine against a build of the table after it.
/// Batch `i` of `batches` is, in turn (`i % 3`):
/// 0. announcements, 500 in the first such batch growing evenly to 40,500
///    in the last: a fifth of them host routes, the rest of random length
///    (1 to the full length); three in four inside one random /8 (IPv4)
///    or /32 (IPv6) chosen per batch, so that they nest and share blocks;
/// 1. withdrawals of a share of the prefixes held then, 30% in the first
///    such batch growing evenly to 100% in the last;
/// 2. relabels of 40% and withdrawals of 20% of the prefixes held then.
///
/// Labels are 0..64. Each batch is generated against the table as the
/// batches before it left it, so every withdrawal is of a held prefix.
pub fn generate_large_batches<A: Addr>(
    rib: &Rib<A>,
    batches: usize,
    seed: u64,
) -> Vec<Vec<crate::Change<A>>> {
    use crate::Change;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut table = rib.clone();
    let kinds = |kind: usize| (0..batches).filter(|i| i % 3 == kind).count();
    let (announce_batches, withdraw_batches) = (kinds(0), kinds(1));
    let step = |k: usize, of: usize| k as f64 / of.saturating_sub(1).max(1) as f64;
    let cluster_bits = if A::BITS == 32 { 8 } else { 32 };
    let mut stream = Vec::with_capacity(batches);
    for i in 0..batches {
        let k = i / 3;
        let mut batch = Vec::new();
        match i % 3 {
            0 => {
                let count = 500 + (40_000.0 * step(k, announce_batches)).round() as usize;
                let hot = Prefix::new_masked(A::from_u128(rng.random()), cluster_bits);
                for _ in 0..count {
                    let addr = if rng.random_range(0..4u32) < 3 {
                        address_in(hot, &mut rng)
                    } else {
                        A::from_u128(rng.random())
                    };
                    let plen = if rng.random_range(0..5u32) == 0 {
                        A::BITS
                    } else {
                        rng.random_range(1..=A::BITS)
                    };
                    let label = rng.random_range(0..64u32);
                    batch.push(Change::Announce(Prefix::new_masked(addr, plen), label));
                }
            }
            1 => {
                let share = 0.3 + 0.7 * step(k, withdraw_batches);
                for (prefix, _) in table.iter() {
                    if rng.random::<f64>() < share {
                        batch.push(Change::Withdraw(prefix));
                    }
                }
            }
            _ => {
                for (prefix, label) in table.iter() {
                    match rng.random_range(0..5u32) {
                        0 | 1 => batch.push(Change::Announce(prefix, (label + 1) % 64)),
                        2 => batch.push(Change::Withdraw(prefix)),
                        _ => {}
                    }
                }
            }
        }
        for &change in &batch {
            table.apply(change);
        }
        stream.push(batch);
    }
    stream
}

/// Precomputed tables for one trace kind.
enum Sampler<A> {
    RandIp {
        ranges: Vec<(A, A)>,
        cumulative: Vec<f64>,
    },
    RandNet,
    ByLength {
        by_length: Vec<Vec<usize>>,
        cumulative: Vec<f64>,
    },
    Zipf {
        ranked: Vec<usize>,
        cumulative: Vec<f64>,
    },
    Mix(Vec<Sampler<A>>),
}

impl<A: Addr> Sampler<A> {
    fn new(rib: &Rib<A>, prefixes: &[Prefix<A>], kind: &TraceKind, seed: u64) -> Self {
        match kind {
            TraceKind::RandIp => {
                let ranges: Vec<(A, A)> = rib
                    .ranges()
                    .into_iter()
                    .filter(|r| r.label.is_some())
                    .map(|r| (r.first, r.last))
                    .collect();
                let cumulative = cumulate(
                    ranges
                        .iter()
                        .map(|&(first, last)| (last.to_u128() - first.to_u128()) as f64 + 1.0),
                );
                Sampler::RandIp { ranges, cumulative }
            }
            TraceKind::RandNet => Sampler::RandNet,
            TraceKind::BySpace | TraceKind::ByCount => {
                let mut by_length = vec![Vec::new(); A::BITS as usize + 1];
                for (index, prefix) in prefixes.iter().enumerate() {
                    by_length[prefix.plen() as usize].push(index);
                }
                let weight = |plen: usize, members: &Vec<usize>| match kind {
                    TraceKind::BySpace => {
                        members.len() as f64 * 2f64.powi(A::BITS as i32 - plen as i32)
                    }
                    _ => members.len() as f64,
                };
                let cumulative = cumulate(
                    by_length
                        .iter()
                        .enumerate()
                        .map(|(plen, m)| weight(plen, m)),
                );
                Sampler::ByLength {
                    by_length,
                    cumulative,
                }
            }
            TraceKind::Zipf(s) => {
                let mut ranked: Vec<usize> = (0..prefixes.len()).collect();
                let mut rng = SmallRng::seed_from_u64(seed ^ 0x21bf);
                // Fisher-Yates: a seeded popularity ranking.
                for i in (1..ranked.len()).rev() {
                    ranked.swap(i, rng.random_range(0..=i));
                }
                let cumulative = cumulate((1..=ranked.len()).map(|rank| (rank as f64).powf(-s)));
                Sampler::Zipf { ranked, cumulative }
            }
            TraceKind::Mix => Sampler::Mix(
                [
                    TraceKind::RandIp,
                    TraceKind::RandNet,
                    TraceKind::BySpace,
                    TraceKind::Zipf(1.0),
                ]
                .iter()
                .map(|k| Sampler::new(rib, prefixes, k, seed))
                .collect(),
            ),
        }
    }

    fn sample(&self, prefixes: &[Prefix<A>], index: usize, rng: &mut SmallRng) -> A {
        match self {
            Sampler::RandIp { ranges, cumulative } => {
                let (first, last) = ranges[pick(cumulative, rng)];
                let span = last.to_u128() - first.to_u128();
                let offset = if span == u128::MAX {
                    rng.random::<u128>()
                } else {
                    rng.random_range(0..=span)
                };
                A::from_u128(first.to_u128() + offset)
            }
            Sampler::RandNet => address_in(prefixes[rng.random_range(0..prefixes.len())], rng),
            Sampler::ByLength {
                by_length,
                cumulative,
            } => {
                let members = &by_length[pick(cumulative, rng)];
                address_in(prefixes[members[rng.random_range(0..members.len())]], rng)
            }
            Sampler::Zipf { ranked, cumulative } => {
                address_in(prefixes[ranked[pick(cumulative, rng)]], rng)
            }
            Sampler::Mix(parts) => parts[index % parts.len()].sample(prefixes, index, rng),
        }
    }
}

/// `count` host routes in `region` (at most its size): the first `count`
/// addresses in a row, or, with `spread`, scattered over the region by a
/// multiplicative hash (an odd multiplier permutes the region's host bits,
/// so they are distinct). The route storms of update benchmarks and tests.
pub fn host_routes_v4(region: Prefix<u32>, count: usize, spread: bool) -> Vec<Prefix<u32>> {
    let host_mask = !<u32 as Addr>::mask(region.plen());
    assert!(
        count as u64 <= host_mask as u64 + 1,
        "{count} host routes in {region}"
    );
    (0..count as u32)
        .map(|i| {
            let host = if spread {
                i.wrapping_mul(0x9e37_79b1)
            } else {
                i
            };
            Prefix::new_masked(region.addr() | (host & host_mask), 32)
        })
        .collect()
}

/// A named stream of route changes (see [`adversarial_streams_v4`]).
#[derive(Clone, Debug)]
pub struct AdversarialStream {
    /// What the stream does, as a short name.
    pub name: &'static str,
    /// The changes, in order.
    pub changes: Vec<crate::Change<u32>>,
}

/// Route-change streams built to make FIB updates slow, for the IPv4 table
/// `rib` they are applied to (each on its own copy of it):
/// - `withdraw-all`: every prefix of `rib` withdrawn, in address order (a
///   session reset);
/// - `default-flaps`: the default route withdrawn and announced again (or
///   announced and withdrawn, if `rib` has none), 1000 times;
/// - `deaggregated-8s`: three /8s (10/8 and the two holding most prefixes
///   of `rib`) announced as their 65,536 /24s each, then withdrawn;
/// - `hosts-in-region`: `hosts` host routes in a row from 10.0.0.0
///   announced, then withdrawn.
pub fn adversarial_streams_v4(rib: &Rib<u32>, hosts: usize) -> Vec<AdversarialStream> {
    use crate::Change;
    let withdraw_all = rib
        .iter()
        .map(|(prefix, _)| Change::Withdraw(prefix))
        .collect();

    let default = Prefix::default_route();
    let flap = match rib.get(default) {
        Some(label) => [Change::Withdraw(default), Change::Announce(default, label)],
        None => [Change::Announce(default, 1), Change::Withdraw(default)],
    };
    let default_flaps = flap.iter().copied().cycle().take(2000).collect();

    let mut per_slash8 = [0usize; 256];
    for (prefix, _) in rib.iter() {
        per_slash8[(prefix.addr() >> 24) as usize] += 1;
    }
    let mut dense: Vec<u32> = (0..256).filter(|&top| top != 10).collect();
    dense.sort_by_key(|&top| std::cmp::Reverse(per_slash8[top as usize]));
    let mut deaggregated = Vec::new();
    for top in [10, dense[0], dense[1]] {
        let slash24s = (0..1u32 << 16).map(|i| Prefix::new_masked(top << 24 | i << 8, 24));
        let labels = slash24s
            .clone()
            .map(|p| Change::Announce(p, p.addr() >> 8 & 0xff));
        deaggregated.extend(labels);
        deaggregated.extend(slash24s.map(Change::Withdraw));
    }

    let region = Prefix::new_masked(0x0a00_0000, 8);
    let hosts = host_routes_v4(region, hosts, false);
    let mut hosts_in_region: Vec<Change<u32>> =
        hosts.iter().map(|&p| Change::Announce(p, 7)).collect();
    hosts_in_region.extend(hosts.iter().map(|&p| Change::Withdraw(p)));

    vec![
        AdversarialStream {
            name: "withdraw-all",
            changes: withdraw_all,
        },
        AdversarialStream {
            name: "default-flaps",
            changes: default_flaps,
        },
        AdversarialStream {
            name: "deaggregated-8s",
            changes: deaggregated,
        },
        AdversarialStream {
            name: "hosts-in-region",
            changes: hosts_in_region,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::trace_stats;

    #[test]
    fn change_streams_are_seeded_and_varied() {
        use crate::Change;
        let rib = Rib::<u128>::from_pairs([
            ("2001:db8::/32".parse().unwrap(), 1),
            ("2001:db8:1::/48".parse().unwrap(), 2),
        ]);
        let a = generate_changes(&rib, 2000, 5);
        assert_eq!(a, generate_changes(&rib, 2000, 5));
        assert_ne!(a, generate_changes(&rib, 2000, 6));
        let plens: Vec<u8> = a.iter().map(|c| c.prefix().plen()).collect();
        assert!(plens.contains(&0) && plens.contains(&128));
        let mut table = rib.clone();
        let (mut effective, mut withdrawals) = (0, 0);
        for change in &a {
            withdrawals += matches!(change, Change::Withdraw(_)) as usize;
            effective += table.apply(*change) as usize;
        }
        assert!(withdrawals > 400, "{withdrawals}");
        assert!(effective > 1500 && effective < 2000, "{effective}");
        assert!(generate_changes(&Rib::<u32>::new(), 10, 1).len() == 10);
    }

    use super::super::tests::table;

    #[test]
    fn kinds_parse() {
        assert_eq!(
            "zipf:1.2".parse::<TraceKind>().unwrap(),
            TraceKind::Zipf(1.2)
        );
        assert!("zipf:-1".parse::<TraceKind>().is_err());
        assert!("zipf:x".parse::<TraceKind>().is_err());
        assert!("pareto"
            .parse::<TraceKind>()
            .unwrap_err()
            .contains("known: randip"));
    }

    #[test]
    fn every_kind_stays_inside_the_table_and_is_seeded() {
        let rib = table();
        for kind in ["randip", "randnet", "by-space", "by-count", "zipf:1", "mix"] {
            let kind: TraceKind = kind.parse().unwrap();
            let trace = generate(&rib, &kind, 4000, 9).unwrap();
            assert!(
                trace.iter().all(|&a| rib.lookup(a).is_some()),
                "{kind:?} left the table"
            );
            assert_eq!(trace, generate(&rib, &kind, 4000, 9).unwrap());
        }
        assert!(generate(&Rib::<u32>::new(), &TraceKind::RandNet, 1, 1).is_err());
    }

    #[test]
    fn distributions_have_their_shape() {
        let rib = table();
        // randnet: each of the 4 prefixes chosen ~1/4 of the time, so the /32
        // gets ~25% of the traffic; randip: almost never (1 of ~16.8M addresses).
        let randnet = trace_stats(
            &rib,
            &generate(&rib, &TraceKind::RandNet, 20_000, 1).unwrap(),
            4,
        );
        assert!(
            (randnet.share_by_length[32] - 0.25).abs() < 0.02,
            "{:?}",
            randnet.share_by_length
        );
        let randip = trace_stats(
            &rib,
            &generate(&rib, &TraceKind::RandIp, 20_000, 1).unwrap(),
            4,
        );
        assert!(randip.share_by_length[32] < 0.001);
        assert!(randip.share_by_length[8] > 0.99 - 0.01);
        // by-space weighs lengths by covered space: the /8 dominates.
        let by_space = trace_stats(
            &rib,
            &generate(&rib, &TraceKind::BySpace, 20_000, 1).unwrap(),
            4,
        );
        assert!(by_space.share_by_length[8] > 0.9);
        // Zipf with a steep exponent concentrates on the top-ranked prefix.
        let zipf = trace_stats(
            &rib,
            &generate(&rib, &TraceKind::Zipf(3.0), 20_000, 1).unwrap(),
            1,
        );
        assert!(zipf.top_prefixes[0].1 > 0.75, "{:?}", zipf.top_prefixes);
        // Stationary traces have a small distance between halves.
        assert!(randnet.halves_tvd < 0.05, "{}", randnet.halves_tvd);
    }

    #[test]
    fn host_routes_are_distinct_and_in_their_region() {
        let region: Prefix<u32> = "10.16.0.0/12".parse().unwrap();
        for spread in [false, true] {
            let hosts = host_routes_v4(region, 1 << 20, spread);
            let distinct: std::collections::HashSet<_> = hosts.iter().collect();
            assert_eq!(distinct.len(), 1 << 20);
            assert!(hosts
                .iter()
                .all(|p| p.plen() == 32 && region.contains(p.addr())));
            assert_eq!(hosts[0].addr(), region.addr());
            assert_eq!(hosts[1].addr() == region.addr() + 1, !spread);
        }
    }

    #[test]
    fn adversarial_streams_do_what_they_say() {
        let rib = Rib::from_pairs([
            ("0.0.0.0/0".parse().unwrap(), 3),
            ("44.0.0.0/8".parse().unwrap(), 1),
            ("44.1.0.0/16".parse().unwrap(), 2),
            ("9.0.0.0/8".parse().unwrap(), 1),
        ]);
        let streams = adversarial_streams_v4(&rib, 100);
        let names: Vec<&str> = streams.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "withdraw-all",
                "default-flaps",
                "deaggregated-8s",
                "hosts-in-region"
            ]
        );
        for stream in &streams {
            let mut table = rib.clone();
            let effective = stream.changes.iter().filter(|&&c| table.apply(c)).count();
            // Every change of these streams changes the table.
            assert_eq!(effective, stream.changes.len(), "{}", stream.name);
            match stream.name {
                "withdraw-all" => assert!(table.is_empty()),
                "deaggregated-8s" => {
                    assert_eq!(stream.changes.len(), 6 << 16);
                    let top = |i: usize| stream.changes[i].prefix().addr() >> 24;
                    assert_eq!((top(0), top(1 << 17)), (10, 44), "10/8, then the densest");
                    assert_eq!(
                        table.iter().collect::<Vec<_>>(),
                        rib.iter().collect::<Vec<_>>()
                    );
                }
                _ => assert_eq!(
                    table.iter().collect::<Vec<_>>(),
                    rib.iter().collect::<Vec<_>>()
                ),
            }
        }
    }
}
