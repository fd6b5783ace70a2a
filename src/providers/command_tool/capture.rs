//! Bounded capture of a process's output: the first and the last halves of
//! the budget are kept, the middle is counted and dropped. It is fed output
//! already scrubbed (`pump`), so its cuts cannot split a secret.

use std::collections::VecDeque;

pub(super) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    total: usize,
}

impl Capture {
    pub(super) fn new(budget: usize) -> Self {
        let half = (budget / 2).max(1);
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            half,
            total: 0,
        }
    }

    pub(super) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        if self.head.len() < self.half {
            let take = (self.half - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.half);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// The kept output as text, with a marker where bytes were dropped.
    pub(super) fn finish(self) -> String {
        let kept = self.head.len() + self.tail.len();
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            out.push_str(&format!("\n[… {} bytes omitted …]\n", self.total - kept));
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_under_budget() {
        let mut c = Capture::new(100);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.finish(), "hello world");
    }

    #[test]
    fn keeps_head_and_tail_over_budget() {
        let mut c = Capture::new(10);
        for chunk in [&b"01234"[..], b"56789", b"abcde", b"fghij"] {
            c.push(chunk);
        }
        assert_eq!(c.finish(), "01234\n[… 10 bytes omitted …]\nfghij");
        let mut c = Capture::new(10);
        c.push(b"0123456789abcdefghij");
        assert_eq!(c.finish(), "01234\n[… 10 bytes omitted …]\nfghij");
    }
}
