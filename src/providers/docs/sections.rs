//! Splits a document into the units search returns: Markdown by headings
//! (a long section into overlapping parts), plain text by paragraphs. A
//! section knows its heading path, its GitHub-style anchor and its lines.

use std::collections::HashMap;

/// A section longer than this is indexed as parts, so one hit stays small.
const MAX_CHARS: usize = 3_000;
/// Lines a part repeats from the end of the previous one, so a passage cut
/// in two is still found whole in one of them.
const OVERLAP_LINES: usize = 3;
/// Paragraphs of plain text are merged up to about this size.
const PARAGRAPH_CHARS: usize = 1_500;

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Section {
    /// The headings above and including this one, outermost first.
    pub headings: Vec<String>,
    /// GitHub-style anchor of the heading; empty before the first heading
    /// and in plain text.
    pub anchor: String,
    /// 1-based, inclusive.
    pub start: usize,
    pub end: usize,
    /// One of several parts of a long section.
    pub part: bool,
}

impl Section {
    /// The section's own text: its lines of `text`.
    pub(super) fn text(&self, text: &str) -> String {
        lines(text, self.start, self.end)
    }
}

/// Lines `start..=end` (1-based) of `text`, joined with newlines.
pub(super) fn lines(text: &str, start: usize, end: usize) -> String {
    let picked: Vec<&str> = text
        .lines()
        .skip(start.saturating_sub(1))
        .take(end + 1 - start.max(1))
        .collect();
    picked.join("\n")
}

/// The document's sections: by headings in Markdown, else by paragraphs.
pub(super) fn whole(text: &str, markdown: bool) -> Vec<Section> {
    if markdown {
        by_headings(text)
    } else {
        by_paragraphs(text)
    }
}

/// What the index holds: each section, a long one as parts.
pub(super) fn parts(whole: &[Section], lines: &[&str]) -> Vec<Section> {
    whole
        .iter()
        .flat_map(|s| into_parts(s.clone(), lines))
        .collect()
}

#[cfg(test)]
fn split(text: &str, markdown: bool) -> Vec<Section> {
    let lines: Vec<&str> = text.lines().collect();
    parts(&whole(text, markdown), &lines)
}

/// An ATX heading (`## Title ##`): its level and text. Setext headings are
/// rare in docs and read as body text.
fn heading(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.len() - rest.trim_start_matches('#').len();
    let after = &rest[level..];
    if !(1..=6).contains(&level) || !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let text = after.trim().trim_end_matches('#').trim_end();
    Some((level, text))
}

fn by_headings(text: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut slugs = Slugs::default();
    let mut fence: Option<&str> = None;
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        count = i + 1;
        let trimmed = line.trim_start();
        // Headings inside fenced code are code (`# comment` in a shell block).
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            continue;
        }
        let Some((level, title)) = heading(line) else {
            if sections.is_empty() && !line.trim().is_empty() {
                sections.push(Section {
                    headings: Vec::new(),
                    anchor: String::new(),
                    start: 1,
                    end: 0,
                    part: false,
                });
            }
            continue;
        };
        if let Some(last) = sections.last_mut() {
            last.end = i;
        }
        stack.retain(|(l, _)| *l < level);
        stack.push((level, title.to_owned()));
        sections.push(Section {
            headings: stack.iter().map(|(_, t)| t.clone()).collect(),
            anchor: slugs.next(title),
            start: i + 1,
            end: 0,
            part: false,
        });
    }
    if let Some(last) = sections.last_mut() {
        last.end = count;
    }
    sections
}

fn by_paragraphs(text: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut size = 0;
    let mut blank = true;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            blank = true;
            continue;
        }
        let extend = !blank || size < PARAGRAPH_CHARS;
        match sections.last_mut() {
            Some(last) if extend => last.end = i + 1,
            _ => {
                size = 0;
                sections.push(Section {
                    headings: Vec::new(),
                    anchor: String::new(),
                    start: i + 1,
                    end: i + 1,
                    part: false,
                });
            }
        }
        size += line.len() + 1;
        blank = false;
    }
    sections
}

/// A long section as parts of at most about `MAX_CHARS`, each repeating the
/// last `OVERLAP_LINES` lines of the one before.
fn into_parts(section: Section, lines: &[&str]) -> Vec<Section> {
    let size: usize = (section.start..=section.end)
        .filter_map(|n| lines.get(n - 1))
        .map(|l| l.len() + 1)
        .sum();
    if size <= MAX_CHARS {
        return vec![section];
    }
    let mut parts = Vec::new();
    let mut start = section.start;
    while start <= section.end {
        let mut end = start;
        let mut chars = 0;
        while end <= section.end {
            chars += lines.get(end - 1).map_or(0, |l| l.len() + 1);
            if chars > MAX_CHARS && end > start {
                end -= 1;
                break;
            }
            end += 1;
        }
        let end = end.min(section.end);
        parts.push(Section {
            start,
            end,
            part: true,
            ..section.clone()
        });
        if end == section.end {
            break;
        }
        start = (end + 1).saturating_sub(OVERLAP_LINES).max(start + 1);
    }
    parts
}

/// GitHub's heading anchors: lower case, punctuation dropped, spaces as
/// hyphens, and `-1`, `-2`... for repeats within a document.
#[derive(Default)]
struct Slugs {
    seen: HashMap<String, usize>,
}

impl Slugs {
    fn next(&mut self, heading: &str) -> String {
        let base = slug(heading);
        let count = self.seen.entry(base.clone()).or_insert(0);
        let anchor = if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        };
        *count += 1;
        anchor
    }
}

pub(super) fn slug(heading: &str) -> String {
    // GitHub slugs the rendered text: a link contributes its words, not its URL.
    let mut rendered = String::with_capacity(heading.len());
    let mut rest = heading;
    while let Some(at) = rest.find("](") {
        rendered.push_str(&rest[..at]);
        rest = rest[at + 2..].split_once(')').map_or("", |(_, r)| r);
    }
    rendered.push_str(rest);
    rendered
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_follow_github() {
        assert_eq!(slug("Deploying to production"), "deploying-to-production");
        assert_eq!(
            slug("`fs.readFile(path[, options], callback)`"),
            "fsreadfilepath-options-callback"
        );
        assert_eq!(slug("Class: `fs.Dir`"), "class-fsdir");
        assert_eq!(
            slug("See [the guide](http://x.y/z) now"),
            "see-the-guide-now"
        );
        let mut slugs = Slugs::default();
        assert_eq!(
            [
                slugs.next("Usage"),
                slugs.next("Usage"),
                slugs.next("Usage")
            ],
            ["usage", "usage-1", "usage-2"]
        );
    }

    #[test]
    fn markdown_splits_by_headings_outside_code() {
        let text = "intro\n# Top\ntext\n## Sub ##\n```sh\n# not a heading\n```\n# Next\n";
        let sections = split(text, true);
        let summary: Vec<_> = sections
            .iter()
            .map(|s| (s.headings.join(">"), s.anchor.as_str(), s.start, s.end))
            .collect();
        assert_eq!(
            summary,
            [
                (String::new(), "", 1, 1),
                ("Top".into(), "top", 2, 3),
                ("Top>Sub".into(), "sub", 4, 7),
                ("Next".into(), "next", 8, 8),
            ]
        );
        assert_eq!(
            sections[2].text(text),
            "## Sub ##\n```sh\n# not a heading\n```"
        );
    }

    #[test]
    fn long_sections_become_overlapping_parts() {
        let body: String = (0..200)
            .map(|i| format!("line {i} {}\n", "x".repeat(40)))
            .collect();
        let text = format!("# Long\n{body}");
        let parts = split(&text, true);
        assert!(parts.len() >= 3, "{parts:?}");
        assert!(parts.iter().all(|p| p.part && p.anchor == "long"));
        assert_eq!(parts[0].start, 1);
        assert_eq!(parts.last().unwrap().end, 201);
        for pair in parts.windows(2) {
            assert_eq!(pair[1].start, pair[0].end + 1 - OVERLAP_LINES);
        }
    }

    #[test]
    fn plain_text_splits_by_paragraphs() {
        let big = "y".repeat(PARAGRAPH_CHARS);
        let text = format!("one\ntwo\n\nthree\n\n{big}\n\nfour\n");
        let ranges: Vec<_> = split(&text, false)
            .iter()
            .map(|s| (s.start, s.end))
            .collect();
        // Small paragraphs merge until a section is big enough.
        assert_eq!(ranges, [(1, 6), (8, 8)]);
    }
}
