//! `read_file`: a byte range (`offset`, `length`) or a line range
//! (`start_line`, `end_line`, 1-based and inclusive) of one file, at most
//! `max_read_bytes` at a time, with a note saying how to read on.

use std::io::{Read, Seek, SeekFrom};

use serde_json::Value;

use super::FilesSource;
use crate::providers::ProviderError;
use crate::{
    protocol::{CallToolResult, JsonObject},
    providers::declared::text_result,
};

impl FilesSource {
    pub(super) fn read(&self, arguments: &JsonObject) -> Result<CallToolResult, ProviderError> {
        let path = arguments
            .get("path")
            .and_then(Value::as_str)
            .ok_or(ProviderError::Argument("`path` is required"))?;
        let number = |key: &str| arguments.get(key).and_then(Value::as_u64);
        let by_lines = number("start_line").is_some() || number("end_line").is_some();
        if by_lines && (arguments.contains_key("offset") || arguments.contains_key("length")) {
            return Err(ProviderError::Argument(
                "give either offset and length, or start_line and end_line",
            ));
        }
        let (mut file, size) = self.open(path)?;
        if size > self.config.max_file_bytes {
            return Err(ProviderError::FileTooLarge {
                path: path.to_owned(),
                size,
                max: self.config.max_file_bytes,
            });
        }
        let max = self.config.max_read_bytes as u64;
        let text = if by_lines {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            let first = number("start_line").unwrap_or(1).max(1);
            let last = number("end_line").unwrap_or(u64::MAX);
            lines(path, &String::from_utf8_lossy(&bytes), first, last, max)?
        } else {
            let offset = number("offset").unwrap_or(0).min(size);
            let length = number("length").unwrap_or(max).min(max);
            file.seek(SeekFrom::Start(offset))?;
            let mut bytes = Vec::new();
            file.take(length).read_to_end(&mut bytes)?;
            let end = offset + bytes.len() as u64;
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if end < size {
                text.push_str(&format!(
                    "\n[… {} more bytes: call read_file again with offset = {end}]",
                    size - end
                ));
            }
            text
        };
        Ok(text_result(text, false))
    }
}

/// Lines `first..=last` of `text`, as many whole lines as fit in `max`
/// bytes (at least one, cut if it alone is longer), and where to go on.
fn lines(path: &str, text: &str, first: u64, last: u64, max: u64) -> Result<String, ProviderError> {
    let total = text.split_inclusive('\n').count() as u64;
    if first > total {
        let path = path.to_owned();
        return Err(ProviderError::PastTheEnd { path, total, first });
    }
    let wanted = last.min(total);
    let mut out = String::new();
    let (mut shown, mut cut) = (first - 1, false);
    for line in text
        .split_inclusive('\n')
        .skip((first - 1) as usize)
        .take((wanted + 1 - first) as usize)
    {
        if (out.len() + line.len()) as u64 > max {
            if out.is_empty() {
                let at = (0..=max as usize)
                    .rev()
                    .find(|&i| line.is_char_boundary(i))
                    .unwrap_or(0);
                out.push_str(&line[..at]);
                (shown, cut) = (shown + 1, true);
            }
            break;
        }
        out.push_str(line);
        shown += 1;
    }
    if cut {
        out.push_str(&format!(
            "\n[line {shown} is longer than {max} bytes: read it by offset and length]"
        ));
    } else if shown < wanted {
        out.push_str(&format!(
            "\n[lines {first}–{shown} of {total}: call read_file again with start_line = {}]",
            shown + 1
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::lines;

    #[test]
    fn line_ranges_fit_the_budget_and_say_where_to_go_on() {
        let text = "one\ntwo\nthree\nfour";
        assert_eq!(lines("f", text, 2, 3, 100).unwrap(), "two\nthree\n");
        assert_eq!(lines("f", text, 3, 99, 100).unwrap(), "three\nfour");
        assert_eq!(
            lines("f", text, 1, 4, 9).unwrap(),
            "one\ntwo\n\n[lines 1–2 of 4: call read_file again with start_line = 3]"
        );
        assert_eq!(
            lines("f", text, 1, 1, 2).unwrap(),
            "on\n[line 1 is longer than 2 bytes: read it by offset and length]"
        );
        let past = lines("f", text, 5, 9, 100).unwrap_err().to_string();
        assert_eq!(past, "`f` has 4 lines; start_line 5 is past its end");
    }
}
