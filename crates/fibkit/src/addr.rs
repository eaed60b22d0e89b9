//! Addresses: one trait over `u32` (IPv4) and `u128` (IPv6).
//!
//! Every structure in fibkit is generic over [`Addr`], so IPv4 and IPv6 share
//! one code path. Bit 0 in this module's vocabulary is the *most significant*
//! bit of the address (the first bit a trie looks at), as in the literature.

use std::fmt::{Debug, Display};
use std::hash::Hash;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::{BitAnd, BitOr, BitXor, Not, Shl, Shr};

/// An IP address as an unsigned integer of `BITS` bits (network order: the
/// integer's most significant bit is the address's first bit).
///
/// The integer operators (`&`, `|`, `^`, `!`, `<<`, `>>` by a `u32`) and the
/// bit-field methods below are the native ones of `u32` and `u128`, so
/// engines written once for both families compile to plain integer code.
pub trait Addr:
    Copy
    + Ord
    + Eq
    + Hash
    + Debug
    + Default
    + Send
    + Sync
    + 'static
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
    + Not<Output = Self>
    + Shl<u32, Output = Self>
    + Shr<u32, Output = Self>
{
    /// Address width in bits: 32 for IPv4, 128 for IPv6.
    const BITS: u8;
    /// The all-zeros address.
    const ZERO: Self;
    /// The all-ones address (the last address of the space).
    const MAX: Self;
    /// Human name of the family, `"IPv4"` or `"IPv6"`.
    const FAMILY: Family;
    /// The address as its network-order (big-endian) bytes, as C's
    /// `struct in_addr` / `struct in6_addr` and numpy's `(n, 16)` `uint8`
    /// arrays hold it: `[u8; 4]` or `[u8; 16]`.
    type Bytes: Copy + Debug + Default + Send + Sync + AsRef<[u8]> + AsMut<[u8]> + 'static;

    /// The address whose network-order bytes are `bytes`.
    fn from_be_bytes(bytes: Self::Bytes) -> Self;

    /// Widens to `u128` (IPv4 occupies the low 32 bits).
    fn to_u128(self) -> u128;
    /// Narrows from `u128`, keeping the low `BITS` bits.
    fn from_u128(value: u128) -> Self;

    /// The bit at position `index` counted from the most significant bit
    /// (`index < BITS`).
    #[inline]
    fn bit(self, index: u8) -> bool {
        debug_assert!(index < Self::BITS);
        (self.to_u128() >> (Self::BITS - 1 - index)) & 1 == 1
    }

    /// The network mask of a prefix of length `plen` (`plen <= BITS`).
    #[inline]
    fn mask(plen: u8) -> Self {
        debug_assert!(plen <= Self::BITS);
        if plen == 0 {
            Self::ZERO
        } else {
            Self::from_u128(Self::MAX.to_u128() << (Self::BITS - plen))
        }
    }

    /// Keeps the first `plen` bits and clears the rest.
    #[inline]
    fn masked(self, plen: u8) -> Self {
        Self::from_u128(self.to_u128() & Self::mask(plen).to_u128())
    }

    /// Sets every bit after the first `plen` (the last address of the prefix).
    #[inline]
    fn with_host_bits_set(self, plen: u8) -> Self {
        Self::from_u128(self.to_u128() | !Self::mask(plen).to_u128() & Self::MAX.to_u128())
    }

    /// The next address, or `None` after [`Addr::MAX`].
    #[inline]
    fn checked_next(self) -> Option<Self> {
        if self == Self::MAX {
            None
        } else {
            Some(Self::from_u128(self.to_u128() + 1))
        }
    }

    /// The previous address, or `None` before [`Addr::ZERO`].
    #[inline]
    fn checked_prev(self) -> Option<Self> {
        if self == Self::ZERO {
            None
        } else {
            Some(Self::from_u128(self.to_u128() - 1))
        }
    }

    /// Number of leading bits `self` and `other` have in common (at most `BITS`).
    #[inline]
    fn common_prefix_len(self, other: Self) -> u8 {
        let diff = self.to_u128() ^ other.to_u128();
        let leading = diff.leading_zeros() as u8 - (128 - Self::BITS);
        leading.min(Self::BITS)
    }

    /// `count` address bits starting at bit `from` (bit 0 is the most
    /// significant), as an integer: the index a multibit trie node or a
    /// direct table takes. Needs `1 <= count <= 32` and
    /// `from + count <= BITS`.
    fn bits(self, from: u32, count: u32) -> u32;

    /// The low 64 bits (all of an IPv4 address).
    fn low_u64(self) -> u64;

    /// `value` widened to an address.
    fn from_u64(value: u64) -> Self;

    /// Two's complement negation (`0 - self`, wrapping).
    fn wrapping_neg(self) -> Self;

    /// Leading zero bits of the integer (`BITS` for zero).
    fn leading_zeros(self) -> u32;

    /// Trailing zero bits of the integer (`BITS` for zero).
    fn trailing_zeros(self) -> u32;

    /// Parses the textual form (`192.0.2.1`, `2001:db8::1`).
    fn parse_addr(text: &str) -> Option<Self>;

    /// Writes the textual form.
    fn fmt_addr(self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result;

    /// A value that displays as the textual address.
    fn display(self) -> AddrDisplay<Self> {
        AddrDisplay(self)
    }
}

/// The address family of an [`Addr`] type or of a prefix in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// IPv4, 32-bit addresses.
    V4,
    /// IPv6, 128-bit addresses.
    V6,
}

impl Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// Displays an address in its usual text form (see [`Addr::display`]).
#[derive(Clone, Copy, Debug)]
pub struct AddrDisplay<A>(pub A);

impl<A: Addr> Display for AddrDisplay<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt_addr(f)
    }
}

impl Addr for u32 {
    const BITS: u8 = 32;
    const ZERO: Self = 0;
    const MAX: Self = u32::MAX;
    const FAMILY: Family = Family::V4;
    type Bytes = [u8; 4];

    #[inline(always)]
    fn from_be_bytes(bytes: [u8; 4]) -> Self {
        u32::from_be_bytes(bytes)
    }

    #[inline]
    fn to_u128(self) -> u128 {
        self as u128
    }
    #[inline]
    fn from_u128(value: u128) -> Self {
        value as u32
    }
    // The generic versions go through u128; these are on lookup paths.
    #[inline]
    fn bit(self, index: u8) -> bool {
        debug_assert!(index < 32);
        (self >> (31 - index)) & 1 == 1
    }
    #[inline]
    fn mask(plen: u8) -> Self {
        debug_assert!(plen <= 32);
        u32::MAX.checked_shl(32 - plen as u32).unwrap_or(0)
    }
    #[inline(always)]
    fn bits(self, from: u32, count: u32) -> u32 {
        debug_assert!((1..=32).contains(&count) && from + count <= 32);
        (self << from) >> (32 - count)
    }
    #[inline(always)]
    fn low_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_u64(value: u64) -> Self {
        value as u32
    }
    #[inline(always)]
    fn wrapping_neg(self) -> Self {
        u32::wrapping_neg(self)
    }
    #[inline(always)]
    fn leading_zeros(self) -> u32 {
        u32::leading_zeros(self)
    }
    #[inline(always)]
    fn trailing_zeros(self) -> u32 {
        u32::trailing_zeros(self)
    }
    fn parse_addr(text: &str) -> Option<Self> {
        text.parse::<Ipv4Addr>().ok().map(u32::from)
    }
    fn fmt_addr(self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Display::fmt(&Ipv4Addr::from(self), f)
    }
}

impl Addr for u128 {
    const BITS: u8 = 128;
    const ZERO: Self = 0;
    const MAX: Self = u128::MAX;
    const FAMILY: Family = Family::V6;
    type Bytes = [u8; 16];

    #[inline(always)]
    fn from_be_bytes(bytes: [u8; 16]) -> Self {
        u128::from_be_bytes(bytes)
    }

    #[inline]
    fn to_u128(self) -> u128 {
        self
    }
    #[inline]
    fn from_u128(value: u128) -> Self {
        value
    }
    #[inline]
    fn mask(plen: u8) -> Self {
        debug_assert!(plen <= 128);
        u128::MAX.checked_shl(128 - plen as u32).unwrap_or(0)
    }
    #[inline(always)]
    fn bits(self, from: u32, count: u32) -> u32 {
        debug_assert!((1..=32).contains(&count) && from + count <= 128);
        ((self << from) >> (128 - count)) as u32
    }
    #[inline(always)]
    fn low_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_u64(value: u64) -> Self {
        value as u128
    }
    #[inline(always)]
    fn wrapping_neg(self) -> Self {
        u128::wrapping_neg(self)
    }
    #[inline(always)]
    fn leading_zeros(self) -> u32 {
        u128::leading_zeros(self)
    }
    #[inline(always)]
    fn trailing_zeros(self) -> u32 {
        u128::trailing_zeros(self)
    }
    fn parse_addr(text: &str) -> Option<Self> {
        text.parse::<Ipv6Addr>().ok().map(u128::from)
    }
    fn fmt_addr(self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Display::fmt(&Ipv6Addr::from(self), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_bits() {
        assert_eq!(<u32 as Addr>::mask(0), 0);
        assert_eq!(<u32 as Addr>::mask(8), 0xff00_0000);
        assert_eq!(<u32 as Addr>::mask(32), u32::MAX);
        assert_eq!(<u128 as Addr>::mask(0), 0);
        assert_eq!(<u128 as Addr>::mask(128), u128::MAX);
        assert_eq!(<u128 as Addr>::mask(1), 1u128 << 127);
        assert!(0x8000_0000u32.bit(0));
        assert!(!0x8000_0000u32.bit(1));
        assert!(1u32.bit(31));
        assert!(1u128.bit(127));
        assert_eq!(0x0a01_0203u32.masked(16), 0x0a01_0000);
        assert_eq!(0x0a01_0000u32.with_host_bits_set(16), 0x0a01_ffff);
        assert_eq!(0u32.with_host_bits_set(0), u32::MAX);
    }

    #[test]
    fn next_prev_and_common_prefix() {
        assert_eq!(u32::MAX.checked_next(), None);
        assert_eq!(0u32.checked_prev(), None);
        assert_eq!(5u32.checked_next(), Some(6));
        assert_eq!(0u32.common_prefix_len(0), 32);
        assert_eq!(0u32.common_prefix_len(1), 31);
        assert_eq!(0u32.common_prefix_len(0x8000_0000), 0);
        assert_eq!(0u128.common_prefix_len(0), 128);
        assert_eq!(0u128.common_prefix_len(1), 127);
    }

    #[test]
    fn bit_fields() {
        let v4 = 0xc000_0201u32; // 192.0.2.1
        assert_eq!(v4.bits(0, 8), 192);
        assert_eq!(v4.bits(0, 32), v4);
        assert_eq!(v4.bits(24, 8), 1);
        assert_eq!(v4.bits(0, 1), 1);
        assert_eq!(v4.bits(31, 1), 1);
        let v6 = 0x2001_0db8_0000_0000_0000_0000_0000_0001u128;
        assert_eq!(v6.bits(0, 16), 0x2001);
        assert_eq!(v6.bits(16, 16), 0x0db8);
        assert_eq!(v6.bits(96, 32), 1);
        assert_eq!(v6.bits(120, 8), 1);
        assert_eq!(Addr::leading_zeros(1u32), 31);
        assert_eq!(Addr::trailing_zeros(0u128), 128);
        assert_eq!(Addr::wrapping_neg(1u32), u32::MAX);
        assert_eq!(<u128 as Addr>::from_u64(7).low_u64(), 7);
        // The operators through the trait, as generic engine code uses them.
        fn mixed<A: Addr>(a: A, b: A) -> A {
            ((a ^ b) & !(b >> 4)) | (a << 1)
        }
        assert_eq!(mixed(0xf0u32, 0xffu32), 0x1e0);
        assert_eq!(mixed(1u128 << 127, 1u128), 1 << 127 | 1);
    }

    #[test]
    fn parse_and_print() {
        assert_eq!(u32::parse_addr("192.0.2.1"), Some(0xc000_0201));
        assert_eq!(u32::parse_addr("192.0.2"), None);
        assert_eq!(u32::parse_addr("2001:db8::"), None);
        let v6 = u128::parse_addr("2001:db8::1").unwrap();
        assert_eq!(v6.display().to_string(), "2001:db8::1");
        assert_eq!(0xc000_0201u32.display().to_string(), "192.0.2.1");
    }
}
