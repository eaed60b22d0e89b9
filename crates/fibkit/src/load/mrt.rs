//! MRT (RFC 6396) RIB dumps and BGP4MP update streams, through `bgpkit-parser`.

use super::{Input, LoadError, LoadOptions, LoadedTable, LoadedUpdates, NextHopTable};

/// Reads an MRT RIB dump (TABLE_DUMP, TABLE_DUMP_V2, with or without ADD-PATH).
pub fn read_rib(input: Input, options: &LoadOptions) -> Result<LoadedTable, LoadError> {
    let _ = options;
    Err(LoadError::file(&input.path, "MRT support is not built yet"))
}

/// Reads an MRT BGP4MP update stream.
pub fn read_updates(
    input: Input,
    options: &LoadOptions,
    nexthops: NextHopTable,
) -> Result<LoadedUpdates, LoadError> {
    let _ = (options, nexthops);
    Err(LoadError::file(&input.path, "MRT support is not built yet"))
}
