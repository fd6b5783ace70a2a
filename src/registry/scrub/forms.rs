//! The forms a secret is searched for: itself and the encodings a tool's
//! output may carry it in (issue 44 item 7), so `base64 <<< $TOKEN` or a
//! URL-encoded copy is redacted like the value itself.

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE},
};

/// `secret` and its encodings: lower and upper case hex; every byte
/// percent-encoded (`%XX`, either case); base64 and base64url at each of
/// the three alignments a secret can have inside longer encoded data.
///
/// At an alignment the first characters also carry bits of the bytes
/// before the secret, and the last those after it (or the padding), so
/// each alignment gives the characters only the secret determines, and the
/// same run through the data's end with and without `=` padding (the
/// longer form is redacted whole where it occurs).
pub(super) fn forms(secret: &str) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut forms = vec![
        secret.to_owned(),
        hex::encode(bytes),
        hex::encode_upper(bytes),
        bytes.iter().map(|b| format!("%{b:02X}")).collect(),
        bytes.iter().map(|b| format!("%{b:02x}")).collect(),
    ];
    for engine in [&STANDARD, &URL_SAFE] {
        for lead in 0..3 {
            let mut data = vec![0u8; lead];
            data.extend_from_slice(bytes);
            let encoded = engine.encode(&data);
            // Character i holds bits 6i..6i+6 of the data; the secret's
            // are 8*lead..8*(lead+len).
            let start = (8 * lead).div_ceil(6);
            let end = 8 * (lead + bytes.len()) / 6;
            let ended = &encoded[start..];
            forms.push(encoded[start..end].to_owned());
            forms.push(ended.to_owned());
            forms.push(ended.trim_end_matches('=').to_owned());
        }
    }
    // base32 (RFC 4648) at each of the five alignments of its 5-byte
    // groups: the characters only the secret determines (any case, and
    // wrapped, through the skeleton).
    for lead in 0..5 {
        let mut data = vec![0u8; lead];
        data.extend_from_slice(bytes);
        let encoded = data_encoding::BASE32.encode(&data);
        let (start, end) = ((8 * lead).div_ceil(5), 8 * (lead + bytes.len()) / 5);
        forms.push(encoded[start..end].to_owned());
    }
    forms.sort();
    forms.dedup();
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_encoding_at_every_alignment_holds_a_form() {
        let secret = "rsk-Qz81?>~-0123456789";
        let forms = forms(secret);
        let holds = |text: &str| forms.iter().any(|f| text.contains(f.as_str()));
        for lead in ["", "a", "ab", "abc"] {
            for tail in ["", "z", "zz"] {
                let data = format!("{lead}{secret}{tail}");
                for engine in [&STANDARD, &URL_SAFE] {
                    assert!(holds(&engine.encode(&data)), "{data:?}");
                }
                let unpadded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&data);
                assert!(holds(&unpadded), "{data:?}");
            }
        }
        for lead in ["", "a", "ab", "abc", "abcd"] {
            let data = format!("{lead}{secret}z");
            assert!(
                holds(&data_encoding::BASE32.encode(data.as_bytes())),
                "{data:?}"
            );
        }
        assert!(holds(&hex::encode(format!("x{secret}y"))));
        assert!(holds(&hex::encode_upper(secret)));
        assert!(holds(
            "%72%73%6B%2D%51%7A%38%31%3F%3E%7E%2D%30%31%32%33%34%35%36%37%38%39"
        ));
        assert!(holds(
            "%72%73%6b%2d%51%7a%38%31%3f%3e%7e%2d%30%31%32%33%34%35%36%37%38%39"
        ));
        // The whole padded encoding is a form, so none of it is left over.
        let whole = STANDARD.encode(secret);
        assert!(forms.contains(&whole), "{whole}");
    }

    #[test]
    fn the_shortest_secret_gives_no_form_shorter_than_itself() {
        assert!(forms("abcd").iter().all(|f| f.len() >= 4));
    }
}
