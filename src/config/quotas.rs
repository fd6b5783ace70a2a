//! `rate_limit.shared`: whether replicas count quotas together (issue 64).
//! `true`, `false` or `"auto"` (on when the store is PostgreSQL, the only
//! store several replicas share).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SharedQuotas {
    #[default]
    Auto,
    On,
    Off,
}

impl SharedQuotas {
    /// Whether quotas are counted in the store named by `store_url`.
    pub fn applies_to(self, store_url: &str) -> bool {
        match self {
            Self::On => true,
            Self::Off => false,
            Self::Auto => {
                store_url.starts_with("postgres:") || store_url.starts_with("postgresql:")
            }
        }
    }
}

/// TOML has no tri-state: a boolean, or the word `"auto"`.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Written {
    Bool(bool),
    Word(String),
}

impl Serialize for SharedQuotas {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Auto => Written::Word("auto".into()),
            Self::On => Written::Bool(true),
            Self::Off => Written::Bool(false),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SharedQuotas {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Written::deserialize(deserializer)? {
            Written::Bool(true) => Ok(Self::On),
            Written::Bool(false) => Ok(Self::Off),
            Written::Word(word) if word == "auto" => Ok(Self::Auto),
            Written::Word(word) => Err(serde::de::Error::custom(format!(
                "{word:?}: expected true, false or \"auto\""
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SharedQuotas;

    #[derive(serde::Deserialize, serde::Serialize)]
    struct Holder {
        shared: SharedQuotas,
    }

    #[test]
    fn reads_a_boolean_or_auto_and_prints_it_back() {
        for (text, value) in [
            ("shared = true", SharedQuotas::On),
            ("shared = false", SharedQuotas::Off),
            ("shared = \"auto\"", SharedQuotas::Auto),
        ] {
            let read: Holder = toml::from_str(text).unwrap();
            assert_eq!(read.shared, value, "{text}");
            assert_eq!(toml::to_string(&read).unwrap().trim(), text);
        }
        assert!(toml::from_str::<Holder>("shared = \"yes\"").is_err());
        assert!(SharedQuotas::Auto.applies_to("postgres://db/teamgate"));
        assert!(!SharedQuotas::Auto.applies_to("sqlite://data/teamgate.db"));
        assert!(SharedQuotas::On.applies_to("sqlite://data/teamgate.db"));
    }
}
