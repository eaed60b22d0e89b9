//! Prefixes (`192.0.2.0/24`, `2001:db8::/32`) and labels.

use std::cmp::Ordering;
use std::fmt::{self, Display};

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::addr::{Addr, Family};

/// What a prefix maps to: an opaque 32-bit value (a next-hop index, an AS
/// number, ...). fibkit never limits how many distinct labels a table has.
pub type Label = u32;

/// An address prefix: the first `plen` bits of `addr`; the remaining (host)
/// bits are always zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Prefix<A> {
    addr: A,
    plen: u8,
}

/// Why a prefix could not be made or parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// The text is not `address/length`.
    #[error("`{0}` is not a prefix (expected address/length, e.g. 192.0.2.0/24)")]
    Syntax(String),
    /// The address part does not parse for this family.
    #[error("`{text}` is not an {family} address")]
    BadAddress {
        /// The offending address text.
        text: String,
        /// The family that was expected.
        family: Family,
    },
    /// The length is not a number or longer than the address.
    #[error("prefix length `{text}` is not in 0..={max}")]
    BadLength {
        /// The offending length text.
        text: String,
        /// The address width.
        max: u8,
    },
    /// Bits after the prefix length are set (`10.0.0.1/8`).
    #[error("`{text}` has host bits set (did you mean {masked}?)")]
    HostBitsSet {
        /// The offending prefix text.
        text: String,
        /// The prefix with host bits cleared.
        masked: String,
    },
}

/// Characters of an input text that messages quote (see [`excerpt`]).
pub const EXCERPT_CHARS: usize = 80;

/// At most [`EXCERPT_CHARS`] characters quoting the start of `text`, for a
/// message about bad input (which may be a 64 KiB line): control characters
/// escaped (and counted as written, so a line of NULs stays short), `…`
/// where the text was cut.
pub fn excerpt(text: &str) -> String {
    let mut out = String::with_capacity(EXCERPT_CHARS + 3);
    let mut written = 0;
    for c in text.chars() {
        let escaped: Vec<char> = if c.is_control() {
            c.escape_default().collect()
        } else {
            vec![c]
        };
        if written + escaped.len() > EXCERPT_CHARS {
            out.push('…');
            break;
        }
        written += escaped.len();
        out.extend(escaped);
    }
    out
}

impl<A: Addr> Prefix<A> {
    /// The prefix of length `plen` containing `addr`, host bits cleared.
    ///
    /// # Panics
    /// If `plen > A::BITS` (a programming error; parsed input is checked).
    #[inline]
    pub fn new_masked(addr: A, plen: u8) -> Self {
        assert!(plen <= A::BITS, "prefix length {plen} > {}", A::BITS);
        Prefix {
            addr: addr.masked(plen),
            plen,
        }
    }

    /// The prefix `addr/plen`, or an error when `plen` is too long or host
    /// bits are set.
    pub fn new(addr: A, plen: u8) -> Result<Self, PrefixError> {
        if plen > A::BITS {
            return Err(PrefixError::BadLength {
                text: plen.to_string(),
                max: A::BITS,
            });
        }
        let prefix = Prefix {
            addr: addr.masked(plen),
            plen,
        };
        if prefix.addr != addr {
            return Err(PrefixError::HostBitsSet {
                text: format!("{}/{}", addr.display(), plen),
                masked: prefix.to_string(),
            });
        }
        Ok(prefix)
    }

    /// The prefix covering every address (`0.0.0.0/0` or `::/0`).
    pub fn default_route() -> Self {
        Prefix {
            addr: A::ZERO,
            plen: 0,
        }
    }

    /// Parses `address/length`. A bare address is a host prefix (/32, /128).
    /// With `lenient`, host bits are cleared and the second value says whether
    /// any were set; otherwise host bits set are an error.
    pub fn parse_lenient(text: &str, lenient: bool) -> Result<(Self, bool), PrefixError> {
        let (addr_text, plen) = match text.split_once('/') {
            Some((addr_text, len_text)) => {
                let plen = len_text
                    .parse::<u8>()
                    .ok()
                    .filter(|&plen| plen <= A::BITS && !len_text.starts_with('+'))
                    .ok_or_else(|| PrefixError::BadLength {
                        text: excerpt(len_text),
                        max: A::BITS,
                    })?;
                (addr_text, plen)
            }
            None => (text, A::BITS),
        };
        if addr_text.is_empty() {
            return Err(PrefixError::Syntax(excerpt(text)));
        }
        let addr = A::parse_addr(addr_text).ok_or_else(|| PrefixError::BadAddress {
            text: excerpt(addr_text),
            family: A::FAMILY,
        })?;
        let prefix = Prefix::new_masked(addr, plen);
        let had_host_bits = prefix.addr != addr;
        if had_host_bits && !lenient {
            return Err(PrefixError::HostBitsSet {
                text: excerpt(text),
                masked: prefix.to_string(),
            });
        }
        Ok((prefix, had_host_bits))
    }

    /// The network address (host bits zero).
    #[inline]
    pub fn addr(self) -> A {
        self.addr
    }

    /// The prefix length in bits.
    #[inline]
    pub fn plen(self) -> u8 {
        self.plen
    }

    /// The first address covered (the network address).
    #[inline]
    pub fn first(self) -> A {
        self.addr
    }

    /// The last address covered.
    #[inline]
    pub fn last(self) -> A {
        self.addr.with_host_bits_set(self.plen)
    }

    /// Whether `addr` lies in this prefix.
    #[inline]
    pub fn contains(self, addr: A) -> bool {
        addr.masked(self.plen) == self.addr
    }

    /// Whether `other` is this prefix or a more specific one inside it.
    #[inline]
    pub fn covers(self, other: Prefix<A>) -> bool {
        other.plen >= self.plen && self.contains(other.addr)
    }

    /// The prefix one bit shorter, or `None` for the default route.
    pub fn parent(self) -> Option<Self> {
        (self.plen > 0).then(|| Prefix::new_masked(self.addr, self.plen - 1))
    }

    /// The longest prefix covering both `self` and `other`.
    pub fn common(self, other: Prefix<A>) -> Self {
        let plen = self
            .addr
            .common_prefix_len(other.addr)
            .min(self.plen)
            .min(other.plen);
        Prefix::new_masked(self.addr, plen)
    }

    /// Number of addresses covered, as `2^(BITS - plen)` saturated to u128.
    pub fn size(self) -> u128 {
        let host_bits = A::BITS - self.plen;
        if host_bits >= 128 {
            u128::MAX
        } else {
            1u128 << host_bits
        }
    }
}

impl<A: Addr> std::str::FromStr for Prefix<A> {
    type Err = PrefixError;
    /// Strict parse: host bits set are an error.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Prefix::parse_lenient(text, false).map(|(prefix, _)| prefix)
    }
}

/// Sorted by address, then by length: a covering prefix comes right before
/// the prefixes it covers (pre-order of the binary trie).
impl<A: Addr> Ord for Prefix<A> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.addr.cmp(&other.addr).then(self.plen.cmp(&other.plen))
    }
}

impl<A: Addr> PartialOrd for Prefix<A> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<A: Addr> Display for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.addr.fmt_addr(f)?;
        write!(f, "/{}", self.plen)
    }
}

/// `(address, length)` pairs of the standard library's address types as
/// prefixes, host bits cleared (`(Ipv4Addr::new(10, 1, 2, 3), 8)` is
/// `10.0.0.0/8`); lengths past the address width are an error.
impl TryFrom<(Ipv4Addr, u8)> for Prefix<u32> {
    type Error = PrefixError;
    fn try_from((addr, plen): (Ipv4Addr, u8)) -> Result<Self, PrefixError> {
        prefix_from_parts(u32::from(addr), plen)
    }
}

/// See the IPv4 conversion.
impl TryFrom<(Ipv6Addr, u8)> for Prefix<u128> {
    type Error = PrefixError;
    fn try_from((addr, plen): (Ipv6Addr, u8)) -> Result<Self, PrefixError> {
        prefix_from_parts(u128::from(addr), plen)
    }
}

fn prefix_from_parts<A: Addr>(addr: A, plen: u8) -> Result<Prefix<A>, PrefixError> {
    if plen > A::BITS {
        return Err(PrefixError::BadLength {
            text: plen.to_string(),
            max: A::BITS,
        });
    }
    Ok(Prefix::new_masked(addr, plen))
}

/// `ipnet` prefixes (feature `ipnet`): always valid, host bits cleared.
#[cfg(feature = "ipnet")]
impl From<ipnet::Ipv4Net> for Prefix<u32> {
    fn from(net: ipnet::Ipv4Net) -> Self {
        Prefix::new_masked(u32::from(net.addr()), net.prefix_len())
    }
}

/// See the IPv4 conversion.
#[cfg(feature = "ipnet")]
impl From<ipnet::Ipv6Net> for Prefix<u128> {
    fn from(net: ipnet::Ipv6Net) -> Self {
        Prefix::new_masked(u128::from(net.addr()), net.prefix_len())
    }
}

/// A prefix back as an `ipnet` prefix (feature `ipnet`).
#[cfg(feature = "ipnet")]
impl From<Prefix<u32>> for ipnet::Ipv4Net {
    fn from(prefix: Prefix<u32>) -> Self {
        ipnet::Ipv4Net::new(Ipv4Addr::from(prefix.addr()), prefix.plen())
            .expect("a prefix length is at most 32")
    }
}

/// See the IPv4 conversion.
#[cfg(feature = "ipnet")]
impl From<Prefix<u128>> for ipnet::Ipv6Net {
    fn from(prefix: Prefix<u128>) -> Self {
        ipnet::Ipv6Net::new(Ipv6Addr::from(prefix.addr()), prefix.plen())
            .expect("a prefix length is at most 128")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_short_whatever_the_line_holds() {
        assert_eq!(excerpt("10.0.0.0/8 1"), "10.0.0.0/8 1");
        let spaces = excerpt(&" ".repeat(1000));
        assert_eq!(spaces, format!("{}…", " ".repeat(EXCERPT_CHARS)));
        let nuls = excerpt(&"\0".repeat(1000));
        assert!(
            nuls.ends_with('…') && nuls.chars().count() <= EXCERPT_CHARS + 1,
            "{nuls}"
        );
        assert!(nuls.starts_with("\\u{0}"), "{nuls}");
    }

    fn v4(text: &str) -> Prefix<u32> {
        text.parse().unwrap()
    }

    #[test]
    fn std_and_ipnet_conversions() {
        use std::net::{Ipv4Addr, Ipv6Addr};
        let p = Prefix::<u32>::try_from((Ipv4Addr::new(10, 1, 2, 3), 8)).unwrap();
        assert_eq!(p.to_string(), "10.0.0.0/8");
        assert!(Prefix::<u32>::try_from((Ipv4Addr::LOCALHOST, 33)).is_err());
        let p6 = Prefix::<u128>::try_from((Ipv6Addr::LOCALHOST, 128)).unwrap();
        assert_eq!(p6.to_string(), "::1/128");
        #[cfg(feature = "ipnet")]
        {
            let net: ipnet::Ipv4Net = "192.0.2.0/24".parse().unwrap();
            let p: Prefix<u32> = net.into();
            assert_eq!(p.to_string(), "192.0.2.0/24");
            assert_eq!(ipnet::Ipv4Net::from(p), net);
            let net6: ipnet::Ipv6Net = "2001:db8::/32".parse().unwrap();
            assert_eq!(ipnet::Ipv6Net::from(Prefix::<u128>::from(net6)), net6);
            let mut rib = crate::Rib::<u32>::new();
            rib.insert(net.into(), 7);
            assert_eq!(rib.lookup(0xc000_0201), Some(7));
        }
    }

    #[test]
    fn parse_print_roundtrip() {
        for text in [
            "0.0.0.0/0",
            "10.0.0.0/8",
            "192.0.2.0/24",
            "255.255.255.255/32",
        ] {
            assert_eq!(v4(text).to_string(), text);
        }
        for text in [
            "::/0",
            "2001:db8::/32",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128",
        ] {
            let prefix: Prefix<u128> = text.parse().unwrap();
            assert_eq!(prefix.to_string(), text);
        }
        assert_eq!(v4("192.0.2.1").plen(), 32);
    }

    #[test]
    fn parse_errors_say_what_is_wrong() {
        let err = "10.0.0.1/8".parse::<Prefix<u32>>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "`10.0.0.1/8` has host bits set (did you mean 10.0.0.0/8?)"
        );
        assert!(matches!(
            "10.0.0.0/33".parse::<Prefix<u32>>(),
            Err(PrefixError::BadLength { .. })
        ));
        assert!(matches!(
            "10.0.0.0/+8".parse::<Prefix<u32>>(),
            Err(PrefixError::BadLength { .. })
        ));
        assert!(matches!(
            "10.0.0/8".parse::<Prefix<u32>>(),
            Err(PrefixError::BadAddress { .. })
        ));
        assert!(matches!(
            "/8".parse::<Prefix<u32>>(),
            Err(PrefixError::Syntax(_))
        ));
        assert!(matches!(
            "2001:db8::/32".parse::<Prefix<u32>>(),
            Err(PrefixError::BadAddress { .. })
        ));
        assert!(matches!(
            "::/129".parse::<Prefix<u128>>(),
            Err(PrefixError::BadLength { .. })
        ));
        let (masked, had) = Prefix::<u32>::parse_lenient("10.1.2.3/8", true).unwrap();
        assert_eq!((masked, had), (v4("10.0.0.0/8"), true));
    }

    #[test]
    fn first_last_contains_parent() {
        let p = v4("10.1.0.0/16");
        assert_eq!(p.first(), 0x0a01_0000);
        assert_eq!(p.last(), 0x0a01_ffff);
        assert!(p.contains(0x0a01_1234));
        assert!(!p.contains(0x0a02_0000));
        assert_eq!(p.parent(), Some(v4("10.0.0.0/15")));
        assert_eq!(v4("0.0.0.0/0").parent(), None);
        assert!(v4("10.0.0.0/8").covers(p));
        assert!(!p.covers(v4("10.0.0.0/8")));
        assert_eq!(
            v4("10.1.0.0/16").common(v4("10.3.0.0/16")),
            v4("10.0.0.0/14")
        );
        assert_eq!(v4("0.0.0.0/0").last(), u32::MAX);
        assert_eq!(v4("0.0.0.0/0").size(), 1 << 32);
    }

    #[test]
    fn order_is_preorder() {
        let mut prefixes = [
            v4("10.0.0.0/16"),
            v4("10.0.0.0/8"),
            v4("9.0.0.0/8"),
            v4("10.1.0.0/16"),
        ];
        prefixes.sort();
        let texts: Vec<String> = prefixes.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            texts,
            ["9.0.0.0/8", "10.0.0.0/8", "10.0.0.0/16", "10.1.0.0/16"]
        );
    }
}
