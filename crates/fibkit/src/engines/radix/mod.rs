//! `radix`: the reference PATRICIA trie ([`Rib`]) used as an engine.
//!
//! It is the slow, obviously-correct baseline (as DPDK's `rte_rib` can serve
//! lookups too): one node visit per branching bit on the path, one pointer
//! chase each. IPv4 and IPv6. Updates are the trie's own inserts and removes,
//! so the engine simply mirrors the reference table it was built from.

use crate::addr::Addr;
use crate::fib::{BuildError, EngineSpec, Fib};
use crate::prefix::{Label, Prefix};
use crate::rib::Rib;

/// The reference trie as an engine: a private copy of the table.
#[derive(Clone, Debug)]
pub struct Radix<A> {
    rib: Rib<A>,
}

impl<A: Addr> Radix<A> {
    /// Copies `rib`; the spec takes no parameters.
    pub fn build(spec: &EngineSpec, rib: &Rib<A>) -> Result<Self, BuildError> {
        spec.expect_only(&[])?;
        Ok(Radix { rib: rib.clone() })
    }
}

impl<A: Addr> Fib<A> for Radix<A> {
    fn name(&self) -> String {
        "radix".to_string()
    }

    fn memory_bytes(&self) -> usize {
        self.rib.memory_bytes()
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<Label> {
        self.rib.lookup(addr)
    }

    fn update(&mut self, rib: &Rib<A>, changed: &[Prefix<A>]) -> Result<(), BuildError> {
        for &prefix in changed {
            match rib.get(prefix) {
                Some(label) => self.rib.insert(prefix, label),
                None => self.rib.remove(prefix),
            };
        }
        Ok(())
    }

    fn stats(&self) -> Vec<(String, String)> {
        vec![("prefixes".to_string(), self.rib.len().to_string())]
    }
}
