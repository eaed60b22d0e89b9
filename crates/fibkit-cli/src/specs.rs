//! Which engine answers each address family of a table.
//!
//! `--engine SPEC` applies to every family the engine builds; an engine
//! built for one family only leaves the other family to its default engine
//! (said once on standard error). `--engine v4=SPEC` and `--engine v6=SPEC`
//! choose per family. An engine that builds neither family of the table is
//! an error naming the engines that can; a spec given to both families of a
//! dual-stack table that cannot build one of them is an error saying how to
//! give it the other family alone.

use anyhow::{anyhow, bail, Result};

use fibkit::engine::BuildError;
use fibkit::{default_spec, Family};

/// The engine specs chosen for each family, in command-line order.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct FamilySpecs {
    /// Specs for the IPv4 prefixes.
    pub v4: Vec<String>,
    /// Specs for the IPv6 prefixes.
    pub v6: Vec<String>,
    /// Specs given without `v4=` or `v6=` to a table with prefixes of both
    /// families, so applied to both.
    shared: Vec<String>,
}

impl FamilySpecs {
    /// Splits the `--engine` arguments by family. A family the table has
    /// (`has_v4`, `has_v6`) that no argument names gets its
    /// [`default_spec`], with a note on standard error when other
    /// arguments were given.
    pub(crate) fn resolve(args: &[String], has_v4: bool, has_v6: bool) -> Result<FamilySpecs> {
        let mut specs = FamilySpecs::default();
        for arg in args {
            if let Some(spec) = arg.strip_prefix("v4=") {
                specs.v4.push(spec.to_string());
                continue;
            }
            if let Some(spec) = arg.strip_prefix("v6=") {
                specs.v6.push(spec.to_string());
                continue;
            }
            let name = arg.split(':').next().unwrap_or(arg);
            // An unknown name goes to both families: the library's error
            // lists the engines it knows.
            let (v4, v6) = fibkit::registry::ENGINES
                .iter()
                .find(|info| info.name == name)
                .map_or((true, true), |info| {
                    (info.supports(Family::V4), info.supports(Family::V6))
                });
            if (has_v4 || has_v6) && !(v4 && has_v4 || v6 && has_v6) {
                bail!(
                    "engine `{name}` builds no family this table has ({}); engines that can: {}",
                    families(has_v4, has_v6),
                    capable_engines(has_v4, has_v6)
                );
            }
            if v4 && has_v4 && v6 && has_v6 {
                specs.shared.push(arg.clone());
            }
            if v4 {
                specs.v4.push(arg.clone());
            }
            if v6 {
                specs.v6.push(arg.clone());
            }
        }
        specs.fill_default(Family::V4, has_v4, !args.is_empty());
        specs.fill_default(Family::V6, has_v6, !args.is_empty());
        Ok(specs)
    }

    /// `error`, from building or updating an engine for `family`'s
    /// prefixes, with a hint when its spec was given to both families of
    /// the table and the engine cannot take this family's prefixes (a bad
    /// spec or a layout limit): how to give the spec to the other family
    /// alone, leaving this one to its default engine. Other errors are
    /// returned as they are.
    pub(crate) fn explain(&self, family: Family, error: anyhow::Error) -> anyhow::Error {
        // A limit names the spec as the engine prints it (`dxr6` becomes
        // `dxr6:k=16,...`): the shared spec is found by its engine's name.
        let named = match error.downcast_ref::<BuildError>() {
            Some(BuildError::BadSpec { spec, .. }) => spec,
            Some(BuildError::Limit { engine, .. }) => engine,
            _ => return error,
        };
        let name = |spec: &str| spec.split(':').next().unwrap_or(spec).to_string();
        let mut shared = self.shared.iter().filter(|spec| name(spec) == name(named));
        let (Some(spec), None) = (shared.next(), shared.next()) else {
            return error;
        };
        let other = match family {
            Family::V4 => Family::V6,
            Family::V6 => Family::V4,
        };
        anyhow!(
            "{error:#}; `{spec}` was given for both families of this table: \
             `--engine {}={spec}` builds it for the {other} prefixes only, and the {family} \
             prefixes use {} (or name one with `--engine {}=SPEC`)",
            flag(other),
            default_spec(family),
            flag(family)
        )
    }

    /// Gives `family`, when the table has it and no spec names it, its
    /// default engine; `noted` says so on standard error.
    fn fill_default(&mut self, family: Family, has: bool, noted: bool) {
        let list = match family {
            Family::V4 => &mut self.v4,
            Family::V6 => &mut self.v6,
        };
        if has && list.is_empty() {
            let spec = default_spec(family);
            if noted {
                eprintln!("fibkit: {family} prefixes use the default engine {spec} (no --engine for {family})");
            }
            list.push(spec.to_string());
        }
    }
}

/// The `--engine` prefix naming `family` (`v4` or `v6`).
fn flag(family: Family) -> &'static str {
    match family {
        Family::V4 => "v4",
        Family::V6 => "v6",
    }
}

/// The families named for an error message.
fn families(has_v4: bool, has_v6: bool) -> &'static str {
    match (has_v4, has_v6) {
        (true, true) => "IPv4 and IPv6",
        (true, false) => "IPv4",
        (false, true) => "IPv6",
        (false, false) => "no prefixes",
    }
}

/// The engines that build at least one family the table has.
fn capable_engines(has_v4: bool, has_v6: bool) -> String {
    fibkit::registry::ENGINES
        .iter()
        .filter(|info| has_v4 && info.ipv4 || has_v6 && info.ipv6)
        .map(|info| info.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(args: &[&str], has_v4: bool, has_v6: bool) -> Result<FamilySpecs> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        FamilySpecs::resolve(&args, has_v4, has_v6)
    }

    #[test]
    fn one_family_engine_leaves_the_other_to_its_default() {
        let resolved = specs(&["dxr:k=16"], true, true).unwrap();
        assert_eq!(resolved.v4, ["dxr:k=16"]);
        assert_eq!(resolved.v6, [default_spec(Family::V6)]);
    }

    #[test]
    fn per_family_choice() {
        let resolved = specs(&["v4=dir24-8", "v6=lctrie"], true, true).unwrap();
        assert_eq!(resolved.v4, ["dir24-8"]);
        assert_eq!(resolved.v6, ["lctrie"]);
    }

    #[test]
    fn no_engine_gives_each_present_family_its_default() {
        let resolved = specs(&[], false, true).unwrap();
        assert!(resolved.v4.is_empty());
        assert_eq!(resolved.v6, [default_spec(Family::V6)]);
    }

    #[test]
    fn engine_for_an_absent_family_is_an_error_naming_capable_engines() {
        let v4_only = fibkit::registry::ENGINES
            .iter()
            .find(|info| info.ipv4 && !info.ipv6)
            .expect("an IPv4-only engine is registered");
        let error = specs(&[v4_only.name], false, true).unwrap_err().to_string();
        assert!(error.contains("engines that can"), "{error}");
        assert!(error.contains(default_spec(Family::V6)), "{error}");
    }

    #[test]
    fn a_shared_spec_that_fails_one_family_names_the_other_alone() {
        let resolved = specs(&["cpe:strides=16+8+8", "v6=dxr6"], true, true).unwrap();
        let bad = BuildError::BadSpec {
            spec: "cpe:strides=16+8+8".into(),
            why: "strides sum to 32 bits but IPv6 addresses have 128".into(),
        };
        let error = resolved.explain(Family::V6, bad.clone().into()).to_string();
        assert!(error.starts_with(&bad.to_string()), "{error}");
        assert!(
            error.contains("`--engine v4=cpe:strides=16+8+8`"),
            "{error}"
        );
        assert!(error.contains(default_spec(Family::V6)), "{error}");
        // A limit names the layout the engine printed, found by its name.
        let resolved = specs(&["bspl"], true, true).unwrap();
        let limit = BuildError::Limit {
            engine: "bspl:first=16".into(),
            why: "too long".into(),
        };
        let error = resolved.explain(Family::V4, limit.into()).to_string();
        assert!(error.contains("`--engine v6=bspl`"), "{error}");
        // Per-family specs, one-family tables and other errors: no hint.
        for (resolved, family) in [
            (
                specs(&["v4=cpe:strides=16+8+8"], true, true).unwrap(),
                Family::V4,
            ),
            (
                specs(&["cpe:strides=16+8+8"], false, true).unwrap(),
                Family::V6,
            ),
        ] {
            let error = resolved.explain(family, bad.clone().into()).to_string();
            assert_eq!(error, bad.to_string());
        }
        let resolved = specs(&["cpe:strides=16+8+8"], true, true).unwrap();
        let other = resolved
            .explain(Family::V6, anyhow!("disk full"))
            .to_string();
        assert_eq!(other, "disk full");
    }
}
