//! What differs between the IPv4 and IPv6 entry points, as one trait: how
//! C passes addresses and changes of the family, and which side of a table
//! or reader holds it. Each `_v4` / `_v6` pair is one generic body over
//! [`CFamily`] behind two `#[no_mangle]` shims, written out because
//! cbindgen reads the shims (with their documentation) from the source and
//! does not expand macros.

use fibkit::any::{FamilyFib, FamilyReader};
use fibkit::registry::ImageFamily;
use fibkit::{AnyFib, Family, Label};

use super::args::non_null;
use super::error::{fail, Failure};
use super::{fibkit_change_v4, fibkit_change_v6, FIBKIT_ERR_FAMILY};

/// An address family as the C API passes it.
pub(crate) trait CFamily: ImageFamily {
    /// One address given to a single lookup: IPv4 a `uint32_t` in host
    /// order, IPv6 a pointer to 16 bytes in network order.
    type Arg: Copy;
    /// One address of a bulk array: IPv4 a `uint32_t` in host order, IPv6
    /// 16 bytes in network order.
    type Key;
    /// The family's change struct.
    type Change: Copy;

    /// The address `arg` gives, or a NULL error.
    ///
    /// # Safety
    /// A pointer `arg` must be NULL or point to 16 readable bytes.
    unsafe fn addr(arg: Self::Arg) -> Result<Self, Failure>;

    /// The family's side of a table, if it is of this family.
    fn of_fib(fib: &AnyFib) -> Option<&FamilyFib<Self>>;

    /// The family's side of a reader, if it is of this family.
    fn of_reader(reader: &mut AnyReader) -> Option<&mut FamilyReader<Self>>;

    /// Bulk lookup of `keys` on a table, into `out` (as long as `keys`).
    fn lookup_words(fib: &FamilyFib<Self>, keys: &[Self::Key], out: &mut [u64]);

    /// Bulk lookup of `keys` through a reader, into `out` (as long as
    /// `keys`).
    fn reader_lookup_words(reader: &mut FamilyReader<Self>, keys: &[Self::Key], out: &mut [u64]);

    /// A change's address, prefix length, `withdraw` field and label.
    fn change(change: Self::Change) -> (Self, u8, u8, Label);
}

impl CFamily for u32 {
    type Arg = u32;
    type Key = u32;
    type Change = fibkit_change_v4;

    unsafe fn addr(arg: u32) -> Result<u32, Failure> {
        Ok(arg)
    }

    fn of_fib(fib: &AnyFib) -> Option<&FamilyFib<u32>> {
        match fib {
            AnyFib::V4(fib) => Some(fib),
            AnyFib::V6(_) => None,
        }
    }

    fn of_reader(reader: &mut AnyReader) -> Option<&mut FamilyReader<u32>> {
        match reader {
            AnyReader::V4(reader) => Some(reader),
            AnyReader::V6(_) => None,
        }
    }

    fn lookup_words(fib: &FamilyFib<u32>, keys: &[u32], out: &mut [u64]) {
        fib.lookup_words(keys, out);
    }

    fn reader_lookup_words(reader: &mut FamilyReader<u32>, keys: &[u32], out: &mut [u64]) {
        reader.lookup_words(keys, out);
    }

    fn change(c: fibkit_change_v4) -> (u32, u8, u8, Label) {
        (c.addr, c.plen, c.withdraw, c.label)
    }
}

impl CFamily for u128 {
    type Arg = *const [u8; 16];
    type Key = [u8; 16];
    type Change = fibkit_change_v6;

    unsafe fn addr(arg: *const [u8; 16]) -> Result<u128, Failure> {
        // SAFETY: forwarded from the caller.
        Ok(u128::from_be_bytes(*unsafe { non_null(arg, "addr") }?))
    }

    fn of_fib(fib: &AnyFib) -> Option<&FamilyFib<u128>> {
        match fib {
            AnyFib::V6(fib) => Some(fib),
            AnyFib::V4(_) => None,
        }
    }

    fn of_reader(reader: &mut AnyReader) -> Option<&mut FamilyReader<u128>> {
        match reader {
            AnyReader::V6(reader) => Some(reader),
            AnyReader::V4(_) => None,
        }
    }

    fn lookup_words(fib: &FamilyFib<u128>, keys: &[[u8; 16]], out: &mut [u64]) {
        fib.lookup_words_be(keys, out);
    }

    fn reader_lookup_words(reader: &mut FamilyReader<u128>, keys: &[[u8; 16]], out: &mut [u64]) {
        reader.lookup_words_be(keys, out);
    }

    fn change(c: fibkit_change_v6) -> (u128, u8, u8, Label) {
        (u128::from_be_bytes(c.addr), c.plen, c.withdraw, c.label)
    }
}

/// The `A` side of a table, or a family error.
pub(crate) fn side<A: CFamily>(fib: &AnyFib) -> Result<&FamilyFib<A>, Failure> {
    A::of_fib(fib).ok_or_else(|| fail(FIBKIT_ERR_FAMILY, fib.wrong_family(A::FAMILY)))
}

/// A reader of either family.
pub(crate) enum AnyReader {
    V4(FamilyReader<u32>),
    V6(FamilyReader<u128>),
}

impl AnyReader {
    fn family(&self) -> Family {
        match self {
            AnyReader::V4(_) => Family::V4,
            AnyReader::V6(_) => Family::V6,
        }
    }
}

/// The `A` side of a reader, or a family error.
pub(crate) fn reader_side<A: CFamily>(
    reader: &mut AnyReader,
) -> Result<&mut FamilyReader<A>, Failure> {
    let family = reader.family();
    A::of_reader(reader).ok_or_else(|| {
        fail(
            FIBKIT_ERR_FAMILY,
            format!(
                "{} addresses given to a reader of an {family} table (use the {family} functions)",
                A::FAMILY
            ),
        )
    })
}
