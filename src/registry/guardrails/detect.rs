//! The built-in detectors: where in a text a secret, an e-mail address, a
//! card number or an IBAN is. Shapes find candidates; a card number must
//! pass the Luhn check and an IBAN its mod-97 check digits, so an order
//! number or a phone number is not taken for one.

use std::sync::LazyLock;

use regex::Regex;

use crate::config::Detect;

/// Published shapes of credentials: cloud and SaaS keys, tokens, and PEM
/// private keys. Each specific enough to be rare in ordinary text.
static SECRETS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",                      // AWS access key id
        r"|\bgh[pousr]_[A-Za-z0-9]{36,255}\b",                  // GitHub token
        r"|\bgithub_pat_[A-Za-z0-9_]{22,255}\b",                // GitHub fine-grained token
        r"|\bxox[abprs]-[A-Za-z0-9-]{10,250}",                  // Slack token
        r"|\b[sr]k_live_[0-9A-Za-z]{20,250}\b",                 // Stripe secret key
        r"|\bAIza[0-9A-Za-z_-]{35}\b",                          // Google API key
        r"|\bglpat-[0-9A-Za-z_-]{20,}\b",                       // GitLab token
        r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}\b",           // OpenAI / Anthropic key
        r"|\btg_[0-9a-f]{12}_[0-9a-f]{64}\b",                   // teamgate personal token
        r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", // JWT
        r"|-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z]+ )?PRIVATE KEY-----|$)",
    ))
    .expect("the secret patterns compile")
});

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b",
    )
    .expect("the e-mail pattern compiles")
});

/// 13 to 19 digits, single spaces or dashes allowed between them.
static CARD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d(?:[ -]?\d){12,18}\b").expect("the card pattern compiles"));

/// Two letters, two check digits, then 11 to 30 letters or digits, in
/// groups of four as printed or unbroken.
static IBAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b").expect("the IBAN pattern compiles")
});

/// The byte ranges of `text` where `detect` finds something, in order and
/// not overlapping. `Webhook` finds nothing here (it is asked elsewhere).
pub(super) fn find(detect: Detect, text: &str) -> Vec<(usize, usize)> {
    let (pattern, check): (&Regex, fn(&str) -> bool) = match detect {
        Detect::Secrets => (&SECRETS, |_| true),
        Detect::Email => (&EMAIL, |_| true),
        Detect::CardNumber => (&CARD, luhn),
        Detect::Iban => (&IBAN, iban_checks),
        Detect::Webhook => return Vec::new(),
    };
    pattern
        .find_iter(text)
        .filter(|m| check(m.as_str()))
        .map(|m| (m.start(), m.end()))
        .collect()
}

/// The Luhn check of the digits in `candidate` (separators skipped).
fn luhn(candidate: &str) -> bool {
    let digits: Vec<u32> = candidate.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) || digits.iter().all(|d| *d == digits[0]) {
        return false;
    }
    let sum: u32 = (digits.iter().rev().enumerate())
        .map(|(i, &d)| match i % 2 {
            1 if d * 2 > 9 => d * 2 - 9,
            1 => d * 2,
            _ => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// ISO 13616: the first four characters moved to the end, letters as
/// numbers (A = 10), the whole modulo 97 is 1.
fn iban_checks(candidate: &str) -> bool {
    let compact: Vec<char> = candidate.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let rotated = compact[4..].iter().chain(&compact[..4]);
    let mut remainder: u32 = 0;
    for c in rotated {
        let value = match c.to_digit(36) {
            Some(v) => v,
            None => return false,
        };
        remainder = if value >= 10 {
            (remainder * 100 + value) % 97
        } else {
            (remainder * 10 + value) % 97
        };
    }
    remainder == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(detect: Detect, text: &str) -> Vec<&str> {
        find(detect, text)
            .into_iter()
            .map(|(s, e)| &text[s..e])
            .collect()
    }

    #[test]
    fn cards_need_a_valid_luhn_digit() {
        let text = "card 4111 1111 1111 1111, order 4111 1111 1111 1112, phone 0044 20 7946 0958";
        assert_eq!(found(Detect::CardNumber, text), ["4111 1111 1111 1111"]);
        assert_eq!(
            found(Detect::CardNumber, "5500-0000-0000-0004"),
            ["5500-0000-0000-0004"]
        );
        assert!(found(Detect::CardNumber, "0000000000000000").is_empty());
    }

    #[test]
    fn ibans_need_their_check_digits() {
        let text =
            "pay GB82 WEST 1234 5698 7654 32 or DE89370400440532013000, not GB00WEST12345698765432";
        assert_eq!(
            found(Detect::Iban, text),
            ["GB82 WEST 1234 5698 7654 32", "DE89370400440532013000"]
        );
    }

    #[test]
    fn emails_and_secrets_by_shape() {
        assert_eq!(
            found(Detect::Email, "write to ann.lee+ops@example.co.uk today"),
            ["ann.lee+ops@example.co.uk"]
        );
        let text = "key AKIAIOSFODNN7EXAMPLE and ghp_0123456789abcdefghijABCDEFGHIJ012345 end";
        assert_eq!(
            found(Detect::Secrets, text),
            [
                "AKIAIOSFODNN7EXAMPLE",
                "ghp_0123456789abcdefghijABCDEFGHIJ012345"
            ]
        );
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----";
        assert_eq!(found(Detect::Secrets, pem), [pem]);
        assert!(found(Detect::Secrets, "an ordinary sentence about keys").is_empty());
    }
}
