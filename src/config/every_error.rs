//! Every problem of a configuration at once: serde stops at the first one,
//! so each found key is taken out of the merged values and the rest is read
//! again, until it reads or the bound is reached. An operator then fixes a
//! file in one pass instead of one key per run.

use figment::{
    Figment,
    error::Kind,
    providers::{Format, Serialized, Toml},
    value::{Dict, Value},
};

use super::Config;

/// At most this many problems are reported (the loop is bounded).
const MOST: usize = 50;

/// `first` and every later error, in the order serde meets them, and the
/// configuration read with all of them taken out (for the rules `validate`
/// checks across keys), if it then reads.
pub(super) fn collect(
    figment: &Figment,
    first: figment::Error,
) -> (Vec<figment::Error>, Option<Config>) {
    let mut found: Vec<figment::Error> = first.into_iter().collect();
    let Ok(mut values) = figment.extract::<Dict>() else {
        return (found, None);
    };
    let defaults = Figment::from(Toml::string(super::EMBEDDED_DEFAULT));
    let mut removed: Vec<Vec<String>> = Vec::new();
    let mut rest = None;
    while found.len() < MOST {
        let Some(last) = found.last() else { break };
        let path = last.path.clone();
        // A mistyped value falls back to its default, so the keys after it
        // are still read; an unknown key goes.
        let default = match last.kind {
            Kind::UnknownField(..) => None,
            _ => defaults.find_value(&path.join(".")).ok(),
        };
        if path.is_empty() || !replace(&mut values, &path, default) {
            break;
        }
        removed.push(path);
        let next = match Figment::from(Serialized::defaults(&values)).extract::<Config>() {
            Ok(config) => {
                rest = Some(config);
                break;
            }
            Err(next) => next,
        };
        let before = found.len();
        // A required key taken out is missing now: that is the same problem.
        found.extend(
            next.into_iter()
                .filter(|error| !is_removed(error, &removed)),
        );
        if found.len() == before {
            break;
        }
    }
    found.truncate(MOST);
    (found, rest)
}

fn is_removed(error: &figment::Error, removed: &[Vec<String>]) -> bool {
    let Kind::MissingField(field) = &error.kind else {
        return removed.contains(&error.path);
    };
    let mut path = error.path.clone();
    path.push(field.to_string());
    removed.contains(&path)
}

/// Puts `value` at `path` (keys and array indices) in `values`, or takes
/// what is there out when `value` is `None`.
fn replace(values: &mut Dict, path: &[String], value: Option<Value>) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut at: Option<&mut Value> = None;
    for key in parents {
        let next = match at {
            None => values.get_mut(key),
            Some(Value::Dict(_, dict)) => dict.get_mut(key),
            Some(Value::Array(_, items)) => {
                key.parse::<usize>().ok().and_then(|i| items.get_mut(i))
            }
            Some(_) => None,
        };
        let Some(next) = next else { return false };
        at = Some(next);
    }
    let dict = match at {
        None => values,
        Some(Value::Dict(_, dict)) => dict,
        Some(Value::Array(_, items)) => {
            return match (last.parse::<usize>(), value) {
                (Ok(i), Some(value)) if i < items.len() => {
                    items[i] = value;
                    true
                }
                (Ok(i), None) if i < items.len() => {
                    items.remove(i);
                    true
                }
                _ => false,
            };
        }
        Some(_) => return false,
    };
    match value {
        Some(value) => dict.insert(last.clone(), value).is_some(),
        None => dict.remove(last).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unknown_and_mistyped_key_is_found_in_one_read() {
        let figment =
            Figment::from(Toml::string(super::super::EMBEDDED_DEFAULT)).merge(Toml::string(
                "[server]\nlistn = \"x\"\nmax_body_bytes = \"big\"\n[mcp]\nsrever_name = \"y\"\n\
                 [[tools.http]]\nname = \"a\"\ndescription = \"d\"\nurl = \"https://x.example.com\"\nmethd = 1\n",
            ));
        let first = figment.extract::<Config>().unwrap_err();
        let paths: Vec<String> = (collect(&figment, first).0.iter())
            .map(|e| e.path.join("."))
            .collect();
        let keys = [
            "server.listn",
            "server.max_body_bytes",
            "mcp.srever_name",
            "tools.http.0.methd",
        ];
        for key in keys {
            assert!(paths.contains(&key.to_owned()), "{key} in {paths:?}");
        }
        assert_eq!(paths.len(), 4, "{paths:?}");
    }
}
