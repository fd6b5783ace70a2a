//! Durations in configuration: read by humantime (`90d`, `15s`, `1h 30m`),
//! written back in the largest unit that is exact (`90d`, not humantime's
//! `2months 29days 2h 52m 48s`), so `check-config` prints what was written.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

/// `Duration` and `Option<Duration>`, as humantime_serde reads both.
pub(crate) fn deserialize<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    humantime_serde::Serde<T>: Deserialize<'de>,
{
    humantime_serde::deserialize(deserializer)
}

pub(crate) fn serialize<S: Serializer, T: Written>(
    duration: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    duration.write(serializer)
}

pub(crate) trait Written {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
}

impl Written for Duration {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&shown(*self))
    }
}

impl Written for Option<Duration> {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Some(duration) => serializer.serialize_some(&shown(*duration)),
            None => serializer.serialize_none(),
        }
    }
}

/// `90d`, `12h`, `90m`, `15s`, `250ms`, `1500us`: one unit, exact.
pub(crate) fn shown(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    const UNITS: [(u128, &str); 7] = [
        (86_400_000_000_000, "d"),
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    if nanos == 0 {
        return "0s".to_owned();
    }
    let (size, unit) = UNITS
        .into_iter()
        .find(|(size, _)| nanos.is_multiple_of(*size))
        .unwrap_or((1, "ns"));
    format!("{}{unit}", nanos / size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_an_operator_writes_them_and_read_back_the_same() {
        for (written, seconds) in [
            ("90d", 90 * 86_400),
            ("12h", 43_200),
            ("90m", 5_400),
            ("15s", 15),
        ] {
            let duration = Duration::from_secs(seconds);
            assert_eq!(shown(duration), written);
            assert_eq!(humantime::parse_duration(written).unwrap(), duration);
        }
        assert_eq!(shown(Duration::from_millis(250)), "250ms");
        assert_eq!(shown(Duration::from_millis(1_500)), "1500ms");
        assert_eq!(shown(Duration::ZERO), "0s");
    }
}
