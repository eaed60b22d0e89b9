//! Update streams (`BGP4MP`, `BGP4MP_ET`): each UPDATE message turned into
//! its withdrawals, then its announcements (see the module above for the
//! rules).

use bgpkit_parser::models::{Bgp4MpEnum, BgpMessage, MrtMessage, Nlri, Safi};

use super::attributes::{label_of, to_prefix, Dropped};
use super::framing::{decode, framing_failure, is_bgp4mp, is_rib_record, kind_name, Records};
use super::{matches_selector, PROGRESS_EVERY_RECORDS};
use crate::load::peers::StreamPeers;
use crate::load::text::AnyPrefix;
use crate::load::{AnyChange, Input, LoadError, LoadOptions, LoadedUpdates, NextHopTable, Update};

/// Reads an MRT BGP4MP update stream.
pub fn read_updates(
    input: Input,
    options: &LoadOptions,
    nexthops: NextHopTable,
) -> Result<LoadedUpdates, LoadError> {
    let mut records = Records::new(input);
    let mut loaded = LoadedUpdates {
        nexthops,
        ..LoadedUpdates::default()
    };
    let mut dropped = Dropped::default();
    // Peers seen (address, AS) -> changes taken, for notes and errors.
    let mut peers = StreamPeers::default();
    let mut update_records = 0u64;
    loop {
        let mut record = match records.next() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(what) => {
                framing_failure(
                    &records,
                    options,
                    &mut loaded.stats,
                    &mut loaded.notes,
                    &what,
                )?;
                break;
            }
        };
        loaded.stats.records += 1;
        if records.number.is_multiple_of(PROGRESS_EVERY_RECORDS) {
            if let Some(progress) = options.progress {
                progress(records.input.raw_bytes_read());
            }
        }
        if is_rib_record(&record) && update_records == 0 {
            let kind = if is_bgp4mp(record.kind) {
                "BGP4MP_ENTRY".to_string()
            } else {
                kind_name(record.kind)
            };
            return Err(records.error(&format!(
                "this is a {kind} RIB dump, not an update stream; load it as a table"
            )));
        }
        let result = decode(&mut record).and_then(|message| {
            update_records += 1;
            updates_of(
                &message,
                record.time as u64,
                options,
                &mut loaded,
                &mut dropped,
                &mut peers,
            )
        });
        if let Err(what) = result {
            if options.skip_bad {
                loaded.stats.skip("record", records.number, &what);
            } else {
                return Err(records.error(&what));
            }
        }
    }
    if let Some(progress) = options.progress {
        progress(records.input.raw_bytes_read());
    }
    let path = records.input.path.clone();
    peers.finish(&path, "MRT", options.peer, &mut loaded)?;
    dropped.notes(&mut loaded.notes);
    Ok(loaded)
}

/// Turns one decoded BGP4MP record into changes.
fn updates_of(
    message: &MrtMessage,
    time: u64,
    options: &LoadOptions,
    loaded: &mut LoadedUpdates,
    dropped: &mut Dropped,
    peers: &mut StreamPeers,
) -> Result<(), String> {
    let message = match message {
        MrtMessage::Bgp4Mp(Bgp4MpEnum::Message(message)) => message,
        MrtMessage::Bgp4Mp(Bgp4MpEnum::StateChange(_)) => return Ok(()),
        MrtMessage::LegacyBgp(_) => {
            return Err("the deprecated BGP record type is not supported".into())
        }
        _ => return Err("a RIB record inside an update stream".into()),
    };
    let BgpMessage::Update(update) = &message.bgp_message else {
        return Ok(());
    };
    if message.is_local() {
        dropped.local += 1;
        return Ok(());
    }
    let key = (message.peer_ip, message.peer_asn.to_u32());
    let slot = peers.slot(key.0, key.1);
    if !matches_selector(options.peer, key.0, key.1) {
        return Ok(());
    }
    // Check every prefix before emitting any change, so a bad record is
    // skipped whole.
    let mut changes = Vec::new();
    let unicast = |nlri: &&Nlri| nlri.safi == Safi::Unicast;
    let withdrawn = update.withdrawn_prefixes.iter().chain(
        update
            .attributes
            .get_unreachable_nlri()
            .filter(unicast)
            .into_iter()
            .flat_map(|nlri| nlri.prefixes.iter()),
    );
    for prefix in withdrawn {
        changes.push(AnyChange::of(
            to_prefix(prefix, options.lenient, &mut loaded.stats)?,
            None,
        ));
    }
    for nlri in [
        update.attributes.get_reachable_nlri(),
        update.attributes.get_unreachable_nlri(),
    ]
    .into_iter()
    .flatten()
    {
        if nlri.safi != Safi::Unicast {
            dropped.non_unicast += nlri.prefixes.len() as u64;
        }
    }
    let announced = update.announced_prefixes.iter().chain(
        update
            .attributes
            .get_reachable_nlri()
            .filter(unicast)
            .into_iter()
            .flat_map(|nlri| nlri.prefixes.iter()),
    );
    for prefix in announced {
        let prefix = to_prefix(prefix, options.lenient, &mut loaded.stats)?;
        let v6 = matches!(prefix, AnyPrefix::V6(_));
        let label = label_of(
            &update.attributes,
            None,
            v6,
            options.label,
            &mut loaded.nexthops,
            dropped,
        );
        changes.push(AnyChange::of(prefix, Some(label)));
    }
    peers.count(slot, changes.len() as u64);
    loaded.stats.routes += changes.len() as u64;
    loaded
        .updates
        .extend(changes.into_iter().map(|change| Update { time, change }));
    Ok(())
}
