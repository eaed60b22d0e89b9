//! The `fibkit.Fib` class.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use fibkit::any::FamilyFib;
use fibkit::load::{
    load_table, load_updates, FamilyPart, Format, LabelSource, LoadedTable, LoadedUpdates,
    NextHopTable,
};
use fibkit::registry::{save_image, ImageFamily};
use fibkit::{AnyFib, Change, Family, Label};

use crate::convert::{changes_from, family_arg, family_number, load_options, rib_from};
use crate::errors::{err, to_py};
use crate::lookup::{lookup_one, many};
use crate::FibkitError;

/// What replaying an update stream onto one family's table did.
#[derive(Default)]
struct Replayed {
    changes: usize,
    batches: usize,
    effective: usize,
    no_ops: usize,
    rebuilt: usize,
    version: u64,
}

/// Applies `loaded`'s changes of family `A` to `side` in file order, one
/// batch per run of changes with the same timestamp; a refused batch is an
/// error naming its time (the batches before it stay applied).
fn replay_onto<A: ImageFamily + FamilyPart>(
    side: &FamilyFib<A>,
    loaded: &LoadedUpdates,
    path: &std::path::Path,
) -> Result<Replayed, String> {
    let timed = loaded.timed::<A>();
    let mut done = Replayed {
        changes: timed.len(),
        ..Replayed::default()
    };
    for batch in timed.chunk_by(|a, b| a.0 == b.0) {
        let changes: Vec<Change<A>> = batch.iter().map(|&(_, change)| change).collect();
        let summary = side.apply(&changes).map_err(|e| {
            format!(
                "{}: the changes of time {} (after {} batches applied): {e}",
                path.display(),
                batch[0].0,
                done.batches
            )
        })?;
        done.batches += 1;
        done.effective += summary.effective;
        done.no_ops += summary.no_ops;
        done.rebuilt += summary.rebuilt.is_some() as usize;
        done.version = summary.version;
    }
    Ok(done)
}

/// A forwarding table: longest-prefix-match lookups of IPv4 or IPv6
/// addresses to labels.
///
/// Make one with `Fib.load` (a table file, built into an engine),
/// `Fib.open_image` (an image from `fibkit build`, mapped, not built) or
/// `Fib.from_prefixes`. A table is safe to share between threads; bulk
/// lookups release the GIL.
#[pyclass(frozen, module = "fibkit", name = "Fib")]
pub(crate) struct PyFib {
    fib: AnyFib,
    /// Next-hop addresses by label, for tables labelled by next hop; an
    /// update stream adds its new ones (`apply_updates`).
    nexthops: Mutex<Vec<IpAddr>>,
    /// What the loader said about the file (which MRT peer it kept, ...).
    notes: Vec<String>,
    /// What the table's labels are (origin ASes of a prefix-to-AS file or
    /// an MRT dump read so; next hops otherwise): the default of
    /// `apply_updates`.
    label: LabelSource,
}

impl PyFib {
    /// The next hops by label, locked (a poisoned lock still holds a whole
    /// list: it is only ever replaced whole).
    fn hops(&self) -> MutexGuard<'_, Vec<IpAddr>> {
        self.nexthops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PyFib {
    /// Loads a table file (`prefix label` or `prefix nexthop` text, pyasn's
    /// `ipasn` and CAIDA's `pfx2as` prefix-to-AS files, an MRT RIB dump or
    /// bgpdump's `-m` text of one; plain, gzip or bzip2) and builds `engine` (default:
    /// `fibkit.default_spec(family)`, the fastest engine on this CPU) over
    /// `family` (4 or 6; default:
    /// IPv4 if the file has IPv4 prefixes). `lenient` clears host bits
    /// instead of rejecting `10.0.0.1/8`. `format` names the input format
    /// instead of detecting it ("table", "nexthop", "mrt", "pfx2as",
    /// "bgpdump"); `skip_bad` skips bad lines or records instead of
    /// raising. For MRT dumps and their bgpdump text, `label` is "nexthop"
    /// (labels index `nexthops()`) or
    /// "origin-as" (the origin AS number), and `peer` picks the collector
    /// peer whose routes are kept (an address, "AS64500" or an AS number;
    /// default: the peer with most prefixes).
    #[staticmethod]
    #[pyo3(signature = (
        path, engine=None, family=None, lenient=false, *,
        format=None, label="nexthop", peer=None, skip_bad=false
    ))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        engine: Option<String>,
        family: Option<&Bound<'_, PyAny>>,
        lenient: bool,
        format: Option<String>,
        label: &str,
        peer: Option<&Bound<'_, PyAny>>,
        skip_bad: bool,
    ) -> PyResult<Self> {
        let family = family_arg(family)?;
        let options = load_options(
            format,
            Some(label),
            LabelSource::NextHop,
            peer,
            lenient,
            skip_bad,
        )?;
        let (fib, table) = py
            .detach(|| -> Result<(AnyFib, LoadedTable), fibkit::Error> {
                let table = load_table(&path, &options)?;
                let fib = AnyFib::build(&table, family, engine.as_deref())?;
                Ok((fib, table))
            })
            .map_err(to_py)?;
        Ok(PyFib {
            fib,
            nexthops: Mutex::new(table.nexthops.iter().map(|(_, addr)| addr).collect()),
            label: match table.format {
                Some(Format::Pfx2as) => LabelSource::OriginAs,
                _ => options.label,
            },
            notes: table.notes,
        })
    }

    /// The next-hop addresses of a table labelled by next hop (a
    /// `prefix nexthop` file, an MRT dump with `label="nexthop"`), as
    /// strings indexed by label: `fib.nexthops()[label]`, or
    /// `numpy.array(fib.nexthops())[labels]` for a whole array. Empty for
    /// other tables, images and tables built from prefixes.
    fn nexthops(&self) -> Vec<String> {
        self.hops().iter().map(IpAddr::to_string).collect()
    }

    /// What the loader said about the file `load` read, as the command
    /// prints it on standard error: which MRT peer's routes it kept (and
    /// how to choose another), routes it dropped, prefixes with several
    /// origin ASes. Empty for images and tables built from prefixes.
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    /// Opens an image written by `fibkit build` (or `Fib.save_image`): maps
    /// the file and checks it, with no build. An image answers labels, not
    /// prefixes, and cannot change.
    #[staticmethod]
    fn open_image(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let fib = py.detach(|| AnyFib::open_image(&path)).map_err(err)?;
        Ok(PyFib {
            fib,
            nexthops: Mutex::new(Vec::new()),
            notes: Vec::new(),
            label: LabelSource::NextHop,
        })
    }

    /// Builds `engine` over `prefixes`: a dict `{"10.0.0.0/8": 1, ...}` or
    /// an iterable of `(prefix, label)` pairs. `family` defaults to that of
    /// the first prefix (IPv4 if there is none).
    #[staticmethod]
    #[pyo3(signature = (prefixes, engine=None, family=None))]
    fn from_prefixes(
        py: Python<'_>,
        prefixes: &Bound<'_, PyAny>,
        engine: Option<String>,
        family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let pairs = match prefixes.cast::<PyDict>() {
            Ok(dict) => dict.items(),
            Err(_) => PyList::new(py, prefixes.try_iter()?.collect::<PyResult<Vec<_>>>()?)?,
        };
        let family = match family_arg(family)? {
            Some(family) => family,
            None => {
                let first: Option<String> = match pairs.get_item(0) {
                    Ok(pair) => pair.get_item(0).ok().and_then(|p| p.extract().ok()),
                    Err(_) => None,
                };
                if first.is_some_and(|p| p.contains(':')) {
                    Family::V6
                } else {
                    Family::V4
                }
            }
        };
        let mut table = LoadedTable::default();
        match family {
            Family::V4 => table.v4 = rib_from(&pairs, "prefixes")?,
            Family::V6 => table.v6 = rib_from(&pairs, "prefixes")?,
        }
        let fib = py
            .detach(|| AnyFib::build(&table, Some(family), engine.as_deref()))
            .map_err(err)?;
        Ok(PyFib {
            fib,
            nexthops: Mutex::new(Vec::new()),
            notes: Vec::new(),
            label: LabelSource::NextHop,
        })
    }

    /// The longest match for one address (`str` or `int`): `(prefix,
    /// label)`, with `prefix` as text (`None` for a table opened from an
    /// image, which holds no prefixes), or `None` if no prefix matches.
    fn lookup(&self, addr: &Bound<'_, PyAny>) -> PyResult<Option<(Option<String>, Label)>> {
        match &self.fib {
            AnyFib::V4(side) => lookup_one(side, addr),
            AnyFib::V6(side) => lookup_one(side, addr),
        }
    }

    /// Looks up many addresses at once, without the GIL. Takes a numpy
    /// `uint32` array (IPv4), an `(n, 16)` `uint8` or `S16` array (IPv6,
    /// network order), a numpy `str`/`object` array, a list of `str` (or
    /// `int`, or `None`), or a pyarrow string array or chunked array.
    /// Returns `(labels, found)`: a `uint32` array of labels (0 where
    /// nothing matched) and a `bool` array saying where something did.
    /// `None` and pyarrow nulls are answered as not found; a malformed
    /// address raises `ValueError` naming its index and text; addresses of
    /// the other family raise `TypeError`. Contiguous binary arrays are
    /// read in place: no other thread may write to them during the call.
    #[allow(clippy::type_complexity)]
    fn lookup_many<'py>(
        &self,
        py: Python<'py>,
        addrs: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<bool>>)> {
        match &self.fib {
            AnyFib::V4(side) => many(py, side, &self.fib, addrs),
            AnyFib::V6(side) => many(py, side, &self.fib, addrs),
        }
    }

    /// Applies one batch of changes: `withdraw` (prefixes) then `announce`
    /// (a dict or `(prefix, label)` pairs). Lookups on other threads see
    /// the whole batch or none of it; on an error the table is unchanged.
    /// Returns `{"effective", "no_ops", "rebuilt", "version"}`.
    #[pyo3(signature = (announce=None, withdraw=None))]
    fn apply<'py>(
        &self,
        py: Python<'py>,
        announce: Option<&Bound<'py, PyAny>>,
        withdraw: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let empty = PyList::empty(py).into_any();
        let announce = announce.unwrap_or(&empty);
        let withdraw = withdraw.unwrap_or(&empty);
        let summary = match &self.fib {
            AnyFib::V4(side) => {
                let changes = changes_from::<u32>(announce, withdraw)?;
                py.detach(|| side.apply(&changes))
            }
            AnyFib::V6(side) => {
                let changes = changes_from::<u128>(announce, withdraw)?;
                py.detach(|| side.apply(&changes))
            }
        }
        .map_err(to_py)?;
        let dict = PyDict::new(py);
        dict.set_item("effective", summary.effective)?;
        dict.set_item("no_ops", summary.no_ops)?;
        dict.set_item("rebuilt", summary.rebuilt)?;
        dict.set_item("version", summary.version)?;
        Ok(dict)
    }

    /// Replays an update stream file onto the table (`time a|w prefix
    /// nexthop` text, MRT BGP4MP, or bgpdump's `-m` text of it; plain, gzip
    /// or bzip2): the changes of the table's family in file order, one
    /// batch per run of changes with the same timestamp (lookups on other
    /// threads see each batch whole or not at all). Next hops are labelled
    /// after the table's own, and `nexthops()` grows by the stream's new
    /// ones. `label` (default: what the table's labels are, as `load` read
    /// them: origin ASes for `label="origin-as"` and prefix-to-AS files,
    /// next hops otherwise), `format`, `lenient` and `skip_bad` as for
    /// `load`; `peer` keeps one
    /// collector peer's changes (default: every peer's). Returns
    /// `{"changes", "batches", "effective", "no_ops", "rebuilt",
    /// "version", "other_family", "notes"}` (`rebuilt`: batches that
    /// rebuilt the engine; `other_family`: changes of the other family,
    /// not applied). A batch the table refuses raises `FibkitError` naming
    /// its time; the batches before it stay applied. A table from an image
    /// cannot change.
    #[pyo3(signature = (
        path, *, format=None, label=None, peer=None, lenient=false, skip_bad=false
    ))]
    // One Rust argument per Python keyword argument.
    #[allow(clippy::too_many_arguments)]
    fn apply_updates<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        format: Option<String>,
        label: Option<&str>,
        peer: Option<&Bound<'py, PyAny>>,
        lenient: bool,
        skip_bad: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = load_options(format, label, self.label, peer, lenient, skip_bad)?;
        let mut known = NextHopTable::default();
        for &addr in self.hops().iter() {
            known.intern(addr);
        }
        let loaded = py
            .detach(|| load_updates(&path, &options, known))
            .map_err(err)?;
        let result = py.detach(|| match &self.fib {
            AnyFib::V4(side) => replay_onto(side, &loaded, &path),
            AnyFib::V6(side) => replay_onto(side, &loaded, &path),
        });
        // The stream's next hops are known from here on, also when a
        // batch was refused: the batches before it may use them.
        *self.hops() = loaded.nexthops.iter().map(|(_, addr)| addr).collect();
        let done = result.map_err(FibkitError::new_err)?;
        let dict = PyDict::new(py);
        dict.set_item("changes", done.changes)?;
        dict.set_item("batches", done.batches)?;
        dict.set_item("effective", done.effective)?;
        dict.set_item("no_ops", done.no_ops)?;
        dict.set_item("rebuilt", done.rebuilt)?;
        dict.set_item("version", done.version)?;
        dict.set_item("other_family", loaded.updates.len() - done.changes)?;
        dict.set_item("notes", loaded.notes.clone())?;
        Ok(dict)
    }

    /// Every `(prefix, label)` of the reference table, sorted by address
    /// then length (a table from an image has none: `FibkitError`).
    fn prefixes(&self) -> PyResult<Vec<(String, Label)>> {
        fn pairs<A: ImageFamily>(side: &FamilyFib<A>) -> Option<Vec<(String, Label)>> {
            match side {
                FamilyFib::Live(fib) => Some(fib.with_rib(|rib| {
                    rib.iter()
                        .map(|(prefix, label)| (prefix.to_string(), label))
                        .collect()
                })),
                FamilyFib::Image { .. } => None,
            }
        }
        match &self.fib {
            AnyFib::V4(side) => pairs(side),
            AnyFib::V6(side) => pairs(side),
        }
        .ok_or_else(|| FibkitError::new_err("a table opened from an image holds no prefixes"))
    }

    /// Saves the table's engine as an image that `Fib.open_image`, the C
    /// library and `fibkit lookup` open by memory map (engines that can be
    /// saved: those `fibkit.engines()` marks `savable`).
    fn save_image(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        fn save<A: ImageFamily>(
            side: &FamilyFib<A>,
            path: &std::path::Path,
        ) -> Result<(), fibkit::Error> {
            match side {
                FamilyFib::Live(fib) => {
                    // `spec` takes the writer's lock: read it before `with_rib` does.
                    let spec = fib.spec();
                    fib.with_rib(|rib| save_image(&spec, rib, path))
                }
                FamilyFib::Image { image, .. } => Err(fibkit::Error::ReadOnlyImage {
                    path: image.path().to_path_buf(),
                }),
            }
        }
        py.detach(|| match &self.fib {
            AnyFib::V4(side) => save(side, &path),
            AnyFib::V6(side) => save(side, &path),
        })
        .map_err(to_py)
    }

    /// The address family: 4 or 6.
    #[getter]
    fn family(&self) -> u8 {
        family_number(self.fib.family())
    }

    /// The engine's spec in canonical form (`"dxr:k=20"`).
    #[getter]
    fn spec(&self) -> String {
        self.fib.spec()
    }

    /// Whether the table was opened from an image.
    #[getter]
    fn is_image(&self) -> bool {
        self.fib.is_image()
    }

    /// `{"family", "spec", "is_image", "prefixes" (None for an image),
    /// "memory_bytes", "version"}`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("family", family_number(self.fib.family()))?;
        dict.set_item("spec", self.fib.spec())?;
        dict.set_item("is_image", self.fib.is_image())?;
        dict.set_item("prefixes", self.fib.prefixes())?;
        dict.set_item("memory_bytes", self.fib.memory_bytes())?;
        dict.set_item("version", self.fib.version())?;
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        match self.fib.prefixes() {
            Some(prefixes) => format!(
                "<fibkit.Fib {} IPv{} {prefixes} prefixes>",
                self.fib.spec(),
                family_number(self.fib.family())
            ),
            None => format!(
                "<fibkit.Fib {} IPv{} image>",
                self.fib.spec(),
                family_number(self.fib.family())
            ),
        }
    }
}
