//! Engine spec strings: `name` or `name:key=value,flag,...`, as the command
//! line and [`crate::build`] take them (`dxr:k=20`, `cpe:levels=4,nopush`).

use std::fmt;

use crate::error::BuildError;

/// A parsed engine spec: `name` or `name:key=value,flag,...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSpec {
    /// The engine name (`dxr`).
    pub name: String,
    /// Parameters in the order given; flags have no value.
    pub params: Vec<(String, Option<String>)>,
    text: String,
}

impl EngineSpec {
    /// Parses `name[:key=value|flag[,...]]`.
    pub fn parse(text: &str) -> Result<Self, BuildError> {
        let bad = |why: &str| BuildError::BadSpec {
            spec: text.to_string(),
            why: why.to_string(),
        };
        let (name, rest) = match text.split_once(':') {
            Some((name, rest)) => (name, Some(rest)),
            None => (text, None),
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("empty engine name"));
        }
        let mut params = Vec::new();
        if let Some(rest) = rest {
            for item in rest.split(',') {
                let item = item.trim();
                if item.is_empty() {
                    return Err(bad("empty parameter"));
                }
                let (key, value) = match item.split_once('=') {
                    Some((key, value)) => (key.trim(), Some(value.trim().to_string())),
                    None => (item, None),
                };
                if key.is_empty() {
                    return Err(bad("parameter without a name"));
                }
                if params.iter().any(|(k, _): &(String, _)| k == key) {
                    return Err(bad(&format!("parameter `{key}` given twice")));
                }
                params.push((key.to_string(), value));
            }
        }
        Ok(EngineSpec {
            name: name.to_string(),
            params,
            text: text.to_string(),
        })
    }

    /// The spec as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Fails unless every parameter is one of `known`.
    pub fn expect_only(&self, known: &[&str]) -> Result<(), BuildError> {
        for (key, _) in &self.params {
            if !known.contains(&key.as_str()) {
                return Err(self.error(format!(
                    "unknown parameter `{key}` for `{}` (known: {})",
                    self.name,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        }
        Ok(())
    }

    /// The numeric value of `key`, if given; an error if it is not a number
    /// in `range`.
    pub fn number(
        &self,
        key: &str,
        range: std::ops::RangeInclusive<u32>,
    ) -> Result<Option<u32>, BuildError> {
        let Some((_, value)) = self.params.iter().find(|(k, _)| k == key) else {
            return Ok(None);
        };
        let value = value
            .as_deref()
            .ok_or_else(|| self.error(format!("`{key}` needs a value")))?;
        match value.parse::<u32>() {
            Ok(number) if range.contains(&number) => Ok(Some(number)),
            _ => Err(self.error(format!(
                "`{key}={value}` is not a number in {}..={}",
                range.start(),
                range.end()
            ))),
        }
    }

    /// The comma-free list value of `key` (`strides=16+8+8`), if given.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether the flag `key` is present (with no value, or `=true`/`=1`).
    pub fn flag(&self, key: &str) -> Result<bool, BuildError> {
        match self.params.iter().find(|(k, _)| k == key) {
            None => Ok(false),
            Some((_, None)) => Ok(true),
            Some((_, Some(v))) if v == "true" || v == "1" => Ok(true),
            Some((_, Some(v))) if v == "false" || v == "0" => Ok(false),
            Some((_, Some(v))) => {
                Err(self.error(format!("flag `{key}` takes no value, got `{v}`")))
            }
        }
    }

    /// A [`BuildError::BadSpec`] for this spec.
    pub fn error(&self, why: String) -> BuildError {
        BuildError::BadSpec {
            spec: self.text.clone(),
            why,
        }
    }
}

impl fmt::Display for EngineSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parsing() {
        let spec = EngineSpec::parse("dxr:k=20,fixed").unwrap();
        assert_eq!(spec.name, "dxr");
        assert_eq!(spec.number("k", 16..=24).unwrap(), Some(20));
        assert_eq!(spec.number("d", 12..=16).unwrap(), None);
        assert!(spec.flag("fixed").unwrap());
        assert!(!spec.flag("nopush").unwrap());
        assert!(spec.expect_only(&["k", "fixed"]).is_ok());
        let err = spec.expect_only(&["k"]).unwrap_err().to_string();
        assert!(err.contains("unknown parameter `fixed`"), "{err}");
        let err = EngineSpec::parse("dxr:k=99")
            .unwrap()
            .number("k", 16..=24)
            .unwrap_err();
        assert!(err
            .to_string()
            .contains("`k=99` is not a number in 16..=24"));
        assert!(EngineSpec::parse("").is_err());
        assert!(EngineSpec::parse("dxr:").is_err());
        assert!(EngineSpec::parse("dxr:k=1,k=2").is_err());
        assert!(EngineSpec::parse("dxr:=3").is_err());
    }
}
