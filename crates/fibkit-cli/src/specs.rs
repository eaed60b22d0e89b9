//! Which engine answers each address family of a table.
//!
//! `--engine SPEC` applies to every family the engine builds; an engine
//! built for one family only leaves the other family to its default engine
//! (said once on standard error). `--engine v4=SPEC` and `--engine v6=SPEC`
//! choose per family. An engine that builds neither family of the table is
//! an error naming the engines that can.

use anyhow::{bail, Result};

use fibkit::{default_spec, Family};

/// The engine specs chosen for each family, in command-line order.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct FamilySpecs {
    /// Specs for the IPv4 prefixes.
    pub v4: Vec<String>,
    /// Specs for the IPv6 prefixes.
    pub v6: Vec<String>,
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
            let (v4, v6) = fibkit::ENGINES
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
    fibkit::ENGINES
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
        let v4_only = fibkit::ENGINES
            .iter()
            .find(|info| info.ipv4 && !info.ipv6)
            .expect("an IPv4-only engine is registered");
        let error = specs(&[v4_only.name], false, true).unwrap_err().to_string();
        assert!(error.contains("engines that can"), "{error}");
        assert!(error.contains(default_spec(Family::V6)), "{error}");
    }
}
