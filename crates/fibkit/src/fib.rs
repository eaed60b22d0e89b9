//! The `Fib` handle: a forwarding table that many threads read while one
//! writer changes it.
//!
//! A [`Fib`] owns the reference table (the control plane), the engine's
//! updater and the current snapshot (the data plane). Readers get the
//! current snapshot without locks: it is published through an atomic
//! pointer (`arc-swap`), a reader holds an `Arc` of the snapshot it loaded,
//! and a snapshot is freed (or recycled by the writer) when its last reader
//! lets go of it, as RCU does in the kernel. A batch of changes is applied
//! by one writer at a time: to the reference table, then to a snapshot no
//! reader can see (or by a rebuild), and the result is published with one
//! pointer store, so a reader sees a batch entirely or not at all.
//!
//! The snapshot the writer patches is the spare: the one published before
//! the current one, once its last reader let go of it. It is one batch
//! behind, and is brought up to date in whichever of two ways was measured
//! cheaper on the last batches:
//! - catching up: the spare keeps its own updater (the one that produced
//!   it), which patches it for the previous batch's prefixes and the new
//!   batch's at once; no copy, so a large snapshot (dir24-8's 64 MiB)
//!   costs two patches instead of a copy of the whole;
//! - copying: the current snapshot is copied into the spare's memory
//!   (`clone_from`) and the current updater patches the copy; cheaper when
//!   the patches are large and the snapshot small (DXR with big batches).
//!
//! Keeping the spare's updater costs a second copy of the engine's build
//! state (a clone once when catching up starts, none per batch after).
//!
//! A reader that is slow to let go (descheduled mid-burst on a busy
//! machine) may still hold the spare when the next batch comes. Older
//! snapshots that readers still hold stay in a small pool of spares (up to
//! [`MAX_SPARES`]), each with the prefixes changed since it, and the writer
//! takes the newest one no reader holds: a held spare costs a fresh copy
//! only when every pooled one is held too. Free older snapshots are let
//! go at each publication, so the pool never keeps memory that readers do
//! not already pin, beyond the one spare.
//!
//! Lookups through the handle do not go through a dynamic call per key:
//! the snapshot is an enum over the engines ([`crate::registry::SnapshotV4`]) or one
//! engine's own type (`Fib<u32, DxrUpdater>`), so each engine's lookup is
//! inlined into the caller's loop.
//!
//! ```
//! use fibkit::{Change, Fib, Lookup, Prefix, Rib};
//!
//! let mut rib = Rib::<u32>::new();
//! rib.insert("10.0.0.0/8".parse::<Prefix<u32>>()?, 1);
//! let fib = Fib::new("dxr", rib)?;
//!
//! // A reader thread: one `Reader` per thread, lookups without locks.
//! let mut reader = fib.reader();
//! let worker = std::thread::spawn(move || reader.lookup(0x0a01_0203));
//!
//! // The writer: a batch is published at once, entirely.
//! fib.apply(&[Change::Announce("10.1.0.0/16".parse()?, 2)])?;
//! assert_eq!(fib.snapshot().lookup(0x0a01_0203), Some(2));
//! assert!(matches!(worker.join().unwrap(), Some(1) | Some(2)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use arc_swap::{ArcSwap, Cache};

use crate::engine::{forward_lookup, BuildError, EngineConfig, Lookup, Updater};
use crate::prefix::{Label, Prefix};
use crate::registry::EngineFamily;
use crate::rib::{Change, Rib};

/// A snapshot as published by a [`Fib`]: the engine's snapshot and its
/// version (0 for the first build, one more per published batch).
#[derive(Clone, Debug)]
pub struct Published<S> {
    version: u64,
    snapshot: S,
}

impl<S> Published<S> {
    /// The version: how many batches the table had received when this
    /// snapshot was published.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The engine's snapshot.
    pub fn snapshot(&self) -> &S {
        &self.snapshot
    }
}

impl<S> Deref for Published<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.snapshot
    }
}

/// What one applied batch did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateSummary {
    /// Changes that altered the reference table.
    pub effective: usize,
    /// Changes that left it as it was (withdraw of an absent prefix, same label).
    pub no_ops: usize,
    /// Whether the engine was rebuilt rather than patched, and why (`None`:
    /// patched, or nothing to do).
    pub rebuilt: Option<String>,
    /// The version published (unchanged when every change was a no-op).
    pub version: u64,
}

/// A forwarding table: the reference table, an engine built from it, and
/// the published snapshot that readers use. Cloning the handle shares the
/// table (it is an `Arc`).
///
/// `U` is the engine: by default every engine of the family, chosen by a
/// spec string at run time; name one engine's updater
/// (`Fib<u32, DxrUpdater>`) to fix it at compile time.
pub struct Fib<A: EngineFamily, U: Updater<A> = <A as EngineFamily>::Engine> {
    current: Arc<ArcSwap<Published<U::Snapshot>>>,
    writer: Arc<Mutex<Writer<A, U>>>,
}

impl<A: EngineFamily, U: Updater<A>> Clone for Fib<A, U> {
    fn clone(&self) -> Self {
        Fib {
            current: Arc::clone(&self.current),
            writer: Arc::clone(&self.writer),
        }
    }
}

/// What only the writer touches.
struct Writer<A: EngineFamily, U: Updater<A>> {
    rib: Rib<A>,
    /// The updater of the current snapshot.
    updater: U,
    /// Snapshots published before the current one, newest first: the one
    /// it replaced, then older ones that readers still held at the last
    /// publication. The next batch brings the newest free one up to date
    /// and publishes it instead of allocating anew.
    spares: Vec<Spare<A, U>>,
    version: u64,
    costs: Costs,
}

/// Spares kept at most: the newest, and older ones readers still hold.
pub const MAX_SPARES: usize = 4;

/// Changed prefixes an older spare may fall behind by before it gives up
/// catching up (its updater is dropped and it is reused by copying).
const MAX_BEHIND: usize = 1 << 16;

/// A snapshot published before the current one.
struct Spare<A: EngineFamily, U: Updater<A>> {
    published: Arc<Published<U::Snapshot>>,
    /// The updater that produced it (`None`: none was kept, so the next
    /// batch copies the current snapshot into it).
    updater: Option<U>,
    /// The prefixes the current snapshot changed since it (sorted and
    /// distinct for the newest spare; older ones gather every batch's
    /// since, deduplicated when they catch up).
    behind: Vec<Prefix<A>>,
}

/// What bringing the spare up to date cost on the last batches.
#[derive(Default)]
struct Costs {
    /// The last copy of a whole snapshot, in ns (`None` before the first).
    copy_ns: Option<f64>,
    /// The last patch's time per changed prefix, in ns.
    patch_ns_per_prefix: f64,
    /// Catch up always (`true`) or never, whatever the costs (see
    /// [`Fib::set_catch_up`]).
    forced: Option<bool>,
    /// Batches that found every spare held by a reader and copied the
    /// current snapshot into new memory.
    fresh_copies: u64,
}

impl Costs {
    /// Whether patching `prefixes` more changed prefixes is expected to
    /// cost less than copying a whole snapshot.
    fn catch_up_pays(&self, prefixes: usize) -> bool {
        self.forced.unwrap_or_else(|| {
            self.copy_ns
                .is_none_or(|copy_ns| self.patch_ns_per_prefix * prefixes as f64 <= copy_ns)
        })
    }

    fn record_patch(&mut self, started: Instant, prefixes: usize) {
        self.patch_ns_per_prefix = started.elapsed().as_nanos() as f64 / prefixes.max(1) as f64;
    }
}

impl<A: EngineFamily> Fib<A> {
    /// Builds the engine `spec` (`"dxr:k=20"`, any engine of the family)
    /// from `rib` and takes both.
    pub fn new(spec: &str, rib: Rib<A>) -> Result<Self, BuildError> {
        Self::with_config(spec.parse()?, rib)
    }
}

impl<A: EngineFamily, U: Updater<A>> Fib<A, U> {
    /// Builds the engine `spec` (its own name, `dxr:k=16` for a `Fib`
    /// of `DxrUpdater`) from `rib` and takes both.
    pub fn with_spec(spec: &str, rib: Rib<A>) -> Result<Self, BuildError> {
        Self::with_config(U::Config::parse(spec)?, rib)
    }

    /// Builds the engine with `config` from `rib` and takes both.
    pub fn with_config(config: U::Config, rib: Rib<A>) -> Result<Self, BuildError> {
        Ok(LocalFib::with_config(config, rib)?.into_shared())
    }

    /// The current snapshot. Hold it for a burst of lookups, then drop it:
    /// a held snapshot stays in memory after newer ones are published.
    pub fn snapshot(&self) -> Arc<Published<U::Snapshot>> {
        self.current.load_full()
    }

    /// Runs `f` on the current snapshot without taking a reference count:
    /// many threads calling it on one handle do not contend on a shared
    /// counter, as they would cloning the `Arc` of [`Fib::snapshot`]. For
    /// callers that cannot keep a [`Reader`] per thread (a C or Python
    /// caller sharing one handle); keep `f` short, as a held snapshot stays
    /// in memory after newer ones are published.
    #[inline]
    pub fn with_snapshot<R>(&self, f: impl FnOnce(&Published<U::Snapshot>) -> R) -> R {
        f(&self.current.load())
    }

    /// The version of the current snapshot (0 for the first build, one
    /// more per published batch).
    pub fn version(&self) -> u64 {
        self.current.load().version
    }

    /// A reader for one thread: its lookups see the newest snapshot at the
    /// cost of one atomic load per call.
    pub fn reader(&self) -> Reader<U::Snapshot> {
        Reader {
            cache: Cache::new(Arc::clone(&self.current)),
        }
    }

    /// The engine's spec in canonical form (`dxr:k=20`).
    pub fn spec(&self) -> String {
        self.lock().updater.config().to_string()
    }

    /// The engine's statistics with the current snapshot.
    pub fn stats(&self) -> U::Stats {
        let writer = self.lock();
        writer.updater.stats(&self.current.load())
    }

    /// The longest matching prefix and its label, from the reference table
    /// (engines answer labels only: a DXR range or a trie entry does not
    /// know which prefix it came from). Costs a walk of the reference trie
    /// under the writer's lock, about as slow as the `radix` engine: for
    /// reporting, not for every packet.
    pub fn lookup_prefix(&self, addr: A) -> Option<(Prefix<A>, Label)> {
        self.lock().rib.longest_match(addr)
    }

    /// Runs `f` on the reference table (the writer waits meanwhile).
    pub fn with_rib<R>(&self, f: impl FnOnce(&Rib<A>) -> R) -> R {
        f(&self.lock().rib)
    }

    /// How later batches bring a spare snapshot up to date: by patching an
    /// older spare with the changes since it as well (`Some(true)`), by
    /// copying the current snapshot and patching the copy (`Some(false)`),
    /// or by whichever the last batches measured cheaper (`None`, the
    /// default). Catching up patches two batches' prefixes as one batch,
    /// against the newest reference table; an engine whose layout depends on
    /// the order of its patches (a leaf-pushed `cpe` trie grows nodes it
    /// keeps) can then accept near a limit a batch that patching batch by
    /// batch, as [`LocalFib`] does, refuses, or the reverse. With
    /// `Some(false)` a `Fib` fails exactly the batches a `LocalFib` fails.
    pub fn set_catch_up(&self, catch_up: Option<bool>) {
        self.lock().costs.forced = catch_up;
    }

    /// Applies `changes` (in order) to the reference table, brings the
    /// engine in line and publishes the new snapshot, all or nothing: if
    /// neither a patch nor a fresh build of the engine can take the new
    /// table (a layout limit), the reference table is restored, readers
    /// keep the old answers and the error is returned.
    ///
    /// The engine patches the spare snapshot (readers keep reading the
    /// published one): each batch costs its patch plus either the previous
    /// batch's patch again or a copy of the snapshot (see the module
    /// header), and a copy whenever a reader still holds the spare. Coalesce
    /// changes into batches.
    pub fn apply(&self, changes: &[Change<A>]) -> Result<UpdateSummary, BuildError> {
        let mut writer = self.lock();
        let writer = &mut *writer;
        let Some(batch) = Batch::record(&mut writer.rib, changes) else {
            return Ok(UpdateSummary {
                no_ops: changes.len(),
                version: writer.version,
                ..UpdateSummary::default()
            });
        };
        let mut summary = batch.summary(changes.len());
        if let Some((updater, snapshot)) = build_anew(&writer.updater, &writer.rib, &batch) {
            writer.updater = updater;
            summary.rebuilt = Some(LARGER_THAN_TABLE.to_string());
            summary.version = self.publish(writer, snapshot, None, batch.changed);
            return Ok(summary);
        }
        let patched = if writer.updater.patches() {
            self.patch_spare(writer, &batch.changed)
        } else {
            Err(REBUILDS.to_string())
        };
        let (snapshot, behind) = match patched {
            Ok(patched) => patched,
            Err(why) => match rebuild(&mut writer.rib, &mut writer.updater, &batch) {
                Ok(snapshot) => {
                    summary.rebuilt = Some(why);
                    (snapshot, None)
                }
                Err((error, old)) => {
                    if let Some(snapshot) = old {
                        self.publish(writer, snapshot, None, Vec::new());
                    }
                    return Err(error);
                }
            },
        };
        summary.version = self.publish(writer, snapshot, behind, batch.changed);
        Ok(summary)
    }

    /// Brings the newest spare no reader holds (or a fresh copy, when
    /// readers hold them all) up to date after the batch that changed `changed`,
    /// leaving its updater in `writer.updater`. Returns it with the updater
    /// of the current snapshot, if one was kept for the next batch to
    /// catch up with. On an error, `writer.updater` may describe a failed
    /// patch (the caller rebuilds).
    #[allow(clippy::type_complexity)]
    fn patch_spare(
        &self,
        writer: &mut Writer<A, U>,
        changed: &[Prefix<A>],
    ) -> Result<(U::Snapshot, Option<U>), String> {
        let mut recycled = None;
        // A spare only readers can release, and none can take a new
        // reference to (it is no longer published): a count of one stays one.
        let free =
            (writer.spares.iter()).position(|spare| Arc::strong_count(&spare.published) == 1);
        if let Some(at) = free {
            let Spare {
                published,
                updater,
                behind,
            } = writer.spares.remove(at);
            let catch_up = updater.is_some() && writer.costs.catch_up_pays(behind.len());
            match (Arc::try_unwrap(published), updater) {
                (Ok(published), Some(mut updater)) if catch_up => {
                    let mut snapshot = published.snapshot;
                    let mut replay = behind;
                    replay.extend_from_slice(changed);
                    replay.sort_unstable();
                    replay.dedup();
                    let started = Instant::now();
                    updater
                        .update(&mut snapshot, &writer.rib, &replay)
                        .map_err(|error| error.to_string())?;
                    writer.costs.record_patch(started, replay.len());
                    let behind = std::mem::replace(&mut writer.updater, updater);
                    return Ok((snapshot, Some(behind)));
                }
                // Its vectors keep their memory: copying into them
                // allocates nothing.
                (Ok(published), _) => recycled = Some(published.snapshot),
                // Not reached (see above); were it, the reader keeps it and
                // the pool lets it go.
                (Err(_), _) => {}
            }
        }
        let started = Instant::now();
        let current = self.current.load();
        let mut copy = match recycled {
            Some(mut snapshot) => {
                snapshot.clone_from(&current.snapshot);
                snapshot
            }
            None => {
                writer.costs.fresh_copies += 1;
                current.snapshot.clone()
            }
        };
        drop(current);
        writer.costs.copy_ns = Some(started.elapsed().as_nanos() as f64);
        // The next batch catches up with this one's prefixes if that is
        // expected to beat a copy; it needs the current snapshot's updater.
        let behind = writer
            .costs
            .catch_up_pays(changed.len())
            .then(|| writer.updater.clone());
        let started = Instant::now();
        writer
            .updater
            .update(&mut copy, &writer.rib, changed)
            .map_err(|error| error.to_string())?;
        writer.costs.record_patch(started, changed.len());
        Ok((copy, behind))
    }

    /// Publishes `snapshot` as the next version, keeping the one it
    /// replaces as the newest spare with `behind`, its updater if one was
    /// kept, and the prefixes `changed` since it, and the older spares
    /// readers still hold; returns the version.
    fn publish(
        &self,
        writer: &mut Writer<A, U>,
        snapshot: U::Snapshot,
        behind: Option<U>,
        changed: Vec<Prefix<A>>,
    ) -> u64 {
        writer.version += 1;
        let old = self.current.swap(Arc::new(Published {
            version: writer.version,
            snapshot,
        }));
        // Free older spares go (their memory would otherwise stay beside
        // the newest spare's); held ones fall one more batch behind.
        writer
            .spares
            .retain(|spare| Arc::strong_count(&spare.published) > 1);
        for spare in &mut writer.spares {
            spare.behind.extend_from_slice(&changed);
            if spare.behind.len() > MAX_BEHIND {
                spare.updater = None;
                spare.behind = Vec::new();
            }
        }
        writer.spares.insert(
            0,
            Spare {
                published: old,
                updater: behind,
                behind: changed,
            },
        );
        writer.spares.truncate(MAX_SPARES);
        writer.version
    }

    fn lock(&self) -> MutexGuard<'_, Writer<A, U>> {
        // A panic inside an update leaves the writer's state as the failed
        // batch left it; readers are unaffected and the next batch rebuilds
        // what it needs, so the poison flag carries no information here.
        self.writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Why an engine whose updater does not patch was rebuilt.
const REBUILDS: &str = "the engine rebuilds on every change";

/// Why a batch was built anew before any patch ([`Updater::builds_anew`]).
const LARGER_THAN_TABLE: &str = "the batch changed more prefixes than the table holds after it";

/// A fresh build of `rib` (after `batch`) when the engine patches but
/// [`Updater::builds_anew`] says the batch costs more than a build.
/// `None` when it patches the batch, and when the build fails: the
/// patch, which may fit where a build does not, is then tried as usual.
#[allow(clippy::type_complexity)]
fn build_anew<A: crate::Addr, U: Updater<A>>(
    updater: &U,
    rib: &Rib<A>,
    batch: &Batch<A>,
) -> Option<(U, U::Snapshot)> {
    if !updater.patches() || !updater.builds_anew(batch.changed.len(), rib.len()) {
        return None;
    }
    U::build(&updater.config(), rib).ok()
}

/// A batch applied to a reference table, with what it takes to undo it.
struct Batch<A> {
    /// Each effective change's prefix and what it held before, in order.
    before: Vec<(Prefix<A>, Option<Label>)>,
    /// The changed prefixes, sorted and distinct.
    changed: Vec<Prefix<A>>,
}

impl<A: crate::Addr> Batch<A> {
    /// Applies `changes` to `rib`; `None` when none changed it.
    fn record(rib: &mut Rib<A>, changes: &[Change<A>]) -> Option<Self> {
        let mut before = Vec::with_capacity(changes.len());
        for &change in changes {
            // One walk down the trie per change: `insert` and `remove`
            // return what the prefix held (a `get` first would walk twice,
            // and the walks are cache misses on a full table).
            let (prefix, old) = match change {
                Change::Announce(prefix, label) => match rib.insert(prefix, label) {
                    Some(old) if old == label => continue,
                    old => (prefix, old),
                },
                Change::Withdraw(prefix) => match rib.remove(prefix) {
                    Some(old) => (prefix, Some(old)),
                    None => continue,
                },
            };
            before.push((prefix, old));
        }
        if before.is_empty() {
            return None;
        }
        let mut changed: Vec<Prefix<A>> = before.iter().map(|(prefix, _)| *prefix).collect();
        changed.sort_unstable();
        changed.dedup();
        Some(Batch { before, changed })
    }

    /// Restores `rib` to what it was before the batch.
    fn undo(&self, rib: &mut Rib<A>) {
        // In reverse order: the first value seen for a prefix is the one it
        // had before the batch.
        for &(prefix, old) in self.before.iter().rev() {
            match old {
                Some(label) => rib.insert(prefix, label),
                None => rib.remove(prefix),
            };
        }
    }

    fn summary(&self, changes: usize) -> UpdateSummary {
        UpdateSummary {
            effective: self.before.len(),
            no_ops: changes - self.before.len(),
            ..UpdateSummary::default()
        }
    }
}

/// Rebuilds the engine for `rib` after `batch`. When the new table does
/// not fit the engine, undoes the batch and rebuilds for the old table
/// (the updater's state may describe the failed attempt), returning the
/// error with that rebuilt snapshot (`None` if even it failed).
#[allow(clippy::type_complexity)]
fn rebuild<A: crate::Addr, U: Updater<A>>(
    rib: &mut Rib<A>,
    updater: &mut U,
    batch: &Batch<A>,
) -> Result<U::Snapshot, (BuildError, Option<U::Snapshot>)> {
    let config = updater.config();
    match U::build(&config, rib) {
        Ok((fresh, snapshot)) => {
            *updater = fresh;
            Ok(snapshot)
        }
        Err(error) => {
            batch.undo(rib);
            match U::build(&config, rib) {
                Ok((fresh, snapshot)) => {
                    *updater = fresh;
                    Err((error, Some(snapshot)))
                }
                Err(_) => Err((error, None)),
            }
        }
    }
}

/// An engine used from one thread: the reference table, the updater and
/// its snapshot, changed in place. What [`Fib`] does without the readers:
/// no copy per batch, so single changes cost only their patch.
pub struct LocalFib<A: EngineFamily, U: Updater<A> = <A as EngineFamily>::Engine> {
    rib: Rib<A>,
    updater: U,
    snapshot: U::Snapshot,
}

impl<A: EngineFamily> LocalFib<A> {
    /// Builds the engine `spec` (`"dxr:k=20"`, any engine of the family)
    /// from `rib` and takes both.
    pub fn new(spec: &str, rib: Rib<A>) -> Result<Self, BuildError> {
        Self::with_config(spec.parse()?, rib)
    }
}

impl<A: EngineFamily, U: Updater<A>> LocalFib<A, U> {
    /// Builds the engine `spec` (its own name) from `rib` and takes both.
    pub fn with_spec(spec: &str, rib: Rib<A>) -> Result<Self, BuildError> {
        Self::with_config(U::Config::parse(spec)?, rib)
    }

    /// Builds the engine with `config` from `rib` and takes both.
    pub fn with_config(config: U::Config, rib: Rib<A>) -> Result<Self, BuildError> {
        let (updater, snapshot) = U::build(&config, &rib)?;
        Ok(LocalFib {
            rib,
            updater,
            snapshot,
        })
    }

    /// The engine's snapshot.
    pub fn snapshot(&self) -> &U::Snapshot {
        &self.snapshot
    }

    /// The reference table.
    pub fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    /// The longest matching prefix and its label, from the reference table
    /// (a walk of the reference trie, about as slow as the `radix` engine;
    /// [`Lookup::lookup`] gives the label alone at the engine's speed).
    pub fn lookup_prefix(&self, addr: A) -> Option<(Prefix<A>, Label)> {
        self.rib.longest_match(addr)
    }

    /// The engine's updater.
    pub fn updater(&self) -> &U {
        &self.updater
    }

    /// The engine's spec in canonical form (`dxr:k=20`).
    pub fn spec(&self) -> String {
        self.updater.config().to_string()
    }

    /// The engine's statistics.
    pub fn stats(&self) -> U::Stats {
        self.updater.stats(&self.snapshot)
    }

    /// Applies `changes` (in order) to the reference table and patches the
    /// snapshot in place, or rebuilds it. All or nothing, as
    /// [`Fib::apply`]: on an error the table answers as before the batch.
    pub fn apply(&mut self, changes: &[Change<A>]) -> Result<UpdateSummary, BuildError> {
        let Some(batch) = Batch::record(&mut self.rib, changes) else {
            return Ok(UpdateSummary {
                no_ops: changes.len(),
                ..UpdateSummary::default()
            });
        };
        let mut summary = batch.summary(changes.len());
        if let Some(fresh) = build_anew(&self.updater, &self.rib, &batch) {
            (self.updater, self.snapshot) = fresh;
            summary.rebuilt = Some(LARGER_THAN_TABLE.to_string());
            return Ok(summary);
        }
        let why = if self.updater.patches() {
            match self
                .updater
                .update(&mut self.snapshot, &self.rib, &batch.changed)
            {
                Ok(()) => return Ok(summary),
                Err(error) => error.to_string(),
            }
        } else {
            REBUILDS.to_string()
        };
        match rebuild(&mut self.rib, &mut self.updater, &batch) {
            Ok(snapshot) => {
                self.snapshot = snapshot;
                summary.rebuilt = Some(why);
                Ok(summary)
            }
            Err((error, old)) => {
                if let Some(snapshot) = old {
                    self.snapshot = snapshot;
                }
                Err(error)
            }
        }
    }

    /// A shared handle publishing this engine's snapshots to readers.
    pub fn into_shared(self) -> Fib<A, U> {
        Fib {
            current: Arc::new(ArcSwap::from_pointee(Published {
                version: 0,
                snapshot: self.snapshot,
            })),
            writer: Arc::new(Mutex::new(Writer {
                rib: self.rib,
                updater: self.updater,
                spares: Vec::new(),
                version: 0,
                costs: Costs::default(),
            })),
        }
    }
}

impl<A: EngineFamily, U: Updater<A>> Lookup<A> for LocalFib<A, U> {
    forward_lookup!(|this| &this.snapshot);
}

/// A per-thread reader of a [`Fib`]: remembers the snapshot it last saw
/// and checks with one atomic load per call whether a newer one was
/// published.
pub struct Reader<S> {
    cache: Cache<Arc<ArcSwap<Published<S>>>, Arc<Published<S>>>,
}

impl<S> Reader<S> {
    /// The newest published snapshot.
    #[inline]
    pub fn snapshot(&mut self) -> &Arc<Published<S>> {
        self.cache.load()
    }

    /// The label of the longest prefix matching `addr` in the newest
    /// snapshot.
    #[inline]
    pub fn lookup<A: crate::Addr>(&mut self, addr: A) -> Option<Label>
    where
        S: Lookup<A>,
    {
        self.cache.load().snapshot.lookup(addr)
    }

    /// Looks up `addrs` into `out` in the newest snapshot (one snapshot for
    /// the whole slice).
    #[inline]
    pub fn lookup_batch<A: crate::Addr>(&mut self, addrs: &[A], out: &mut [Option<Label>])
    where
        S: Lookup<A>,
    {
        self.cache.load().snapshot.lookup_batch(addrs, out)
    }
}

impl<A: crate::Addr, S: Lookup<A>> Lookup<A> for Published<S> {
    forward_lookup!(|this| &this.snapshot);
}

#[cfg(all(test, feature = "bench"))]
mod tests {
    use super::*;
    use crate::addr::Family;
    use crate::trace::generate_changes;
    use crate::verify::verify;

    #[test]
    fn published_snapshots_forward_every_method() {
        use crate::engine::tests::{assert_forwards, Probe};
        let published = Published {
            version: 0,
            snapshot: Probe,
        };
        assert_forwards(&published, "a published snapshot");
    }

    /// Replays a seeded stream onto every engine of the family through the
    /// handle, in batches of 1 to 300 changes, bringing the spare up to
    /// date by catching up, by copying, and by copying afresh while a
    /// reader holds it, in turn; after every batch the published snapshot
    /// must answer as the reference table on every range boundary.
    fn spare_ways_agree<A: EngineFamily>(family: Family, seed: u64) {
        let mut rib = Rib::<A>::new();
        for change in generate_changes(&Rib::<A>::new(), 3000, seed) {
            rib.apply(change);
        }
        let stream = generate_changes(&rib, 4000, seed + 1);
        for info in crate::registry::ENGINES
            .iter()
            .filter(|info| info.supports(family))
        {
            let fib = Fib::<A>::new(info.name, rib.clone()).unwrap();
            let (mut start, mut batch) = (0, 0u64);
            let mut held = Vec::new();
            while start < stream.len() {
                let len = ((batch * 7919 + seed) % 300 + 1) as usize;
                let end = (start + len).min(stream.len());
                // Catch up three batches in five (the first after a copy
                // copies and keeps the updater), copy on the fourth, and
                // hold the snapshot the fourth replaces through the fifth,
                // so that the fifth cannot reuse it.
                fib.lock().costs.forced = Some(batch % 5 != 3);
                if batch % 5 == 3 {
                    held.push(fib.snapshot());
                }
                fib.apply(&stream[start..end]).unwrap();
                let report = fib.with_rib(|rib| verify(&*fib.snapshot(), rib, 64, batch));
                assert!(
                    report.ok(),
                    "{} after batch {batch} ({start}..{end}): {:?}",
                    info.name,
                    report.mismatches
                );
                if batch % 5 == 4 {
                    held.clear();
                }
                (start, batch) = (end, batch + 1);
            }
        }
    }

    /// Readers hold the two newest spares and let go of the older one:
    /// the next batch takes the older one from the pool (catching it up by
    /// two batches, or copying into it) instead of fresh memory, and every
    /// published snapshot answers as the reference table.
    #[test]
    fn pooled_spares_are_reused_when_the_newest_is_held() {
        let mut rib = Rib::<u32>::new();
        for change in generate_changes(&Rib::<u32>::new(), 2000, 5) {
            rib.apply(change);
        }
        let stream = generate_changes(&rib, 500, 6);
        for catch_up in [true, false] {
            for spec in ["dxr", "dir24-8", "cpe"] {
                let fib = Fib::<u32>::new(spec, rib.clone()).unwrap();
                fib.lock().costs.forced = Some(catch_up);
                let mut batches = stream.chunks(50);
                let mut apply = |fib: &Fib<u32>| {
                    fib.apply(batches.next().unwrap()).unwrap();
                    let report = fib.with_rib(|rib| verify(&*fib.snapshot(), rib, 64, 1));
                    assert!(report.ok(), "{spec}: {:?}", report.mismatches);
                };
                apply(&fib); // v1; spares: v0 (free)
                let v1 = fib.snapshot();
                apply(&fib); // reuses v0; v2; spares: v1 (held)
                let v2 = fib.snapshot();
                apply(&fib); // v1 and v2 held: a fresh copy; v3; spares: v2, v1
                assert_eq!(
                    fib.lock().costs.fresh_copies,
                    2,
                    "{spec}: the first batch and this one"
                );
                assert_eq!(fib.lock().spares.len(), 2);
                drop(v1);
                apply(&fib); // v2 held, v1 free in the pool: reused
                assert_eq!(fib.lock().costs.fresh_copies, 2, "{spec}: v1 was reused");
                drop(v2);
                apply(&fib);
                // Free older spares are let go at publication.
                assert_eq!(fib.lock().spares.len(), 1, "{spec}");
            }
        }
    }

    #[test]
    fn spare_ways_agree_v4() {
        spare_ways_agree::<u32>(Family::V4, 11);
    }

    #[test]
    fn spare_ways_agree_v6() {
        spare_ways_agree::<u128>(Family::V6, 12);
    }
}
