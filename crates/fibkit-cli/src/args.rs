//! Parsers of argument values that several subcommands take.

/// A range of level counts, `FIRST..LAST` (or `FIRST..=LAST`) or one
/// number, within 1..=128.
pub(crate) fn parse_levels(text: &str) -> Result<std::ops::RangeInclusive<u8>, String> {
    let bad = || format!("`{text}` is not a level range like 2..12 (levels 1..=128)");
    let (first, last) = match text.split_once("..") {
        Some((first, last)) => (first, last.strip_prefix('=').unwrap_or(last)),
        None => (text, text),
    };
    let first: u8 = first.trim().parse().map_err(|_| bad())?;
    let last: u8 = last.trim().parse().map_err(|_| bad())?;
    if first == 0 || first > last || last > 128 {
        return Err(bad());
    }
    Ok(first..=last)
}

/// A count of addresses to generate or check: at most
/// [`fibkit::trace::MAX_ADDRESSES`], refused before anything is allocated.
pub(crate) fn parse_address_count(text: &str) -> Result<usize, String> {
    let count = text
        .parse::<usize>()
        .map_err(|_| format!("`{text}` is not a count"))?;
    fibkit::trace::check_address_count(count)
}
