//! The envelope of a POSTed JSON-RPC message, as the guard reads it once:
//! what the layers around the engine describe and count a request by.
//! What a request may do is decided by the engine, on its own typed request.

use serde::Deserialize;
use serde_json::{Value, value::RawValue};

/// What the layers need of a message, parsed once here; the rest is checked
/// for syntax and skipped. The guard hands it on in the request's
/// extensions, so the telemetry layer below never parses the body again.
/// Only the envelope's shape is judged here: params the engine finds invalid
/// are its to answer (-32602, with the id), so every field of `params` is
/// read leniently.
#[derive(Deserialize, Default, Debug)]
pub struct Envelope {
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default, deserialize_with = "lenient::params")]
    pub params: Option<Params>,
}

/// What the layers below describe a request by (never decide on: the engine
/// decides on its own typed request). Nested objects are kept as checked
/// JSON text, not trees.
#[derive(Deserialize, Default, Debug)]
pub struct Params {
    #[serde(default, deserialize_with = "lenient::string")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub uri: Option<String>,
    #[serde(
        default,
        rename = "protocolVersion",
        deserialize_with = "lenient::string"
    )]
    pub protocol_version: Option<String>,
    #[serde(default, rename = "clientInfo")]
    pub client_info: Option<Box<RawValue>>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<Box<RawValue>>,
}

/// Fields read without failing the whole message: a value of another type
/// is `None` (and the engine refuses it, with the id). Nothing is buffered.
mod lenient {
    use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

    use super::Params;

    macro_rules! ignore_scalars {
        () => {
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(None)
            }
        };
    }

    pub(super) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Option<String>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Some(text.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(None)
            }
            ignore_scalars!();
        }
        d.deserialize_any(Text)
    }

    pub(super) fn params<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Params>, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Option<Params>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let map = de::value::MapAccessDeserializer::new(map);
                serde::Deserialize::deserialize(map).map(Some)
            }
            ignore_scalars!();
        }
        d.deserialize_any(Object)
    }
}
