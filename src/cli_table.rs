//! Plain-text tables for the operator commands: a header row, each column as
//! wide as its widest cell up to a cap, longer cells cut with "…", and
//! control characters shown as spaces, so one long or odd value cannot
//! break the rows below it.

pub struct Table {
    header: Vec<(&'static str, usize)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Columns as (title, widest allowed cell in characters).
    pub fn new(header: &[(&'static str, usize)]) -> Self {
        Self {
            header: header.to_vec(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        let cells = cells
            .into_iter()
            .zip(&self.header)
            .map(|(cell, (_, cap))| fit(&cell, *cap))
            .collect();
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let widths: Vec<usize> = (self.header.iter().enumerate())
            .map(|(i, (title, _))| {
                (self.rows.iter().map(|r| r[i].chars().count()))
                    .chain([title.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| {
            let padded: Vec<String> = (cells.iter().zip(&widths))
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            padded.join("  ").trim_end().to_owned() + "\n"
        };
        let mut out = line(self.header.iter().map(|(title, _)| *title).collect());
        for row in &self.rows {
            out.push_str(&line(row.iter().map(String::as_str).collect()));
        }
        out
    }
}

/// `cell` on one line and at most `cap` characters, the last one "…" when cut.
fn fit(cell: &str, cap: usize) -> String {
    let flat: String = cell
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= cap {
        return flat;
    }
    let mut cut: String = flat.chars().take(cap.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_and_multiline_cells_keep_the_columns() {
        let mut table = Table::new(&[("ID", 8), ("USER", 6)]);
        table.row(vec!["a".into(), "bob".into()]);
        table.row(vec!["abcdefghijkl".into(), "x\ny".into()]);
        assert_eq!(
            table.render(),
            "ID        USER\na         bob\nabcdefg…  x y\n"
        );
    }
}
